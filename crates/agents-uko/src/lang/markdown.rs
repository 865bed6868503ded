//! Markdown (`"markdown"`), on the block grammar of `tree-sitter-md`.
//!
//! Node 0 is the file as a [`NodeKind::Document`] named by the file name;
//! its doc is the text of the first prose paragraph (a paragraph of nothing
//! but images/badges does not count), else the first heading's text.
//!
//! Every ATX (`## x`) and setext (`x` over `===`/`---`) heading at the
//! document level is a [`NodeKind::Section`], nested by level: a section
//! spans from its heading to just before the next heading of the same or a
//! higher level (trailing blank lines excluded), or to the end of the file.
//! The grammar's own `section` nodes are not used for this: it wraps ATX
//! headings only, so a setext heading would not open a section. The name is
//! the heading text without markers, closing `#`s or inline markup
//! (`[text](url)` -> `text`, images and HTML tags dropped, `` ` ``/`**`
//! removed); the signature is the heading normalised to ATX form
//! (`## Usage`), the doc the section's first prose paragraph (before any
//! sub-heading), as plain text, at most 300 characters. Headings inside
//! block quotes or list items, empty headings, and anything in code blocks
//! or the front matter (`---`/`+++` metadata) make no sections.
//!
//! References: each relative link `[x](./other.md)`, `[y](../src/lib.rs#L10)`,
//! image `![z](img/logo.png)` and link reference definition
//! `[r]: docs/x.md` is a [`RefKind::Mentions`] from the innermost section
//! (node 0 before the first heading) with the link path as written, without
//! `#fragment` or `?query`; once per (section, target). URLs with a scheme
//! (`https:`, `mailto:`), protocol-relative `//host` links and pure `#anchor`
//! links are skipped; root-relative `/docs/x.md` links are kept as written.
//! Links inside code spans and code blocks are not links. HTML `href`/`src`
//! attributes are not read.

use tree_sitter::Node;

use crate::lang::{Analyzer, FileBuilder, node_text, parse};
use crate::model::{FileAnalysis, NodeKind, Point, RefKind, Span};

pub struct MarkdownAnalyzer;

impl Analyzer for MarkdownAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["markdown"]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let Some(tree) = parse(&tree_sitter_md::LANGUAGE.into(), text) else {
            let mut analysis = FileAnalysis::file_only(NodeKind::Document, path, text);
            analysis.warnings.push("markdown: the grammar could not parse this file".to_string());
            return analysis;
        };
        let mut walker = Walker {
            builder: FileBuilder::new(NodeKind::Document, path, text),
            text,
            open: Vec::new(),
            ends: Vec::new(),
            wants_doc: None,
            document_doc: None,
            first_heading: None,
        };
        walker.builder.syntax_warnings(&tree);
        walker.blocks(tree.root_node());
        walker.finish()
    }
}

/// The most characters of a section or document doc.
const DOC_LIMIT: usize = 300;

struct Walker<'t> {
    builder: FileBuilder,
    text: &'t str,
    /// Open sections, outermost first: (level, node index).
    open: Vec<(u8, usize)>,
    /// Section ends found so far: (node index, byte where the next section starts).
    ends: Vec<(usize, usize, Point)>,
    /// The section whose first paragraph is still to come.
    wants_doc: Option<usize>,
    document_doc: Option<String>,
    first_heading: Option<String>,
}

impl<'t> Walker<'t> {
    fn finish(mut self) -> FileAnalysis {
        let doc = self.document_doc.take().or(self.first_heading.take());
        self.builder.set_doc(0, doc);
        let len = self.text.len();
        let end_point = Span::of_text(self.text).end;
        while let Some((_, index)) = self.open.pop() {
            self.ends.push((index, len, end_point));
        }
        let mut analysis = self.builder.finish();
        for (index, end, end_point) in self.ends {
            let span = &mut analysis.nodes[index].span;
            let (end_byte, end_point) = trimmed_end(self.text, span.start_byte, end, end_point);
            span.end_byte = end_byte;
            span.end = end_point;
        }
        analysis
    }

    fn current(&self) -> usize {
        self.open.last().map_or(0, |&(_, index)| index)
    }

    /// The block children of the document or of a grammar `section`.
    fn blocks(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "section" => self.blocks(child),
                "atx_heading" | "setext_heading" => self.heading(child),
                "paragraph" => self.paragraph(child),
                "minus_metadata" | "plus_metadata" | "fenced_code_block" | "indented_code_block" | "html_block" => {}
                _ => self.links_under(child),
            }
        }
    }

    fn heading(&mut self, node: Node<'t>) {
        let Some((level, content)) = heading_parts(node) else { return };
        let raw = node_text(&content, self.text);
        let raw = if node.kind() == "atx_heading" { strip_closing_hashes(raw) } else { raw };
        let name = plain_text(raw, true);
        if name.is_empty() {
            self.links_in(content);
            return;
        }
        let start = node.start_byte();
        let start_point = Span::of_node(&node).start;
        while let Some(&(open_level, index)) = self.open.last() {
            if open_level < level {
                break;
            }
            self.ends.push((index, start, start_point));
            self.open.pop();
        }
        if self.first_heading.is_none() {
            self.first_heading = Some(name.clone());
        }
        let span = Span::of_node(&node);
        let signature = format!("{} {name}", "#".repeat(level as usize));
        let index = self.builder.add(self.current(), NodeKind::Section, &name, span, Some(signature), None);
        self.open.push((level, index));
        self.wants_doc = Some(index);
        self.links_in(content);
    }

    fn paragraph(&mut self, node: Node<'t>) {
        self.links_under(node);
        if self.wants_doc.is_none() && self.document_doc.is_some() {
            return;
        }
        let doc = plain_text(node_text(&node, self.text), false);
        if doc.is_empty() {
            return;
        }
        let doc = truncate(&doc, DOC_LIMIT);
        if let Some(index) = self.wants_doc.take() {
            self.builder.set_doc(index, Some(doc.clone()));
        }
        if self.document_doc.is_none() {
            self.document_doc = Some(doc);
        }
    }

    /// Links in every inline run, table cell and link definition under `node`.
    fn links_under(&mut self, node: Node<'t>) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "inline" | "pipe_table_cell" => self.links_in(n),
                "link_reference_definition" => {
                    let mut cursor = n.walk();
                    let destination = n.named_children(&mut cursor).find(|c| c.kind() == "link_destination");
                    if let Some(destination) = destination {
                        let raw = node_text(&destination, self.text);
                        let raw = raw.strip_prefix('<').and_then(|r| r.strip_suffix('>')).unwrap_or(raw);
                        if let Some(target) = local_target(raw) {
                            self.mention(target, Span::of_node(&destination));
                        }
                    }
                }
                "fenced_code_block" | "indented_code_block" | "html_block" => {}
                _ => {
                    let mut cursor = n.walk();
                    let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
                    stack.extend(children.into_iter().rev());
                }
            }
        }
    }

    /// `Mentions` for the relative link destinations in an inline run.
    fn links_in(&mut self, node: Node<'t>) {
        let base = node.start_byte();
        let base_point = Span::of_node(&node).start;
        let raw = node_text(&node, self.text);
        for (offset, destination) in link_destinations(raw) {
            if let Some(target) = local_target(destination) {
                let start = base + offset;
                let end = start + destination.len();
                let start_point = point_after(self.text, base, base_point, start);
                let end_point = point_after(self.text, start, start_point, end);
                let span = Span { start_byte: start, end_byte: end, start: start_point, end: end_point };
                self.mention(target, span);
            }
        }
    }

    fn mention(&mut self, target: &str, span: Span) {
        let from = self.current();
        self.builder.reference_once(from, RefKind::Mentions, target, span);
    }
}

/// A heading's level and its content node.
fn heading_parts(node: Node<'_>) -> Option<(u8, Node<'_>)> {
    let content = node.child_by_field_name("heading_content")?;
    let mut cursor = node.walk();
    let level = node.children(&mut cursor).find_map(|c| match c.kind() {
        "atx_h1_marker" | "setext_h1_underline" => Some(1),
        "atx_h2_marker" | "setext_h2_underline" => Some(2),
        "atx_h3_marker" => Some(3),
        "atx_h4_marker" => Some(4),
        "atx_h5_marker" => Some(5),
        "atx_h6_marker" => Some(6),
        _ => None,
    })?;
    Some((level, content))
}

/// `Usage ##` -> `Usage` (a closing sequence needs a space before it).
fn strip_closing_hashes(s: &str) -> &str {
    let t = s.trim_end();
    let without = t.trim_end_matches('#');
    if without.len() == t.len() {
        return t;
    }
    if without.is_empty() || without.ends_with([' ', '\t']) { without.trim_end() } else { t }
}

/// Inline Markdown as plain text on one line: links become their text,
/// images and HTML tags vanish, `**`/`__` go, and (for names) backticks.
fn plain_text(s: &str, strip_code: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'!' if bytes.get(i + 1) == Some(&b'[') => {
                // An image: dropped with its destination (or reference).
                match link_end(s, i + 1).or_else(|| matching_bracket(s, i + 1).map(|close| close + 1)) {
                    Some(end) => i = end,
                    None => {
                        out.push('!');
                        i += 1;
                    }
                }
            }
            // A link, or a shortcut reference `[text]`: its text.
            b'[' => match matching_bracket(s, i) {
                Some(close) => {
                    out.push_str(&plain_text(&s[i + 1..close], strip_code));
                    i = link_end(s, i).unwrap_or(close + 1);
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            b'<' => {
                let rest = &s[i + 1..];
                let tag = rest.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '/' || ch == '!');
                match rest.find('>') {
                    Some(end) if tag => {
                        let inner = &rest[..end];
                        if inner.contains(':') && !inner.contains(char::is_whitespace) {
                            out.push_str(inner); // an autolink
                        }
                        i += end + 2;
                    }
                    _ => {
                        out.push('<');
                        i += 1;
                    }
                }
            }
            b'*' | b'_' if bytes.get(i + 1) == Some(&c) => i += 2,
            // Emphasis: `*a*`, `_a_`; not `a * b` nor `snake_case`.
            b'*' | b'_' => {
                let before = i.checked_sub(1).map(|p| bytes[p]);
                let after = bytes.get(i + 1).copied();
                let word = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || b >= 0x80);
                let space = |b: Option<u8>| b.is_none_or(|b| b.is_ascii_whitespace());
                let keep = if c == b'*' { space(before) && space(after) } else { word(before) && word(after) };
                if keep {
                    out.push(c as char);
                }
                i += 1;
            }
            b'&' => match entity(&s[i..]) {
                Some((replacement, len)) => {
                    out.push(replacement);
                    i += len;
                }
                None => {
                    out.push('&');
                    i += 1;
                }
            },
            b'`' => {
                // A code span is copied verbatim (without its backticks in names).
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                let close = code_span_end(bytes, i + run, run);
                match close {
                    Some(close) => {
                        let keep = if strip_code { &s[i + run..close] } else { &s[i..close + run] };
                        out.push_str(keep);
                        i = close + run;
                    }
                    None => {
                        if !strip_code {
                            out.push_str(&s[i..i + run]);
                        }
                        i += run;
                    }
                }
            }
            b'\\' if bytes.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) => {
                out.push(bytes[i + 1] as char);
                i += 2;
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A common HTML entity at the start of `s`: its character and length.
fn entity(s: &str) -> Option<(char, usize)> {
    let end = s.bytes().take(12).position(|b| b == b';')?;
    let c = match &s[1..end] {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" | "#39" => '\'',
        "nbsp" | "ensp" | "emsp" | "thinsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        _ => return None,
    };
    Some((c, end + 1))
}

/// Where the run of `run` backticks closing a code span that starts at
/// `from` begins.
fn code_span_end(bytes: &[u8], from: usize, run: usize) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j] == b'`' {
            let close = bytes[j..].iter().take_while(|&&b| b == b'`').count();
            if close == run {
                return Some(j);
            }
            j += close;
        } else {
            j += 1;
        }
    }
    None
}

/// The index of the `]` closing the `[` at `open`.
fn matching_bracket(s: &str, open: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// For `[text](dest)` or `[text][ref]` starting at `open`, the index just
/// past the whole link; `None` when `[` starts no link.
fn link_end(s: &str, open: usize) -> Option<usize> {
    let close = matching_bracket(s, open)?;
    let bytes = s.as_bytes();
    match bytes.get(close + 1) {
        Some(b'(') => {
            let (_, end) = destination_at(s, close + 2);
            Some((s[end..].find(')').map_or(end, |p| end + p + 1)).min(s.len()))
        }
        Some(b'[') => s[close + 1..].find(']').map(|p| close + 1 + p + 1),
        _ => None,
    }
}

/// The destination starting at `start` (after `](`): its byte range.
fn destination_at(s: &str, start: usize) -> (usize, usize) {
    let bytes = s.as_bytes();
    let mut j = start;
    while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\n' | b'\r') {
        j += 1;
    }
    if bytes.get(j) == Some(&b'<') {
        let end = s[j + 1..].find(['>', '\n']).map_or(bytes.len(), |p| j + 1 + p);
        return (j + 1, end);
    }
    let mut depth = 0usize;
    let mut k = j;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 1,
            b'(' => depth += 1,
            b')' if depth == 0 => break,
            b')' => depth -= 1,
            c if c.is_ascii_whitespace() => break,
            _ => {}
        }
        k += 1;
    }
    (j, k.min(bytes.len()))
}

/// Every inline link/image destination in `s` outside code spans: (byte
/// offset, destination as written).
fn link_destinations(s: &str) -> Vec<(usize, &str)> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'`' => {
                // Skip the code span, if it is closed.
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                i = code_span_end(bytes, i + run, run).map_or(i + run, |close| close + run);
            }
            b']' if bytes.get(i + 1) == Some(&b'(') => {
                let (start, end) = destination_at(s, i + 2);
                if end > start {
                    out.push((start, &s[start..end]));
                }
                i = end.max(i + 2);
            }
            _ => i += 1,
        }
    }
    out
}

/// A link destination naming a local file: without fragment and query;
/// `None` for URLs, anchors and empty links.
fn local_target(destination: &str) -> Option<&str> {
    let d = destination.trim();
    if d.is_empty() || d.starts_with('#') || d.starts_with("//") {
        return None;
    }
    let path_end = d.find(['#', '?']).unwrap_or(d.len());
    let path = &d[..path_end];
    let first_segment = path.split('/').next().unwrap_or("");
    if first_segment.contains(':') {
        return None; // `https:`, `mailto:`, `data:` ...
    }
    if path.is_empty() { None } else { Some(path) }
}

/// The point of byte `target` at or after `anchor`, whose point is known
/// (work proportional to the distance, not the file).
fn point_after(text: &str, anchor: usize, anchor_point: Point, target: usize) -> Point {
    let between = &text.as_bytes()[anchor..target];
    match between.iter().rposition(|&b| b == b'\n') {
        None => Point { line: anchor_point.line, column: anchor_point.column + (target - anchor) as u32 },
        Some(last) => {
            let newlines = between.iter().filter(|&&b| b == b'\n').count() as u32;
            Point { line: anchor_point.line + newlines, column: (target - (anchor + last + 1)) as u32 }
        }
    }
}

/// The end of a section that runs up to `end` (whose point is `end_point`):
/// trailing whitespace dropped.
fn trimmed_end(text: &str, start: usize, end: usize, end_point: Point) -> (usize, Point) {
    let slice = text.get(start..end).unwrap_or("");
    let trimmed = start + slice.trim_end().len();
    let removed = &text.as_bytes()[trimmed..end];
    let newlines = removed.iter().filter(|&&b| b == b'\n').count() as u32;
    if newlines == 0 {
        return (trimmed, Point { line: end_point.line, column: end_point.column - (end - trimmed) as u32 });
    }
    let line_start = text.as_bytes()[..trimmed].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    (trimmed, Point { line: end_point.line - newlines, column: (trimmed - line_start) as u32 })
}

/// At most `limit` characters, cut at a word boundary, with `…` when cut.
fn truncate(s: &str, limit: usize) -> String {
    if s.chars().count() <= limit {
        return s.to_string();
    }
    let cut = s.char_indices().nth(limit).map_or(s.len(), |(i, _)| i);
    let head = &s[..cut];
    let head = head.rfind(' ').filter(|&p| p > cut / 2).map_or(head, |p| &head[..p]);
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze(text: &str) -> FileAnalysis {
        MarkdownAnalyzer.analyze("markdown", "docs/README.md", text)
    }

    const README: &str = r#"[![Build](https://ci.example.com/badge.svg)](https://ci.example.com)

Gizmo
=====

Gizmo turns **widgets** into [gadgets](./docs/gadgets.md), fast.
See the [API](../src/lib.rs#L10) and the [site](https://gizmo.dev).

Installation
------------

Run the installer:

```sh
# Not a heading: a shell comment
make install
```

    # Not a heading either: indented code

### From source ###

Clone it, then read [building](docs/building.md?plain=1#steps) or the
[FAQ][faq]. Jump to [usage](#usage). Mail <mailto:me@example.com>.

![Diagram](img/arch.png "Architecture")

## Usage

Use `gizmo [x](not-a-link.md)` on a file.

| Option | Meaning |
|--------|---------|
| `-v`   | see [verbose](docs/verbose.md) |

> # A quoted heading is not a section

- item with [a list link](docs/list.md)

# Appendix

Trailing notes.

[faq]: ./docs/faq.md "Frequently asked"
"#;

    #[test]
    fn readme_outline() {
        let a = analyze(README);
        insta::assert_snapshot!(a.outline());
    }

    #[test]
    fn sections_start_with_their_heading() {
        let a = analyze(README);
        let sections: Vec<_> = a.nodes.iter().filter(|n| n.kind == NodeKind::Section).collect();
        assert_eq!(sections.len(), 5, "{}", a.outline());
        for node in sections {
            let slice = node.span.slice(README);
            assert!(
                slice.starts_with(node.name.as_str())
                    || slice.trim_start_matches('#').trim_start().starts_with(node.name.as_str()),
                "{slice:?}"
            );
            assert_eq!(slice, slice.trim_end());
            let line = README.split('\n').nth(node.span.start.line as usize - 1).unwrap();
            assert!(line.contains(node.name.as_str()));
            let end_line = README.split('\n').nth(node.span.end.line as usize - 1).unwrap();
            assert_eq!(&end_line[..node.span.end.column as usize], slice.rsplit('\n').next().unwrap());
        }
        let usage = a.nodes.iter().find(|n| n.name == "Usage").unwrap();
        assert!(usage.span.slice(README).ends_with("[a list link](docs/list.md)"));
        let install = a.nodes.iter().find(|n| n.name == "Installation").unwrap();
        assert!(install.span.slice(README).starts_with("Installation\n------------"));
        // `Installation` (h2) holds `From source` (h3) and ends where `Usage` (h2) starts.
        assert!(install.span.slice(README).contains("### From source"));
        assert!(!install.span.slice(README).contains("## Usage"));
    }

    #[test]
    fn docs_are_plain_text() {
        let a = analyze(README);
        assert_eq!(
            a.nodes[0].doc.as_deref(),
            Some("Gizmo turns widgets into gadgets, fast. See the API and the site.")
        );
        let install = a.nodes.iter().find(|n| n.name == "Installation").unwrap();
        assert_eq!(install.doc.as_deref(), Some("Run the installer:"));
        let long = format!("# T\n\n{}\n", "word ".repeat(200));
        let a = analyze(&long);
        let doc = a.nodes[1].doc.as_deref().unwrap();
        assert!(doc.ends_with('…') && doc.chars().count() <= DOC_LIMIT + 1, "{doc}");
        // No paragraph at all: the first heading.
        let a = analyze("# Only a title\n\n- a list\n");
        assert_eq!(a.nodes[0].doc.as_deref(), Some("Only a title"));
    }

    #[test]
    fn front_matter_and_odd_headings() {
        let text = "---\ntitle: Not a heading\n---\n\n# Real ##\n\n#\n\n## C# notes\n\ntext\n";
        let a = analyze(text);
        insta::assert_snapshot!(a.outline());
        for text in ["", "#", "\n\n", "[", "](", "[x](", "![", "a\n===", "```\n# x", "<", "[x]: "] {
            analyze(text);
        }
    }

    #[test]
    fn plain_text_drops_markup() {
        assert_eq!(plain_text("Serde JSON &emsp; ![Build Status] ![x](y.svg)", true), "Serde JSON");
        assert_eq!(
            plain_text("*ser*ializing a * b snake_case _em_ **bold**", false),
            "serializing a * b snake_case em bold"
        );
        assert_eq!(
            plain_text("try [#rust] or [docs](d.md) or [ref][r] `[k](v)` <b>x</b> &amp; &bogus;", false),
            "try #rust or docs or ref `[k](v)` x & &bogus;"
        );
        assert_eq!(plain_text("`code` name", true), "code name");
        assert_eq!(plain_text("[unclosed and ![ and & and <", false), "[unclosed and ![ and & and <");
    }

    #[test]
    fn link_targets() {
        assert_eq!(local_target("./a.md#x"), Some("./a.md"));
        assert_eq!(local_target("a.md?raw=1"), Some("a.md"));
        assert_eq!(local_target("https://x.y/a.md"), None);
        assert_eq!(local_target("mailto:a@b.c"), None);
        assert_eq!(local_target("#anchor"), None);
        assert_eq!(local_target("//cdn.x/y.js"), None);
        assert_eq!(local_target("/docs/x.md"), Some("/docs/x.md"));
        assert_eq!(
            link_destinations("a [b](c d) `[e](f)` [g](<h i>) [j](k(l))"),
            vec![(6, "c"), (25, "h i"), (35, "k(l)")]
        );
    }
}
