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

/// `content` cut to the lines that best outline it, within `max_tokens`
/// (counted with `tokens`, the note included). Content already within the
/// target comes back unchanged. At least the first non-blank line is kept.
pub fn extractive_summary(content: &str, max_tokens: usize, tokens: &dyn TokenCounter) -> String {
    if tokens.count(content) <= max_tokens {
        return content.to_owned();
    }
    let lines: Vec<&str> = content.lines().collect();
    let structural = |line: &str| STRUCTURE.iter().any(|start| line.trim_start().starts_with(start));
    let opens_paragraph = |i: usize| i == 0 || lines[i - 1].trim().is_empty();
    let mut order: Vec<usize> =
        (0..lines.len()).filter(|&i| !lines[i].trim().is_empty() && structural(lines[i])).collect();
    order.extend(
        (0..lines.len()).filter(|&i| !lines[i].trim().is_empty() && !structural(lines[i]) && opens_paragraph(i)),
    );
    let note = |kept: usize| format!("[summary: {kept} of {} lines]", lines.len());
    let mut kept: Vec<usize> = Vec::new();
    let mut used = tokens.count(&note(lines.len()));
    for i in order {
        let cost = tokens.count(lines[i]) + 1;
        if used + cost > max_tokens && !kept.is_empty() {
            continue;
        }
        used += cost;
        kept.push(i);
    }
    kept.sort_unstable();
    let mut out: String = kept.iter().map(|&i| format!("{}\n", lines[i])).collect();
    out.push_str(&note(kept.len()));
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
