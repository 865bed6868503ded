//! `knowledge/graph/propagation_config.yaml` (spec 4.8): every tunable of a
//! repository, with the spec's defaults. A missing file means all defaults;
//! a missing key means its default. Query roles are data: a repository adds
//! or changes a role profile here without code changes (FR-Q06).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostic, ProblemKind};
use crate::schema::EdgeType;
use crate::yaml::{check_schema, key_lines, parse_mapping, yaml_error};

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PropagationConfig {
    pub akms_schema: String,
    /// Directory of the global vault; `None` leaves the choice to the
    /// environment and the `agents` configuration.
    pub global_vault: Option<String>,
    pub confidence: ConfidenceConfig,
    pub edge_type_propagation: BTreeMap<EdgeType, f64>,
    pub loadout: LoadoutConfig,
    pub graph: GraphConfig,
    pub query_roles: BTreeMap<String, RoleProfile>,
    pub tag_derivation: TagDerivationConfig,
    pub orchestrator: OrchestratorConfig,
    pub limits: LimitsConfig,
    /// Optional provider/model for the semantic docstring-drift check.
    pub model_routing: Option<yaml_serde::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConfidenceConfig {
    pub local_decay: f64,
    pub propagation_factor: f64,
    pub activation_boost: f64,
    pub min_confidence: f64,
    pub max_confidence: f64,
    pub hop_limit: u32,
    /// The confidence a new tentative node (an agent's draft) starts with.
    pub new_node_confidence: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadoutConfig {
    pub max_nodes_per_loadout: u32,
    pub max_pitfall_nodes: u32,
    pub min_confidence_threshold: f64,
    pub max_loadout_tokens: u32,
    pub context_size_tokens: ContextSizeTokens,
    pub routing_tokens_per_node: u32,
    pub mode_selection: ModeSelection,
    /// The search layer (the spec's qmd): passages retrieved within the node
    /// set. `false` makes every loadout the degraded form (NFR-R05).
    pub search_layer: bool,
    /// With an embedding model: the cosine a paragraph needs to bring its
    /// node's passage in without a BM25 hit.
    pub semantic_floor: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextSizeTokens {
    pub small: u32,
    pub medium: u32,
    pub large: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadoutMode {
    Routing,
    Full,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModeSelection {
    pub budget_fraction: f64,
    pub low_threshold: u32,
    pub safety_margin: u32,
    pub default_mode: LoadoutMode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {
    pub stale_node_days: u32,
    pub orphan_warning: bool,
    pub max_session_refs: u32,
    pub dedup_threshold: f64,
    /// The weight of a pitfall edge, by the severity the agent gave.
    pub pitfall_weight: PitfallWeights,
}

/// `graph.pitfall_weight`: a pitfall edge's weight by severity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PitfallWeights {
    pub high: f64,
    pub medium: f64,
    pub low: f64,
}

impl Default for PitfallWeights {
    fn default() -> Self {
        PitfallWeights { high: 1.0, medium: 0.6, low: 0.3 }
    }
}

impl PitfallWeights {
    /// The weight of a pitfall of `severity` (`high`, `medium`, else low).
    pub fn of(&self, severity: &str) -> f64 {
        match severity {
            "high" => self.high,
            "medium" => self.medium,
            _ => self.low,
        }
    }
}

/// A query profile: which edges a role follows, how it ranks, which domains
/// it prefers or excludes.
fn default_max_depth() -> u32 {
    2
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleProfile {
    pub edge_types: Vec<EdgeType>,
    pub rank_formula: String,
    /// Radius of the ego graph around each seed, in edges (the spec names it
    /// `max_depth` without a key; 2 when not given).
    #[serde(default = "default_max_depth")]
    pub max_depth: u32,
    #[serde(default)]
    pub prefer_domains: Vec<String>,
    #[serde(default)]
    pub exclude_domains: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TitleMatch {
    WholeWord,
    Substring,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TagDerivationConfig {
    pub min_tag_length: u32,
    pub title_match: TitleMatch,
    pub log_derived_tags: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrchestratorConfig {
    pub plan_name: String,
    pub base_branch: String,
    /// The command each task (and reviewer) runs, through `sh -c`, with
    /// `{task_id}`, `{task_file}`, `{loadout}`, `{memory}`, `{role}`,
    /// `{phase}` and `{repo}` replaced (shell-quoted); empty means not set.
    pub agent_command: String,
    /// Tasks of one wave running at once.
    pub max_parallel: u32,
    /// A task still running after this many seconds is stopped and failed.
    pub task_timeout_seconds: u64,
    /// Reviewer roles run in the REVIEW stage of every phase.
    pub review_roles: Vec<String>,
    /// The agents' context window, in tokens, from which each loadout's mode
    /// is chosen (spec 5.4); unset: the loadout's default. A plan's own
    /// `model_context_limit` wins.
    pub model_context_limit: Option<u64>,
    /// Tokens the agents' system prompt takes from that window; a plan's own
    /// `system_prompt_tokens` wins.
    pub system_prompt_tokens: u64,
}

/// Size caps of what this repository's knowledge may hold; a file over its
/// cap is refused without being read (see [`crate::bounded`]). A repository
/// may lower or raise them, up to [`MAX_LIMIT_BYTES`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// A node file (frontmatter and body).
    pub max_node_bytes: u64,
    /// A `content_ref` document.
    pub max_content_ref_bytes: u64,
    /// A `content_draft` of an AgentMemory's `new_knowledge` entry.
    pub max_content_draft_bytes: u64,
}

/// The most any `limits` setting may be: a repository cannot lift the bounds.
pub const MAX_LIMIT_BYTES: u64 = 64 * crate::bounded::MIB;

impl Default for LimitsConfig {
    fn default() -> Self {
        use crate::bounded::MIB;
        LimitsConfig { max_node_bytes: MIB, max_content_ref_bytes: 4 * MIB, max_content_draft_bytes: 256 * 1024 }
    }
}

impl LimitsConfig {
    pub fn node_cap(&self) -> crate::bounded::Cap {
        crate::bounded::Cap::new(self.max_node_bytes, "limits.max_node_bytes in propagation_config.yaml")
    }
    pub fn content_ref_cap(&self) -> crate::bounded::Cap {
        crate::bounded::Cap::new(self.max_content_ref_bytes, "limits.max_content_ref_bytes in propagation_config.yaml")
    }
    pub fn content_draft_cap(&self) -> crate::bounded::Cap {
        crate::bounded::Cap::new(
            self.max_content_draft_bytes,
            "limits.max_content_draft_bytes in propagation_config.yaml",
        )
    }
}

impl Default for PropagationConfig {
    fn default() -> Self {
        use EdgeType::*;
        let role = |edges: &[EdgeType], formula: &str, exclude: &[&str]| RoleProfile {
            edge_types: edges.to_vec(),
            rank_formula: formula.into(),
            max_depth: default_max_depth(),
            prefer_domains: Vec::new(),
            exclude_domains: exclude.iter().map(|s| s.to_string()).collect(),
        };
        PropagationConfig {
            akms_schema: crate::yaml::SCHEMA_VERSION.into(),
            global_vault: None,
            confidence: ConfidenceConfig::default(),
            edge_type_propagation: [
                (Requires, 1.0),
                (Refines, 0.7),
                (FeedsInto, 0.5),
                (Contradicts, 0.0),
                (Pitfall, 0.0),
                (Implements, 0.0),
            ]
            .into_iter()
            .collect(),
            loadout: LoadoutConfig::default(),
            graph: GraphConfig::default(),
            query_roles: [
                ("implementer".to_owned(), role(&[Requires, FeedsInto, Pitfall], "confidence * activations", &[])),
                ("code_reviewer".to_owned(), role(&[Requires, FeedsInto, Pitfall], "confidence * activations", &[])),
                ("physics_reviewer".to_owned(), role(&[Requires, Contradicts], "confidence", &["code-mirror"])),
            ]
            .into_iter()
            .collect(),
            tag_derivation: TagDerivationConfig::default(),
            orchestrator: OrchestratorConfig::default(),
            limits: LimitsConfig::default(),
            model_routing: None,
        }
    }
}

impl PropagationConfig {
    /// Whether `model_routing` asks for the optional semantic docstring-drift
    /// check (`model_routing: {semantic_drift_check: true, ...}`). Off by
    /// default; `agents knowledge mirror` never runs it (the mirror path is
    /// deterministic, spec 3.2 and 5.6) and says so when it is asked for.
    pub fn semantic_drift_check(&self) -> bool {
        self.model_routing
            .as_ref()
            .and_then(|routing| routing.get("semantic_drift_check"))
            .and_then(yaml_serde::Value::as_bool)
            .unwrap_or(false)
    }
}

impl Default for ConfidenceConfig {
    fn default() -> Self {
        ConfidenceConfig {
            local_decay: 0.85,
            propagation_factor: 0.30,
            activation_boost: 0.02,
            min_confidence: 0.10,
            max_confidence: 0.99,
            hop_limit: 1,
            new_node_confidence: 0.5,
        }
    }
}

impl Default for LoadoutConfig {
    fn default() -> Self {
        LoadoutConfig {
            max_nodes_per_loadout: 8,
            max_pitfall_nodes: 4,
            min_confidence_threshold: 0.30,
            max_loadout_tokens: 12000,
            search_layer: true,
            semantic_floor: 0.35,
            context_size_tokens: ContextSizeTokens::default(),
            routing_tokens_per_node: 200,
            mode_selection: ModeSelection::default(),
        }
    }
}

impl Default for ContextSizeTokens {
    fn default() -> Self {
        ContextSizeTokens { small: 500, medium: 1500, large: 3000 }
    }
}

impl Default for ModeSelection {
    fn default() -> Self {
        ModeSelection {
            budget_fraction: 0.15,
            low_threshold: 8000,
            safety_margin: 4000,
            default_mode: LoadoutMode::Routing,
        }
    }
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            stale_node_days: 90,
            orphan_warning: true,
            max_session_refs: 10,
            dedup_threshold: 0.75,
            pitfall_weight: PitfallWeights::default(),
        }
    }
}

impl Default for TagDerivationConfig {
    fn default() -> Self {
        TagDerivationConfig { min_tag_length: 2, title_match: TitleMatch::WholeWord, log_derived_tags: true }
    }
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        OrchestratorConfig {
            plan_name: String::new(),
            base_branch: "main".into(),
            agent_command: String::new(),
            max_parallel: 2,
            task_timeout_seconds: 1800,
            review_roles: vec!["code_reviewer".into(), "physics_reviewer".into()],
            model_context_limit: None,
            system_prompt_tokens: 0,
        }
    }
}

/// The file `agents knowledge init` writes: every key at its default, with a
/// comment on each. Parses back to [`PropagationConfig::default`].
pub const DEFAULT_CONFIG_YAML: &str = r#"# AKMS propagation config: every tunable of this repository (spec 4.8).
# Changing values is tuning, not a schema change. Delete a key to use its default.
akms_schema: v2

# Directory of the global vault. Unset: $AKMS_GLOBAL_VAULT, else the `global-vault`
# key of the agents configuration, else ~/.claude/akms/nodes.
# global_vault: ~/.claude/akms/nodes

confidence:
  local_decay: 0.85            # multiplicative decay on a negative signal
  propagation_factor: 0.30     # neighbour-propagation strength
  activation_boost: 0.02       # additive boost on confirmed-useful
  min_confidence: 0.10         # global floor (a node's confidence_floor overrides it)
  max_confidence: 0.99
  hop_limit: 1                 # propagation depth
  new_node_confidence: 0.5     # where a new tentative node (an agent's draft) starts

# Propagation multiplier per edge type.
edge_type_propagation:
  requires: 1.0
  refines: 0.7
  feeds-into: 0.5
  contradicts: 0.0
  pitfall: 0.0
  implements: 0.0

loadout:
  max_nodes_per_loadout: 8
  max_pitfall_nodes: 4
  min_confidence_threshold: 0.30
  max_loadout_tokens: 12000
  context_size_tokens: {small: 500, medium: 1500, large: 3000}
  routing_tokens_per_node: 200
  mode_selection:
    budget_fraction: 0.15      # most of the available context a loadout may take
    low_threshold: 8000        # below this available budget: always routing mode
    safety_margin: 4000        # reserved headroom tokens
    default_mode: routing      # routing | full
  search_layer: true           # false: no passages, the degraded loadout (qmd_available: false)
  semantic_floor: 0.35         # with an embedding model: the cosine that brings a passage in without a BM25 hit

graph:
  stale_node_days: 90
  orphan_warning: true
  max_session_refs: 10
  dedup_threshold: 0.75        # token Jaccard above which new knowledge joins an existing tentative node
  pitfall_weight: {high: 1.0, medium: 0.6, low: 0.3}   # a pitfall edge's weight by severity

# Query profiles by agent role; add or change a role here, no code change needed.
query_roles:
  implementer:
    edge_types: [requires, feeds-into, pitfall]
    rank_formula: "confidence * activations"   # over node attributes: + - * / ( )
    max_depth: 2               # ego-graph radius around each seed
    prefer_domains: []
    exclude_domains: []
  code_reviewer:
    edge_types: [requires, feeds-into, pitfall]
    rank_formula: "confidence * activations"
    max_depth: 2
    prefer_domains: []
    exclude_domains: []
  physics_reviewer:
    edge_types: [requires, contradicts]
    rank_formula: "confidence"
    max_depth: 2
    prefer_domains: []          # e.g. the domains this reviewer should favour
    exclude_domains: [code-mirror]

tag_derivation:
  min_tag_length: 2
  title_match: whole_word       # whole_word | substring
  log_derived_tags: true

orchestrator:
  plan_name: ""                 # used for phase-branch naming
  base_branch: main             # phase 1 branches from here (and `knowledge mirror` diffs against)
  # The command a task agent runs (through sh -c), e.g.
  #   my-agent --loadout {loadout} --task {task_file} --memory-out {memory}
  # with {task_id} {task_file} {loadout} {memory} {role} {phase} {repo}
  # replaced, shell-quoted. `agents orchestrate` needs it to dispatch tasks.
  agent_command: ""
  max_parallel: 2               # tasks of one wave running at once
  task_timeout_seconds: 1800    # a task running longer is stopped and failed
  review_roles: [code_reviewer, physics_reviewer]
  # The agents' context window and their system prompt's share of it, passed
  # to every loadout to choose its mode (a plan's own values win); unset: the
  # loadout's default.
  model_context_limit: null
  system_prompt_tokens: 0

# Size caps, in bytes: a file over its cap is refused without being read
# (at most 67108864, 64 MiB, each).
limits:
  max_node_bytes: 1048576           # a node file, frontmatter and body (1 MiB)
  max_content_ref_bytes: 4194304    # a content_ref document (4 MiB)
  max_content_draft_bytes: 262144   # an AgentMemory new_knowledge content_draft (256 KiB)

# Optional: the model of the semantic docstring-drift check of the code mirror.
# Off by default; `agents knowledge mirror` runs only the deterministic
# structural check and never calls a model (spec 3.2, 5.6).
# model_routing:
#   semantic_drift_check: false
#   provider: ""
#   model: ""
"#;

/// Parses and validates the config text; `file` names it in messages.
pub fn parse_config(file: &Path, text: &str) -> Result<PropagationConfig, Vec<Diagnostic>> {
    let map = parse_mapping(file, text, 1).map_err(|d| vec![d])?;
    let lines = key_lines(text, 1);
    if let Some(d) = check_schema(file, &map, &lines) {
        return Err(vec![d]);
    }
    let config: PropagationConfig = yaml_serde::from_str(text).map_err(|e| vec![yaml_error(file, &e, 1, "")])?;
    let mut problems = Vec::new();
    let mut unit = |section: &str, field: &str, value: f64| {
        if !(0.0..=1.0).contains(&value) {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                file,
                lines.get(section).copied(),
                Some(&format!("{section}.{field}")),
                format!("expected a number from 0.0 to 1.0, found `{value}`"),
            ));
        }
    };
    let c = &config.confidence;
    for (field, value) in [
        ("local_decay", c.local_decay),
        ("propagation_factor", c.propagation_factor),
        ("activation_boost", c.activation_boost),
        ("min_confidence", c.min_confidence),
        ("max_confidence", c.max_confidence),
        ("new_node_confidence", c.new_node_confidence),
    ] {
        unit("confidence", field, value);
    }
    for (edge, value) in &config.edge_type_propagation {
        unit("edge_type_propagation", edge.as_str(), *value);
    }
    unit("loadout", "min_confidence_threshold", config.loadout.min_confidence_threshold);
    unit("loadout", "semantic_floor", config.loadout.semantic_floor);
    unit("loadout", "mode_selection.budget_fraction", config.loadout.mode_selection.budget_fraction);
    unit("graph", "dedup_threshold", config.graph.dedup_threshold);
    let weights = &config.graph.pitfall_weight;
    for (severity, value) in [("high", weights.high), ("medium", weights.medium), ("low", weights.low)] {
        unit("graph", &format!("pitfall_weight.{severity}"), value);
    }
    for (name, role) in &config.query_roles {
        if role.rank_formula.trim().is_empty() {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                file,
                lines.get("query_roles").copied(),
                Some(&format!("query_roles.{name}.rank_formula")),
                "must not be empty".into(),
            ));
        } else if let Err(error) = crate::formula::Formula::parse(&role.rank_formula) {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                file,
                lines.get("query_roles").copied(),
                Some(&format!("query_roles.{name}.rank_formula")),
                error.to_string(),
            ));
        }
    }
    let orchestrator = &config.orchestrator;
    for (field, zero) in [
        ("max_parallel", orchestrator.max_parallel == 0),
        ("task_timeout_seconds", orchestrator.task_timeout_seconds == 0),
    ] {
        if zero {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                file,
                lines.get("orchestrator").copied(),
                Some(&format!("orchestrator.{field}")),
                "must be at least 1".into(),
            ));
        }
    }
    let limits = &config.limits;
    for (field, value) in [
        ("max_node_bytes", limits.max_node_bytes),
        ("max_content_ref_bytes", limits.max_content_ref_bytes),
        ("max_content_draft_bytes", limits.max_content_draft_bytes),
    ] {
        if !(1..=MAX_LIMIT_BYTES).contains(&value) {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                file,
                lines.get("limits").copied(),
                Some(&format!("limits.{field}")),
                format!("expected a number of bytes from 1 to {MAX_LIMIT_BYTES} (64 MiB), found `{value}`"),
            ));
        }
    }
    if problems.is_empty() { Ok(config) } else { Err(problems) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ur_04_the_commented_default_file_holds_every_default() {
        let parsed = parse_config(Path::new("p.yaml"), DEFAULT_CONFIG_YAML).unwrap();
        assert_eq!(parsed, PropagationConfig::default());
        assert_eq!(parse_config(Path::new("p.yaml"), "akms_schema: v2\n").unwrap(), PropagationConfig::default());
    }

    #[test]
    fn fr_q06_role_profiles_are_configurable_without_code_changes() {
        let text = "akms_schema: v2\nquery_roles:\n  test_writer:\n    edge_types: [implements, pitfall]\n    rank_formula: confidence\n    prefer_domains: [testing]\n";
        let config = parse_config(Path::new("p.yaml"), text).unwrap();
        let role = &config.query_roles["test_writer"];
        assert_eq!(role.edge_types, [EdgeType::Implements, EdgeType::Pitfall]);
        assert_eq!(role.prefer_domains, ["testing"]);
    }

    #[test]
    fn the_semantic_drift_check_is_off_by_default_and_switched_by_model_routing() {
        assert!(!PropagationConfig::default().semantic_drift_check());
        let on = "akms_schema: v2\nmodel_routing:\n  semantic_drift_check: true\n  model: some-model\n";
        assert!(parse_config(Path::new("p.yaml"), on).unwrap().semantic_drift_check());
        let off = "akms_schema: v2\nmodel_routing:\n  model: some-model\n";
        assert!(!parse_config(Path::new("p.yaml"), off).unwrap().semantic_drift_check());
    }

    #[test]
    fn limits_are_settings_within_a_ceiling() {
        let text = "akms_schema: v2\nlimits:\n  max_node_bytes: 2048\n";
        let config = parse_config(Path::new("p.yaml"), text).unwrap();
        assert_eq!(config.limits.max_node_bytes, 2048);
        assert_eq!(config.limits.max_content_ref_bytes, LimitsConfig::default().max_content_ref_bytes);
        for value in ["0", "67108865"] {
            let text = format!("akms_schema: v2\nlimits:\n  max_content_ref_bytes: {value}\n");
            let err = parse_config(Path::new("p.yaml"), &text).unwrap_err();
            assert_eq!(err[0].field.as_deref(), Some("limits.max_content_ref_bytes"), "{}", err[0]);
            assert_eq!(err[0].line, Some(2));
        }
    }

    #[test]
    fn a_deeply_nested_rank_formula_is_an_error_naming_the_file_and_field() {
        let n = 100_000;
        for formula in [format!("{}confidence{}", "(".repeat(n), ")".repeat(n)), format!("{}confidence", "-".repeat(n))]
        {
            let text = format!(
                "akms_schema: v2\nquery_roles:\n  implementer:\n    edge_types: [requires]\n    rank_formula: \"{formula}\"\n"
            );
            let err = parse_config(Path::new("knowledge/graph/propagation_config.yaml"), &text).unwrap_err();
            let shown = err[0].to_string();
            assert!(
                shown.starts_with(
                    "knowledge/graph/propagation_config.yaml:2: query_roles.implementer.rank_formula: rank formula `"
                ),
                "{shown}"
            );
            assert!(shown.contains("longer than 4096 characters") && shown.len() < 400, "{shown}");
        }
        let deep = format!("{}confidence{}", "(".repeat(100), ")".repeat(100));
        let text = format!(
            "akms_schema: v2\nquery_roles:\n  implementer:\n    edge_types: [requires]\n    rank_formula: \"{deep}\"\n"
        );
        let err = parse_config(Path::new("p.yaml"), &text).unwrap_err();
        assert!(err[0].to_string().contains("nested more than 64 deep"), "{}", err[0]);
    }

    /// Issue 18 item 8 (UR-04): the constants that decide the update's
    /// behaviour are settings, today's values their defaults.
    #[test]
    fn item_8_pitfall_weights_new_node_confidence_and_the_cosine_cut_off_are_settings() {
        let d = PropagationConfig::default();
        assert_eq!(d.confidence.new_node_confidence, 0.5);
        assert_eq!(
            [d.graph.pitfall_weight.of("high"), d.graph.pitfall_weight.of("medium"), d.graph.pitfall_weight.of("low")],
            [1.0, 0.6, 0.3]
        );
        let text =
            "akms_schema: v2\nconfidence:\n  new_node_confidence: 0.4\ngraph:\n  pitfall_weight: {medium: 0.8}\n";
        let config = parse_config(Path::new("p.yaml"), text).unwrap();
        assert_eq!(config.confidence.new_node_confidence, 0.4);
        assert_eq!(config.graph.pitfall_weight, PitfallWeights { medium: 0.8, ..PitfallWeights::default() });
        assert_eq!(d.loadout.semantic_floor, 0.35, "the search layer's cosine cut-off");
        let floor = parse_config(Path::new("p.yaml"), "akms_schema: v2\nloadout:\n  semantic_floor: 0.5\n").unwrap();
        assert_eq!(floor.loadout.semantic_floor, 0.5);
        let bad =
            parse_config(Path::new("p.yaml"), "akms_schema: v2\ngraph:\n  pitfall_weight: {high: 2}\n").unwrap_err();
        assert_eq!(
            bad[0].to_string(),
            "p.yaml:2: graph.pitfall_weight.high: expected a number from 0.0 to 1.0, found `2`"
        );
    }

    #[test]
    fn bad_values_name_the_field() {
        let unknown = parse_config(Path::new("p.yaml"), "akms_schema: v2\ngraph:\n  stale_days: 3\n").unwrap_err();
        assert!(unknown[0].to_string().contains("unknown field `stale_days`"), "{}", unknown[0]);
        assert_eq!(unknown[0].line, Some(3));
        let range =
            parse_config(Path::new("p.yaml"), "akms_schema: v2\nconfidence:\n  local_decay: 1.5\n").unwrap_err();
        assert_eq!(
            range[0].to_string(),
            "p.yaml:2: confidence.local_decay: expected a number from 0.0 to 1.0, found `1.5`"
        );
        let version = parse_config(Path::new("p.yaml"), "akms_schema: v1\n").unwrap_err();
        assert_eq!(version[0].kind, ProblemKind::SchemaVersion);
    }
}
