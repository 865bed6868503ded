//! The one-line description of every key, and the commented default file
//! `agents config init` writes.

use super::components::PipelineComponent;
use super::layering::{dotted, key_segment};
use super::schema::Config;

impl Config {
    /// A complete configuration file with every key at its default and a
    /// comment on each, for `agents config init`. It parses back to
    /// [`Config::default`].
    pub fn default_toml() -> String {
        let table =
            toml::Table::try_from(Config::default()).expect("the default configuration serializes to a toml table");
        let mut out = String::from(
            "# Configuration of `agents`, every key at its built-in default.\n\
             # Settings resolve as: defaults < configuration files < environment < flags.\n\
             # Delete a key to follow the built-in default.\n\n",
        );
        out.push_str(&format!("# {}\n# global-vault = \"/path/to/vault\"\n", describe(&["global-vault"])));
        out.push_str(&format!(
            "\n# [store]\n# {}\n# url = \"postgres://user:password@host:5432/agents\"\n",
            describe(&["store", "url"])
        ));
        render_table(&mut out, &mut Vec::new(), &table);
        out
    }
}

/// Writes the leaves of `table` under a `[path]` header, then its sub-tables.
fn render_table(out: &mut String, path: &mut Vec<String>, table: &toml::Table) {
    let (tables, leaves): (Vec<_>, Vec<_>) = table.iter().partition(|(_, value)| value.is_table());
    if !leaves.is_empty() {
        out.push('\n');
        if !path.is_empty() {
            for line in describe_section(path).into_iter().flat_map(str::lines) {
                out.push_str(&format!("# {line}\n"));
            }
            out.push_str(&format!("[{}]\n", dotted(path)));
        }
        for (key, value) in leaves {
            path.push(key.clone());
            out.push_str(&format!("# {}\n{} = {value}\n", describe(path), key_segment(key)));
            path.pop();
        }
    }
    for (key, value) in tables {
        if let toml::Value::Table(inner) = value {
            path.push(key.clone());
            render_table(out, path, inner);
            path.pop();
        }
    }
}

/// One line on each key; `*` matches any model name or phase. The keys of
/// `[context.pipeline]` are described by [`PipelineComponent::description`].
const KEY_DOCS: &[(&str, &str)] = &[
    ("global-vault", "directory of the global knowledge vault shared by every project (unset by default)"),
    ("context.budget.min-useful-budget", "smallest budget worth assembling context for, in tokens"),
    ("context.backends.text", "full-text search engine: tantivy or fts5"),
    ("context.backends.vector", "vector search engine: local or none"),
    (
        "context.backends.embedding-model",
        "directory of the embedding model (empty: $AGENTS_HOME/models/minilm-code-static)",
    ),
    ("context.backends.ann-threshold", "vectors from which searches use the HNSW graph instead of an exact scan"),
    ("context.budget.refresh-threshold", "relative budget change that triggers a context refresh, 0 to 1"),
    ("context.budget.response-reserve", "tokens kept free for the model's response"),
    ("context.budget.tool-definitions", "tokens the caller's tool definitions take in the model's window"),
    ("context.budget.skeleton-ratio", "share of the budget a skeleton of the parent plan may use, 0 to 1"),
    ("context.cold.max-decisions", "most decisions the cold tier keeps"),
    ("context.cold.retention-days", "days a decision stays in the cold tier"),
    ("context.executor.circuit-breaker-threshold", "consecutive failures after which a strategy is skipped"),
    ("context.executor.max-workers", "strategies run at once"),
    ("context.executor.timeout-secs", "seconds a strategy may run"),
    ("context.file.max-size", "largest single file taken into context, in bytes (1 MB)"),
    ("context.file.max-total-size", "largest total of files taken into context, in bytes (50 MB)"),
    ("context.hot.max-tokens", "hot tier token budget"),
    (
        "context.query.min-relevance",
        "candidates whose relevance (0 to 1) is below this only fill what the others leave of the budget",
    ),
    ("context.phases.*.strategies", "preferred strategies of this plan phase (empty: the registry chooses)"),
    ("context.phases.*.depth", "depth a query of this phase starts from, 0-9 or a level name (unset: the command's)"),
    ("context.phases.*.tiers", "tiers whose context entries join this phase's assembly: hot, warm, cold"),
    ("context.scorer.hierarchy", "weight of the hierarchy position in the fragment score"),
    ("context.scorer.quality", "weight of the strategy quality in the fragment score"),
    ("context.scorer.recency", "weight of recency in the fragment score"),
    ("context.scorer.relevance", "weight of relevance in the fragment score"),
    ("context.strategies.arce.max-rounds", "most refinement rounds of the arce strategy"),
    ("context.strategies.breadth-depth-navigator.max-hops", "most graph traversal hops"),
    ("context.strategies.enabled", "strategies that may run"),
    ("context.warm.max-decisions", "most decisions the warm tier keeps"),
    ("context.warm.retention-hours", "hours a decision stays in the warm tier"),
    ("index.exclude", "globs of files never indexed, on top of ignore files"),
    ("index.follow-symlinks", "follow symbolic links while walking a project"),
    ("index.hidden", "index dotfiles and dot-directories"),
    ("index.max-total-size", "stop indexing after this many bytes (path order); 0 means no limit"),
    ("index.include", "globs of files to index; empty means every file not excluded"),
    (
        "store.url",
        "team server's PostgreSQL URL (AGENTS_STORE_URL overrides); unset: the embedded store in $AGENTS_HOME",
    ),
    ("models.*.context-window", "context window of this model, in tokens"),
    ("models.*.encoding", "encoding its tokens are counted with: o200k_base or cl100k_base"),
    ("models.default-model", "model assumed when a command names none"),
    ("tokenizer.encoding", "encoding used when the model is unknown: o200k_base or cl100k_base"),
    ("tokenizer.implementation", "bpe implementation: bpe-openai (fastest) or tiktoken-rs (reference)"),
];

/// One line on some tables, written above their header.
const SECTION_DOCS: &[(&str, &str)] = &[
    ("context.pipeline", "implementation of each pipeline component; \"default\" is the built-in one"),
    ("context.scorer", "weights of the fragment score: non-negative, not all zero"),
    (
        "models",
        "known models; add a [models.NAME] table for others\n\
         claude models count with o200k_base, an approximation: their tokenizer is not public",
    ),
];

/// The doc of the key at `path`: from [`KEY_DOCS`], or for
/// `context.pipeline.<key>` from the [`PipelineComponent`] table.
fn describe(path: &[impl AsRef<str>]) -> &'static str {
    if let [context, pipeline, key] = path
        && context.as_ref() == "context"
        && pipeline.as_ref() == "pipeline"
        && let Ok(component) = key.as_ref().parse::<PipelineComponent>()
    {
        return component.description();
    }
    lookup(KEY_DOCS, path).unwrap_or("")
}

fn describe_section(path: &[impl AsRef<str>]) -> Option<&'static str> {
    lookup(SECTION_DOCS, path)
}

fn lookup(docs: &[(&'static str, &'static str)], path: &[impl AsRef<str>]) -> Option<&'static str> {
    docs.iter()
        .find(|(pattern, _)| {
            let pattern: Vec<&str> = pattern.split('.').collect();
            pattern.len() == path.len()
                && pattern.iter().zip(path).all(|(want, got)| *want == "*" || *want == got.as_ref())
        })
        .map(|(_, doc)| *doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layering::parse_key;
    use crate::config::test_support::*;
    use crate::config::*;

    #[test]
    fn default_toml_round_trips_and_documents_every_key() {
        let text = Config::default_toml();
        let resolved = resolve(&text);
        assert_eq!(resolved.config(), &Config::default());
        for entry in resolved.entries() {
            let expected = if entry.key == "global-vault" || entry.key == "store.url" {
                Origin::Default
            } else {
                Origin::File(PATH.into())
            };
            assert_eq!(entry.origin, expected, "{}", entry.key);
        }
        assert!(text.contains("# hot tier token budget\nmax-tokens = 16000\n"), "{text}");
        assert!(text.contains("[models.\"gpt-4.1\"]\n"), "{text}");
    }

    #[test]
    fn every_key_has_a_doc_and_every_doc_a_key() {
        let keys: Vec<Vec<String>> =
            ResolvedConfig::default().entries().iter().map(|entry| parse_key(&entry.key).unwrap()).collect();
        for key in &keys {
            assert!(!describe(key).is_empty(), "{key:?} has no doc");
        }
        for doc in KEY_DOCS.iter().chain(SECTION_DOCS) {
            let prefix_matches = |key: &Vec<String>| (1..=key.len()).any(|len| lookup(&[*doc], &key[..len]).is_some());
            assert!(keys.iter().any(prefix_matches), "{} documents no key", doc.0);
        }
    }

    #[test]
    fn the_configuration_reference_lists_every_pipeline_component() {
        let reference = include_str!("../../../../docs/configuration.md");
        for component in PipelineComponent::ALL {
            let row = format!("| `context.pipeline.{component}` | `\"default\"` | {} |", component.description());
            assert!(reference.contains(&row), "docs/configuration.md lacks the row {row}");
        }
        let rows = reference.lines().filter(|line| line.starts_with("| `context.pipeline.")).count();
        assert_eq!(rows, PipelineComponent::ALL.len(), "a row for each component, and no other");
    }

    #[test]
    fn backend_docs_name_every_kind() {
        let reference = include_str!("../../../../docs/configuration.md");
        let row = |key: &str| reference.lines().find(|line| line.starts_with(&format!("| `{key}` |"))).unwrap_or("");
        for kind in TextBackendKind::ALL {
            assert!(describe(&["context", "backends", "text"]).contains(kind.as_str()), "{kind}");
            assert!(row("context.backends.text").contains(&format!("`{kind}`")), "{kind}");
        }
        for kind in VectorBackendKind::ALL {
            assert!(describe(&["context", "backends", "vector"]).contains(kind.as_str()), "{kind}");
            assert!(row("context.backends.vector").contains(&format!("`{kind}`")), "{kind}");
        }
    }
}
