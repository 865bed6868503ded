//! The short forms code writes for words a question spells out: a question
//! asks where "the arguments" are parsed, the code says `args`; "the standard
//! output" is `stdout`, "the configuration" `cfg`. The count of a
//! question's words a piece holds ([`crate::QueryTerms`]), which the chunk
//! ranker weighs, takes a word of prose in a query as met by its short forms
//! too. Full-text search does not add them to the query: an Express app
//! writes `req` and `res` in every handler.
//!
//! Only words written as prose expand (one lowercase word, not a part of an
//! identifier the query writes): a look-up that names `RequestContext`
//! wants that name, not every `req` and `ctx`. The table holds short forms
//! common across languages and projects; a form the language uses as a
//! keyword (`fn`, `func`, `def`) is left out, since every function's text
//! holds it.

use std::collections::HashMap;
use std::sync::LazyLock;

/// Each word (matched by its English stem, so plurals and inflections too)
/// with the short forms code writes for it, singular: the index holds each
/// word of four letters or more with its stem, so `arg` also meets `args`.
const WORDS: [(&str, &[&str]); 58] = [
    ("address", &["addr"]),
    ("allocation", &["alloc"]),
    ("allocate", &["alloc"]),
    ("application", &["app"]),
    ("argument", &["arg"]),
    ("asynchronous", &["async"]),
    ("attribute", &["attr"]),
    ("authentication", &["auth"]),
    ("authorization", &["auth"]),
    ("buffer", &["buf"]),
    ("callback", &["cb"]),
    ("certificate", &["cert"]),
    ("character", &["char"]),
    ("command", &["cmd"]),
    ("configuration", &["config", "cfg", "conf"]),
    ("connection", &["conn"]),
    ("context", &["ctx"]),
    ("count", &["cnt"]),
    ("current", &["cur", "curr"]),
    ("database", &["db"]),
    ("description", &["desc"]),
    ("destination", &["dst", "dest"]),
    ("directory", &["dir"]),
    ("document", &["doc"]),
    ("element", &["elem"]),
    ("environment", &["env"]),
    ("error", &["err"]),
    ("execute", &["exec"]),
    ("expression", &["expr"]),
    ("identifier", &["id", "ident"]),
    ("implementation", &["impl"]),
    ("index", &["idx"]),
    ("information", &["info"]),
    ("initialization", &["init"]),
    ("initialize", &["init"]),
    ("iterator", &["iter"]),
    ("length", &["len"]),
    ("library", &["lib"]),
    ("manager", &["mgr"]),
    ("maximum", &["max"]),
    ("message", &["msg"]),
    ("minimum", &["min"]),
    ("number", &["num"]),
    ("object", &["obj"]),
    ("option", &["opt"]),
    ("package", &["pkg"]),
    ("parameter", &["param"]),
    ("password", &["pwd", "passwd"]),
    ("pointer", &["ptr"]),
    ("position", &["pos"]),
    ("previous", &["prev"]),
    ("reference", &["ref"]),
    ("repository", &["repo"]),
    ("request", &["req"]),
    ("response", &["resp", "res"]),
    ("sequence", &["seq"]),
    ("source", &["src"]),
    ("temporary", &["tmp", "temp"]),
];

/// Two words in a row and the short forms code writes for them together;
/// the second word is the one they meet.
const PHRASES: [(&str, &str, &[&str]); 7] = [
    ("standard", "output", &["stdout"]),
    ("standard", "error", &["stderr"]),
    ("standard", "input", &["stdin"]),
    ("file", "descriptor", &["fd"]),
    ("regular", "expression", &["regex", "regexp"]),
    ("command", "line", &["cmdline"]),
    ("environment", "variable", &["envvar"]),
];

/// [`WORDS`] by the stem of each word.
static BY_STEM: LazyLock<HashMap<String, &'static [&'static str]>> =
    LazyLock::new(|| WORDS.iter().map(|(word, short)| (stem(word), *short)).collect());

/// [`PHRASES`] by the stems of their words.
static PHRASE_STEMS: LazyLock<Vec<(String, String, &'static [&'static str])>> =
    LazyLock::new(|| PHRASES.iter().map(|(first, second, short)| (stem(first), stem(second), *short)).collect());

fn stem(word: &str) -> String {
    let mut root = word.to_owned();
    crate::tokenize::with_search_stem(word, |stem| root = stem.to_owned());
    root
}

/// One expansion of a query: `short` meets the query's word `word` (a
/// lowercase token of the query; for a phrase, its second word).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShortForm {
    pub word: String,
    pub short: &'static str,
}

/// The short forms of the prose words of `query` ([`WORDS`], [`PHRASES`]),
/// in query order, each once.
pub fn short_forms(query: &str) -> Vec<ShortForm> {
    // Each identifier of the query: a prose word and its stem, or `None`.
    let words: Vec<Option<(&str, String)>> = crate::tokenize::identifiers(query)
        .map(|range| &query[range])
        .map(|word| word.bytes().all(|b| b.is_ascii_lowercase()).then(|| (word, stem(word))))
        .collect();
    let mut out: Vec<ShortForm> = Vec::new();
    let mut push = |word: &str, shorts: &[&'static str]| {
        for &short in shorts {
            if short != word && !out.iter().any(|f| f.short == short) {
                out.push(ShortForm { word: word.to_owned(), short });
            }
        }
    };
    for (i, entry) in words.iter().enumerate() {
        let Some((word, root)) = entry else { continue };
        if let Some(Some((_, before))) = i.checked_sub(1).map(|j| &words[j]) {
            for (first, second, shorts) in PHRASE_STEMS.iter() {
                if before == first && root == second {
                    push(word, shorts);
                }
            }
        }
        if let Some(shorts) = BY_STEM.get(root) {
            push(word, shorts);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shorts(query: &str) -> Vec<(&'static str, String)> {
        short_forms(query).into_iter().map(|f| (f.short, f.word)).collect()
    }

    #[test]
    fn prose_words_meet_their_short_forms() {
        assert_eq!(
            shorts("where are the arguments and the configuration read"),
            [
                ("arg", "arguments".into()),
                ("config", "configuration".into()),
                ("cfg", "configuration".into()),
                ("conf", "configuration".into())
            ]
        );
        // Phrases meet theirs, on their second word.
        assert_eq!(
            shorts("why does help go to standard output and usage to standard error"),
            [("stdout", "output".into()), ("stderr", "error".into()), ("err", "error".into())]
        );
        // Identifiers the query writes are names, not prose.
        assert!(shorts("RequestContext request_id").is_empty());
        assert_eq!(shorts("the HTTP request"), [("req", "request".into())]);
        // A word that is its own short form adds nothing.
        assert!(shorts("config").is_empty());
        assert!(shorts("").is_empty());
    }

    #[test]
    fn short_forms_are_shorter_than_their_words() {
        for (word, short) in WORDS {
            assert!(!short.is_empty() && short.iter().all(|s| s.len() < word.len()), "{word}");
        }
    }
}
