//! `agents`: the one binary of the context and knowledge engine.
//!
//! Commands are thin: resolve settings once ([`settings`]), open the
//! [`agents_engine::Engine`], call a library, print through [`output`].
//! Exit codes: 0 success, 1 failure, 2 bad usage or bad input.

mod cli;
mod commands;
mod exit;
mod output;
mod progress;
mod settings;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: indexing allocates a token at a time on several threads, and
/// glibc's allocator spent a fifth of a first text-index sync on its locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (v3's option enum; the bindings name
/// no constant for it): how long freed pages stay committed before they go
/// back to the system.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Freed pages go back to the system after 10 ms (mimalloc v2's default)
/// instead of v3's second. A first index frees the parse phase's memory
/// (symbol table, pending references, the graph writer's strings) just
/// before the search sync allocates its own on other threads; kept a
/// second longer, both count in the peak. First query on 10,000 files:
/// peak 358 -> 300 MiB, wall time within noise (0.99x, 3 paired runs); a
/// whole 35,000-file tree: 669 -> 574 MB. A `MIMALLOC_PURGE_DELAY` in the
/// environment still decides.
fn release_freed_memory_soon() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set only stores an integer option of the allocator;
    // it is safe to call from any thread at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
}

/// What [`agents_core::memory::release_freed_memory`] runs on a thread:
/// mimalloc's collect, forced (the thread's delayed frees are taken in, its
/// empty pages and, on the main thread, the heaps of threads that ended go
/// back to the system).
fn collect_freed_memory() {
    // SAFETY: mi_collect only walks and frees the calling thread's own
    // heap (and abandoned ones); it may be called from any thread.
    unsafe { libmimalloc_sys::mi_collect(true) }
    // The C libraries (tree-sitter's parse trees, SQLite's caches) allocate
    // from glibc's per-thread arenas, which keep freed memory until trimmed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's arenas to the
    // system (under each arena's lock); callable from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn main() -> ExitCode {
    release_freed_memory_soon();
    agents_core::memory::set_release_hook(collect_freed_memory);
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { exit::SUCCESS };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_tracing(cli.global.verbose, cli.global.quiet);
    match commands::run(cli) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(err) => {
            eprintln!("error: {}", exit::render(&err));
            ExitCode::from(exit::code_for(&err))
        }
    }
}

fn init_tracing(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option set is the purge delay: the only option whose default is
    /// v3's 1000 ms (nothing in this test binary sets it).
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads an integer option.
        let default = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(default, 1000, "option {MI_OPTION_PURGE_DELAY} is not mimalloc's purge delay");
        release_freed_memory_soon();
        // SAFETY: as above.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, PURGE_DELAY_MS);
    }
}
