//! The file-level fallback for every language without a structural
//! analyzer (YAML, TOML, shell, SQL, reStructuredText, plain text, ...).
//!
//! The file is one [`NodeKind::File`] node spanning the whole text; no
//! parse, no references. It runs on most files of a repository, so it only
//! looks at the first [`HEAD_LINES`] lines, and only for prose formats, to
//! find a doc:
//!
//! - `restructuredtext`: the first section title (a line underlined, and
//!   optionally overlined, with a repeated punctuation character), else the
//!   first line of text that is not a directive or comment (`..`);
//! - `asciidoc`: the document or first section title (`= Title`,
//!   `== Section`), else the first line that is not an attribute
//!   (`:name: value`), comment (`//`) or block delimiter;
//! - `text`: the first non-blank line, if it holds a letter.
//!
//! Every other language gets no doc. Docs are single lines of at most
//! [`DOC_LIMIT`] characters.

use crate::lang::Analyzer;
use crate::model::{FileAnalysis, NodeKind};

/// Lines looked at for a doc.
pub const HEAD_LINES: usize = 40;
/// The most characters of a doc.
pub const DOC_LIMIT: usize = 200;

pub struct FallbackAnalyzer;

impl Analyzer for FallbackAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &[]
    }

    fn analyze(&self, language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut analysis = FileAnalysis::file_only(NodeKind::File, path, text);
        let doc = match language {
            "restructuredtext" => rst_doc(text),
            "asciidoc" => asciidoc_doc(text),
            "text" => text_doc(text),
            _ => None,
        };
        analysis.nodes[0].doc = doc.map(|d| limit(d.trim()));
        analysis
    }
}

fn head(text: &str) -> impl Iterator<Item = &str> {
    text.trim_start_matches('\u{feff}').lines().take(HEAD_LINES).map(|l| l.trim_end())
}

/// A line made of one repeated punctuation character, three or more long.
fn is_adornment(line: &str) -> bool {
    let mut chars = line.chars();
    let Some(first) = chars.next() else { return false };
    first.is_ascii_punctuation() && line.len() >= 3 && chars.all(|c| c == first)
}

fn rst_doc(text: &str) -> Option<String> {
    let lines: Vec<&str> = head(text).collect();
    for (i, line) in lines.iter().enumerate() {
        let title = line.trim();
        if title.is_empty() || is_adornment(title) || title.starts_with("..") {
            continue;
        }
        let overlined = i > 0 && is_adornment(lines[i - 1]);
        if (overlined || !line.starts_with(' ')) && lines.get(i + 1).is_some_and(|next| is_adornment(next)) {
            return Some(title.to_string());
        }
    }
    // No title: the first unindented line that is not markup.
    lines
        .iter()
        .filter(|l| !l.starts_with([' ', '\t']))
        .map(|l| l.trim())
        .find(|t| !t.is_empty() && !t.starts_with("..") && !is_adornment(t) && !is_field(t))
        .map(str::to_string)
}

/// `:name: value`, an RST field or an AsciiDoc attribute.
fn is_field(line: &str) -> bool {
    line.strip_prefix(':').is_some_and(|rest| rest.contains(':'))
}

fn asciidoc_doc(text: &str) -> Option<String> {
    let lines: Vec<&str> = head(text).collect();
    for line in &lines {
        let marks = line.bytes().take_while(|&b| b == b'=').count();
        if (1..=6).contains(&marks) && line[marks..].starts_with(' ') && !line[marks..].trim().is_empty() {
            return Some(line[marks..].trim().to_string());
        }
    }
    lines
        .iter()
        .map(|l| l.trim())
        .find(|t| {
            !t.is_empty()
                && !t.starts_with("//")
                && !is_field(t)
                && !is_adornment(t)
                && (!t.starts_with('[') || !t.ends_with(']'))
        })
        .map(str::to_string)
}

fn text_doc(text: &str) -> Option<String> {
    head(text).map(str::trim).find(|t| !t.is_empty()).filter(|t| t.chars().any(char::is_alphabetic)).map(str::to_string)
}

fn limit(s: &str) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(DOC_LIMIT) {
        Some((cut, _)) => format!("{}…", collapsed[..cut].trim_end()),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "# CI pipeline\nname: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n";

    const RST: &str = r#".. _intro:

=================
 Gizmo Reference
=================

:Author: Someone

Gizmo turns widgets into gadgets.

Usage
-----

Call ``gizmo``.
"#;

    #[test]
    fn yaml_is_one_file_node() {
        let a = FallbackAnalyzer.analyze("yaml", ".github/workflows/ci.yml", YAML);
        insta::assert_snapshot!(a.outline());
        assert_eq!(a.nodes.len(), 1);
        assert_eq!(a.nodes[0].span.slice(YAML), YAML);
        assert!(a.references.is_empty() && a.warnings.is_empty());
    }

    #[test]
    fn rst_doc_is_the_first_title() {
        let a = FallbackAnalyzer.analyze("restructuredtext", "docs/index.rst", RST);
        insta::assert_snapshot!(a.outline());
        assert_eq!(a.nodes[0].doc.as_deref(), Some("Gizmo Reference"));
        // No title: the first line of text.
        let a = FallbackAnalyzer.analyze("restructuredtext", "x.rst", ".. note::\n   hidden\n\nPlain start.\n");
        assert_eq!(a.nodes[0].doc.as_deref(), Some("Plain start."));
    }

    #[test]
    fn asciidoc_and_text_docs() {
        let a = FallbackAnalyzer.analyze("asciidoc", "README.adoc", ":toc:\n// comment\n= The Guide\nAuthor\n");
        assert_eq!(a.nodes[0].doc.as_deref(), Some("The Guide"));
        let a = FallbackAnalyzer.analyze("asciidoc", "x.adoc", ":toc:\n\nJust text.\n");
        assert_eq!(a.nodes[0].doc.as_deref(), Some("Just text."));
        let a = FallbackAnalyzer.analyze("text", "LICENSE", "\n\n   MIT License\n\nCopyright...\n");
        assert_eq!(a.nodes[0].doc.as_deref(), Some("MIT License"));
        let a = FallbackAnalyzer.analyze("text", "numbers.txt", "1 2 3\n");
        assert_eq!(a.nodes[0].doc, None);
        let long = "x".repeat(500);
        let a = FallbackAnalyzer.analyze("text", "long.txt", &long);
        assert_eq!(a.nodes[0].doc.as_deref().unwrap().chars().count(), DOC_LIMIT + 1);
        // Other languages: no doc, even with a comment header.
        let a = FallbackAnalyzer.analyze("shell", "run.sh", "#!/bin/sh\n# Runs it.\n");
        assert_eq!(a.nodes[0].kind, NodeKind::File);
        assert_eq!(a.nodes[0].doc, None);
        for text in ["", "\n", "=", "==", "===\n===", "\u{feff}"] {
            for language in ["restructuredtext", "asciidoc", "text", "yaml"] {
                FallbackAnalyzer.analyze(language, "x", text);
            }
        }
    }
}
