//! The knowledge operations of one repository as the orchestrator asks for
//! them ([`agents_orchestrator::Knowledge`]): the one place the orchestrator
//! reaches what only the CLI holds (its settings, the knowledge lock's
//! folder, the knowledge search index, the loadout index). Each operation
//! that writes takes the repository's knowledge lock, calls the knowledge
//! crate, keeps the search index in step with the compiled graph, and
//! renders its report for the checkpoint.

use std::path::{Path, PathBuf};

use agents_akms::CompileOptions;
use agents_akms::vault::Layout;
use agents_orchestrator::{Knowledge, KnowledgeError, LoadoutSpec};

use crate::commands::feedback::{describe, health_of, review_text};
use crate::commands::knowledge::{derive_task_tags, index_knowledge, lock_knowledge};
use crate::commands::loadout::{LoadoutOptions, for_task};
use crate::settings::Settings;

/// The knowledge of one repository, with the settings that locate its
/// lock and indexes.
pub(super) struct RepoKnowledge<'a> {
    pub(super) settings: &'a Settings,
    pub(super) layout: Layout,
    pub(super) options: CompileOptions,
}

/// A failure of the CLI's own part of an operation, its causes kept.
fn adapter(e: anyhow::Error) -> KnowledgeError {
    KnowledgeError::Adapter(e.into())
}

impl Knowledge for RepoKnowledge<'_> {
    fn build(&self) -> Result<(), KnowledgeError> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(adapter)?;
        let compiled = agents_akms::build(&self.layout, &self.options)?;
        index_knowledge(self.settings, &self.layout, &compiled).map_err(adapter)?;
        Ok(())
    }

    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, KnowledgeError> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(adapter)?;
        let report = derive_task_tags(&self.layout, &self.options, task_file, false).map_err(adapter)?;
        Ok(if report.kept.is_empty() { report.derived.into_iter().map(|d| d.tag).collect() } else { report.kept })
    }

    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, KnowledgeError> {
        let options = LoadoutOptions {
            role: spec.role.clone(),
            context_limit: spec.context_limit,
            system_prompt_tokens: spec.system_prompt_tokens,
            no_search: false,
        };
        let phase = Some(spec.phase.to_string());
        let report = for_task(self.settings, &self.layout.repo_root, task_file, phase, &options).map_err(adapter)?;
        Ok(PathBuf::from(report.path))
    }

    fn update(&self, documents: &[PathBuf]) -> Result<String, KnowledgeError> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(adapter)?;
        let report = agents_akms::update::update(&self.layout, &self.options, documents)?;
        if let Some(compiled) = &report.compiled {
            index_knowledge(self.settings, &self.layout, compiled).map_err(adapter)?;
        }
        let mut out = String::new();
        for doc in &report.applied {
            out.push_str(&format!(
                "- applied `{}` as session `{}`\n",
                self.layout.display(&doc.file).display(),
                doc.session
            ));
            for entry in report.changes.iter().filter(|e| e.session == doc.session) {
                out.push_str(&format!("  - `{}`\n", describe(&entry.change)));
            }
        }
        for doc in &report.skipped {
            out.push_str(&format!("- skipped `{}`: already applied\n", self.layout.display(&doc.file).display()));
        }
        Ok(out)
    }

    fn mirror(&self, files: &[String]) -> Result<String, KnowledgeError> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(adapter)?;
        let report = agents_akms::mirror::mirror_files(
            &self.layout.repo_root,
            files,
            &agents_akms::mirror::MirrorOptions::default(),
        )?;
        let mut out = format!(
            "{} written, {} unchanged, {} removed, {} skipped",
            report.written.len(),
            report.unchanged.len(),
            report.removed.len(),
            report.skipped.len()
        );
        for drift in &report.drift {
            out.push_str(&format!("; docstring drift in `{}` (set to draft)", drift.file));
        }
        out.push('\n');
        Ok(out)
    }

    fn status(&self) -> Result<String, KnowledgeError> {
        let health = health_of(&self.layout, &self.options, None).map_err(adapter)?;
        let review = health.review();
        let tentative: Vec<&str> =
            health.nodes.iter().filter(|n| n.status == "tentative").map(|n| n.id.as_str()).collect();
        Ok(format!(
            "{} node(s) in the report table; tentative: {}; degraded: {}; new pitfalls: {}; dedup events: {}; id collisions: {}\n",
            health.nodes.len(),
            list(&tentative),
            list(&review.degraded.iter().map(String::as_str).collect::<Vec<_>>()),
            review.new_pitfalls.len(),
            review.dedup.len(),
            review.collisions.len(),
        ))
    }

    fn review(&self, phase: u32) -> Result<String, KnowledgeError> {
        let health = health_of(&self.layout, &self.options, Some(i64::from(phase))).map_err(adapter)?;
        Ok(format!("```text\n{}```\n", review_text(&health)))
    }
}

fn list(items: &[&str]) -> String {
    if items.is_empty() { "none".to_owned() } else { items.join(", ") }
}
