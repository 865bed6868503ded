//! The `ContextBudgetEnforcer`: a policy view's path filters and size limits
//! applied to scored fragments, saying what it excluded or summarised and why.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agents_core::policy::ContextView;
use agents_core::tokens::TokenCounter;
use agents_pack::{DepthRenderer, ScoredFragment, at_depth};
use serde::Serialize;

/// What the pipeline may ask about a file.
pub trait FileFacts: Sync {
    /// Size in bytes.
    fn size(&self, path: &str) -> Option<u64>;
    /// Last modification, seconds since the epoch.
    fn modified(&self, path: &str) -> Option<i64>;
}

/// Knows nothing (fragments handed to `assemble`).
pub struct NoFacts;

impl FileFacts for NoFacts {
    fn size(&self, _path: &str) -> Option<u64> {
        None
    }

    fn modified(&self, _path: &str) -> Option<i64> {
        None
    }
}

/// Reads the files under a root, once each.
pub struct FsFacts {
    root: PathBuf,
    cache: Mutex<HashMap<String, Option<(u64, i64)>>>,
}

impl FsFacts {
    pub fn new(root: &Path) -> FsFacts {
        FsFacts { root: root.to_path_buf(), cache: Mutex::new(HashMap::new()) }
    }

    fn stat(&self, path: &str) -> Option<(u64, i64)> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        *cache.entry(path.to_owned()).or_insert_with(|| {
            let meta = std::fs::metadata(self.root.join(path)).ok()?;
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            Some((meta.len(), modified))
        })
    }
}

impl FileFacts for FsFacts {
    fn size(&self, path: &str) -> Option<u64> {
        self.stat(path).map(|s| s.0)
    }

    fn modified(&self, path: &str) -> Option<i64> {
        self.stat(path).map(|s| s.1)
    }
}

/// One decision of the enforcer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Enforcement {
    pub uko_node: String,
    pub path: String,
    /// `excluded` or `summarised`.
    pub action: &'static str,
    pub reason: String,
}

/// Depth a summarised fragment is rendered at: its structure, not its source.
pub const SUMMARY_DEPTH: u8 = 2;

/// Applies a [`ContextView`]: paths outside it are excluded (exclusions win over
/// inclusions); a fragment of a file over `max_file_size` is summarised (depth 2)
/// or, when that fails, excluded; once the fragments' content passes
/// `max_total_size` bytes, the rest are summarised while they fit, else excluded.
/// Input order (best first) decides who keeps full detail.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContextBudgetEnforcer;

impl ContextBudgetEnforcer {
    pub fn enforce(
        &self,
        scored: Vec<ScoredFragment>,
        view: &ContextView,
        facts: &dyn FileFacts,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> (Vec<ScoredFragment>, Vec<Enforcement>) {
        let mut actions = Vec::new();
        let mut kept = Vec::with_capacity(scored.len());
        let mut total: u64 = 0;
        let act = |s: &ScoredFragment, action: &'static str, reason: String| Enforcement {
            uko_node: s.piece.uko_node.clone(),
            path: s.piece.path.clone(),
            action,
            reason,
        };
        let summarise = |s: &ScoredFragment| -> Option<ScoredFragment> {
            if s.piece.depth <= SUMMARY_DEPTH {
                return Some(s.clone());
            }
            at_depth(&s.piece, SUMMARY_DEPTH, renderer, tokenizer).map(|piece| ScoredFragment { piece, ..s.clone() })
        };
        for mut s in scored {
            let has_file = !s.piece.path.is_empty() && !s.piece.inline;
            if has_file && !view.allows_path(&s.piece.path) {
                actions.push(act(&s, "excluded", "path excluded by the policy view".to_owned()));
                continue;
            }
            if has_file
                && let (Some(limit), Some(size)) = (view.max_file_size(), facts.size(&s.piece.path))
                && size > limit
            {
                match summarise(&s) {
                    Some(summary) => {
                        if summary.piece.depth != s.piece.depth {
                            actions.push(act(
                                &s,
                                "summarised",
                                format!("file is {size} bytes, over max_file_size {limit}: depth {SUMMARY_DEPTH}"),
                            ));
                        }
                        s = summary;
                    }
                    None => {
                        actions.push(act(&s, "excluded", format!("file is {size} bytes, over max_file_size {limit}")));
                        continue;
                    }
                }
            }
            if let Some(limit) = view.max_total_size() {
                let bytes = s.piece.content.len() as u64;
                if total + bytes > limit {
                    match summarise(&s).filter(|sum| total + sum.piece.content.len() as u64 <= limit) {
                        Some(summary) => {
                            actions.push(act(
                                &s,
                                "summarised",
                                format!("max_total_size {limit} bytes reached: depth {}", summary.piece.depth),
                            ));
                            s = summary;
                        }
                        None => {
                            actions.push(act(&s, "excluded", format!("max_total_size {limit} bytes reached")));
                            continue;
                        }
                    }
                }
                total += s.piece.content.len() as u64;
            }
            kept.push(s);
        }
        (kept, actions)
    }
}
