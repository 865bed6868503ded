//! The text backends' tests: the conformance suite (`agents_search::conformance`,
//! the contract every backend meets, PostgreSQL's included) once per backend of
//! this crate, and the cases only a backend with files can meet (damaged and
//! foreign files, read-only opens), specified once and run against both.

use std::path::Path;

use agents_search::{
    SearchFilter, TextBackend, TextBackendKind, TextDoc, open_or_reset_text_backend, open_text_backend,
    open_text_reader,
};

mod conformance {
    mod tantivy {
        agents_search::text_backend_conformance!(agents_search::TextBackendKind::Tantivy);
    }
    mod fts5 {
        agents_search::text_backend_conformance!(agents_search::TextBackendKind::Fts5);
    }
}

macro_rules! backend_suite {
    ($($case:ident),* $(,)?) => {
        mod tantivy {
            $(#[test] fn $case() { super::$case(agents_search::TextBackendKind::Tantivy) })*
        }
        mod fts5 {
            $(#[test] fn $case() { super::$case(agents_search::TextBackendKind::Fts5) })*
        }
    };
}

backend_suite!(
    name_reports_kind,
    corrupted_index_is_an_error,
    read_only_opens_beside_each_other_and_never_write,
    a_damaged_index_is_reset_and_reported,
);

fn open(kind: TextBackendKind, dir: &Path) -> Box<dyn TextBackend> {
    open_text_backend(kind, dir).unwrap_or_else(|error| panic!("open {kind}: {error}"))
}

/// A fresh backend in a temporary directory, filled with `docs` and committed.
fn indexed(kind: TextBackendKind, docs: &[TextDoc]) -> (tempfile::TempDir, Box<dyn TextBackend>) {
    let dir = tempfile::tempdir().unwrap();
    let mut backend = open(kind, dir.path());
    backend.upsert(docs).unwrap();
    backend.commit().unwrap();
    (dir, backend)
}

fn doc(id: &str, path: &str, name: &str) -> TextDoc {
    TextDoc { id: id.into(), path: path.into(), name: name.into(), kind: "function".into(), ..TextDoc::default() }
}

fn ids(backend: &dyn TextBackend, query: &str, filter: &SearchFilter) -> Vec<String> {
    backend.search(query, 10, filter).unwrap().into_iter().map(|hit| hit.id).collect()
}

fn all() -> SearchFilter {
    SearchFilter::default()
}

fn name_reports_kind(kind: TextBackendKind) {
    let (_dir, backend) = indexed(kind, &[]);
    assert_eq!(backend.name(), kind.as_str());
    assert_eq!(backend.doc_count().unwrap(), 0);
}

fn corrupted_index_is_an_error(kind: TextBackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let file = if kind == TextBackendKind::Tantivy { "meta.json" } else { "fts5.db" };
    std::fs::write(dir.path().join(file), b"this is not an index, it is a corrupted file of some length").unwrap();
    let error = match open_text_backend(kind, dir.path()) {
        Ok(_) => panic!("{kind} opened a corrupted index"),
        Err(error) => error,
    };
    let message = error.to_string();
    assert!(message.contains(&dir.path().display().to_string()), "{message}");
}

fn read_only_opens_beside_each_other_and_never_write(kind: TextBackendKind) {
    let (dir, writer) = indexed(kind, &[doc("a", "src/a.rs", "parse_http")]);
    // Tantivy: beside the live writer, whose lock a second writer would need.
    // FTS5 opens a finished index (immutable): the writer is closed first.
    let _writer = (kind == TextBackendKind::Tantivy).then_some(writer);
    let mut readers: Vec<Box<dyn TextBackend>> =
        (0..4).map(|_| open_text_reader(kind, dir.path()).unwrap_or_else(|e| panic!("{e}"))).collect();
    for reader in &readers {
        assert_eq!(ids(reader.as_ref(), "parse", &all()), ["a"]);
    }
    assert!(readers[0].upsert(&[doc("b", "src/b.rs", "other")]).is_err());
    let missing = dir.path().join("missing");
    assert!(open_text_reader(kind, &missing).is_err());
    assert!(!missing.exists(), "a reader creates nothing");
}

fn a_damaged_index_is_reset_and_reported(kind: TextBackendKind) {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut backend = open(kind, dir.path());
        backend.upsert(&[doc("n:1", "src/a.rs", "parse_date")]).unwrap();
        backend.commit().unwrap();
    }
    let file = if kind == TextBackendKind::Tantivy { "meta.json" } else { "fts5.db" };
    std::fs::write(dir.path().join(file), "{ not an index, a damaged file of some length }".repeat(20)).unwrap();
    let (mut backend, damage) = open_or_reset_text_backend(kind, dir.path()).unwrap();
    let damage = damage.expect("the reset is reported");
    assert!(damage.is_damage() && damage.to_string().contains(&dir.path().display().to_string()), "{damage}");
    assert_eq!(backend.doc_count().unwrap(), 0, "the index starts empty, for the caller to refill");
    backend.upsert(&[doc("n:2", "src/b.rs", "parse_date")]).unwrap();
    backend.commit().unwrap();
    assert_eq!(ids(&*backend, "parse", &all()), ["n:2"]);
    drop(backend);
    // A sound index opens as it is.
    let (backend, damage) = open_or_reset_text_backend(kind, dir.path()).unwrap();
    assert!(damage.is_none());
    assert_eq!(backend.doc_count().unwrap(), 1);
}

#[test]
fn unknown_backend_kind_is_an_error_naming_the_choices() {
    // A kind is parsed before anything is opened: an unknown name never reaches a directory.
    let error = "lucene".parse::<TextBackendKind>().expect_err("unknown kind must fail");
    let message = error.to_string();
    assert!(message.contains("lucene") && message.contains("tantivy") && message.contains("fts5"), "{message}");
}

#[test]
fn backends_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync + ?Sized>() {}
    assert_send_sync::<dyn TextBackend>();
}

mod analyzer {
    use agents_search::code_tokens;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tokens_are_lowercase_and_non_empty(text in any::<String>()) {
            for token in code_tokens(&text) {
                prop_assert!(!token.is_empty());
                prop_assert_eq!(token.to_lowercase(), token.clone());
            }
        }

        #[test]
        fn code_like_text_keeps_every_word(words in proptest::collection::vec("[a-zA-Z][a-z0-9]{0,8}", 1..6)) {
            let identifier = words.join("_");
            let tokens = code_tokens(&identifier);
            prop_assert_eq!(&tokens[0], &identifier.to_lowercase());
            for word in &words {
                prop_assert!(tokens.contains(&word.to_lowercase()), "{} missing from {:?}", word, tokens);
            }
        }
    }
}
