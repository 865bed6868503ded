//! The printer: every command's output goes through here, as JSON for
//! machines (`--json`) or text for people. Data on stdout, messages on stderr.

use std::io::Write;

use serde::Serialize;

/// Where and how a command reports.
#[derive(Clone, Copy, Debug)]
pub struct Printer {
    pub json: bool,
    pub quiet: bool,
}

impl Printer {
    /// Prints `value` as pretty JSON, or the text `human` renders. A reader
    /// that went away (`agents ... | head`) is not an error.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) -> anyhow::Result<()> {
        let mut text = if self.json { serde_json::to_string_pretty(value)? } else { human() };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let mut stdout = std::io::stdout().lock();
        match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// An informational line on stderr (suppressed by --quiet and --json).
    pub fn note(&self, message: impl AsRef<str>) {
        if !self.quiet && !self.json {
            eprintln!("{}", message.as_ref());
        }
    }
}

/// `12345678` -> `12,345,678`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A borderless table for terminal output.
pub fn table(header: &[&str]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING);
    t.set_header(header.iter().map(|h| comfy_table::Cell::new(h).add_attribute(comfy_table::Attribute::Bold)));
    t
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12345678), "12,345,678");
    }
}
