//! Project context policy: which resources and paths each plan phase may see.
//!
//! A [`ProjectContextPolicy`] holds at most one [`ContextView`] per [`Phase`].
//! Phases form the chain `default -> strategize -> execute -> apply`; a phase
//! without a view of its own uses the nearest earlier phase's view, and with
//! none at all everything is visible. Inside a view, empty include lists mean
//! "everything" and exclusions always win over inclusions.
//!
//! Path globs follow gitignore's reading, compiled once with `globset`:
//! `*` and `?` stay within one path segment and `**` crosses segments; a
//! pattern without `/` matches at any depth (`*.rs`, `target`), one with a
//! `/` is anchored at the resource root (`src/*.rs`, a leading `/` is
//! dropped); and a pattern that matches a directory matches everything under
//! it (`target` excludes `target/debug/x`). Resource patterns are globs over
//! whole resource names (`core-*`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{Validated, ValidationError};
use crate::fragment::check_non_blank;

/// A plan phase, in chain order: `default -> strategize -> execute -> apply`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The root of the chain: the view every other phase falls back to.
    #[default]
    Default,
    Strategize,
    Execute,
    Apply,
}

impl Phase {
    /// Every phase, in chain order.
    pub const ALL: [Phase; 4] = [Phase::Default, Phase::Strategize, Phase::Execute, Phase::Apply];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Default => "default",
            Phase::Strategize => "strategize",
            Phase::Execute => "execute",
            Phase::Apply => "apply",
        }
    }

    /// The phase this one inherits from; `None` for `default`.
    pub fn parent(self) -> Option<Phase> {
        match self {
            Phase::Default => None,
            Phase::Strategize => Some(Phase::Default),
            Phase::Execute => Some(Phase::Strategize),
            Phase::Apply => Some(Phase::Execute),
        }
    }

    /// This phase, then its parent, and so on up to `default`.
    pub fn chain(self) -> impl Iterator<Item = Phase> {
        std::iter::successors(Some(self), |phase| phase.parent())
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Phase {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<Phase> {
        Phase::ALL.into_iter().find(|phase| phase.as_str() == text).ok_or_else(|| {
            ValidationError::new(
                "ProjectContextPolicy",
                "views",
                format!("unknown phase `{text}`, expected default, strategize, execute or apply"),
            )
        })
    }
}

/// The compiled form of a view's patterns, built once at construction.
#[derive(Clone)]
struct Matchers {
    include_resources: GlobSet,
    exclude_resources: GlobSet,
    include_paths: GlobSet,
    exclude_paths: GlobSet,
}

impl fmt::Debug for Matchers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matchers").finish_non_exhaustive()
    }
}

const VIEW: &str = "ContextView";

/// How a list of patterns is read: resource names or gitignore-style paths.
#[derive(Clone, Copy)]
enum PatternKind {
    Resource,
    Path,
}

fn compile(field: &'static str, patterns: &[String], kind: PatternKind) -> Validated<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        check_non_blank(VIEW, field, pattern)?;
        let pattern = pattern.trim();
        let glob = match kind {
            PatternKind::Resource => GlobBuilder::new(pattern).build(),
            PatternKind::Path => GlobBuilder::new(&path_glob(pattern)).literal_separator(true).build(),
        };
        set.add(
            glob.map_err(|e| ValidationError::new(VIEW, field, format!("invalid glob `{pattern}`: {}", e.kind())))?,
        );
    }
    set.build().map_err(|e| ValidationError::new(VIEW, field, format!("invalid globs: {e}")))
}

/// Rewrites a path pattern to gitignore's reading (see the module docs).
fn path_glob(pattern: &str) -> String {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern).trim_end_matches('/');
    match pattern.strip_prefix('/') {
        Some(anchored) => anchored.to_string(),
        None if pattern.contains('/') => pattern.to_string(),
        None => format!("**/{pattern}"),
    }
}

/// `path` and each directory containing it, deepest last: `a`, `a/b`, `a/b/c.rs`.
fn path_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let path = path.strip_prefix("./").unwrap_or(path).trim_matches('/');
    path.match_indices('/').map(move |(end, _)| &path[..end]).chain(std::iter::once(path))
}

/// Which resources and paths one phase may see, and how much of them.
///
/// Empty include lists mean all; a name or path matching any exclusion is
/// never visible. Size limits are `None` (no limit) or at least 1 byte.
/// [`Default`] is the unrestricted view.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "ContextViewBuilder")]
pub struct ContextView {
    include_resources: Vec<String>,
    exclude_resources: Vec<String>,
    include_paths: Vec<String>,
    exclude_paths: Vec<String>,
    max_file_size: Option<u64>,
    max_total_size: Option<u64>,
    #[serde(skip_serializing)]
    matchers: Matchers,
}

impl PartialEq for ContextView {
    fn eq(&self, other: &Self) -> bool {
        // The matchers are compiled from the patterns, so the patterns decide.
        (
            &self.include_resources,
            &self.exclude_resources,
            &self.include_paths,
            &self.exclude_paths,
            self.max_file_size,
            self.max_total_size,
        ) == (
            &other.include_resources,
            &other.exclude_resources,
            &other.include_paths,
            &other.exclude_paths,
            other.max_file_size,
            other.max_total_size,
        )
    }
}

impl Eq for ContextView {}

impl Default for ContextView {
    fn default() -> Self {
        ContextViewBuilder::default().build().expect("the unrestricted view is valid")
    }
}

/// Parts of a [`ContextView`] before validation; also its serde mirror (every
/// field optional, unknown fields rejected). Sizes are signed so that zero
/// and negative values reach validation and are reported by field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextViewBuilder {
    include_resources: Vec<String>,
    exclude_resources: Vec<String>,
    include_paths: Vec<String>,
    exclude_paths: Vec<String>,
    max_file_size: Option<i64>,
    max_total_size: Option<i64>,
}

fn strings(items: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

fn check_size(field: &'static str, size: Option<i64>) -> Validated<Option<u64>> {
    match size {
        None => Ok(None),
        Some(bytes) if bytes >= 1 => Ok(Some(bytes.unsigned_abs())),
        Some(bytes) => Err(ValidationError::new(VIEW, field, format!("must be at least 1 byte, got {bytes}"))),
    }
}

impl ContextViewBuilder {
    /// Resource names or glob patterns to include (empty = all).
    pub fn include_resources(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.include_resources = strings(patterns);
        self
    }

    /// Resource names or glob patterns to exclude.
    pub fn exclude_resources(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.exclude_resources = strings(patterns);
        self
    }

    /// File path globs to include (empty = all).
    pub fn include_paths(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.include_paths = strings(patterns);
        self
    }

    /// File path globs to exclude.
    pub fn exclude_paths(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.exclude_paths = strings(patterns);
        self
    }

    /// Largest file in bytes; zero or negative is rejected at `build`.
    pub fn max_file_size(mut self, bytes: i64) -> Self {
        self.max_file_size = Some(bytes);
        self
    }

    /// Largest total context in bytes; zero or negative is rejected at `build`.
    pub fn max_total_size(mut self, bytes: i64) -> Self {
        self.max_total_size = Some(bytes);
        self
    }

    /// Checks sizes, compiles every pattern and builds the view.
    pub fn build(self) -> Validated<ContextView> {
        let max_file_size = check_size("max_file_size", self.max_file_size)?;
        let max_total_size = check_size("max_total_size", self.max_total_size)?;
        let matchers = Matchers {
            include_resources: compile("include_resources", &self.include_resources, PatternKind::Resource)?,
            exclude_resources: compile("exclude_resources", &self.exclude_resources, PatternKind::Resource)?,
            include_paths: compile("include_paths", &self.include_paths, PatternKind::Path)?,
            exclude_paths: compile("exclude_paths", &self.exclude_paths, PatternKind::Path)?,
        };
        Ok(ContextView {
            include_resources: self.include_resources,
            exclude_resources: self.exclude_resources,
            include_paths: self.include_paths,
            exclude_paths: self.exclude_paths,
            max_file_size,
            max_total_size,
            matchers,
        })
    }
}

impl TryFrom<ContextViewBuilder> for ContextView {
    type Error = ValidationError;

    fn try_from(builder: ContextViewBuilder) -> Validated<ContextView> {
        builder.build()
    }
}

impl ContextView {
    /// A builder for an unrestricted view.
    pub fn builder() -> ContextViewBuilder {
        ContextViewBuilder::default()
    }

    /// A builder holding this view's values, to derive a changed view.
    pub fn into_builder(self) -> ContextViewBuilder {
        let signed = |size: Option<u64>| size.map(|bytes| i64::try_from(bytes).unwrap_or(i64::MAX));
        ContextViewBuilder {
            include_resources: self.include_resources,
            exclude_resources: self.exclude_resources,
            include_paths: self.include_paths,
            exclude_paths: self.exclude_paths,
            max_file_size: signed(self.max_file_size),
            max_total_size: signed(self.max_total_size),
        }
    }

    pub fn include_resources(&self) -> &[String] {
        &self.include_resources
    }

    pub fn exclude_resources(&self) -> &[String] {
        &self.exclude_resources
    }

    pub fn include_paths(&self) -> &[String] {
        &self.include_paths
    }

    pub fn exclude_paths(&self) -> &[String] {
        &self.exclude_paths
    }

    /// Largest file in bytes, `None` for no limit.
    pub fn max_file_size(&self) -> Option<u64> {
        self.max_file_size
    }

    /// Largest total context in bytes, `None` for no limit.
    pub fn max_total_size(&self) -> Option<u64> {
        self.max_total_size
    }

    /// True when the view filters nothing and limits nothing.
    pub fn is_unrestricted(&self) -> bool {
        *self == *UNRESTRICTED
    }

    /// Whether resource `name` is visible: not excluded, and included (or no
    /// includes given).
    pub fn allows_resource(&self, name: &str) -> bool {
        let m = &self.matchers;
        !m.exclude_resources.is_match(name) && (m.include_resources.is_empty() || m.include_resources.is_match(name))
    }

    /// Whether `path` (relative to its resource root, `/`-separated) is
    /// visible: neither it nor a directory above it is excluded, and it or a
    /// directory above it is included (or no includes given).
    pub fn allows_path(&self, path: &str) -> bool {
        let m = &self.matchers;
        let matches = |set: &GlobSet| path_and_ancestors(path).any(|candidate| set.is_match(candidate));
        !matches(&m.exclude_paths) && (m.include_paths.is_empty() || matches(&m.include_paths))
    }

    /// Whether a file of `bytes` bytes is within `max_file_size`.
    pub fn allows_file_size(&self, bytes: u64) -> bool {
        self.max_file_size.is_none_or(|max| bytes <= max)
    }
}

static UNRESTRICTED: LazyLock<ContextView> = LazyLock::new(ContextView::default);

/// Per-project policy: an optional view per phase, inherited along the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PolicyRaw")]
pub struct ProjectContextPolicy {
    project: String,
    views: BTreeMap<Phase, ContextView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyRaw {
    project: String,
    #[serde(default)]
    views: BTreeMap<Phase, ContextView>,
}

impl ProjectContextPolicy {
    /// An empty policy (everything visible in every phase) for `project`.
    pub fn new(project: impl Into<String>) -> Validated<ProjectContextPolicy> {
        let project = project.into();
        check_non_blank("ProjectContextPolicy", "project", &project)?;
        Ok(ProjectContextPolicy { project, views: BTreeMap::new() })
    }

    /// The same policy with `view` set explicitly for `phase`.
    pub fn with_view(mut self, phase: Phase, view: ContextView) -> ProjectContextPolicy {
        self.views.insert(phase, view);
        self
    }

    /// The same policy with `phase`'s explicit view removed (it inherits again).
    pub fn without_view(mut self, phase: Phase) -> ProjectContextPolicy {
        self.views.remove(&phase);
        self
    }

    pub fn project(&self) -> &str {
        &self.project
    }

    /// The explicitly set views.
    pub fn views(&self) -> &BTreeMap<Phase, ContextView> {
        &self.views
    }

    /// The view set explicitly for `phase`, ignoring inheritance.
    pub fn view(&self, phase: Phase) -> Option<&ContextView> {
        self.views.get(&phase)
    }

    /// The phase whose view `phase` resolves to, `None` when no phase on its
    /// chain has one (the unrestricted view applies).
    pub fn view_source(&self, phase: Phase) -> Option<Phase> {
        phase.chain().find(|p| self.views.contains_key(p))
    }

    /// The effective view of `phase`: its own, else the nearest earlier
    /// phase's, else the unrestricted view.
    pub fn resolve_view(&self, phase: Phase) -> &ContextView {
        self.view_source(phase).and_then(|p| self.views.get(&p)).unwrap_or(&UNRESTRICTED)
    }

    /// Whether resource `name` is visible in `phase`.
    pub fn allows_resource(&self, phase: Phase, name: &str) -> bool {
        self.resolve_view(phase).allows_resource(name)
    }

    /// Whether `path` is visible in `phase`.
    pub fn allows_path(&self, phase: Phase, path: &str) -> bool {
        self.resolve_view(phase).allows_path(path)
    }
}

impl TryFrom<PolicyRaw> for ProjectContextPolicy {
    type Error = ValidationError;

    fn try_from(raw: PolicyRaw) -> Validated<ProjectContextPolicy> {
        let policy = ProjectContextPolicy::new(raw.project)?;
        Ok(raw.views.into_iter().fold(policy, |policy, (phase, view)| policy.with_view(phase, view)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn view(builder: ContextViewBuilder) -> ContextView {
        builder.build().unwrap()
    }

    /// Asserts which of `paths` `view` allows (`+path`) and hides (`-path`).
    fn check_paths(view: &ContextView, expected: &[&str]) {
        for entry in expected {
            let (allowed, path) = entry.split_at(1);
            assert_eq!(view.allows_path(path), allowed == "+", "{entry} under {view:?}");
        }
    }

    #[test]
    fn phases_chain_back_to_default() {
        let chain = |phase: Phase| phase.chain().map(Phase::as_str).collect::<Vec<_>>().join(" ");
        assert_eq!(chain(Phase::Apply), "apply execute strategize default");
        assert_eq!(chain(Phase::Strategize), "strategize default");
        assert_eq!(chain(Phase::Default), "default");
        for phase in Phase::ALL {
            assert_eq!(phase.as_str().parse::<Phase>().unwrap(), phase);
            assert_eq!(serde_json::to_string(&phase).unwrap(), format!("\"{phase}\""));
        }
        assert!("review".parse::<Phase>().is_err());
    }

    #[test]
    fn empty_policy_allows_everything() {
        let policy = ProjectContextPolicy::new("web").unwrap();
        for phase in Phase::ALL {
            assert!(policy.resolve_view(phase).is_unrestricted());
            assert_eq!(policy.view_source(phase), None);
            assert!(policy.allows_resource(phase, "anything"));
            assert!(policy.allows_path(phase, "deep/inside/file.bin"));
        }
    }

    #[test]
    fn resolve_view_walks_up_the_chain() {
        let only_src = view(ContextView::builder().include_paths(["src/**"]));
        let only_docs = view(ContextView::builder().include_paths(["docs/**"]));
        let policy = ProjectContextPolicy::new("web").unwrap().with_view(Phase::Strategize, only_src.clone());
        assert!(policy.resolve_view(Phase::Default).is_unrestricted(), "default does not inherit from later phases");
        assert_eq!(policy.resolve_view(Phase::Strategize), &only_src);
        assert_eq!(policy.resolve_view(Phase::Execute), &only_src);
        assert_eq!(policy.view_source(Phase::Apply), Some(Phase::Strategize));

        let policy =
            policy.with_view(Phase::Default, only_docs.clone()).with_view(Phase::Apply, ContextView::default());
        assert_eq!(policy.resolve_view(Phase::Default), &only_docs);
        assert_eq!(policy.resolve_view(Phase::Execute), &only_src);
        assert!(policy.resolve_view(Phase::Apply).is_unrestricted(), "an explicit empty view still counts");
        assert!(policy.allows_path(Phase::Apply, "docs/a.md") && !policy.allows_path(Phase::Execute, "docs/a.md"));

        let policy = policy.without_view(Phase::Strategize);
        assert_eq!(policy.resolve_view(Phase::Execute), &only_docs);
    }

    #[test]
    fn exclusions_win_over_inclusions() {
        let v = view(
            ContextView::builder()
                .include_resources(["core-*", "web"])
                .exclude_resources(["core-legacy"])
                .include_paths(["src"])
                .exclude_paths(["src/generated/**", "*.min.js"]),
        );
        assert!(v.allows_resource("core-api") && v.allows_resource("web"));
        assert!(!v.allows_resource("core-legacy"), "excluded although included");
        assert!(!v.allows_resource("docs"), "not included");
        check_paths(&v, &["+src/main.rs", "-src/generated/api.rs", "-src/ui/app.min.js", "-lib/x.rs"]);

        let same_pattern = view(ContextView::builder().include_resources(["a"]).exclude_resources(["a"]));
        assert!(!same_pattern.allows_resource("a"));
    }

    #[test]
    fn path_globs_read_like_gitignore() {
        let v = view(ContextView::builder().exclude_paths(["target", "*.lock", "/build", "docs/*.md"]));
        check_paths(
            &v,
            &[
                "-target/debug/app",
                "-crates/x/target/y",
                "-Cargo.lock",
                "-crates/a/Cargo.lock",
                "-build/out.o",
                "+src/build/mod.rs",
                "-docs/a.md",
                "+docs/sub/a.md",
                "+x/docs/a.md",
                "+src/main.rs",
                "-./target/x",
            ],
        );
        let only_rust = view(ContextView::builder().include_paths(["*.rs", "src/*.toml"]));
        check_paths(&only_rust, &["+a.rs", "+src/deep/b.rs", "+src/c.toml", "-src/deep/c.toml", "-README.md"]);
    }

    #[test]
    fn sizes_must_be_positive() {
        for bad in [0, -1] {
            let error = ContextView::builder().max_file_size(bad).build().unwrap_err();
            assert_eq!((error.model, error.field), ("ContextView", "max_file_size"));
            let error = ContextView::builder().max_total_size(bad).build().unwrap_err();
            assert_eq!((error.model, error.field), ("ContextView", "max_total_size"));
        }
        let v = view(ContextView::builder().max_file_size(1024).max_total_size(1));
        assert_eq!((v.max_file_size(), v.max_total_size()), (Some(1024), Some(1)));
        assert!(v.allows_file_size(1024) && !v.allows_file_size(1025));
        assert!(ContextView::default().allows_file_size(u64::MAX));
    }

    #[test]
    fn bad_patterns_and_names_are_rejected() {
        assert_eq!(ContextView::builder().include_paths(["src/[a"]).build().unwrap_err().field, "include_paths");
        assert_eq!(ContextView::builder().exclude_paths([""]).build().unwrap_err().field, "exclude_paths");
        assert_eq!(ContextView::builder().include_resources(["{a"]).build().unwrap_err().field, "include_resources");
        assert_eq!(ContextView::builder().exclude_resources([" "]).build().unwrap_err().field, "exclude_resources");
        assert_eq!(ProjectContextPolicy::new("").unwrap_err().field, "project");
    }

    #[test]
    fn policy_round_trips_through_json() {
        let policy = ProjectContextPolicy::new("web")
            .unwrap()
            .with_view(Phase::Default, view(ContextView::builder().exclude_paths(["target"]).max_file_size(1_048_576)))
            .with_view(Phase::Apply, view(ContextView::builder().include_resources(["web"])));
        let json = serde_json::to_string(&policy).unwrap();
        assert!(json.contains(r#""views":{"default":{"#), "{json}");
        let back: ProjectContextPolicy = serde_json::from_str(&json).unwrap();
        assert_eq!(back, policy);
        assert!(!back.allows_path(Phase::Execute, "target/x"), "matchers are rebuilt on read");

        let minimal: ProjectContextPolicy = serde_json::from_str(r#"{"project":"web"}"#).unwrap();
        assert!(minimal.views().is_empty());
        for bad in [
            r#"{"project":"web","views":{"default":{"max_file_size":0}}}"#,
            r#"{"project":"web","views":{"review":{}}}"#,
            r#"{"project":"web","views":{"default":{"include":["a"]}}}"#,
            r#"{"project":"web","colour":"red"}"#,
            r#"{"project":""}"#,
        ] {
            assert!(serde_json::from_str::<ProjectContextPolicy>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn into_builder_keeps_the_view() {
        let v = view(ContextView::builder().include_paths(["src"]).max_total_size(10));
        let widened = v.clone().into_builder().include_paths(Vec::<String>::new()).build().unwrap();
        assert_eq!(widened.max_total_size(), Some(10));
        assert!(widened.allows_path("docs/a.md") && !v.allows_path("docs/a.md"));
    }

    proptest! {
        #[test]
        fn an_excluded_path_is_never_allowed(segments in prop::collection::vec("[a-z]{1,6}", 1..5), cut in 0usize..5) {
            let path = segments.join("/");
            let excluded_dir = segments[..(cut % segments.len()) + 1].join("/");
            let v = view(ContextView::builder().include_paths(["**", "*", path.as_str()]).exclude_paths([format!("/{excluded_dir}")]));
            prop_assert!(!v.allows_path(&path));
            let anchored = view(ContextView::builder().include_paths([format!("/{path}")]));
            prop_assert!(anchored.allows_path(&path));
        }
    }
}
