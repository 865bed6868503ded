//! Configuration: the schema of `config.toml`, its defaults, and where each
//! setting came from.
//!
//! Settings resolve once, in layers: built-in defaults < configuration files <
//! environment < command-line flags. [`ResolvedConfig`] holds the effective
//! [`Config`] and, for every leaf key, the [`Origin`] of its value, so
//! `agents config show` can say why a value is what it is.
//!
//! The module is pure: callers read files and the environment and hand the
//! text over with a path or a name used only in messages. Every error names
//! the place (`path:line:column`, or the flag) and the full dotted key, e.g.
//! `config.toml:3:1: unknown key `context.hot.max-tokns``.
//!
//! How a layer is applied: the current configuration is serialized and parsed
//! back as a spanned TOML tree, the layer's tree is merged into it key by key,
//! and the merged tree is deserialized with `deny_unknown_fields` everywhere.
//! The nodes that came from the layer keep their byte spans, so a schema error
//! points into the layer's own text; walking the layer's tree for the node at
//! that span gives the dotted key. Range checks run after deserialization.
//!
//! Keys are written as TOML dotted keys; a segment that is not a bare key is
//! quoted, as in `models."gpt-4.1".context-window`.
//!
//! The module is split by concern: `schema` holds the typed settings and
//! their defaults, `layering` merges the layers and records origins,
//! `validation` holds the range checks and [`ConfigError`], `docs` the
//! description of every key, `components` the table of the ten pipeline
//! components that `[context.pipeline]`, the key docs, the pipeline builder
//! and the assembly trace all read, and `names` the error of a name outside a
//! closed set (a component, a backend).

mod components;
mod docs;
mod layering;
mod names;
mod schema;
mod validation;

pub use components::PipelineComponent;
pub use layering::{ConfigEntry, Origin, ResolvedConfig};
pub use names::UnknownName;
pub use schema::*;
pub use validation::{ConfigError, Place, Position};

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the tests of the config modules.

    use super::{Config, ResolvedConfig};

    pub(crate) const PATH: &str = "config.toml";

    pub(crate) fn resolve(text: &str) -> ResolvedConfig {
        Config::from_toml(text, PATH).unwrap_or_else(|error| panic!("{error}"))
    }

    /// The error `text` is rejected with, displayed.
    pub(crate) fn rejection(text: &str) -> String {
        match Config::from_toml(text, PATH) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(error) => error.to_string(),
        }
    }

    pub(crate) fn value_of(resolved: &ResolvedConfig, key: &str) -> serde_json::Value {
        let entries = resolved.entries();
        let entry = entries.iter().find(|entry| entry.key == key);
        entry.unwrap_or_else(|| panic!("no entry {key}")).value.clone()
    }
}
