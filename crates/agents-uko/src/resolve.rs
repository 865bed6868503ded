//! Binding raw references to files and symbols across a resource.
//!
//! [`ResolveContext`] is what import resolution needs to know about the
//! resource: which files exist, found by exact path or by file name. Each
//! analyzer maps its language's specifiers to candidate paths and asks the
//! context which exist; an ambiguous or missing target stays unresolved (a
//! named external dependency), never bound to a wrong file.

use std::collections::{BTreeSet, HashMap};

use crate::model::file_name;

/// The files of a resource, for resolving import specifiers.
pub struct ResolveContext<'a> {
    files: &'a BTreeSet<String>,
    by_name: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> ResolveContext<'a> {
    /// `files` are `/`-separated paths relative to the resource root.
    pub fn new(files: &'a BTreeSet<String>) -> ResolveContext<'a> {
        let mut by_name: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
        for path in files {
            by_name.entry(file_name(path)).or_default().push(path.as_str());
        }
        ResolveContext { files, by_name }
    }

    pub fn exists(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// The first of `candidates` that exists.
    pub fn first_existing<I, S>(&self, candidates: I) -> Option<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        candidates.into_iter().find(|c| self.exists(c.as_ref())).map(|c| c.as_ref().to_string())
    }

    /// Paths whose file name is `name`, sorted.
    pub fn with_file_name(&self, name: &str) -> &[&'a str] {
        self.by_name.get(name).map_or(&[], |v| v.as_slice())
    }

    /// Paths equal to `suffix` or ending with `/suffix`, sorted.
    pub fn ending_with(&self, suffix: &str) -> Vec<&'a str> {
        let suffix = suffix.trim_start_matches('/');
        self.with_file_name(file_name(suffix))
            .iter()
            .copied()
            .filter(|p| *p == suffix || p.ends_with(&format!("/{suffix}")))
            .collect()
    }

    /// The single path ending with `suffix`; `None` if none or several.
    pub fn unique_ending_with(&self, suffix: &str) -> Option<String> {
        match self.ending_with(suffix).as_slice() {
            [one] => Some(one.to_string()),
            _ => None,
        }
    }

    /// All paths, sorted.
    pub fn files(&self) -> &'a BTreeSet<String> {
        self.files
    }
}

/// The directory part of a relative path (`""` at the root).
pub fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Joins `dir` and a relative `rel` and normalises `.` and `..`; `None` if
/// the result would leave the resource root.
pub fn join_normalized(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_and_stay_inside() {
        assert_eq!(join_normalized("src/a", "../b/c.ts").unwrap(), "src/b/c.ts");
        assert_eq!(join_normalized("", "./x.py").unwrap(), "x.py");
        assert_eq!(join_normalized("src", "../../etc"), None);
        assert_eq!(dir_of("src/a/b.rs"), "src/a");
        assert_eq!(dir_of("b.rs"), "");
    }

    #[test]
    fn suffix_lookup_refuses_ambiguity() {
        let files: BTreeSet<String> =
            ["src/util.h", "lib/util.h", "include/net/http.h", "x.h"].into_iter().map(String::from).collect();
        let ctx = ResolveContext::new(&files);
        assert_eq!(ctx.unique_ending_with("net/http.h").as_deref(), Some("include/net/http.h"));
        assert_eq!(ctx.unique_ending_with("util.h"), None);
        assert_eq!(ctx.unique_ending_with("x.h").as_deref(), Some("x.h"));
        assert_eq!(ctx.first_existing(["nope.h", "x.h"]).as_deref(), Some("x.h"));
    }
}
