//! The seam between a run and the knowledge it composes: [`Knowledge`], the
//! operations a run asks of AKMS (implemented by the caller over the real
//! compiler, search index and loadouts; by stand-ins in tests), and
//! [`LoadoutSpec`], how it asks for a loadout. [`check_memory`] is the one
//! operation done here, with the knowledge crate's validator.

use std::path::{Path, PathBuf};

use agents_akms::bounded::{Cap, MAX_SESSION_BYTES, ReadError, read_text};
use agents_akms::config::OrchestratorConfig;
use agents_akms::{AkmsError, Diagnostic};

use crate::plan::Plan;

/// The AKMS operations a run composes; the CLI implements it with the real
/// compiler, search index, loadouts and updater (the operations that need
/// its settings and stores), tests with stand-ins. A failure names what
/// failed ([`KnowledgeError`]); the stage that called adds which operation
/// it was and goes to the checkpoint. `check_memory` is called from the
/// threads that wait for agents, as each one ends.
pub trait Knowledge: Sync {
    /// Compiles `graph.json` from the sources.
    fn build(&self) -> Result<(), KnowledgeError>;
    /// Fills a record's empty `akms_tags` by derivation (4.5), logging where
    /// each came from; returns the record's tags afterwards.
    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, KnowledgeError>;
    /// Writes the loadout of the task in `task_file` as `spec` asks, sets the
    /// record's `loadout_path`, and returns the loadout's path.
    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, KnowledgeError>;
    /// Validates an AgentMemory (4.3); by default as `agents knowledge
    /// update` validates it ([`check_memory`]).
    fn check_memory(&self, memory: &Path) -> Result<(), KnowledgeError> {
        check_memory(memory)
    }
    /// Applies evidence documents (AgentMemory or PCD) and recompiles;
    /// returns a summary of what changed.
    fn update(&self, documents: &[PathBuf]) -> Result<String, KnowledgeError>;
    /// Regenerates the code mirror of these repository paths; returns a
    /// summary of what it wrote.
    fn mirror(&self, files: &[String]) -> Result<String, KnowledgeError>;
    /// The AKMS status for a checkpoint: node changes, pitfalls, tentative nodes.
    fn status(&self) -> Result<String, KnowledgeError>;
    /// The review report (5.7, FR-R01) of a phase.
    fn review(&self, phase: u32) -> Result<String, KnowledgeError>;
}

/// Why a knowledge operation failed.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    /// The knowledge crate failed or refused: a compile, an update, a mirror.
    #[error(transparent)]
    Akms(#[from] AkmsError),
    /// An AgentMemory that cannot be read: missing, not a regular file, or
    /// over the session files' cap.
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: ReadError },
    /// An AgentMemory the evidence validator (4.3) refuses: every problem
    /// it found, each naming the file, line and field.
    #[error("{}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidEvidence { path: PathBuf, problems: Vec<Diagnostic> },
    /// What the implementation adds around the knowledge crate failed (its
    /// knowledge lock, search index, loadout writer or report), shown with
    /// its chain of causes.
    #[error("{}", with_causes(.0.as_ref()))]
    Adapter(Box<dyn std::error::Error + Send + Sync>),
}

/// An error and its causes, `: `-separated (as `anyhow` shows a chain).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        out.push_str(": ");
        out.push_str(&next.to_string());
        cause = next.source();
    }
    out
}

/// The largest AgentMemory read.
const SESSION_CAP: Cap = Cap::new(MAX_SESSION_BYTES, "a fixed limit for session files");

/// Validates an AgentMemory with the validator `agents knowledge update`
/// applies (4.3), reading it bounded: a task whose memory fails here never
/// counts as complete.
pub fn check_memory(memory: &Path) -> Result<(), KnowledgeError> {
    let text = read_text(memory, None, SESSION_CAP)
        .map_err(|source| KnowledgeError::Unreadable { path: memory.to_owned(), source })?;
    agents_akms::evidence::parse_evidence(memory, &text)
        .map(|_| ())
        .map_err(|problems| KnowledgeError::InvalidEvidence { path: memory.to_owned(), problems })
}

/// How the orchestrator asks for a loadout: the role, the phase (recorded in
/// the loadout's header) and the agents' context budget, from which the
/// loadout's mode is chosen (spec 5.4; the plan's `model_context_limit` and
/// `system_prompt_tokens`, else the `orchestrator` settings').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadoutSpec {
    /// The role the loadout is for (`implementer`, a reviewer role).
    pub role: String,
    /// The phase, recorded in the loadout's header.
    pub phase: u32,
    /// The agents' context window, in tokens, when known.
    pub context_limit: Option<u64>,
    /// Tokens the agents' system prompt takes from that window.
    pub system_prompt_tokens: u64,
}

impl LoadoutSpec {
    /// The loadout of `role` in `phase` of `plan`, with the plan's budget,
    /// else the one `config` sets for every plan.
    pub(crate) fn of(plan: &Plan, config: &OrchestratorConfig, role: &str, phase: u32) -> LoadoutSpec {
        LoadoutSpec {
            role: role.to_owned(),
            phase,
            context_limit: plan.model_context_limit.or(config.model_context_limit),
            system_prompt_tokens: match plan.system_prompt_tokens {
                0 => config.system_prompt_tokens,
                tokens => tokens,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMORY: &str = "---\ntask_id: T1\nstatus: complete\ntests_passed: 2\ntests_total: 2\nagent_model: stand-in\nnodes_used: []\nloadout_used: knowledge/loadouts/T1.md\nphase_id: 1\ntask_description: one\ntimestamp: 2026-11-30T10:00:00Z\nakms_schema: v2\n---\n";

    #[test]
    fn a_memory_is_checked_with_the_updates_validator_and_a_failure_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.md");
        std::fs::write(&good, MEMORY).unwrap();
        check_memory(&good).unwrap();
        let bad = dir.path().join("bad.md");
        std::fs::write(&bad, MEMORY.replace("timestamp: 2026-11-30T10:00:00Z\n", "")).unwrap();
        let e = check_memory(&bad).unwrap_err();
        assert!(matches!(&e, KnowledgeError::InvalidEvidence { path, .. } if path == &bad), "{e:?}");
        assert!(
            e.to_string().contains("bad.md") && e.to_string().contains("timestamp: required field is missing"),
            "{e}"
        );
        let missing = dir.path().join("missing.md");
        let e = check_memory(&missing).unwrap_err();
        assert!(matches!(&e, KnowledgeError::Unreadable { path, .. } if path == &missing), "{e:?}");
        assert_eq!(e.to_string(), format!("{}: does not exist", missing.display()));
    }

    #[test]
    fn an_adapters_error_keeps_its_chain_of_causes() {
        let cause = anyhow::anyhow!("disk full").context("cannot write the knowledge index");
        let e = KnowledgeError::Adapter(cause.into());
        assert_eq!(e.to_string(), "cannot write the knowledge index: disk full");
    }
}
