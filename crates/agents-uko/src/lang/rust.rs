//! (placeholder: being written)

use crate::lang::Analyzer;
use crate::model::{FileAnalysis, NodeKind};

pub struct RustAnalyzer;

impl Analyzer for RustAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &[]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        FileAnalysis::file_only(NodeKind::File, path, text)
    }
}
