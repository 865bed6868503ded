//! YAML reading shared by every schema: frontmatter splitting, the line of a
//! top-level key, the `akms_schema` check, and conversion to JSON values.
//!
//! Nesting is bounded before the YAML parser sees the text: the parser's cost
//! grows quadratically with depth (100,000 levels took over 30 s), so
//! [`nesting_error`] scans the text once and refuses anything nested more
//! than [`MAX_YAML_DEPTH`] levels (the YAML deserializer itself stops at 128).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;
use yaml_serde::Value as Yaml;

use crate::diag::{Diagnostic, ProblemKind};

/// The schema version every AKMS file must carry.
pub const SCHEMA_VERSION: &str = "v2";

/// A Markdown file split into its YAML frontmatter and its body.
pub struct Frontmatter<'a> {
    pub yaml: &'a str,
    /// Line of the file on which the YAML starts (the line after `---`).
    pub first_line: usize,
    pub body: &'a str,
}

/// Splits `---\n<yaml>\n---\n<body>`; `None` when the file has no frontmatter.
pub fn split_frontmatter(text: &str) -> Option<Frontmatter<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n')?;
    if text[..first_end].trim_end() != "---" {
        return None;
    }
    let start = first_end + 1;
    let mut offset = start;
    for line in text[start..].split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Some(Frontmatter { yaml: &text[start..offset], first_line: 2, body: &text[offset + line.len()..] });
        }
        offset += line.len();
    }
    None
}

/// The 1-based line (within `yaml`, shifted by `first_line - 1`) of every
/// top-level key.
pub(crate) fn key_lines(yaml: &str, first_line: usize) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    for (i, line) in yaml.lines().enumerate() {
        let Some(first) = line.chars().next() else { continue };
        if first.is_whitespace() || matches!(first, '#' | '-' | '\'' | '"') {
            continue;
        }
        if let Some((key, _)) = line.split_once(':') {
            lines.entry(key.trim().to_owned()).or_insert(first_line + i);
        }
    }
    lines
}

/// Deepest nesting of collections a YAML text may have.
pub(crate) const MAX_YAML_DEPTH: usize = 100;

/// The 0-based line of `yaml` on which its collections nest deeper than
/// [`MAX_YAML_DEPTH`], if they do. One pass, linear in the text: block
/// nesting is counted by indentation levels (plus compact `- - x` and
/// `? ` entries), flow nesting by the brackets open outside quotes and
/// comments; block scalars (`|`, `>`) are skipped. It may overcount odd
/// layouts, never undercount a real nesting.
pub(crate) fn nesting_error(yaml: &str) -> Option<usize> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // Block nesting of the line a multi-line flow collection started on.
    let mut block = 0usize;
    // Inside a quoted scalar spanning lines: its quote character.
    let mut quote: Option<char> = None;
    // Inside a block scalar: the indentation of the line that opened it.
    let mut block_scalar: Option<usize> = None;
    for (number, line) in yaml.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = line[indent..].trim_end();
        if let Some(parent) = block_scalar {
            if content.is_empty() || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        if quote.is_none() && flow == 0 && (content.is_empty() || content.starts_with('#')) {
            continue;
        }
        let mut depth = block + flow;
        let mut rest = content;
        if quote.is_none() && flow == 0 {
            while indents.last().is_some_and(|&last| last > indent) {
                indents.pop();
            }
            if indents.last() != Some(&indent) {
                indents.push(indent);
            }
            depth = indents.len();
            // Compact nested entries: `- - - x`, `? - x`.
            loop {
                let trimmed = rest.trim_start_matches([' ', '\t']);
                match trimmed.as_bytes() {
                    [b'-' | b'?', b' ' | b'\t', ..] => {
                        depth += 1;
                        rest = &trimmed[1..];
                    }
                    _ => break,
                }
            }
            block = depth;
        }
        if depth > MAX_YAML_DEPTH {
            return Some(number);
        }
        let mut previous = ' ';
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some('\'') if c == '\'' => {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = None;
                    }
                }
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if previous.is_whitespace() => break,
                    '\'' | '"' if previous.is_whitespace() || matches!(previous, '[' | '{' | ',' | ':' | '-' | '?') => {
                        quote = Some(c);
                    }
                    '[' | '{' => {
                        flow += 1;
                        if depth + 1 > MAX_YAML_DEPTH {
                            return Some(number);
                        }
                        depth += 1;
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
        if quote.is_none() && flow == 0 {
            let code = rest.split(" #").next().unwrap_or_default().trim_end();
            let last_word = code.rsplit([' ', '\t']).next().unwrap_or_default();
            if last_word.starts_with(['|', '>']) && last_word.len() <= 3 {
                block_scalar = Some(indent);
            }
        }
    }
    None
}

/// The diagnostic for YAML nested too deep, when `yaml` is.
pub(crate) fn check_nesting(file: &Path, yaml: &str, first_line: usize) -> Result<(), Diagnostic> {
    match nesting_error(yaml) {
        None => Ok(()),
        Some(line) => Err(Diagnostic::error(
            ProblemKind::Yaml,
            file,
            Some(first_line + line),
            None,
            format!("invalid yaml: nested more than {MAX_YAML_DEPTH} levels deep"),
        )),
    }
}

/// Parses `yaml` into a mapping, or a diagnostic naming the line.
pub fn parse_mapping(file: &Path, yaml: &str, first_line: usize) -> Result<yaml_serde::Mapping, Diagnostic> {
    check_nesting(file, yaml, first_line)?;
    match yaml_serde::from_str::<Yaml>(yaml) {
        Ok(Yaml::Mapping(map)) => Ok(map),
        Ok(Yaml::Null) => Ok(yaml_serde::Mapping::new()),
        Ok(_) => Err(Diagnostic::error(
            ProblemKind::Yaml,
            file,
            Some(first_line),
            None,
            "expected a mapping of fields".into(),
        )),
        Err(e) => Err(yaml_error(file, &e, first_line, "invalid yaml: ")),
    }
}

/// A YAML error as a diagnostic, its line shifted to the file's numbering.
/// `prefix` says what failed: the syntax, or (empty) the schema.
pub(crate) fn yaml_error(file: &Path, error: &yaml_serde::Error, first_line: usize, prefix: &str) -> Diagnostic {
    let line = error.location().map(|l| l.line() + first_line - 1);
    let message = error.to_string();
    // The location is already in the diagnostic; drop serde's " at line N column M".
    let mut message = match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    };
    // serde says `invalid type: string "0.85", expected f64`: say why.
    if let Some(rest) = message.split("invalid type: string \"").nth(1)
        && let Some(kind) = rest.split('"').next().and_then(quoted_scalar)
    {
        message.push_str(&format!(" ({kind} in quotes is text: write it without the quotes)"));
    }
    Diagnostic::error(ProblemKind::Yaml, file, line, None, format!("{prefix}{message}"))
}

/// Checks `akms_schema: v2`.
pub(crate) fn check_schema(
    file: &Path,
    map: &yaml_serde::Mapping,
    lines: &BTreeMap<String, usize>,
) -> Option<Diagnostic> {
    let line = lines.get("akms_schema").copied();
    match map.get("akms_schema") {
        Some(Yaml::String(v)) if v == SCHEMA_VERSION => None,
        Some(other) => Some(Diagnostic::error(
            ProblemKind::SchemaVersion,
            file,
            line,
            Some("akms_schema"),
            format!("schema version {} is not the current {SCHEMA_VERSION}", scalar_text(other)),
        )),
        None => Some(Diagnostic::error(
            ProblemKind::SchemaVersion,
            file,
            None,
            Some("akms_schema"),
            format!("missing schema version (akms_schema: {SCHEMA_VERSION})"),
        )),
    }
}

/// A short rendering of a YAML value for messages.
pub(crate) fn scalar_text(value: &Yaml) -> String {
    match value {
        Yaml::String(s) if quoted_scalar(s).is_some() => {
            format!(
                "the string \"{s}\" ({} in quotes is text: write it without the quotes)",
                quoted_scalar(s).unwrap_or_default()
            )
        }
        Yaml::String(s) => format!("`{s}`"),
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => format!("`{b}`"),
        Yaml::Number(n) => format!("`{n}`"),
        Yaml::Sequence(_) => "a list".into(),
        Yaml::Mapping(_) => "a mapping".into(),
        Yaml::Tagged(t) => scalar_text(&t.value),
    }
}

/// What a quoted scalar would be without its quotes: `a number` or `true or
/// false`; `None` for other text.
fn quoted_scalar(text: &str) -> Option<&'static str> {
    let t = text.trim();
    if !t.is_empty() && t.parse::<f64>().is_ok_and(f64::is_finite) {
        Some("a number")
    } else if matches!(t, "true" | "false") {
        Some("true or false")
    } else {
        None
    }
}

/// Converts a YAML value to JSON: maps get string keys (sorted on output),
/// tags are dropped.
pub fn to_json(value: &Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64().and_then(serde_json::Number::from_f64).map_or(Json::Null, Json::Number)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(items) => Json::Array(items.iter().map(to_json).collect()),
        Yaml::Mapping(map) => {
            let sorted: BTreeMap<String, Json> = map.iter().map(|(k, v)| (key_text(k), to_json(v))).collect();
            Json::Object(sorted.into_iter().collect())
        }
        Yaml::Tagged(t) => to_json(&t.value),
    }
}

fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(s) => s.clone(),
        other => scalar_text(other).trim_matches('`').to_owned(),
    }
}

/// Rebuilds `value` with every object's keys in sorted order, whatever map
/// type `serde_json` was built with.
pub(crate) fn sorted(value: Json) -> Json {
    match value {
        Json::Object(map) => {
            let sorted: BTreeMap<String, Json> = map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Json::Object(sorted.into_iter().collect())
        }
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_frontmatter_and_counts_key_lines() {
        let text = "---\nid: a\n# comment\ntags:\n  - x\n---\n# Body\n";
        let fm = split_frontmatter(text).unwrap();
        assert_eq!(fm.body, "# Body\n");
        let lines = key_lines(fm.yaml, fm.first_line);
        assert_eq!(lines["id"], 2);
        assert_eq!(lines["tags"], 4);
        assert!(split_frontmatter("# no frontmatter\n").is_none());
        assert!(split_frontmatter("---\nid: a\n").is_none());
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let n = 100_000;
        for (text, line) in [
            (format!("a: {}1{}\n", "[".repeat(n), "]".repeat(n)), 2),
            (format!("a: {}1\n", "{b: ".repeat(n)), 2),
            (format!("a:\n  {}x\n", "- ".repeat(n)), 3),
            (format!("a: {}\n", "[".repeat(n)), 2),
        ] {
            // Each would take the parser tens of seconds; the scan refuses it at once.
            let err = parse_mapping(Path::new("deep.md"), &text, 2).unwrap_err();
            assert_eq!(err.kind, ProblemKind::Yaml);
            assert_eq!(err.line, Some(line), "{err}");
            assert!(err.to_string().contains("nested more than 100 levels deep"), "{err}");
        }
        // Indentation-nested mappings are counted by their levels.
        let mut deep = String::new();
        for level in 0..=MAX_YAML_DEPTH {
            deep.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert!(nesting_error(&deep).is_some());
    }

    #[test]
    fn ordinary_yaml_is_not_counted_as_nested() {
        let text = "a:\n  b: [1, [2, 3], {c: d}]\n  e: \"[[[[ not a list\"\n  f: '{{{{ it''s text'\n  g: x # [[[[\n  h: |\n    [[[[[[[[[[\n        {{{{{{{\n  i: don't [ stop\n  j: ]\nk:\n  - - - x\n";
        assert_eq!(nesting_error(text), None);
        // Deep but allowed: a block scalar's own indentation is not nesting.
        let mut scalar = String::from("code: |\n");
        for level in 0..200 {
            scalar.push_str(&format!("  {}x\n", " ".repeat(level)));
        }
        assert_eq!(nesting_error(&scalar), None);
        let flow = format!("a: {}1{}\n", "[".repeat(90), "]".repeat(90));
        assert_eq!(nesting_error(&flow), None);
        assert!(parse_mapping(Path::new("a.md"), &flow, 1).is_ok());
    }

    /// Issue 18 item 8: a number (or boolean) given as a string says so.
    #[test]
    fn item_8_numbers_given_as_strings_say_so() {
        assert_eq!(
            scalar_text(&Yaml::String("3".into())),
            "the string \"3\" (a number in quotes is text: write it without the quotes)"
        );
        assert!(scalar_text(&Yaml::String("true".into())).contains("true or false in quotes"));
        assert_eq!(scalar_text(&Yaml::String("three".into())), "`three`");
        let evidence = crate::evidence::tests::MEMORY.replace("phase_id: 1", "phase_id: \"1\"");
        let problems = crate::evidence::parse_evidence(Path::new("s.md"), &evidence).unwrap_err();
        assert_eq!(
            problems[0].to_string(),
            "s.md:4: phase_id: expected a whole number of at least 0, found the string \"1\" (a number in quotes is text: write it without the quotes)"
        );
        let config = "akms_schema: v2\nconfidence:\n  local_decay: \"0.85\"\n";
        let problems = crate::config::parse_config(Path::new("p.yaml"), config).unwrap_err();
        assert!(
            problems[0].to_string().ends_with("(a number in quotes is text: write it without the quotes)"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn yaml_errors_carry_the_file_line() {
        let err = parse_mapping(Path::new("a.md"), "id: a\ntags: [x\n", 2).unwrap_err();
        assert_eq!(err.kind, ProblemKind::Yaml);
        assert!(err.line.unwrap() >= 3, "{err}");
    }
}
