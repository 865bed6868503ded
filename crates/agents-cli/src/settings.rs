//! Settings, resolved once per invocation: defaults < config file < env < flags.

use std::path::PathBuf;

use agents_core::config::{Config, ResolvedConfig};
use agents_engine::{Engine, Home};
use anyhow::Context;

use crate::cli::GlobalArgs;
use crate::exit::UsageError;
use crate::output::Printer;

pub struct Settings {
    pub home: Home,
    pub config: ResolvedConfig,
    /// The configuration file that was read, if any.
    pub config_file: Option<PathBuf>,
    pub printer: Printer,
    /// Whether progress bars may be drawn.
    pub progress: bool,
}

impl Settings {
    pub fn resolve(global: &GlobalArgs) -> anyhow::Result<Settings> {
        let home = match &global.home {
            Some(dir) => dir.clone(),
            None => dirs::data_dir()
                .map(|d| d.join("agents"))
                .ok_or_else(|| UsageError("cannot find a data directory for the home; set AGENTS_HOME".into()))?,
        };
        let home = Home::new(home);
        let (config_file, explicit) = match &global.config {
            Some(path) => (path.clone(), true),
            None => (home.config_file(), false),
        };
        let (config, config_file) = match std::fs::read_to_string(&config_file) {
            Ok(text) => (Config::from_toml(&text, &config_file)?, Some(config_file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => (ResolvedConfig::default(), None),
            Err(e) => {
                return Err(UsageError(format!("{}: cannot read configuration: {e}", config_file.display())).into());
            }
        };
        let mut config = config;
        if let Ok(model) = std::env::var("AGENTS_EMBEDDING_MODEL") {
            let origin = agents_core::config::Origin::Env("AGENTS_EMBEDDING_MODEL".into());
            config.set_override("context.backends.embedding-model", &model, origin)?;
        }
        if let Ok(vault) = std::env::var("AKMS_GLOBAL_VAULT") {
            let origin = agents_core::config::Origin::Env("AKMS_GLOBAL_VAULT".into());
            // Quoted, so a path is never read as another TOML value.
            config.set_override("global-vault", &serde_json::to_string(&vault)?, origin)?;
        }
        if let Ok(url) = std::env::var(agents_engine::STORE_URL_ENV) {
            let origin = agents_core::config::Origin::Env(agents_engine::STORE_URL_ENV.into());
            // Quoted, so the URL is never read as another TOML value.
            config.set_override("store.url", &serde_json::to_string(&url)?, origin)?;
        }
        let printer = Printer { json: global.json, quiet: global.quiet };
        Ok(Settings { home, config, config_file, printer, progress: !global.quiet && !global.json })
    }

    /// Opens the engine (creating the home on first use).
    pub fn engine(&self) -> anyhow::Result<Engine> {
        let engine = Engine::open(self.home.clone(), self.config.clone()).with_context(|| {
            match &self.config.config().store.url {
                // The store's own errors name the server (its URL, redacted).
                Some(_) => "cannot open the team store".to_owned(),
                None => format!("cannot open the store in {}", self.home.root().display()),
            }
        })?;
        if engine.stale_repaired() > 0 {
            self.printer.note(format!(
                "repaired {} index(es) left `indexing` by an interrupted run (now `stale`)",
                engine.stale_repaired()
            ));
        }
        Ok(engine)
    }
}
