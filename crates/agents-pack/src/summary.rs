//! Deterministic extractive summaries for demotion: no model, the same text
//! always gives the same summary.
//!
//! Lines are kept, never rewritten. First the lines that carry structure
//! (headings, definitions, declarations), then the first line of each
//! paragraph, each group in source order, while the total stays within the
//! token target; the kept lines are printed in source order, followed by a
//! note of how many lines were left out.

use agents_core::tokens::TokenCounter;

/// Line starts that mark structure worth keeping in a summary.
const STRUCTURE: &[&str] = &[
    "#",
    "def ",
    "async def ",
    "class ",
    "fn ",
    "pub ",
    "async fn ",
    "struct ",
    "enum ",
    "trait ",
    "impl ",
    "mod ",
    "func ",
    "function ",
    "export ",
    "interface ",
    "type ",
    "const ",
    "package ",
    "module ",
    "public ",
    "private ",
    "protected ",
    "- ",
    "* ",
];

/// The indices of `lines` worth keeping, best first: the lines that carry
/// structure, then the first line of each paragraph, each group in source
/// order; with `all`, the remaining non-blank lines after them.
fn outline_order(lines: &[&str], all: bool) -> Vec<usize> {
    let structural = |line: &str| STRUCTURE.iter().any(|start| line.trim_start().starts_with(start));
    let opens_paragraph = |i: usize| i == 0 || lines[i - 1].trim().is_empty();
    let filled: Vec<usize> = (0..lines.len()).filter(|&i| !lines[i].trim().is_empty()).collect();
    let mut order: Vec<usize> = filled.iter().copied().filter(|&i| structural(lines[i])).collect();
    order.extend(filled.iter().copied().filter(|&i| !structural(lines[i]) && opens_paragraph(i)));
    if all {
        let taken: std::collections::HashSet<usize> = order.iter().copied().collect();
        order.extend(filled.into_iter().filter(|i| !taken.contains(i)));
    }
    order
}

fn summary_note(kept: usize, total: usize) -> String {
    format!("[summary: {kept} of {total} lines]")
}

/// `content` cut to the lines that best outline it, within `max_tokens`
/// (counted with `tokens`, the note included). Content already within the
/// target comes back unchanged. At least the first non-blank line is kept.
pub fn extractive_summary(content: &str, max_tokens: usize, tokens: &dyn TokenCounter) -> String {
    if tokens.count(content) <= max_tokens {
        return content.to_owned();
    }
    let lines: Vec<&str> = content.lines().collect();
    let mut kept: Vec<usize> = Vec::new();
    let mut used = tokens.count(&summary_note(lines.len(), lines.len()));
    for i in outline_order(&lines, false) {
        let cost = tokens.count(lines[i]) + 1;
        if used + cost > max_tokens && !kept.is_empty() {
            continue;
        }
        used += cost;
        kept.push(i);
    }
    render_kept(&lines, kept)
}

/// `content` summarised to at most `max_lines` (at least 1) of its lines, with
/// the same preference as [`extractive_summary`] (structure, then paragraph
/// openings), then the other lines in source order, and a note of how many
/// were kept. Content of at most `max_lines` non-blank lines comes back as
/// those lines.
pub fn summary_lines(content: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let filled: Vec<&str> = lines.iter().copied().filter(|l| !l.trim().is_empty()).collect();
    if filled.len() <= max_lines.max(1) {
        return filled.join("\n") + "\n";
    }
    let kept: Vec<usize> = outline_order(&lines, true).into_iter().take(max_lines.max(1)).collect();
    render_kept(&lines, kept)
}

fn render_kept(lines: &[&str], mut kept: Vec<usize>) -> String {
    kept.sort_unstable();
    let mut out: String = kept.iter().map(|&i| format!("{}\n", lines[i])).collect();
    out.push_str(&summary_note(kept.len(), lines.len()));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per whitespace-separated word: enough to test the selection.
    struct Words;
    impl TokenCounter for Words {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    #[test]
    fn keeps_structure_first_in_source_order_within_the_target() {
        let text = "intro line one two\nmore words here and there\n\nclass Billing:\n    body of the class goes on\n\
                    \n    def send(self):\n        lots of body words in here\n\nlast paragraph words\n";
        let summary = extractive_summary(text, 14, &Words);
        assert_eq!(summary, "class Billing:\n    def send(self):\n[summary: 2 of 10 lines]\n");
        let wider = extractive_summary(text, 20, &Words);
        assert!(wider.starts_with("intro line one two\nclass Billing:\n"), "{wider}");
        assert!(wider.contains("last paragraph words\n"), "{wider}");
        assert_eq!(extractive_summary(text, 20, &Words), wider, "deterministic");
        assert_eq!(extractive_summary(text, 40, &Words), text, "already within the target");
        assert_eq!(extractive_summary("short", 10, &Words), "short", "already within the target");
    }
}
