//! The seam between a run and the knowledge it composes: [`Knowledge`], the
//! operations a run asks of AKMS (implemented by the caller over the real
//! compiler, search index and loadouts; by stand-ins in tests), and
//! [`LoadoutSpec`], how it asks for a loadout.

use std::path::{Path, PathBuf};

use agents_akms::config::OrchestratorConfig;

use crate::plan::Plan;

/// The AKMS operations a run composes; the CLI implements it with the real
/// compiler, loadouts and updater, tests with stand-ins. Errors are messages
/// for the checkpoint. `check_memory` is called from the threads that wait
/// for agents, as each one ends.
pub trait Knowledge: Sync {
    /// Compiles `graph.json` from the sources.
    fn build(&self) -> Result<(), String>;
    /// Fills a record's empty `akms_tags` by derivation (4.5), logging where
    /// each came from; returns the record's tags afterwards.
    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, String>;
    /// Writes the loadout of the task in `task_file` as `spec` asks, sets the
    /// record's `loadout_path`, and returns the loadout's path.
    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, String>;
    /// Validates an AgentMemory (4.3).
    fn check_memory(&self, memory: &Path) -> Result<(), String>;
    /// Applies evidence documents (AgentMemory or PCD) and recompiles;
    /// returns a summary of what changed.
    fn update(&self, documents: &[PathBuf]) -> Result<String, String>;
    /// Regenerates the code mirror of these repository paths.
    fn mirror(&self, files: &[String]) -> Result<String, String>;
    /// The AKMS status for a checkpoint: node changes, pitfalls, tentative nodes.
    fn status(&self) -> Result<String, String>;
    /// The review report (5.7, FR-R01) of a phase.
    fn review(&self, phase: u32) -> Result<String, String>;
}

/// How the orchestrator asks for a loadout: the role, the phase (recorded in
/// the loadout's header) and the agents' context budget, from which the
/// loadout's mode is chosen (spec 5.4; the plan's `model_context_limit` and
/// `system_prompt_tokens`, else the `orchestrator` settings').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadoutSpec {
    pub role: String,
    pub phase: u32,
    pub context_limit: Option<u64>,
    pub system_prompt_tokens: u64,
}

impl LoadoutSpec {
    /// The loadout of `role` in `phase` of `plan`, with the plan's budget,
    /// else the one `config` sets for every plan.
    pub fn of(plan: &Plan, config: &OrchestratorConfig, role: &str, phase: u32) -> LoadoutSpec {
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
