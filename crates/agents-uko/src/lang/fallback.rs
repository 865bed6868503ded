//! (placeholder: being written)

use crate::lang::Analyzer;
use crate::model::{FileAnalysis, NodeKind};

pub struct FallbackAnalyzer;

impl Analyzer for FallbackAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &[]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        FileAnalysis::file_only(NodeKind::File, path, text)
    }
}
