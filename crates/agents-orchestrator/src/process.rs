//! Agent processes. Each agent starts in a process group of its own, so that
//! stopping it (a timeout, a leftover of a killed run) reaches every process
//! it started, not only the `sh -c` at its top: SIGTERM to the group, a short
//! grace, then SIGKILL.
//!
//! Every agent's environment carries [`RUN_MARKER_ENV`], a value unique to
//! the dispatch; a later run that finds a recorded process group still alive
//! stops it only when one of its processes carries that value (on Linux,
//! read from `/proc`), so a process group id reused by an unrelated program
//! is never signalled.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The environment variable that marks an agent's processes as the
/// dispatch's.
pub const RUN_MARKER_ENV: &str = "AGENTS_ORCHESTRATOR_RUN";

/// How long a process group has to end after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// A marker no other dispatch has: this process's id and the time.
pub fn new_marker() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// Makes `command` start in a new process group led by itself (its pid is
/// the group's id).
pub fn new_group(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = command;
}

/// Stops the agent `child` leads and every process of its group, and reaps
/// `child`.
pub fn stop(child: &mut Child) {
    #[cfg(unix)]
    stop_group(child.id(), Some(child));
    #[cfg(not(unix))]
    {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// After the agent `child` led has exited (and was reaped): stops what it
/// left running in its group.
pub fn stop_remains(child: &Child) {
    #[cfg(unix)]
    if group_alive(child.id()) {
        stop_group(child.id(), None);
    }
    #[cfg(not(unix))]
    let _ = child;
}

/// While alive, SIGINT, SIGTERM and SIGHUP are noted instead of ending the
/// process, so that the agents (in groups of their own, which a Ctrl-C at
/// the terminal no longer reaches) are stopped first; see [`interrupted`]
/// and [`reraise`]. Guards nest; the last one dropped restores the previous
/// dispositions.
pub struct InterruptGuard {
    _private: (),
}

#[cfg(unix)]
mod signals {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    pub const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    pub static RECEIVED: AtomicI32 = AtomicI32::new(0);

    /// How many guards are alive, and the dispositions they replaced.
    pub static INSTALLED: Mutex<(usize, Vec<libc::sigaction>)> = Mutex::new((0, Vec::new()));

    extern "C" fn note(signal: libc::c_int) {
        RECEIVED.store(signal, Ordering::SeqCst);
    }

    pub fn install() {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.0 += 1;
        if installed.0 > 1 {
            return;
        }
        installed.1.clear();
        for signal in CAUGHT {
            // SAFETY: a zeroed sigaction is valid; the handler only stores to
            // an atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, &action, &mut previous);
                if previous.sa_sigaction == libc::SIG_IGN {
                    // Ignored (`nohup`): stays ignored.
                    libc::sigaction(signal, &previous, std::ptr::null_mut());
                }
                installed.1.push(previous);
            }
        }
    }

    pub fn restore() {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.0 = installed.0.saturating_sub(1);
        if installed.0 > 0 {
            return;
        }
        for (signal, previous) in CAUGHT.iter().zip(std::mem::take(&mut installed.1)) {
            // SAFETY: restores the disposition saved by `install`.
            unsafe { libc::sigaction(*signal, &previous, std::ptr::null_mut()) };
        }
    }
}

impl InterruptGuard {
    pub fn install() -> InterruptGuard {
        #[cfg(unix)]
        signals::install();
        InterruptGuard { _private: () }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        signals::restore();
    }
}

/// The signal noted while an [`InterruptGuard`] was alive, if any.
pub fn interrupted() -> Option<i32> {
    #[cfg(unix)]
    {
        let signal = signals::RECEIVED.load(std::sync::atomic::Ordering::SeqCst);
        (signal != 0).then_some(signal)
    }
    #[cfg(not(unix))]
    None
}

/// Once every guard is gone: ends the process by the signal that was noted,
/// as it would have ended without the guard (its previous disposition).
/// Returns when none was noted, or when that disposition does not end it.
pub fn reraise() {
    #[cfg(unix)]
    if let Some(signal) = interrupted() {
        signals::RECEIVED.store(0, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: raise only delivers the signal to this process.
        unsafe { libc::raise(signal) };
    }
}

/// What became of a process group recorded by an earlier run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftover {
    /// No process of the group runs any more.
    Gone,
    /// It ran with the run's marker and was stopped.
    Stopped,
    /// Processes run in a group of that id, but none carries the run's
    /// marker: the id was reused by another program, which is left alone.
    Foreign,
}

/// Finds a process group an earlier run recorded, and stops it when it is
/// still alive and its processes are that run's agents.
pub fn stop_leftover(pgid: u32, marker: &str) -> Leftover {
    #[cfg(unix)]
    {
        if !valid_group(pgid) || !group_alive(pgid) {
            return Leftover::Gone;
        }
        #[cfg(target_os = "linux")]
        if let Some(members) = linux::members(pgid)
            && !members.iter().any(|&pid| linux::has_env(pid, RUN_MARKER_ENV, marker))
        {
            return Leftover::Foreign;
        }
        stop_group(pgid, None);
        Leftover::Stopped
    }
    #[cfg(not(unix))]
    {
        let _ = (pgid, marker);
        Leftover::Gone
    }
}

/// Stops every process group holding a live process with `marker` in its
/// environment (a dispatch's agents, recorded or not), as [`stop_leftover`]
/// does; returns each stopped group with the task id its agent ran for
/// (`AGENTS_TASK_ID`), sorted by group. Nothing where `/proc` cannot tell.
pub fn stop_marked(marker: &str) -> Vec<(u32, Option<String>)> {
    #[cfg(target_os = "linux")]
    {
        let groups = linux::marked_groups(RUN_MARKER_ENV, marker);
        let groups: Vec<(u32, Option<String>)> = groups.into_iter().filter(|(pgid, _)| valid_group(*pgid)).collect();
        for (pgid, _) in &groups {
            stop_group(*pgid, None);
        }
        groups
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = marker;
        Vec::new()
    }
}

/// Whether any live (not zombie) process belongs to group `pgid`.
#[cfg(unix)]
pub fn group_alive(pgid: u32) -> bool {
    if !valid_group(pgid) {
        return false;
    }
    #[cfg(target_os = "linux")]
    if let Some(members) = linux::members(pgid) {
        return !members.is_empty();
    }
    // SAFETY: killpg with signal 0 sends nothing; it only checks the group.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

/// A group id that may be signalled: never 0 or 1 (ours or init's) and never
/// our own group, whatever a state file says.
#[cfg(unix)]
fn valid_group(pgid: u32) -> bool {
    // SAFETY: getpgrp has no preconditions.
    let own = unsafe { libc::getpgrp() };
    pgid > 1 && pgid <= i32::MAX as u32 && pgid as libc::pid_t != own
}

/// SIGTERM to the group, up to [`GRACE`] for it to end (reaping `child` as
/// it does), then SIGKILL to what is left, and up to [`KILL_WAIT`] for it to
/// be gone.
#[cfg(unix)]
fn stop_group(pgid: u32, mut child: Option<&mut Child>) {
    if !valid_group(pgid) {
        return;
    }
    // SAFETY: killpg only sends a signal to the group's processes.
    unsafe { libc::killpg(pgid as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + GRACE;
    loop {
        if let Some(child) = child.as_deref_mut() {
            let _ = child.try_wait();
        }
        if !group_alive(pgid) {
            return;
        }
        if Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe { libc::killpg(pgid as libc::pid_t, libc::SIGKILL) };
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL cannot be refused, but dying takes a moment (longer on a busy
    // machine): what the caller reports as stopped is gone when it returns.
    let deadline = Instant::now() + KILL_WAIT;
    while Instant::now() < deadline {
        if let Some(child) = child.as_deref_mut() {
            let _ = child.try_wait();
        }
        if !group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long a SIGKILLed group may take to be gone.
#[cfg(unix)]
const KILL_WAIT: Duration = Duration::from_secs(5);

#[cfg(target_os = "linux")]
mod linux {
    /// The ids of the processes in `/proc`; `None` when it cannot be read.
    fn pids() -> Option<impl Iterator<Item = u32>> {
        let entries = std::fs::read_dir("/proc").ok()?;
        Some(entries.flatten().filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok())))
    }

    /// The process group of `pid` when it is live (not a zombie).
    fn live_group(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let close = stat.rfind(')')?;
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let (state, pgrp) = (fields.first()?, fields.get(2)?.parse::<u32>().ok()?);
        (!matches!(*state, "Z" | "X" | "x")).then_some(pgrp)
    }

    /// The live (not zombie) processes of group `pgid`, from `/proc`; `None`
    /// when `/proc` cannot be read.
    pub fn members(pgid: u32) -> Option<Vec<u32>> {
        Some(pids()?.filter(|&pid| live_group(pid) == Some(pgid)).collect())
    }

    /// Whether process `pid` started with `name=value` in its environment.
    pub fn has_env(pid: u32, name: &str, value: &str) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
        let wanted = format!("{name}={value}");
        environ.split(|&b| b == 0).any(|entry| entry == wanted.as_bytes())
    }

    /// The groups of the live processes that started with `name=value` in
    /// their environment, each with the first such process's
    /// `AGENTS_TASK_ID`, sorted by group.
    pub fn marked_groups(name: &str, value: &str) -> Vec<(u32, Option<String>)> {
        let wanted = format!("{name}={value}");
        let mut groups: std::collections::BTreeMap<u32, Option<String>> = std::collections::BTreeMap::new();
        for pid in pids().into_iter().flatten() {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
            let mut vars = environ.split(|&b| b == 0);
            if !vars.clone().any(|entry| entry == wanted.as_bytes()) {
                continue;
            }
            let Some(pgrp) = live_group(pid) else { continue };
            let task = vars
                .find_map(|entry| entry.strip_prefix(b"AGENTS_TASK_ID="))
                .map(|id| String::from_utf8_lossy(id).into_owned());
            let slot = groups.entry(pgrp).or_default();
            if slot.is_none() {
                *slot = task;
            }
        }
        groups.into_iter().collect()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Stdio;

    /// Spawns `sh -c 'sleep 300 & echo $!'` in a group of its own with
    /// `marker` in its environment; the shell exits, the sleep stays in the
    /// group. Returns (group id, the sleep's pid).
    fn orphaned_group(marker: &str) -> (u32, u32) {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 300 > /dev/null 2>&1 & echo $!"]).env(RUN_MARKER_ENV, marker).stdout(Stdio::piped());
        new_group(&mut command);
        let child = command.spawn().unwrap();
        let pgid = child.id();
        let out = child.wait_with_output().unwrap();
        let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        (pgid, pid)
    }

    #[test]
    fn a_leftover_group_is_stopped_only_when_it_carries_the_marker() {
        let (pgid, pid) = orphaned_group("run-a");
        assert!(group_alive(pgid));
        assert_eq!(stop_leftover(pgid, "run-b"), Leftover::Foreign, "another run's marker: left alone");
        assert!(linux::members(pgid).unwrap().contains(&pid));
        assert_eq!(stop_leftover(pgid, "run-a"), Leftover::Stopped);
        assert!(!group_alive(pgid));
        assert_eq!(stop_leftover(pgid, "run-a"), Leftover::Gone);
    }

    #[test]
    fn the_groups_of_a_dispatchs_marker_are_found_and_stopped_whoever_recorded_them() {
        let (pgid, pid) = orphaned_group("run-c");
        let (other, _) = orphaned_group("run-d");
        assert_eq!(linux::marked_groups(RUN_MARKER_ENV, "run-c"), [(pgid, None)]);
        assert!(linux::members(pgid).unwrap().contains(&pid));
        assert_eq!(stop_marked("run-c"), [(pgid, None)]);
        assert!(!group_alive(pgid));
        assert!(stop_marked("run-c").is_empty(), "nothing left");
        assert!(group_alive(other), "another dispatch's group is left alone");
        assert_eq!(stop_leftover(other, "run-d"), Leftover::Stopped);
    }

    #[test]
    fn our_own_group_and_init_are_never_signalled() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() } as u32;
        assert_eq!(stop_leftover(own, "x"), Leftover::Gone);
        assert_eq!(stop_leftover(1, "x"), Leftover::Gone);
        assert_eq!(stop_leftover(0, "x"), Leftover::Gone);
    }
}
