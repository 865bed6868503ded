//! Merging layers (defaults < files < environment < flags) into one
//! configuration that remembers where each value came from.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::de::{DeTable, DeValue};

use super::schema::Config;
use super::validation::{ConfigError, Place, Position, validate};

impl Config {
    /// Resolves a configuration file over the defaults. `path` is used only in
    /// messages and origins.
    pub fn from_toml(text: &str, path: impl AsRef<Path>) -> Result<ResolvedConfig, ConfigError> {
        let mut resolved = ResolvedConfig::default();
        resolved.merge_file(text, path)?;
        Ok(resolved)
    }
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Origin {
    /// The built-in default.
    #[default]
    Default,
    /// A configuration file.
    File(PathBuf),
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag, by name (e.g. `--max-tokens`).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Env(name) => write!(f, "environment variable {name}"),
            Origin::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// One leaf setting and where its value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigEntry {
    /// Dotted key, e.g. `context.hot.max-tokens` or `models."gpt-4.1".encoding`.
    pub key: String,
    pub value: serde_json::Value,
    pub origin: Origin,
}

/// The effective configuration and the origin of every value that is not a
/// default. Start from [`ResolvedConfig::default`] (or [`Config::from_toml`])
/// and apply layers in precedence order: files, then environment, then flags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResolvedConfig {
    config: Config,
    /// Leaf key -> where it was last set; absent keys are defaults.
    places: BTreeMap<String, Place>,
}

const DEFAULT_ORIGIN: Origin = Origin::Default;

impl ResolvedConfig {
    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn into_config(self) -> Config {
        self.config
    }

    /// Where the leaf `key` (dotted) got its value.
    pub fn origin(&self, key: &str) -> &Origin {
        self.places.get(key).map_or(&DEFAULT_ORIGIN, |place| &place.origin)
    }

    /// Applies a configuration file over the current settings. `path` is used
    /// only in messages and origins. On error nothing changes.
    pub fn merge_file(&mut self, text: &str, path: impl AsRef<Path>) -> Result<(), ConfigError> {
        self.apply(text, Origin::File(path.as_ref().to_owned()))
    }

    /// Sets one key, as a flag or environment variable would: `key` is a
    /// dotted TOML key, `value` a TOML value (`32000`, `"cl100k_base"`,
    /// `["simple-keyword"]`); text that is not a TOML value is taken as a
    /// string, so `cl100k_base` works unquoted. Checked like a file's values;
    /// on error nothing changes.
    pub fn set_override(&mut self, key: &str, value: &str, origin: Origin) -> Result<(), ConfigError> {
        let syntax =
            |message: String| ConfigError::Syntax { place: Place { origin: origin.clone(), position: None }, message };
        let segments = parse_key(key).ok_or_else(|| syntax(format!("`{key}` is not a configuration key")))?;
        let value = if DeValue::parse(value).is_ok() {
            value.to_owned()
        } else {
            toml::Value::String(value.to_owned()).to_string()
        };
        self.apply(&format!("{} = {value}\n", dotted(&segments)), origin)
    }

    /// Every leaf setting with its value and origin, sorted by key segment
    /// by segment (the order of [`Config::default_toml`]), so `gpt-4`,
    /// `gpt-4-turbo` and `"gpt-4.1"` stay together. Model and pipeline tables
    /// are flattened, as in `models.gpt-4o.context-window`; an unset
    /// `global-vault` or `store.url` is listed as null; a store URL's password
    /// is listed as `***`.
    pub fn entries(&self) -> Vec<ConfigEntry> {
        leaves(&self.config)
            .into_iter()
            .map(|(path, value)| {
                let key = dotted(&path);
                let origin = self.origin(&key).clone();
                // A store URL may hold a password: listings show it redacted.
                let value = match (key.as_str(), value) {
                    ("store.url", serde_json::Value::String(url)) => serde_json::Value::String(super::redact_url(&url)),
                    (_, value) => value,
                };
                ConfigEntry { key, value, origin }
            })
            .collect()
    }

    /// Merges the TOML `text` from `origin` over the current configuration.
    fn apply(&mut self, text: &str, origin: Origin) -> Result<(), ConfigError> {
        let in_file = matches!(origin, Origin::File(_));
        let place_at = |offset: Option<usize>| Place {
            origin: origin.clone(),
            position: offset.filter(|_| in_file).map(|offset| Position::at(text, offset)),
        };
        let layer = DeTable::parse(text).map_err(|error| ConfigError::Syntax {
            place: place_at(error.span().map(|span| span.start)),
            message: error.message().trim_end().to_owned(),
        })?;
        let layer = layer.into_inner();

        let current = toml::to_string(&self.config).expect("a configuration serializes to toml");
        let mut merged = DeTable::parse(&current).expect("a serialized configuration parses back");
        merge(merged.get_mut(), layer.clone());
        let config = Config::deserialize(toml::de::Deserializer::from(merged))
            .map_err(|error| self.schema_error(&error, &layer, place_at))?;

        // Serde reads a struct from an array too (`context = []`): a leaf of
        // the layer that is not a leaf of the result stood where a table goes.
        let settings = leaves(&config);
        let mut places = self.places.clone();
        let mut leaves = Vec::new();
        layer_leaves(&layer, &mut Vec::new(), &mut leaves);
        for (path, key_span) in leaves {
            let place = place_at(Some(key_span.start));
            if !settings.contains_key(&path) {
                return Err(ConfigError::WrongType {
                    place,
                    key: dotted(&path),
                    message: "expected a table".to_owned(),
                });
            }
            places.insert(dotted(&path), place);
        }
        validate(&config).map_err(|violation| ConfigError::OutOfRange {
            place: places.get(&violation.key).cloned().unwrap_or_else(|| place_at(None)),
            key: violation.key,
            message: violation.message,
        })?;
        self.config = config;
        self.places = places;
        Ok(())
    }

    /// Names the key of `layer` that a deserialization error points at.
    fn schema_error(
        &self,
        error: &toml::de::Error,
        layer: &DeTable<'_>,
        place_at: impl Fn(Option<usize>) -> Place,
    ) -> ConfigError {
        let offset = error.span().map(|span| span.start);
        let place = place_at(offset);
        let message = error.message().trim_end().to_owned();
        match offset.and_then(|offset| locate(layer, offset)) {
            Some((path, Hit::Key)) => ConfigError::UnknownKey {
                expected: self.keys_under(&path[..path.len() - 1]),
                key: dotted(&path),
                place,
            },
            Some((path, Hit::Value)) => ConfigError::WrongType { place, key: dotted(&path), message },
            None => ConfigError::Syntax { place, message },
        }
    }

    /// The keys of the table at `path` of the current configuration.
    fn keys_under(&self, path: &[String]) -> Vec<String> {
        let mut value = toml::Value::try_from(&self.config).expect("a configuration serializes to toml");
        for segment in path {
            match value {
                toml::Value::Table(mut table) => match table.remove(segment) {
                    Some(inner) => value = inner,
                    None => return Vec::new(),
                },
                _ => return Vec::new(),
            }
        }
        match value {
            toml::Value::Table(table) => table.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

/// Merges `layer` into `base`: tables merge key by key, anything else replaces.
fn merge<'i>(base: &mut DeTable<'i>, layer: DeTable<'i>) {
    for (key, value) in layer {
        let existing = base.get_mut(key.get_ref().as_ref()).map(toml::Spanned::get_mut);
        if let (Some(DeValue::Table(base_table)), DeValue::Table(_)) = (existing, value.get_ref()) {
            if let DeValue::Table(layer_table) = value.into_inner() {
                merge(base_table, layer_table);
            }
        } else {
            // Remove first so the key keeps the layer's span, not the base's.
            base.remove(key.get_ref().as_ref());
            base.insert(key, value);
        }
    }
}

/// What an error span fell on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hit {
    Key,
    Value,
}

/// The path of the key, or of the innermost value, of `table` at byte `offset`.
fn locate(table: &DeTable<'_>, offset: usize) -> Option<(Vec<String>, Hit)> {
    for (key, value) in table {
        if key.span().contains(&offset) {
            return Some((vec![key.get_ref().to_string()], Hit::Key));
        }
        if let DeValue::Table(inner) = value.get_ref()
            && let Some((mut path, hit)) = locate(inner, offset)
        {
            path.insert(0, key.get_ref().to_string());
            return Some((path, hit));
        }
    }
    table
        .iter()
        .find(|(_, value)| value.span().contains(&offset))
        .map(|(key, _)| (vec![key.get_ref().to_string()], Hit::Value))
}

/// The leaves of `table` (anything not a table) with the span of their key.
fn layer_leaves(table: &DeTable<'_>, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Range<usize>)>) {
    for (key, value) in table {
        path.push(key.get_ref().to_string());
        match value.get_ref() {
            DeValue::Table(inner) => layer_leaves(inner, path, out),
            _ => out.push((path.clone(), key.span())),
        }
        path.pop();
    }
}

/// Every leaf of `config` as (path, value), sorted by path.
pub(super) fn leaves(config: &Config) -> BTreeMap<Vec<String>, serde_json::Value> {
    let value = serde_json::to_value(config).expect("a configuration serializes to json");
    let mut leaves = BTreeMap::new();
    flatten_json(&value, &mut Vec::new(), &mut leaves);
    leaves
}

fn flatten_json(value: &serde_json::Value, path: &mut Vec<String>, out: &mut BTreeMap<Vec<String>, serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                path.push(key.clone());
                flatten_json(inner, path, out);
                path.pop();
            }
        }
        leaf => {
            out.insert(path.clone(), leaf.clone());
        }
    }
}

/// The segments of a dotted TOML key, or `None` when `key` is not one key.
pub(super) fn parse_key(key: &str) -> Option<Vec<String>> {
    if key.contains(['\n', '\r']) {
        return None;
    }
    let document = format!("{key} = 0\n");
    let table = DeTable::parse(&document).ok()?;
    let mut leaves = Vec::new();
    layer_leaves(table.get_ref(), &mut Vec::new(), &mut leaves);
    match leaves.as_slice() {
        [(path, _)] => Some(path.clone()),
        _ => None,
    }
}

/// `segments` as a dotted TOML key.
pub(super) fn dotted(segments: &[impl AsRef<str>]) -> String {
    segments.iter().map(|segment| key_segment(segment.as_ref())).collect::<Vec<_>>().join(".")
}

/// `segment` bare when TOML allows it, else quoted.
pub(super) fn key_segment(segment: &str) -> String {
    let bare = !segment.is_empty() && segment.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare { segment.to_owned() } else { toml::Value::String(segment.to_owned()).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::*;
    use crate::config::*;
    use crate::tokens::Encoding;

    #[test]
    fn partial_file_merges_with_defaults() {
        let resolved = resolve("[context.hot]\nmax-tokens = 32000\n\n[index]\nhidden = true\n");
        let config = resolved.config();
        assert_eq!(config.context.hot.max_tokens, 32000);
        assert!(config.index.hidden);
        assert_eq!(config.context.warm, WarmConfig::default());
        assert_eq!(resolved.origin("context.hot.max-tokens"), &Origin::File(PATH.into()));
        assert_eq!(resolved.origin("index.hidden"), &Origin::File(PATH.into()));
        assert_eq!(resolved.origin("context.warm.max-decisions"), &Origin::Default);
        assert_eq!(resolve("").config(), &Config::default());

        let mut resolved = resolve("global-vault = \"/vault\"\n");
        resolved.set_override("index.hidden", "true", Origin::Flag("--hidden".into())).unwrap();
        assert_eq!(resolved.config().global_vault.as_deref(), Some("/vault"));
        assert_eq!(resolved.origin("global-vault"), &Origin::File(PATH.into()));
    }

    #[test]
    fn later_layers_win_and_flags_are_recorded() {
        let mut resolved = resolve("[context.hot]\nmax-tokens = 32000\n");
        resolved.merge_file("[context.hot]\nmax-tokens = 8000\n", "project.toml").unwrap();
        assert_eq!(resolved.origin("context.hot.max-tokens"), &Origin::File("project.toml".into()));
        resolved.set_override("context.hot.max-tokens", "4000", Origin::Flag("--max-tokens".into())).unwrap();
        resolved.set_override("tokenizer.encoding", "cl100k_base", Origin::Env("AGENTS_ENCODING".into())).unwrap();
        assert_eq!(resolved.config().context.hot.max_tokens, 4000);
        assert_eq!(resolved.config().tokenizer.encoding, Encoding::Cl100kBase);
        assert_eq!(resolved.origin("context.hot.max-tokens"), &Origin::Flag("--max-tokens".into()));
        assert_eq!(resolved.origin("tokenizer.encoding"), &Origin::Env("AGENTS_ENCODING".into()));

        let error = resolved.set_override("context.hot.max-tokns", "1", Origin::Flag("--set".into())).unwrap_err();
        assert_eq!(error.to_string(), "flag --set: unknown key `context.hot.max-tokns`, expected `max-tokens`");
        let error = resolved.set_override("context.hot.max-tokens", "many", Origin::Flag("--set".into())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "flag --set: context.hot.max-tokens: invalid type: string \"many\", expected usize"
        );
        let error = resolved.set_override("context..hot", "1", Origin::Flag("--set".into())).unwrap_err();
        assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
        let error = resolved.set_override("a = 1\nb", "1", Origin::Flag("--set".into())).unwrap_err();
        assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
    }

    #[test]
    fn models_merge_with_the_builtins() {
        let text = "[models]\ndefault-model = \"local\"\n\n[models.local]\nencoding = \"cl100k_base\"\n\
                    context-window = 32768\n\n[models.gpt-4]\ncontext-window = 32768\n";
        let resolved = resolve(text);
        let config = resolved.config();
        assert_eq!(config.model("local"), Some(&ModelSpec { encoding: Encoding::Cl100kBase, context_window: 32768 }));
        // Overriding one key of a built-in keeps its other keys.
        assert_eq!(config.model("gpt-4"), Some(&ModelSpec { encoding: Encoding::Cl100kBase, context_window: 32768 }));
        assert_eq!(config.context_window("gpt-4o"), Some(128_000));
        assert_eq!(config.context_window("nope"), None);
        assert_eq!(config.models.default_model, "local");
        assert_eq!(resolved.origin("models.gpt-4.context-window"), &Origin::File(PATH.into()));
        assert_eq!(resolved.origin("models.gpt-4.encoding"), &Origin::Default);
        assert_eq!(config.tokenizer(Some("local")).encoding(), Encoding::Cl100kBase);
        assert_eq!(config.tokenizer(Some("nope")).encoding(), Encoding::O200kBase);

        let mut resolved = ResolvedConfig::default();
        resolved.set_override("models.\"gpt-4.1\".context-window", "1000000", Origin::Flag("--set".into())).unwrap();
        assert_eq!(resolved.config().context_window("gpt-4.1"), Some(1_000_000));
    }

    #[test]
    fn a_store_url_is_listed_without_its_password() {
        let mut resolved = resolve("[store]\nurl = \"postgres://team:s3cret@db:5432/agents\"\n");
        assert_eq!(resolved.config().store.url.as_deref(), Some("postgres://team:s3cret@db:5432/agents"));
        let listed = |resolved: &ResolvedConfig| {
            resolved.entries().into_iter().find(|e| e.key == "store.url").map(|e| (e.value, e.origin))
        };
        let (value, origin) = listed(&resolved).unwrap();
        assert_eq!(value, "postgres://team:***@db:5432/agents");
        assert_eq!(origin, Origin::File(PATH.into()));
        resolved
            .set_override("store.url", "postgres://ci@localhost/x", Origin::Env("AGENTS_STORE_URL".into()))
            .unwrap();
        assert_eq!(
            listed(&resolved).unwrap(),
            ("postgres://ci@localhost/x".into(), Origin::Env("AGENTS_STORE_URL".into()))
        );
        assert_eq!(crate::config::redact_url("postgres://a:b@h/d?password=c"), "postgres://a:***@h/d?password=***");
    }

    #[test]
    fn entries_are_sorted_and_cover_every_leaf() {
        let entries = ResolvedConfig::default().entries();
        let keys: Vec<Vec<String>> = entries.iter().map(|entry| parse_key(&entry.key).unwrap()).collect();
        assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
        let models: Vec<&str> =
            entries.iter().filter_map(|entry| entry.key.strip_prefix("models.")?.strip_suffix(".encoding")).collect();
        assert_eq!(&models[2..6], ["\"gpt-3.5-turbo\"", "gpt-4", "gpt-4-turbo", "\"gpt-4.1\""]);
        // 14 spec keys + 10 pipeline + response-reserve + 3 executor + 4 scorer
        // + 2 tokenizer + default-model + 2 per model + 5 index + global-vault + store.url
        // + 3 vector backend keys + tool-definitions + 7 phase keys (strategies
        // and tiers of three phases, apply's depth).
        assert_eq!(entries.len(), 14 + 10 + 1 + 3 + 4 + 1 + 2 + 1 + 2 * BUILTIN_MODELS.len() + 5 + 1 + 1 + 3 + 1 + 7);
    }
}
