//! The code-aware analyzer shared by every text backend.
//!
//! Source code names things by gluing words together (`parseHttpRequest`,
//! `parse_http_request`, `src/agents/store.rs`), so a plain word tokenizer either misses
//! the parts (`http`) or loses the whole identifier. This analyzer keeps both: every
//! identifier is emitted whole, and when it is made of several words its parts follow.
//! Both backends index and query through [`code_tokens`] (Tantivy as a registered
//! tokenizer, FTS5 by storing the pre-split token stream), so a query splits exactly like
//! the documents it is matched against.
//!
//! The rules, in order:
//! 1. An *identifier* is a maximal run of alphanumeric characters and `_`; everything
//!    else (spaces, `/`, `::`, `(`, quotes, operators) separates identifiers.
//! 2. Each identifier is emitted whole, lowercased (`parseHTTPRequest_v2` ->
//!    `parsehttprequest_v2`).
//! 3. If it has more than one part, the parts follow, lowercased. Parts are split at `_`
//!    and at case changes: lower or digit to upper (`parse|Http`, `Sha256|Hash`) and the
//!    last capital of a capital run that starts a lowercase word (`HTTP|Request`). A
//!    letter-digit boundary is not a split (`v2`, `utf8`, `sha256` stay whole).
//! 4. Identifiers joined by single dots with no space around them (`store.rs`,
//!    `os.path.join`) are also emitted joined: after the tokens of each identifier of the
//!    chain comes the chain so far (`os`, `path`, `os.path`, `join`, `os.path.join`), so
//!    a file name or qualified name can be matched exactly. Slashes, `::` and other separators do not join: path components are
//!    searched one by one; whole-path matching is the job of `SearchFilter::paths_prefix`.
//! 5. Tokens longer than [`MAX_TOKEN_BYTES`] are dropped (minified blobs, base64), their
//!    parts are kept when short enough.
//!
//! Tokens are not deduplicated: repeated words count towards term frequency, as BM25
//! expects.

use std::ops::Range;

/// Longest token, in bytes, that the analyzer emits; longer ones are noise and would only
/// bloat the term dictionary.
pub(crate) const MAX_TOKEN_BYTES: usize = 128;

/// Splits `text` into lowercase search tokens; see the module documentation for the rules.
///
/// ```
/// use agents_search::code_tokens;
/// assert_eq!(
///     code_tokens("parseHTTPRequest_v2"),
///     ["parsehttprequest_v2", "parse", "http", "request", "v2"]
/// );
/// assert_eq!(code_tokens("src/agents/store.rs"), ["src", "agents", "store", "rs", "store.rs"]);
/// ```
pub fn code_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for_each_code_token(text, |token, _span| tokens.push(token.to_owned()));
    tokens
}

/// The tokens full-text search indexes and queries with: [`code_tokens`], each
/// word of four letters or more followed by its English Snowball stem when that
/// differs (`parsing` -> `pars`, `serializers` -> `serial`, `args` -> `arg`), so a commit message's
/// `parsing` finds `parse_date` and `serialization` finds `serializers/`. The
/// exact word still matches exactly, so exact matches score above stem matches.
pub fn search_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for_each_search_token(text, |token, _span| tokens.push(token.to_owned()));
    tokens
}

/// [`search_tokens`] with the byte range each token comes from (a stem has its
/// word's range). Each token is lent to `sink` from a buffer the next one
/// reuses: indexing a repository tokenizes hundreds of megabytes, and an
/// allocation per token was a tenth of a first index's time.
pub(crate) fn for_each_search_token(text: &str, mut sink: impl FnMut(&str, Range<usize>)) {
    for_each_code_token(text, |token, span| {
        sink(token, span.clone());
        with_search_stem(token, |stem| sink(stem, span));
    });
}

/// Calls `f` with the stem [`search_tokens`] adds after `token`, when it adds
/// one: words of [`MIN_STEMMED_BYTES`] or more, lowercase ASCII letters only,
/// whose English stem differs.
pub(crate) fn with_search_stem(token: &str, f: impl FnOnce(&str)) {
    if token.len() >= MIN_STEMMED_BYTES && token.bytes().all(|b| b.is_ascii_lowercase()) {
        with_stem(token, f);
    }
}

/// Shortest word that [`search_tokens`] stems: shorter ones (`get`, `map`,
/// `len`) are identifiers more often than inflected words.
const MIN_STEMMED_BYTES: usize = 4;

/// The per-thread cache is cleared when it holds this many words.
const STEM_CACHE_CAPACITY: usize = 1 << 17;

thread_local! {
    /// English Snowball stems of the words seen on this thread (`None`: the
    /// stem is the word). Code repeats its words endlessly, and stemming was
    /// the largest part of tokenizing.
    static STEMS: std::cell::RefCell<rustc_hash::FxHashMap<Box<str>, Option<Box<str>>>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

/// Calls `f` with `word`'s stem when it differs from the word.
fn with_stem(word: &str, f: impl FnOnce(&str)) {
    let stem = STEMS.with(|cell| {
        let mut cache = cell.borrow_mut();
        if let Some(stem) = cache.get(word) {
            return stem.clone();
        }
        if cache.len() >= STEM_CACHE_CAPACITY {
            cache.clear();
        }
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let stem = Some(stemmer.stem(word)).filter(|stem| stem != word).map(|stem| Box::from(stem.as_ref()));
        cache.insert(Box::from(word), stem.clone());
        stem
    });
    if let Some(stem) = stem {
        f(&stem);
    }
}

/// Calls `sink` with every token of `text` and the byte range of `text` it comes from;
/// the token text is already lowercased (and lent from a buffer the next token reuses).
/// [`code_tokens`] and the Tantivy tokenizer are both built on this.
pub(crate) fn for_each_code_token(text: &str, mut sink: impl FnMut(&str, Range<usize>)) {
    let mut lower = String::new();
    let mut emit = |span: Range<usize>| {
        if span.len() <= MAX_TOKEN_BYTES {
            let token = &text[span.clone()];
            if token.is_ascii() {
                lower.clear();
                lower.push_str(token);
                lower.make_ascii_lowercase();
                sink(&lower, span);
            } else {
                // Unicode lowercasing depends on context (a final sigma).
                sink(&token.to_lowercase(), span);
            }
        }
    };
    // Start of the current dotted chain (`a.b.c`) and how many identifiers it holds.
    let mut chain: Option<(usize, usize)> = None;
    let mut parts = Vec::new();
    for word in identifiers(text) {
        chain = match chain {
            Some((start, count)) if word.start > 0 && joins_with_dot(text, word.start) => Some((start, count + 1)),
            _ => Some((word.start, 1)),
        };
        emit(word.clone());
        identifier_parts(text, word.clone(), &mut parts);
        if parts.len() > 1 || parts.first().is_some_and(|part| *part != word) {
            for part in parts.drain(..) {
                emit(part);
            }
        }
        if let Some((start, count)) = chain
            && count > 1
        {
            emit(start..word.end);
        }
    }
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when the identifier starting at `start` follows `<identifier>.` directly.
fn joins_with_dot(text: &str, start: usize) -> bool {
    let mut before = text[..start].chars().rev();
    before.next() == Some('.') && before.next().is_some_and(is_identifier_char)
}

/// Byte ranges of the maximal runs of identifier characters (alphanumeric
/// or `_`): the identifiers of rule 1.
pub fn identifiers(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, _) = chars.by_ref().find(|&(_, c)| is_identifier_char(c))?;
        let mut end = text.len();
        while let Some(&(index, c)) = chars.peek() {
            if !is_identifier_char(c) {
                end = index;
                break;
            }
            chars.next();
        }
        Some(start..end)
    })
}

/// The word parts of one identifier, into `parts` (cleared first): split at
/// `_` and at case changes (rule 3).
fn identifier_parts(text: &str, word: Range<usize>, parts: &mut Vec<Range<usize>>) {
    parts.clear();
    let identifier = &text[word.clone()];
    if identifier.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        // The common case: one lowercase word, no split.
        parts.push(word);
        return;
    }
    let mut part_start: Option<usize> = None;
    let mut previous: Option<char> = None;
    let mut chars = identifier.char_indices().map(|(i, c)| (word.start + i, c)).peekable();
    while let Some((index, c)) = chars.next() {
        let next = chars.peek().map(|&(_, c)| c);
        let before = previous.replace(c);
        if c == '_' {
            if let Some(start) = part_start.take() {
                parts.push(start..index);
            }
            continue;
        }
        let Some(start) = part_start else {
            part_start = Some(index);
            continue;
        };
        // A part has started, so a character came before this one.
        let previous = before.unwrap_or(c);
        let boundary = c.is_uppercase()
            && (previous.is_lowercase()
                || previous.is_numeric()
                || (previous.is_uppercase() && next.is_some_and(char::is_lowercase)));
        if boundary {
            parts.push(start..index);
            part_start = Some(index);
        }
    }
    if let Some(start) = part_start {
        parts.push(start..word.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(code_tokens(text), expected, "tokens of {text:?}");
    }

    #[test]
    fn camel_case_keeps_whole_and_parts() {
        check("parseHttpRequest", &["parsehttprequest", "parse", "http", "request"]);
        check("parseHTTPRequest_v2", &["parsehttprequest_v2", "parse", "http", "request", "v2"]);
        check("Sha256Hash utf8", &["sha256hash", "sha256", "hash", "utf8"]);
        check("HTTPServer", &["httpserver", "http", "server"]);
    }

    #[test]
    fn snake_case_and_dunder() {
        check("parse_http_request", &["parse_http_request", "parse", "http", "request"]);
        check("__init__", &["__init__", "init"]);
        check("MAX_TOKEN", &["max_token", "max", "token"]);
        check("plain", &["plain"]);
    }

    #[test]
    fn paths_split_and_file_name_stays_whole() {
        check("src/agents/store.rs", &["src", "agents", "store", "rs", "store.rs"]);
        check("os.path.join(x)", &["os", "path", "os.path", "join", "os.path.join", "x"]);
        check("end. Next", &["end", "next"]);
        check("a::b", &["a", "b"]);
    }

    #[test]
    fn unicode_and_separators() {
        check("Größe café", &["größe", "café"]);
        check("foo(bar) AND \"x", &["foo", "bar", "and", "x"]);
        check("", &[]);
        check("  ()\"*:  ", &[]);
    }

    #[test]
    fn search_tokens_add_stems_after_their_words() {
        assert_eq!(search_tokens("fix parsing"), ["fix", "parsing", "pars"]);
        assert_eq!(search_tokens("src/serializers"), ["src", "serializers", "serial"]);
        assert_eq!(search_tokens("parse_date"), ["parse_date", "parse", "pars", "date"]);
        // Short words and identifiers with digits or capitals inside stay as they are.
        assert_eq!(search_tokens("len v2s isOK"), ["len", "v2s", "isok", "is", "ok"]);
    }

    #[test]
    fn long_tokens_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert!(code_tokens(&long).is_empty());
        let joined = format!("{}_{}", "b".repeat(100), "c".repeat(100));
        assert_eq!(code_tokens(&joined), vec!["b".repeat(100), "c".repeat(100)]);
    }

    /// The part split as first written (a vector of characters per
    /// identifier): the buffer-reusing one must split identically.
    fn reference_parts(text: &str, word: Range<usize>) -> Vec<Range<usize>> {
        let mut parts = Vec::new();
        let chars: Vec<(usize, char)> = text[word.clone()].char_indices().map(|(i, c)| (word.start + i, c)).collect();
        let mut part_start: Option<usize> = None;
        for (k, &(index, c)) in chars.iter().enumerate() {
            if c == '_' {
                if let Some(start) = part_start.take() {
                    parts.push(start..index);
                }
                continue;
            }
            let Some(start) = part_start else {
                part_start = Some(index);
                continue;
            };
            let previous = chars[k - 1].1;
            let next = chars.get(k + 1).map(|&(_, c)| c);
            let boundary = c.is_uppercase()
                && (previous.is_lowercase()
                    || previous.is_numeric()
                    || (previous.is_uppercase() && next.is_some_and(char::is_lowercase)));
            if boundary {
                parts.push(start..index);
                part_start = Some(index);
            }
        }
        if let Some(start) = part_start {
            parts.push(start..word.end);
        }
        parts
    }

    proptest::proptest! {
        #[test]
        fn parts_split_as_the_reference_does(text in "[a-zA-Z0-9_ÄäΣσ.:/ ]{0,40}") {
            let mut parts = Vec::new();
            for word in identifiers(&text) {
                identifier_parts(&text, word.clone(), &mut parts);
                proptest::prop_assert_eq!(&parts, &reference_parts(&text, word));
            }
        }

        #[test]
        fn lent_tokens_equal_lowercased_slices(text in "[a-zA-Z0-9_ÄäΣσ.:/ ]{0,40}") {
            let mut seen = Vec::new();
            for_each_code_token(&text, |token, span| seen.push((token.to_owned(), span)));
            for (token, span) in seen {
                proptest::prop_assert_eq!(token, text[span].to_lowercase());
            }
        }
    }
}
