//! `agents knowledge init|validate|build`: the repository's `knowledge/`
//! folder over the global vault (AKMS). Thin: find the repository and the
//! vault, call `agents_akms`, print.

use std::path::{Path, PathBuf};

use agents_akms::vault::{Layout, expand_home, find_repo_root};
use agents_akms::{AkmsError, CompileOptions, DEFAULT_CONFIG_YAML, Diagnostic};
use serde::Serialize;

use crate::cli::{KnowledgeArgs, KnowledgeCommand};
use crate::exit::UsageError;
use crate::settings::Settings;

/// The global vault when nothing configures one (spec 4.8).
const DEFAULT_GLOBAL_VAULT: &str = "~/.claude/akms/nodes";

pub fn run(settings: &Settings, args: KnowledgeArgs) -> anyhow::Result<()> {
    let printer = settings.printer;
    match args.command {
        KnowledgeCommand::Init => {
            let root = match &args.repo {
                Some(repo) => existing_dir(repo)?,
                None => {
                    let cwd = std::env::current_dir()?;
                    find_repo_root(&cwd).unwrap_or(cwd)
                }
            };
            let (layout, _) = resolve(settings, Some(&root))?;
            let report = init(&layout.repo_root)?;
            printer.emit(&report, || {
                let mut out = format!("Initialised {}\n", report.knowledge.display());
                for path in &report.created {
                    out.push_str(&format!("  created {path}\n"));
                }
                for path in &report.kept {
                    out.push_str(&format!("  kept    {path}\n"));
                }
                out
            })
        }
        KnowledgeCommand::Validate { paths } => {
            let (layout, options) = resolve(settings, args.repo.as_deref())?;
            let diagnostics = if paths.is_empty() {
                agents_akms::check(&layout, &options)
            } else {
                for path in &paths {
                    if !path.exists() {
                        return Err(UsageError(format!("{}: no such file or directory", path.display())).into());
                    }
                }
                agents_akms::check_paths(&layout, &paths)
            };
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let report = ValidateReport {
                repo: &layout.repo_root,
                global_vault: &layout.global_vault,
                errors,
                warnings: diagnostics.len() - errors,
                diagnostics: &diagnostics,
            };
            printer.emit(&report, || {
                let mut out: String = diagnostics.iter().map(|d| format!("{}: {d}\n", severity(d))).collect();
                if diagnostics.is_empty() {
                    out.push_str("No problems found\n");
                }
                out
            })?;
            if errors > 0 {
                let s = if errors == 1 { "" } else { "s" };
                return Err(UsageError(format!("{errors} error{s} in the knowledge sources")).into());
            }
            Ok(())
        }
        KnowledgeCommand::Build => {
            let (layout, options) = resolve(settings, args.repo.as_deref())?;
            let compiled = agents_akms::build(&layout, &options).map_err(into_anyhow)?;
            if !compiled.global_vault_found {
                printer.note(format!(
                    "note: no global vault at {}; built from local sources only",
                    layout.global_vault.display()
                ));
            }
            for warning in &compiled.warnings {
                printer.note(format!("warning: {warning}"));
            }
            let path = layout.graph_json();
            let report = BuildReport { graph: &path, compiled: &compiled };
            printer.emit(&report, || {
                let origins: Vec<String> =
                    compiled.nodes_by_origin.iter().map(|(origin, n)| format!("{n} {origin}")).collect();
                let origins = if origins.is_empty() { String::new() } else { format!(" ({})", origins.join(", ")) };
                format!(
                    "Built {}: {} nodes{origins}, {} edges\n",
                    layout.display(&path).display(),
                    compiled.node_count,
                    compiled.edge_count
                )
            })
        }
    }
}

#[derive(Serialize)]
struct ValidateReport<'a> {
    repo: &'a Path,
    global_vault: &'a Path,
    errors: usize,
    warnings: usize,
    diagnostics: &'a [Diagnostic],
}

#[derive(Serialize)]
struct BuildReport<'a> {
    graph: &'a Path,
    #[serde(flatten)]
    compiled: &'a agents_akms::Compiled,
}

#[derive(Serialize)]
struct InitReport {
    knowledge: PathBuf,
    created: Vec<String>,
    kept: Vec<String>,
}

fn severity(d: &Diagnostic) -> &'static str {
    if d.is_error() { "error" } else { "warning" }
}

/// Bad sources are the user's input (exit 2); IO failures are failures.
fn into_anyhow(error: AkmsError) -> anyhow::Error {
    if error.is_bad_input() { UsageError(error.to_string()).into() } else { error.into() }
}

fn existing_dir(path: &Path) -> anyhow::Result<PathBuf> {
    if !path.is_dir() {
        return Err(UsageError(format!("--repo {}: not a directory", path.display())).into());
    }
    Ok(path.to_path_buf())
}

/// The repository and the global vault: $AKMS_GLOBAL_VAULT (merged into the
/// configuration by the settings), the configuration's `global-vault`, the
/// repository's propagation_config.yaml, the default.
fn resolve(settings: &Settings, repo: Option<&Path>) -> anyhow::Result<(Layout, CompileOptions)> {
    let root = match repo {
        Some(repo) => existing_dir(repo)?,
        None => {
            let cwd = std::env::current_dir()?;
            find_repo_root(&cwd).ok_or_else(|| {
                UsageError(format!(
                    "no knowledge/ folder in {} or above: run `agents knowledge init` or pass --repo",
                    cwd.display()
                ))
            })?
        }
    };
    let mut layout = Layout::new(root, PathBuf::new());
    let from_repo = match agents_akms::read_config(&layout) {
        Ok(config) => config.global_vault,
        // Reported by validate and build with the other problems.
        Err(_) => None,
    };
    let display =
        settings.config.config().global_vault.clone().or(from_repo).unwrap_or_else(|| DEFAULT_GLOBAL_VAULT.to_owned());
    layout.global_vault = expand_home(&display, dirs::home_dir().as_deref());
    // The vault is read-only: a repository inside it would write there.
    if let (Ok(repo), Ok(vault)) = (layout.repo_root.canonicalize(), layout.global_vault.canonicalize())
        && repo.starts_with(&vault)
    {
        return Err(UsageError(format!(
            "{} is inside the global vault, which is read-only",
            layout.repo_root.display()
        ))
        .into());
    }
    Ok((layout, CompileOptions { global_vault_display: display }))
}

/// Creates the folders of `knowledge/` and the default config, keeping
/// whatever is already there.
fn init(root: &Path) -> anyhow::Result<InitReport> {
    let layout = Layout::new(root, PathBuf::new());
    let knowledge = layout.knowledge();
    let mut report = InitReport { knowledge: knowledge.clone(), created: Vec::new(), kept: Vec::new() };
    for dir in ["local-nodes", "code-mirror", "sessions", "loadouts", "graph"] {
        let path = knowledge.join(dir);
        let list = if path.is_dir() { &mut report.kept } else { &mut report.created };
        std::fs::create_dir_all(&path).map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", path.display()))?;
        list.push(format!("knowledge/{dir}/"));
    }
    let config = layout.propagation_config();
    let name = "knowledge/graph/propagation_config.yaml".to_owned();
    if config.exists() {
        report.kept.push(name);
    } else {
        agents_store::atomic_write(&config, DEFAULT_CONFIG_YAML.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", config.display()))?;
        report.created.push(name);
    }
    Ok(report)
}
