//! `agents config ...`: the effective configuration and its sources.

use serde::Serialize;

use crate::cli::ConfigCommand;
use crate::exit::UsageError;
use crate::output::table;
use crate::settings::Settings;

/// One row of `agents config show --json`.
#[derive(Serialize)]
struct EntryView {
    key: String,
    value: serde_json::Value,
    source: String,
}

#[derive(Serialize)]
struct ConfigPath {
    path: String,
    exists: bool,
    home: String,
}

pub fn run(settings: &Settings, cmd: ConfigCommand) -> anyhow::Result<()> {
    let printer = settings.printer;
    match cmd {
        ConfigCommand::Show => {
            let entries: Vec<EntryView> = settings
                .config
                .entries()
                .into_iter()
                .map(|e| EntryView { key: e.key, value: e.value, source: e.origin.to_string() })
                .collect();
            printer.emit(&entries, || {
                let mut t = table(&["key", "value", "source"]);
                for e in &entries {
                    t.add_row(vec![e.key.clone(), e.value.to_string(), e.source.clone()]);
                }
                format!("{t}\n")
            })
        }
        ConfigCommand::Path => {
            let path = settings.config_file.clone().unwrap_or_else(|| settings.home.config_file());
            let view = ConfigPath {
                exists: path.exists(),
                path: path.display().to_string(),
                home: settings.home.root().display().to_string(),
            };
            printer.emit(&view, || {
                format!("{}{}", view.path, if view.exists { "" } else { " (not created yet: agents config init)" })
            })
        }
        ConfigCommand::Init { force } => {
            let path = settings.config_file.clone().unwrap_or_else(|| settings.home.config_file());
            if path.exists() && !force {
                return Err(UsageError(format!("{}: already exists; pass --force to overwrite", path.display())).into());
            }
            settings.home.write_default_config(&path)?;
            let view = ConfigPath {
                exists: true,
                path: path.display().to_string(),
                home: settings.home.root().display().to_string(),
            };
            printer.emit(&view, || format!("Wrote the default configuration to {}", view.path))
        }
    }
}
