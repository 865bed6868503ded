//! Conformance cases of [`FileIndexStore`] and its [`crate::IndexWrite`].

use agents_core::indexing::{FileRecord, IndexReport, IndexStatus, SkipReason};

use super::code_graph::two_files;
use super::{commit_of, file, indexed};
use crate::{Change, FileIndexStore, IndexCommit, Naming, ProjectStore, Reshaped, SkippedFile, Store, StoreError};

const NOPE: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

fn skipped(path: &str) -> SkippedFile {
    SkippedFile {
        path: path.into(),
        size_bytes: 3,
        last_modified: "2026-02-02T00:00:00Z".into(),
        reason: SkipReason::Binary,
    }
}

/// A new index is `pending` and empty; ensuring it again returns the same
/// one; an unknown resource has none.
pub fn ensure_index_is_pending_and_idempotent<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    assert_eq!(
        (meta.status, meta.file_count, meta.resource_id.as_str()),
        (IndexStatus::Pending, 0, r.resource_id.as_str())
    );
    assert_eq!(store.ensure_index(&r.resource_id).unwrap(), meta);
    assert_eq!(store.index_metadata(&r.resource_id).unwrap().as_ref(), Some(&meta));
    assert_eq!(store.indexes_with_status(IndexStatus::Pending).unwrap(), std::slice::from_ref(&meta));
    assert!(store.file_records(&meta.index_id).unwrap().is_empty());
    assert!(store.skipped_files(&meta.index_id).unwrap().is_empty());
    assert_eq!(store.last_report(&meta.index_id).unwrap(), None);
    assert_eq!(store.index_metadata(NOPE).unwrap(), None);
}

/// The status and error message are set together and found by status; an
/// unknown index is [`StoreError::NotFound`].
pub fn status_transitions_and_lookup<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (_, meta) = indexed(&store, "/src/demo");
    store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
    assert_eq!(store.indexes_with_status(IndexStatus::Indexing).unwrap().len(), 1);
    assert!(store.indexes_with_status(IndexStatus::Pending).unwrap().is_empty());
    store.set_index_status(&meta.index_id, IndexStatus::Error, Some("boom")).unwrap();
    let m = store.indexes_with_status(IndexStatus::Error).unwrap().remove(0);
    assert_eq!(m.error_message.as_deref(), Some("boom"));
    let error = store.set_index_status(NOPE, IndexStatus::Ready, None).unwrap_err();
    assert!(matches!(&error, StoreError::NotFound { name, .. } if name == NOPE), "{error:?}");
}

/// A commit upserts, touches and removes file records, replaces the skipped
/// list and the report, and marks the index `ready` with its counts.
pub fn commit_replaces_files_and_marks_ready<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (_, meta) = indexed(&store, "/src/demo");
    store.set_index_status(&meta.index_id, IndexStatus::Indexing, Some("old")).unwrap();
    let done =
        store.commit_index(&meta.index_id, &commit_of(vec![file("b.py", 'b', 5), file("a.py", 'a', 7)])).unwrap();
    assert_eq!((done.status, done.file_count, done.token_estimate), (IndexStatus::Ready, 2, 12));
    assert_eq!((done.primary_language.as_str(), done.error_message.as_deref()), ("python", None));
    assert_eq!(store.index_metadata(&meta.resource_id).unwrap(), Some(done));
    assert_eq!(store.file_records(&meta.index_id).unwrap(), [file("a.py", 'a', 7), file("b.py", 'b', 5)], "by path");

    let commit = IndexCommit {
        upserts: vec![file("a.py", 'c', 9)],
        touched: vec![("b.py".into(), "2026-02-02T00:00:00Z".into())],
        report: IndexReport { changed: 1, unchanged: 1, ..IndexReport::default() },
        ..commit_of(vec![])
    };
    store.commit_index(&meta.index_id, &IndexCommit { file_count: 2, token_estimate: 14, ..commit }).unwrap();
    let files = store.file_records(&meta.index_id).unwrap();
    assert_eq!(files[0], file("a.py", 'c', 9));
    assert_eq!(files[1].last_modified, "2026-02-02T00:00:00Z");
    assert_eq!(store.last_report(&meta.index_id).unwrap().map(|r| (r.changed, r.unchanged)), Some((1, 1)));

    let removal = IndexCommit { removed: vec!["a.py".into()], ..commit_of(vec![]) };
    let done = store.commit_index(&meta.index_id, &IndexCommit { file_count: 1, ..removal }).unwrap();
    assert_eq!(done.file_count, 1);
    let touched_b = FileRecord { last_modified: "2026-02-02T00:00:00Z".into(), ..file("b.py", 'b', 5) };
    assert_eq!(store.file_records(&meta.index_id).unwrap(), [touched_b]);
}

/// A commit that fails validation (no primary language) changes nothing.
pub fn a_rejected_commit_changes_nothing<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (_, meta) = indexed(&store, "/src/demo");
    let ready = store.commit_index(&meta.index_id, &commit_of(vec![file("a.py", 'a', 7)])).unwrap();
    let bad = IndexCommit { removed: vec!["a.py".into()], primary_language: String::new(), ..commit_of(vec![]) };
    let error = store.commit_index(&meta.index_id, &bad).unwrap_err();
    assert!(matches!(error, StoreError::Invalid(_)), "{error:?}");
    assert_eq!(store.file_records(&meta.index_id).unwrap().len(), 1, "a rejected commit changes nothing");
    assert_eq!(store.index_metadata(&meta.resource_id).unwrap(), Some(ready));
    let error = store.commit_index(NOPE, &commit_of(vec![])).unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }), "{error:?}");
}

/// The skipped list is sorted by path and replaced whole by every commit.
pub fn skipped_files_are_replaced_whole<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (_, meta) = indexed(&store, "/src/demo");
    let commit = IndexCommit { skipped: vec![skipped("z.png"), skipped("logo.png")], ..commit_of(vec![]) };
    store.commit_index(&meta.index_id, &commit).unwrap();
    assert_eq!(store.skipped_files(&meta.index_id).unwrap(), [skipped("logo.png"), skipped("z.png")]);
    let commit = IndexCommit { skipped: vec![skipped("a.bin")], ..commit_of(vec![]) };
    store.commit_index(&meta.index_id, &commit).unwrap();
    assert_eq!(store.skipped_files(&meta.index_id).unwrap(), [skipped("a.bin")]);
    store.commit_index(&meta.index_id, &commit_of(vec![])).unwrap();
    assert!(store.skipped_files(&meta.index_id).unwrap().is_empty());
}

/// Removing an index removes its files, skipped files and report, and
/// reports whether it existed.
pub fn remove_index_deletes_files_and_report<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    let commit = IndexCommit { skipped: vec![skipped("logo.png")], ..commit_of(vec![file("a.py", 'a', 7)]) };
    store.commit_index(&meta.index_id, &commit).unwrap();
    assert!(store.remove_index(&r.resource_id).unwrap());
    assert_eq!(store.index_metadata(&r.resource_id).unwrap(), None);
    assert!(store.file_records(&meta.index_id).unwrap().is_empty());
    assert!(store.skipped_files(&meta.index_id).unwrap().is_empty());
    assert_eq!(store.last_report(&meta.index_id).unwrap(), None);
    assert!(!store.remove_index(&r.resource_id).unwrap());
    assert!(store.resource(&r.resource_id).unwrap().is_some(), "the resource stays");
}

/// An [`crate::IndexWrite`] dropped without `finish` leaves nothing of its
/// run: no nodes, references, files or status change.
pub fn index_write_dropped_without_finish_leaves_nothing<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    let files = two_files(&r.resource_id);
    {
        let mut writer = store.begin_index_write(&meta.index_id).unwrap();
        for f in &files {
            writer.write_nodes(&f.path, &f.nodes).unwrap();
            writer.write_refs(&f.path, &f.refs).unwrap();
        }
    }
    assert!(store.uko_all_nodes(&meta.index_id).unwrap().is_empty());
    assert!(store.uko_all_refs(&meta.index_id).unwrap().is_empty());
    assert!(store.file_records(&meta.index_id).unwrap().is_empty());
    assert_eq!(store.index_metadata(&r.resource_id).unwrap(), Some(meta.clone()));
    // The store is usable afterwards: the lock was released.
    store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
}

/// Inside the transaction a run sees its own rows (symbols sorted by path,
/// symbols by name, a file's references); `write_nodes` returns the names
/// of symbols the file did not define before; `finish` publishes all of it.
pub fn index_write_sees_its_own_rows_and_finish_publishes_them<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    let files = two_files(&r.resource_id);
    let mut writer = store.begin_index_write(&meta.index_id).unwrap();
    for f in files.iter().rev() {
        let introduced = writer.write_nodes(&f.path, &f.nodes).unwrap();
        let mut symbols: Vec<_> = f.nodes.iter().filter(|n| !n.symbol_path.is_empty()).map(reshaped).collect();
        symbols.sort();
        assert_eq!(introduced, symbols, "a first index introduces every symbol of {}", f.path);
        writer.write_refs(&f.path, &f.refs).unwrap();
    }
    let mut seen = Vec::new();
    writer.for_each_symbol(&mut |path, symbol_path, _, _, _| seen.push(format!("{path}#{symbol_path}"))).unwrap();
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| a.split('#').next().cmp(&b.split('#').next()));
    assert_eq!(seen, sorted, "sorted by path");
    let expected: usize = files.iter().map(|f| f.nodes.len()).sum();
    assert_eq!(seen.len(), expected);
    let mut named = Vec::new();
    writer
        .for_each_symbol_named(&["helper".to_owned()], &mut |path, symbol_path, name, kind, signature| {
            named.push((
                path.to_owned(),
                symbol_path.to_owned(),
                name.to_owned(),
                kind.to_owned(),
                signature.to_owned(),
            ))
        })
        .unwrap();
    let helper = files[1].nodes.iter().find(|n| n.symbol_path == "helper").and_then(|n| n.signature.clone());
    assert_eq!(
        named,
        [(
            "b.py".to_owned(),
            "helper".to_owned(),
            "helper".to_owned(),
            "function".to_owned(),
            helper.unwrap_or_default()
        )]
    );
    named.clear();
    writer.for_each_symbol_named(&["nothing".to_owned()], &mut |_, _, _, _, _| named.push(Default::default())).unwrap();
    assert!(named.is_empty());
    let refs: Vec<_> = writer.file_refs("a.py").unwrap().into_iter().map(|(_, r)| r).collect();
    assert_eq!(refs, files[0].refs);
    writer.retire_paths(&["b.py".to_owned()]).unwrap();
    assert!(writer.file_refs("b.py").unwrap().is_empty(), "retired paths lose their references");
    let done = writer.finish(&commit_of(vec![file("a.py", 'a', 7)])).unwrap();
    assert_eq!((done.status, done.file_count), (IndexStatus::Ready, 1));
    assert_eq!(store.uko_all_nodes(&meta.index_id).unwrap().len(), files[0].nodes.len());
    assert_eq!(store.uko_file_refs(&meta.index_id, "a.py").unwrap().len(), files[0].refs.len());
    assert!(store.uko_file_nodes(&meta.index_id, "b.py").unwrap().is_empty());

    // A second run: unchanged symbols are not introduced again.
    let mut writer = store.begin_index_write(&meta.index_id).unwrap();
    assert!(writer.write_nodes("a.py", &files[0].nodes).unwrap().is_empty());
    let introduced = writer.write_nodes("b.py", &files[1].nodes).unwrap();
    let names: Vec<&str> = introduced.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["helper", "run"], "b.py's symbols were retired, so they are new again");
    writer.finish(&commit_of(vec![file("a.py", 'a', 7), file("b.py", 'b', 5)])).unwrap();
}

fn reshaped(n: &crate::UkoNode) -> Reshaped {
    Reshaped { name: n.name.clone(), kind: n.kind.clone(), path: n.path.clone(), change: Change::Added }
}

/// A later run's `write_nodes` returns the symbols a file defines anew, no
/// longer defines, or defines with another signature (not those whose body
/// alone changed; with no nodes, all it defined); the transaction finds the
/// references by last name or read through a name (`refs_naming`), every
/// import, and the functions whose signature names a word.
pub fn index_write_reports_reshaped_symbols_and_finds_what_reads_them<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    let mut files = two_files(&r.resource_id);
    let mut writer = store.begin_index_write(&meta.index_id).unwrap();
    for f in &files {
        writer.write_nodes(&f.path, &f.nodes).unwrap();
        writer.write_refs(&f.path, &f.refs).unwrap();
    }
    writer.finish(&commit_of(vec![file("a.py", 'a', 7), file("b.py", 'b', 5)])).unwrap();

    let mut writer = store.begin_index_write(&meta.index_id).unwrap();
    // a.py: A.run's body changes, B's signature changes, a class C is new.
    let a = &mut files[0].nodes;
    a[2].content_hash = "another body".into();
    a[3].content_hash = "another B".into();
    a[3].signature = Some("class B(A)".into());
    let mut c = a[3].clone();
    (c.uri, c.symbol_path, c.name) = (c.uri.replace("#B", "#C"), "C".into(), "C".into());
    a.push(c);
    let got = writer.write_nodes("a.py", &files[0].nodes).unwrap();
    let names: Vec<(&str, &str, &str, &Change)> =
        got.iter().map(|r| (r.name.as_str(), r.kind.as_str(), r.path.as_str(), &r.change)).collect();
    let resigned = Change::Signature { before: Some("def B()".into()), after: Some("class B(A)".into()) };
    assert_eq!(names, [("B", "class", "a.py", &resigned), ("C", "class", "a.py", &Change::Added)]);
    // b.py: `run` goes.
    files[1].nodes.pop();
    let got = writer.write_nodes("b.py", &files[1].nodes).unwrap();
    let run = Reshaped { name: "run".into(), kind: "function".into(), path: "b.py".into(), change: Change::Removed };
    assert_eq!(got, [run]);
    let gone: Vec<String> = writer.write_nodes("b.py", &[]).unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(gone, ["helper"], "with no nodes, every symbol it still defined");
    writer.write_nodes("b.py", &files[1].nodes).unwrap();

    let targets = |found: Vec<(i64, crate::UkoRef)>| found.into_iter().map(|(_, r)| r.target).collect::<Vec<_>>();
    // By last name (`helper` of `b.helper`), and through a first name (`self`).
    let (helper, this) = (["helper".to_owned()], ["self".to_owned()]);
    let found = writer.refs_naming(&Naming { names: &helper, through: &this, ..Naming::default() }).unwrap();
    assert_eq!(targets(found), ["b.helper", "self.other"]);
    let through = ["b".to_owned(), "other".to_owned()];
    let found = writer.refs_naming(&Naming { through: &through, ..Naming::default() }).unwrap();
    assert_eq!(targets(found), ["b.helper"]);
    // By a last name, only unbound ones.
    let unbound = ["Missing".to_owned(), "helper".to_owned()];
    let found = writer.refs_naming(&Naming { unbound_names: &unbound, ..Naming::default() }).unwrap();
    assert_eq!(targets(found), ["Missing"]);
    // Imports bringing a name in, or whose target holds a word.
    let (b, o) = (["b".to_owned()], ["o".to_owned()]);
    assert_eq!(targets(writer.refs_naming(&Naming { names: &b, ..Naming::default() }).unwrap()), ["b"]);
    let found = writer.refs_naming(&Naming { imports_holding: &o, ..Naming::default() }).unwrap();
    assert_eq!(targets(found), ["os"]);
    assert!(writer.refs_naming(&Naming::default()).unwrap().is_empty());
    assert_eq!(targets(writer.import_refs().unwrap()), ["b", "os"]);
    // Signatures: `def helper()`, `def run()` (a method), `class B(A)` (not a function).
    assert_eq!(writer.functions_mentioning(&["helper".to_owned(), "A".to_owned()]).unwrap(), ["helper"]);
    assert!(writer.functions_mentioning(&["def".to_owned()]).unwrap().contains(&"run".to_owned()));
    assert!(writer.functions_mentioning(&["hel".to_owned()]).unwrap().is_empty(), "whole words only");
}

/// A reader running while a run writes sees the state before the run or
/// after it, never part of it (each read is one transaction). A store may
/// answer at once with the last commit or wait for the run to finish.
pub fn readers_never_see_half_a_run<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    let files = two_files(&r.resource_id);
    let total: usize = files.iter().map(|f| f.nodes.len()).sum();
    let mut writer = store.begin_index_write(&meta.index_id).unwrap();
    writer.write_nodes(&files[0].path, &files[0].nodes).unwrap();
    writer.write_refs(&files[0].path, &files[0].refs).unwrap();
    let (nodes, records) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let nodes = store.uko_all_nodes(&meta.index_id).unwrap().len();
            let records = store.file_records(&meta.index_id).unwrap().len();
            (nodes, records)
        });
        writer.write_nodes(&files[1].path, &files[1].nodes).unwrap();
        writer.write_refs(&files[1].path, &files[1].refs).unwrap();
        writer.finish(&commit_of(vec![file("a.py", 'a', 7), file("b.py", 'b', 5)])).unwrap();
        reader.join().expect("the reader finished")
    });
    assert!(nodes == 0 || nodes == total, "a reader saw {nodes} of {total} nodes");
    assert!(records == 0 || records == 2, "a reader saw {records} of 2 files");
    assert_eq!(store.uko_all_nodes(&meta.index_id).unwrap().len(), total);
}
