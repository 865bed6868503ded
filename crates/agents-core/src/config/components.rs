//! The ten components of the assembly pipeline (spec acms-v1) and their
//! `context.pipeline.<key>` keys: the one table that the configuration, the key
//! docs, the pipeline builder and the assembly trace all read.

use super::names::closed_set;

/// One of the ten pipeline components, chosen by name from
/// `context.pipeline.<key>`. [`PipelineComponent::ALL`] lists them in the
/// spec's numbering, which is also the order of `[context.pipeline]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PipelineComponent {
    /// 1: decides which strategies to invoke.
    StrategySelector,
    /// 2: distributes the budget across the selected strategies.
    BudgetAllocator,
    /// 3: runs the selected strategies.
    StrategyExecutor,
    /// 4: removes duplicate fragments.
    FragmentDeduplicator,
    /// 5: picks one detail depth when a node appears at several.
    DetailDepthResolver,
    /// 6: computes the composite fragment score.
    FragmentScorer,
    /// 7: fits scored fragments into the budget.
    BudgetPacker,
    /// 8: orders packed fragments for coherence.
    FragmentOrderer,
    /// 9: writes the provenance summary before the context.
    PreambleGenerator,
    /// 10: compresses parent plan context into a skeleton.
    SkeletonCompressor,
}

impl PipelineComponent {
    /// Every component, in the spec's numbering.
    pub const ALL: [PipelineComponent; 10] = [
        PipelineComponent::StrategySelector,
        PipelineComponent::BudgetAllocator,
        PipelineComponent::StrategyExecutor,
        PipelineComponent::FragmentDeduplicator,
        PipelineComponent::DetailDepthResolver,
        PipelineComponent::FragmentScorer,
        PipelineComponent::BudgetPacker,
        PipelineComponent::FragmentOrderer,
        PipelineComponent::PreambleGenerator,
        PipelineComponent::SkeletonCompressor,
    ];

    /// The key under `[context.pipeline]`, also the component's name in the
    /// assembly trace and in error messages.
    pub const fn key(self) -> &'static str {
        match self {
            PipelineComponent::StrategySelector => "strategy-selector",
            PipelineComponent::BudgetAllocator => "budget-allocator",
            PipelineComponent::StrategyExecutor => "strategy-executor",
            PipelineComponent::FragmentDeduplicator => "fragment-deduplicator",
            PipelineComponent::DetailDepthResolver => "detail-depth-resolver",
            PipelineComponent::FragmentScorer => "fragment-scorer",
            PipelineComponent::BudgetPacker => "budget-packer",
            PipelineComponent::FragmentOrderer => "fragment-orderer",
            PipelineComponent::PreambleGenerator => "preamble-generator",
            PipelineComponent::SkeletonCompressor => "skeleton-compressor",
        }
    }

    /// What the component does, in one line: the key's doc in
    /// `agents config init` and the configuration reference.
    pub const fn description(self) -> &'static str {
        match self {
            PipelineComponent::StrategySelector => "decides which strategies to invoke",
            PipelineComponent::BudgetAllocator => "distributes the budget across the selected strategies",
            PipelineComponent::StrategyExecutor => "runs the selected strategies",
            PipelineComponent::FragmentDeduplicator => "removes duplicate fragments",
            PipelineComponent::DetailDepthResolver => "picks one detail depth when a node appears at several",
            PipelineComponent::FragmentScorer => "computes the composite fragment score",
            PipelineComponent::BudgetPacker => "fits scored fragments into the budget",
            PipelineComponent::FragmentOrderer => "orders packed fragments for coherence",
            PipelineComponent::PreambleGenerator => "writes the provenance summary before the context",
            PipelineComponent::SkeletonCompressor => "compresses parent plan context into a skeleton",
        }
    }
}

closed_set!(PipelineComponent, "pipeline component", key);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_back_and_are_distinct() {
        for component in PipelineComponent::ALL {
            assert_eq!(component.key().parse::<PipelineComponent>(), Ok(component));
            assert_eq!(component.to_string(), component.key());
            assert!(!component.description().is_empty());
            let json = serde_json::to_string(&component).unwrap();
            assert_eq!(json, format!("\"{}\"", component.key()));
            assert_eq!(serde_json::from_str::<PipelineComponent>(&json).unwrap(), component);
        }
        let mut keys = PipelineComponent::ALL.map(PipelineComponent::key).to_vec();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 10);
        let error = "fragment-sorter".parse::<PipelineComponent>().unwrap_err().to_string();
        assert!(error.starts_with("unknown pipeline component `fragment-sorter`, expected one of `strategy-selector`"));
        assert!(error.ends_with("`skeleton-compressor`"), "{error}");
    }
}
