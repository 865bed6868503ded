//! Names that must be one of a closed set (a pipeline component, a search
//! backend): the error of parsing one, and [`closed_set!`], which gives such an
//! enum `Display`, `FromStr` and serde through its one table of names.

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

/// Implements `Display`, `FromStr` (failing with [`UnknownName`]) and serde
/// (as the name) for an enum with `const ALL: [Self; N]` and a
/// `const fn $name(self) -> &'static str`, so the names are written once.
macro_rules! closed_set {
    ($type:ty, $what:literal, $name:ident) => {
        impl ::std::fmt::Display for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.$name())
            }
        }

        impl ::std::str::FromStr for $type {
            type Err = $crate::config::UnknownName;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                <$type>::ALL
                    .into_iter()
                    .find(|value| value.$name() == name)
                    .ok_or_else(|| $crate::config::UnknownName::new($what, name, <$type>::ALL.map(<$type>::$name)))
            }
        }

        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.$name())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $type {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                name.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use closed_set;

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
