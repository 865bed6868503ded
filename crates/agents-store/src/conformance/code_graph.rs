//! Conformance cases of [`crate::CodeGraphStore`]. The graph is written through
//! [`crate::FileIndexStore::commit_index`], as an indexing run writes it.

use super::{commit_of, file, indexed};
use crate::{IndexCommit, Store, UkoCommit, UkoFile, UkoNode, UkoRef, UkoStatsRows, neighbors_from_parts};

fn uri(resource_id: &str, path: &str, symbol_path: &str) -> String {
    match symbol_path {
        "" => format!("uko://{resource_id}/{path}"),
        s => format!("uko://{resource_id}/{path}#{s}"),
    }
}

/// A node of `path` spanning `start..end` bytes from line `line`.
fn node(rid: &str, path: &str, symbol_path: &str, kind: &str, parent: Option<&str>, span: (i64, i64, i64)) -> UkoNode {
    let (start, end, line) = span;
    let name = match symbol_path {
        "" => path,
        s => s.rsplit('.').next().unwrap_or(s),
    };
    UkoNode {
        uri: uri(rid, path, symbol_path),
        path: path.to_owned(),
        symbol_path: symbol_path.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        parent_uri: parent.map(|p| uri(rid, path, p)),
        language: "python".to_owned(),
        start_byte: start,
        end_byte: end,
        start_line: line,
        start_col: 0,
        end_line: line + 1,
        end_col: 1,
        signature: (kind != "file").then(|| format!("def {name}()")),
        doc: None,
        content_hash: format!("{path}#{symbol_path}").repeat(2),
    }
}

/// A reference from `(path, from)` at `line`, resolved to `to` when given.
fn reference(
    rid: &str,
    (path, from): (&str, &str),
    kind: &str,
    target: &str,
    line: i64,
    to: Option<(&str, &str)>,
) -> UkoRef {
    UkoRef {
        path: path.to_owned(),
        from_uri: uri(rid, path, from),
        kind: kind.to_owned(),
        target: target.to_owned(),
        target_name: target.rsplit('.').next().unwrap_or(target).to_owned(),
        names: vec![target.to_owned()],
        system: target == "os",
        line,
        resolved_uri: to.map(|(p, s)| uri(rid, p, s)),
        resolved_path: to.map(|(p, _)| p.to_owned()),
    }
}

/// Two python files of a resource: `a.py` (classes `A` with method `run`,
/// and `B`) importing and calling `b.py` (functions `helper` and `run`),
/// which calls back into `A`; one mention that resolves nowhere and one
/// system import.
pub(crate) fn two_files(rid: &str) -> Vec<UkoFile> {
    let a = UkoFile {
        path: "a.py".into(),
        nodes: vec![
            node(rid, "a.py", "", "file", None, (0, 100, 1)),
            node(rid, "a.py", "A", "class", Some(""), (10, 90, 2)),
            node(rid, "a.py", "A.run", "method", Some("A"), (20, 80, 3)),
            node(rid, "a.py", "B", "class", Some(""), (91, 99, 9)),
        ],
        refs: vec![
            reference(rid, ("a.py", ""), "import", "b", 1, Some(("b.py", ""))),
            reference(rid, ("a.py", "A"), "mentions", "Missing", 2, None),
            reference(rid, ("a.py", "A.run"), "calls", "b.helper", 4, Some(("b.py", "helper"))),
            reference(rid, ("a.py", "A.run"), "calls", "self.other", 5, Some(("a.py", "B"))),
        ],
    };
    let b = UkoFile {
        path: "b.py".into(),
        nodes: vec![
            node(rid, "b.py", "", "file", None, (0, 50, 1)),
            node(rid, "b.py", "helper", "function", Some(""), (5, 20, 2)),
            node(rid, "b.py", "run", "function", Some(""), (21, 40, 5)),
        ],
        refs: vec![
            reference(rid, ("b.py", ""), "import", "os", 1, None),
            reference(rid, ("b.py", "helper"), "calls", "A", 3, Some(("a.py", "A"))),
        ],
    };
    vec![a, b]
}

/// A commit of [`two_files`] with their file records.
fn graph_commit(rid: &str) -> IndexCommit {
    IndexCommit {
        uko: UkoCommit { files: two_files(rid), ..UkoCommit::default() },
        ..commit_of(vec![file("a.py", 'a', 7), file("b.py", 'b', 5)])
    }
}

/// A store holding [`two_files`], with its index id and resource id.
fn graph<S: Store>(make: &dyn Fn() -> S) -> (S, String, String) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    store.commit_index(&meta.index_id, &graph_commit(&r.resource_id)).unwrap();
    (store, meta.index_id, r.resource_id)
}

fn uris(nodes: Vec<crate::UkoNodeRecord>) -> Vec<String> {
    nodes.into_iter().map(|n| n.node.uri).collect()
}

/// Nodes read back as written, current and unrevised, in the order each
/// method promises (source order, or by uri).
pub fn nodes_read_back_in_their_orders<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let files = two_files(&rid);
    let u = |path: &str, s: &str| uri(&rid, path, s);
    let a = store.uko_node(&index, &u("a.py", "A")).unwrap().expect("A is stored");
    assert_eq!(a.node, files[0].nodes[1]);
    assert!(a.is_current && a.valid_until.is_none() && a.revision_of.is_none(), "{a:?}");
    let in_a: Vec<UkoNode> = store.uko_file_nodes(&index, "a.py").unwrap().into_iter().map(|n| n.node).collect();
    assert_eq!(in_a, files[0].nodes, "source order");
    assert_eq!(uris(store.uko_children(&index, &u("a.py", "")).unwrap()), [u("a.py", "A"), u("a.py", "B")]);
    assert_eq!(uris(store.uko_children(&index, &u("a.py", "A")).unwrap()), [u("a.py", "A.run")]);
    assert_eq!(uris(store.uko_find(&index, "run").unwrap()), [u("a.py", "A.run"), u("b.py", "run")], "by name, by uri");
    assert_eq!(uris(store.uko_find(&index, "A.run").unwrap()), [u("a.py", "A.run")], "by symbol path");
    let callable = ["function", "method"];
    let one = |name: &str, kinds: &[&str]| store.uko_the_one_named(&index, name, kinds).unwrap().map(|n| n.node.uri);
    assert_eq!(one("helper", &callable), Some(u("b.py", "helper")), "one bearer");
    assert_eq!(one("run", &callable), None, "a method and a function bear `run`");
    assert_eq!(one("run", &["method"]), Some(u("a.py", "A.run")), "one of the kinds asked");
    assert_eq!(one("A.run", &callable), None, "a symbol path is no name");
    assert_eq!(one("A", &callable), None, "a class is of no kind asked");
    assert_eq!(one("missing", &callable), None);
    let mut all: Vec<String> = files.iter().flat_map(|f| f.nodes.iter().map(|n| n.uri.clone())).collect();
    all.sort();
    assert_eq!(uris(store.uko_all_nodes(&index).unwrap()), all, "every node, by uri");
    let symbols = store.uko_symbols(&index).unwrap();
    assert_eq!(symbols.iter().map(|s| s.uri.clone()).collect::<Vec<_>>(), all, "every current node, by uri");
    let run = symbols.iter().find(|s| s.uri == u("a.py", "A.run")).expect("A.run is a symbol");
    assert_eq!(
        (run.path.as_str(), run.symbol_path.as_str(), run.name.as_str(), run.kind.as_str(), run.parent_uri.clone()),
        ("a.py", "A.run", "run", "method", Some(u("a.py", "A")))
    );
}

/// References read back as written, each listing in its promised order.
pub fn refs_read_back_in_their_orders<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let files = two_files(&rid);
    let (a, b) = (&files[0].refs, &files[1].refs);
    let u = |path: &str, s: &str| uri(&rid, path, s);
    let in_a: Vec<(i64, UkoRef)> = store.uko_file_refs(&index, "a.py").unwrap();
    assert_eq!(in_a.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(), *a, "line order");
    let mut ids: Vec<i64> = in_a.iter().map(|(id, _)| *id).collect();
    ids.dedup();
    assert_eq!(ids.len(), a.len(), "each reference has its own id");
    assert_eq!(store.uko_refs_from(&index, &u("a.py", "A.run")).unwrap(), a[2..4], "written in the node, line order");
    assert_eq!(store.uko_refs_from(&index, &u("a.py", "A")).unwrap(), a[1..2], "not its descendants'");
    assert_eq!(store.uko_refs_within(&index, &u("a.py", "A")).unwrap(), a[1..4], "its own and its descendants'");
    assert_eq!(store.uko_refs_within(&index, &u("a.py", "")).unwrap(), *a);
    assert_eq!(store.uko_refs_to(&index, &u("a.py", "A")).unwrap(), b[1..2]);
    assert_eq!(store.uko_refs_to(&index, &u("b.py", "helper")).unwrap(), a[2..3]);
    let all: Vec<UkoRef> = a.iter().chain(b).cloned().collect();
    assert_eq!(store.uko_all_refs(&index).unwrap(), all, "by path, line and target");
}

/// `uko_neighbors` equals [`neighbors_from_parts`] for every node (and a
/// missing one); `uko_file_dependencies` lists the other files references
/// resolved into, without mentions, sorted.
pub fn neighbors_and_dependencies_equal_their_definitions<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let u = |path: &str, s: &str| uri(&rid, path, s);
    for node in store.uko_all_nodes(&index).unwrap() {
        let uri = &node.node.uri;
        assert_eq!(
            store.uko_neighbors(&index, uri).unwrap(),
            neighbors_from_parts(&store, &index, uri).unwrap(),
            "{uri}"
        );
    }
    let run = store.uko_neighbors(&index, &u("a.py", "A.run")).unwrap();
    assert_eq!(
        run,
        [
            (u("a.py", "A"), "contains".to_owned(), false),
            (u("b.py", "helper"), "calls".to_owned(), true),
            (u("a.py", "B"), "calls".to_owned(), true),
        ]
    );
    assert!(store.uko_neighbors(&index, &u("a.py", "Gone")).unwrap().is_empty());
    assert_eq!(store.uko_file_dependencies(&index, "a.py").unwrap(), ["b.py"]);
    assert_eq!(store.uko_file_dependencies(&index, "b.py").unwrap(), ["a.py"]);
}

/// A node whose content changed gets a new revision pointing at the old,
/// which is retired; a node that only moved is updated in place; a removed
/// file's nodes are retired and its references deleted.
pub fn a_changed_node_gets_a_new_revision<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let u = |path: &str, s: &str| uri(&rid, path, s);
    let mut a = two_files(&rid).remove(0);
    a.nodes[1].content_hash = "changed".repeat(4);
    a.nodes[2].start_byte += 5;
    a.nodes[2].end_byte += 5;
    let commit = IndexCommit {
        uko: UkoCommit { files: vec![a.clone()], removed_paths: vec!["b.py".into()], ..UkoCommit::default() },
        removed: vec!["b.py".into()],
        ..commit_of(vec![file("a.py", 'c', 7)])
    };
    store.commit_index(&index, &commit).unwrap();

    let revisions = store.uko_revisions(&index, &u("a.py", "A")).unwrap();
    assert_eq!(revisions.len(), 2, "{revisions:?}");
    let (new, old) = (&revisions[0], &revisions[1]);
    assert!(new.is_current && new.valid_until.is_none() && new.node == a.nodes[1], "newest first: {new:?}");
    assert_eq!(new.revision_of, Some(old.node_id));
    assert!(!old.is_current && old.valid_until.is_some(), "{old:?}");
    assert_eq!(store.uko_node(&index, &u("a.py", "A")).unwrap().as_ref(), Some(new));

    let run = store.uko_revisions(&index, &u("a.py", "A.run")).unwrap();
    assert_eq!(run.len(), 1, "moved, not changed: {run:?}");
    assert!(run[0].is_current && run[0].node == a.nodes[2]);

    assert_eq!(store.uko_node(&index, &u("b.py", "helper")).unwrap(), None);
    let helper = store.uko_revisions(&index, &u("b.py", "helper")).unwrap();
    assert!(helper.len() == 1 && !helper[0].is_current && helper[0].valid_until.is_some(), "{helper:?}");
    assert!(store.uko_file_nodes(&index, "b.py").unwrap().is_empty());
    assert!(store.uko_file_refs(&index, "b.py").unwrap().is_empty());
    assert!(store.uko_find(&index, "helper").unwrap().is_empty());
    assert!(store.uko_symbols(&index).unwrap().iter().all(|s| s.path == "a.py"));
}

/// `uko_refs_affected_by` finds references outside `paths` whose target
/// there is gone, and unresolved ones named in `names`, by id; a commit's
/// rebindings change what they resolve to.
pub fn refs_affected_by_a_change_are_found_and_rebound<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let u = |path: &str, s: &str| uri(&rid, path, s);
    let b_py = ["b.py".to_owned()];
    assert!(store.uko_refs_affected_by(&index, &b_py, &[]).unwrap().is_empty(), "every target still exists");
    let missing = store.uko_refs_affected_by(&index, &[], &["Missing".to_owned()]).unwrap();
    assert_eq!(missing.iter().map(|(_, r)| r.target.as_str()).collect::<Vec<_>>(), ["Missing"]);

    // b.py loses `helper`; its file node stays.
    let mut b = two_files(&rid).remove(1);
    b.nodes.truncate(1);
    b.refs.clear();
    let commit = IndexCommit { uko: UkoCommit { files: vec![b], ..UkoCommit::default() }, ..commit_of(vec![]) };
    store.commit_index(&index, &commit).unwrap();
    let affected = store.uko_refs_affected_by(&index, &b_py, &["Missing".to_owned()]).unwrap();
    let ids: Vec<i64> = affected.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "by id: {ids:?}");
    let mut targets: Vec<&str> = affected.iter().map(|(_, r)| r.target.as_str()).collect();
    targets.sort();
    assert_eq!(targets, ["Missing", "b.helper"], "the import of b.py's file still resolves");

    let (call, _) = affected.iter().find(|(_, r)| r.target == "b.helper").expect("the call is affected");
    let rebind =
        UkoCommit { re_resolved: vec![(*call, Some(u("a.py", "B")), Some("a.py".into()))], ..UkoCommit::default() };
    store.commit_index(&index, &IndexCommit { uko: rebind, ..commit_of(vec![]) }).unwrap();
    let to_b: Vec<String> = store.uko_refs_to(&index, &u("a.py", "B")).unwrap().into_iter().map(|r| r.target).collect();
    assert_eq!(to_b, ["b.helper", "self.other"]);
    assert!(store.uko_refs_affected_by(&index, &b_py, &[]).unwrap().is_empty());
}

/// `uko_refs_importing` finds the resolved references, imports aside, of the
/// files that import one of `paths`, by id, leaving out those in `paths`.
pub fn refs_importing_a_file_are_found<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, _) = graph(make);
    let importing = |paths: &[&str]| -> Vec<(i64, String)> {
        let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        store.uko_refs_importing(&index, &paths).unwrap().into_iter().map(|(id, r)| (id, r.target)).collect()
    };
    let from_a = importing(&["b.py"]);
    let targets: Vec<&str> = from_a.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(targets, ["b.helper", "self.other"], "a.py imports b.py: its resolved calls, not its import or mention");
    assert!(from_a.windows(2).all(|w| w[0].0 < w[1].0), "by id: {from_a:?}");
    assert!(importing(&["a.py"]).is_empty(), "b.py's only import is unresolved");
    assert!(importing(&["a.py", "b.py"]).is_empty(), "the importer is among the paths");
}

/// Counts of current nodes and of references (with how many resolved) by
/// language and kind, sorted; the language of a reference is its file's.
pub fn stats_count_by_language_and_kind<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, _) = graph(make);
    let py = |kind: &str| ("python".to_owned(), kind.to_owned());
    let nodes = [(py("class"), 2), (py("file"), 2), (py("function"), 2), (py("method"), 1)];
    let refs = [(py("calls"), 3, 3), (py("import"), 2, 1), (py("mentions"), 1, 0)];
    let expected = UkoStatsRows {
        nodes: nodes.into_iter().map(|((l, k), n)| (l, k, n)).collect(),
        refs: refs.into_iter().map(|((l, k), n, r)| (l, k, n, r)).collect(),
    };
    assert_eq!(store.uko_stats(&index).unwrap(), expected);
}

/// An unknown index, node or path reads as `None` or empty.
pub fn unknown_ids_read_as_nothing<S: Store>(make: &dyn Fn() -> S) {
    let (store, index, rid) = graph(make);
    let nope = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let a = uri(&rid, "a.py", "A");
    for (index, uri, path) in [(nope, a.as_str(), "a.py"), (index.as_str(), "uko://nope/x.py", "x.py")] {
        assert_eq!(store.uko_node(index, uri).unwrap(), None);
        assert!(store.uko_file_nodes(index, path).unwrap().is_empty());
        assert!(store.uko_children(index, uri).unwrap().is_empty());
        assert!(store.uko_revisions(index, uri).unwrap().is_empty());
        assert!(store.uko_refs_from(index, uri).unwrap().is_empty());
        assert!(store.uko_refs_within(index, uri).unwrap().is_empty());
        assert!(store.uko_refs_to(index, uri).unwrap().is_empty());
        assert!(store.uko_file_refs(index, path).unwrap().is_empty());
        assert!(store.uko_neighbors(index, uri).unwrap().is_empty());
        assert!(store.uko_file_dependencies(index, path).unwrap().is_empty());
    }
    assert!(store.uko_find(nope, "A").unwrap().is_empty());
    assert!(store.uko_symbols(nope).unwrap().is_empty());
    assert!(store.uko_all_nodes(nope).unwrap().is_empty());
    assert!(store.uko_all_refs(nope).unwrap().is_empty());
    assert!(store.uko_refs_affected_by(nope, &["a.py".to_owned()], &["Missing".to_owned()]).unwrap().is_empty());
    assert!(store.uko_refs_importing(nope, &["b.py".to_owned()]).unwrap().is_empty());
    assert_eq!(store.uko_stats(nope).unwrap(), UkoStatsRows::default());
}
