//! The error of parsing a name that must be one of a closed set (a pipeline
//! component, a text backend, a tier), shared by the settings' enums.

use std::fmt;

/// A name that is not one of the known values; the message lists them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{name}`, expected {}", expected(known))]
pub struct UnknownName {
    /// What kind of name it was, e.g. `text backend`.
    pub what: &'static str,
    /// The name as given.
    pub name: String,
    /// Every known name.
    pub known: Vec<&'static str>,
}

impl UnknownName {
    /// `name` is not a `what`; `known` lists the names that are.
    pub fn new(what: &'static str, name: &str, known: impl IntoIterator<Item = &'static str>) -> UnknownName {
        UnknownName { what, name: name.to_owned(), known: known.into_iter().collect() }
    }
}

/// `a`, `a` or `b`, `one of a, b, c` with each name in backquotes.
fn expected(known: &[&str]) -> impl fmt::Display {
    let quoted: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
    match quoted.as_slice() {
        [one] => one.clone(),
        [first, second] => format!("{first} or {second}"),
        many => format!("one of {}", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_lists_the_known_names() {
        let one = UnknownName::new("thing", "x", ["a"]);
        assert_eq!(one.to_string(), "unknown thing `x`, expected `a`");
        let two = UnknownName::new("text backend", "lucene", ["tantivy", "fts5"]);
        assert_eq!(two.to_string(), "unknown text backend `lucene`, expected `tantivy` or `fts5`");
        let three = UnknownName::new("tier", "lukewarm", ["hot", "warm", "cold"]);
        assert_eq!(three.to_string(), "unknown tier `lukewarm`, expected one of `hot`, `warm`, `cold`");
    }
}
