//! The UKO graph on PostgreSQL: what an indexing run writes (nodes with
//! revisions, references) and [`CodeGraphStore`]'s reads.
//!
//! Revision rule, as the SQLite store applies it per re-analysed file: a
//! node whose URI and content hash are unchanged is updated in place (it may
//! have moved); a node whose content changed is retired (`valid_until`,
//! `is_current = false`) and a new revision inserted with `revision_of`
//! pointing at it; a node that disappeared is retired. A file's new rows go
//! in with one statement (arrays unnested), not one round trip per row.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use agents_store::{
    Change, CodeGraphStore, Naming, RefFacts, Reshaped, StoreError, UkoCommit, UkoNode, UkoNodeRecord, UkoRef,
    UkoStatsRows, UkoSymbol,
};
use postgres::Row;
use postgres::types::Type;

use crate::conn::Params;
use crate::{Conn, PostgresStore};

const NODE_COLUMNS: &str = "node_id, uri, path, symbol_path, kind, name, parent_uri, language, start_byte, \
     end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, valid_from, valid_until, \
     is_current, revision_of";

const REF_COLUMNS: &str =
    "ref_id, path, from_uri, kind, target, target_name, names, system, line, resolved_uri, resolved_path";

fn node_from_row(row: &Row) -> UkoNodeRecord {
    UkoNodeRecord {
        node_id: row.get(0),
        node: UkoNode {
            uri: row.get(1),
            path: row.get(2),
            symbol_path: row.get(3),
            kind: row.get(4),
            name: row.get(5),
            parent_uri: row.get(6),
            language: row.get(7),
            start_byte: row.get(8),
            end_byte: row.get(9),
            start_line: row.get(10),
            start_col: row.get(11),
            end_line: row.get(12),
            end_col: row.get(13),
            signature: row.get(14),
            doc: row.get(15),
            content_hash: row.get(16),
        },
        valid_from: row.get(17),
        valid_until: row.get(18),
        is_current: row.get(19),
        revision_of: row.get(20),
    }
}

fn ref_from_row(row: &Row) -> (i64, UkoRef) {
    let names: String = row.get(6);
    (
        row.get(0),
        UkoRef {
            path: row.get(1),
            from_uri: row.get(2),
            kind: row.get(3),
            target: row.get(4),
            target_name: row.get(5),
            names: serde_json::from_str(&names).unwrap_or_default(),
            system: row.get(7),
            line: row.get(8),
            resolved_uri: row.get(9),
            resolved_path: row.get(10),
        },
    )
}

pub(crate) fn query_nodes(
    c: &mut Conn,
    sql_where: &str,
    order: &str,
    params: Params<'_>,
) -> Result<Vec<UkoNodeRecord>, StoreError> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM uko_nodes WHERE {sql_where} ORDER BY {order}");
    Ok(c.query(&sql, params)?.iter().map(node_from_row).collect())
}

pub(crate) fn query_refs(c: &mut Conn, sql_where: &str, params: Params<'_>) -> Result<Vec<(i64, UkoRef)>, StoreError> {
    let sql = format!("SELECT {REF_COLUMNS} FROM uko_refs WHERE {sql_where} ORDER BY path, line, target, ref_id");
    Ok(c.query(&sql, params)?.iter().map(ref_from_row).collect())
}

/// Applies the UKO part of a commit inside the caller's transaction.
pub(crate) fn apply(c: &mut Conn, index_id: &str, uko: &UkoCommit, now: &str) -> Result<(), StoreError> {
    for path in &uko.removed_paths {
        retire_path(c, index_id, path, now)?;
    }
    for file in &uko.files {
        write_nodes(c, index_id, &file.path, &file.nodes, now)?;
        write_refs(c, index_id, &file.path, &file.refs)?;
    }
    if !uko.re_resolved.is_empty() {
        // One statement for them all (the last of a ref id wins, as updates in turn would).
        let mut last: BTreeMap<i64, (&Option<String>, &Option<String>)> = BTreeMap::new();
        for (ref_id, uri, path) in &uko.re_resolved {
            last.insert(*ref_id, (uri, path));
        }
        let ids: Vec<i64> = last.keys().copied().collect();
        let uris: Vec<&Option<String>> = last.values().map(|(u, _)| *u).collect();
        let paths: Vec<&Option<String>> = last.values().map(|(_, p)| *p).collect();
        c.execute(
            "UPDATE uko_refs r SET resolved_uri = t.uri, resolved_path = t.path \
             FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t(id, uri, path) WHERE r.ref_id = t.id",
            &[&ids, &uris, &paths],
        )?;
    }
    Ok(())
}

/// Retires every current node of a file and deletes its references.
pub(crate) fn retire_path(c: &mut Conn, index_id: &str, path: &str, now: &str) -> Result<(), StoreError> {
    c.execute(
        "UPDATE uko_nodes SET is_current = false, valid_until = $3 WHERE index_id = $1 AND path = $2 AND is_current",
        &[&index_id, &path, &now],
    )?;
    c.execute("DELETE FROM uko_refs WHERE index_id = $1 AND path = $2", &[&index_id, &path])?;
    Ok(())
}

/// Inserts `nodes` (current, valid from `now`), each a revision of the
/// node id beside it, with one statement.
fn insert_node_rows(
    c: &mut Conn,
    index_id: &str,
    nodes: &[(&UkoNode, Option<i64>)],
    now: &str,
) -> Result<(), StoreError> {
    if nodes.is_empty() {
        return Ok(());
    }
    let text = |f: fn(&UkoNode) -> &str| nodes.iter().map(|(n, _)| f(n)).collect::<Vec<&str>>();
    let opt = |f: fn(&UkoNode) -> Option<&str>| nodes.iter().map(|(n, _)| f(n)).collect::<Vec<Option<&str>>>();
    let int = |f: fn(&UkoNode) -> i64| nodes.iter().map(|(n, _)| f(n)).collect::<Vec<i64>>();
    let revision_of: Vec<Option<i64>> = nodes.iter().map(|(_, r)| *r).collect();
    c.execute(
        "INSERT INTO uko_nodes (index_id, uri, path, symbol_path, kind, name, parent_uri, language, start_byte, \
         end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, valid_from, \
         valid_until, is_current, revision_of) \
         SELECT $1, uri, path, symbol_path, kind, name, parent_uri, language, start_byte, end_byte, start_line, \
         start_col, end_line, end_col, signature, doc, content_hash, $2, NULL, true, revision_of \
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], \
         $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[], \
         $17::text[], $18::text[], $19::bigint[]) WITH ORDINALITY AS t(uri, path, symbol_path, kind, name, \
         parent_uri, language, start_byte, end_byte, start_line, start_col, end_line, end_col, signature, doc, \
         content_hash, revision_of, ord) ORDER BY ord",
        &[
            &index_id,
            &now,
            &text(|n| &n.uri),
            &text(|n| &n.path),
            &text(|n| &n.symbol_path),
            &text(|n| &n.kind),
            &text(|n| &n.name),
            &opt(|n| n.parent_uri.as_deref()),
            &text(|n| &n.language),
            &int(|n| n.start_byte),
            &int(|n| n.end_byte),
            &int(|n| n.start_line),
            &int(|n| n.start_col),
            &int(|n| n.end_line),
            &int(|n| n.end_col),
            &opt(|n| n.signature.as_deref()),
            &opt(|n| n.doc.as_deref()),
            &text(|n| &n.content_hash),
            &revision_of,
        ],
    )?;
    Ok(())
}

/// Loads `nodes` (current, valid from `now`, no revisions: an index that had
/// none) with one binary `COPY`, numbered in their order as inserts would.
pub(crate) fn copy_nodes(c: &mut Conn, index_id: &str, nodes: &[UkoNode], now: &str) -> Result<(), StoreError> {
    if nodes.is_empty() {
        return Ok(());
    }
    let t = Type::TEXT;
    let i = Type::INT8;
    c.copy_in(
        "COPY uko_nodes (index_id, uri, path, symbol_path, kind, name, parent_uri, language, start_byte, \
         end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, valid_from, \
         is_current) FROM STDIN (FORMAT binary)",
        &[
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            i.clone(),
            i.clone(),
            i.clone(),
            i.clone(),
            i.clone(),
            i,
            t.clone(),
            t.clone(),
            t.clone(),
            t,
            Type::BOOL,
        ],
        |w| {
            for n in nodes {
                w.write(&[
                    &index_id,
                    &n.uri,
                    &n.path,
                    &n.symbol_path,
                    &n.kind,
                    &n.name,
                    &n.parent_uri,
                    &n.language,
                    &n.start_byte,
                    &n.end_byte,
                    &n.start_line,
                    &n.start_col,
                    &n.end_line,
                    &n.end_col,
                    &n.signature,
                    &n.doc,
                    &n.content_hash,
                    &now,
                    &true,
                ])?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// Loads `refs` with one binary `COPY`, numbered in their order.
pub(crate) fn copy_refs(c: &mut Conn, index_id: &str, refs: &[UkoRef]) -> Result<(), StoreError> {
    if refs.is_empty() {
        return Ok(());
    }
    let t = Type::TEXT;
    c.copy_in(
        "COPY uko_refs (index_id, path, from_uri, kind, target, target_name, names, system, line, resolved_uri, \
         resolved_path) FROM STDIN (FORMAT binary)",
        &[
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            Type::BOOL,
            Type::INT8,
            t.clone(),
            t,
        ],
        |w| {
            for r in refs {
                let names = serde_json::Value::from(r.names.clone()).to_string();
                w.write(&[
                    &index_id,
                    &r.path,
                    &r.from_uri,
                    &r.kind,
                    &r.target,
                    &r.target_name,
                    &names,
                    &r.system,
                    &r.line,
                    &r.resolved_uri,
                    &r.resolved_path,
                ])?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// Replaces the current nodes of one file, keeping revisions (module docs).
/// Returns the symbols it defines anew, no longer defines, or defines with
/// another signature ([`agents_store::IndexWrite::write_nodes`]).
pub(crate) fn write_nodes(
    c: &mut Conn,
    index_id: &str,
    path: &str,
    nodes: &[UkoNode],
    now: &str,
) -> Result<Vec<Reshaped>, StoreError> {
    // uri -> (node id, content hash, signature, the symbol unless it is the file's own node)
    let old: HashMap<String, (i64, String, Option<String>, Option<Reshaped>)> = c
        .query(
            "SELECT node_id, uri, content_hash, signature, name, kind, symbol_path FROM uko_nodes \
             WHERE index_id = $1 AND path = $2 AND is_current",
            &[&index_id, &path],
        )?
        .iter()
        .map(|r| {
            let symbol_path: String = r.get(6);
            let symbol = (!symbol_path.is_empty()).then(|| Reshaped {
                name: r.get(4),
                kind: r.get(5),
                path: path.to_owned(),
                change: Change::Removed,
            });
            (r.get::<_, String>(1), (r.get(0), r.get(2), r.get(3), symbol))
        })
        .collect();
    let mut seen = HashSet::new();
    let mut reshaped = BTreeSet::new();
    let mut retired = Vec::new();
    let mut inserts = Vec::new();
    for n in nodes {
        seen.insert(n.uri.as_str());
        let was = old.get(&n.uri);
        reshaped.extend(Reshaped::of_node(n, was.map(|(_, _, signature, _)| signature)));
        match was {
            Some((id, hash, ..)) if *hash == n.content_hash => {
                c.execute(
                    "UPDATE uko_nodes SET parent_uri = $2, start_byte = $3, end_byte = $4, start_line = $5, \
                     start_col = $6, end_line = $7, end_col = $8, signature = $9, doc = $10, kind = $11, \
                     name = $12, language = $13 WHERE node_id = $1",
                    &[
                        id,
                        &n.parent_uri,
                        &n.start_byte,
                        &n.end_byte,
                        &n.start_line,
                        &n.start_col,
                        &n.end_line,
                        &n.end_col,
                        &n.signature,
                        &n.doc,
                        &n.kind,
                        &n.name,
                        &n.language,
                    ],
                )?;
            }
            Some((id, ..)) => {
                retired.push(*id);
                inserts.push((n, Some(*id)));
            }
            None => inserts.push((n, None)),
        }
    }
    for (uri, (id, _, _, symbol)) in &old {
        if !seen.contains(uri.as_str()) {
            retired.push(*id);
            reshaped.extend(symbol.clone());
        }
    }
    if !retired.is_empty() {
        c.execute(
            "UPDATE uko_nodes SET is_current = false, valid_until = $2 WHERE node_id = ANY($1) AND is_current",
            &[&retired, &now],
        )?;
    }
    insert_node_rows(c, index_id, &inserts, now)?;
    Ok(reshaped.into_iter().collect())
}

/// Replaces the references written in one file.
pub(crate) fn write_refs(c: &mut Conn, index_id: &str, path: &str, refs: &[UkoRef]) -> Result<(), StoreError> {
    c.execute("DELETE FROM uko_refs WHERE index_id = $1 AND path = $2", &[&index_id, &path])?;
    if refs.is_empty() {
        return Ok(());
    }
    let text = |f: fn(&UkoRef) -> &str| refs.iter().map(f).collect::<Vec<&str>>();
    let opt = |f: fn(&UkoRef) -> Option<&str>| refs.iter().map(f).collect::<Vec<Option<&str>>>();
    let names: Vec<String> = refs.iter().map(|r| serde_json::Value::from(r.names.clone()).to_string()).collect();
    let system: Vec<bool> = refs.iter().map(|r| r.system).collect();
    let line: Vec<i64> = refs.iter().map(|r| r.line).collect();
    c.execute(
        "INSERT INTO uko_refs (index_id, path, from_uri, kind, target, target_name, names, system, line, \
         resolved_uri, resolved_path) \
         SELECT $1, path, from_uri, kind, target, target_name, names, system, line, resolved_uri, resolved_path \
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], \
         $9::bigint[], $10::text[], $11::text[]) WITH ORDINALITY AS t(path, from_uri, kind, target, target_name, \
         names, system, line, resolved_uri, resolved_path, ord) ORDER BY ord",
        &[
            &index_id,
            &text(|r| &r.path),
            &text(|r| &r.from_uri),
            &text(|r| &r.kind),
            &text(|r| &r.target),
            &text(|r| &r.target_name),
            &names,
            &system,
            &line,
            &opt(|r| r.resolved_uri.as_deref()),
            &opt(|r| r.resolved_path.as_deref()),
        ],
    )?;
    Ok(())
}

/// References outside `paths` whose target in one of `paths` is gone (no
/// current node has its URI any more), or that are unresolved and whose
/// target name is one of `names`, by ref id.
pub(crate) fn refs_affected_by(
    c: &mut Conn,
    index_id: &str,
    paths: &[String],
    names: &[String],
) -> Result<Vec<(i64, UkoRef)>, StoreError> {
    let mut out = BTreeMap::new();
    let Some(rid) = c
        .query_opt("SELECT resource_id FROM repo_indexes WHERE index_id = $1", &[&index_id])?
        .map(|r| r.get::<_, String>(0))
    else {
        return Ok(Vec::new());
    };
    for p in paths {
        // The file's URI and every symbol URI under it (`file#...`).
        let file_uri = format!("uko://{rid}/{p}");
        let lower = format!("{file_uri}#");
        let upper = format!("{file_uri}#\u{10FFFF}");
        for (id, r) in query_refs(
            c,
            "index_id = $1 AND (resolved_uri = $2 OR (resolved_uri >= $3 AND resolved_uri < $4)) \
             AND NOT EXISTS (SELECT 1 FROM uko_nodes n WHERE n.index_id = uko_refs.index_id \
             AND n.uri = uko_refs.resolved_uri AND n.is_current)",
            &[&index_id, &file_uri, &lower, &upper],
        )? {
            out.insert(id, r);
        }
    }
    if !names.is_empty() {
        for (id, r) in
            query_refs(c, "index_id = $1 AND target_name = ANY($2) AND resolved_uri IS NULL", &[&index_id, &names])?
        {
            out.insert(id, r);
        }
    }
    let excluded: HashSet<&str> = paths.iter().map(String::as_str).collect();
    Ok(out.into_iter().filter(|(_, r)| !excluded.contains(r.path.as_str())).collect())
}

/// The references a [`Naming`] asks for, by ref id: one pass over the
/// index's references, narrowed by the server, then the matches read whole.
pub(crate) fn refs_naming(c: &mut Conn, index_id: &str, naming: &Naming<'_>) -> Result<Vec<(i64, UkoRef)>, StoreError> {
    if naming.is_empty() {
        return Ok(Vec::new());
    }
    let sets = naming.sets();
    // The server narrows the pass (each test a superset of what is asked);
    // the rows left are tested exactly here.
    let quoted: Vec<String> = naming.names.iter().map(|n| format!("\"{n}")).collect();
    let loose: Vec<String> = (naming.imports_holding.iter()).map(|w| agents_store::loose(w)).collect();
    let ids: Vec<i64> = c
        .query(
            "SELECT ref_id, kind, target, target_name, names, resolved_uri IS NOT NULL FROM uko_refs \
             WHERE index_id = $1 AND (target_name = ANY($2) \
             OR (resolved_uri IS NULL AND target_name = ANY($3)) \
             OR EXISTS (SELECT 1 FROM unnest($4::text[]) w WHERE strpos(target, w) > 0) \
             OR (kind = 'import' AND (EXISTS (SELECT 1 FROM unnest($5::text[]) w WHERE strpos(names, w) > 0) \
             OR EXISTS (SELECT 1 FROM unnest($6::text[]) w \
             WHERE strpos(replace(replace(lower(target), '_', ''), '-', ''), w) > 0 \
             OR strpos(replace(replace(lower(names), '_', ''), '-', ''), w) > 0))))",
            &[&index_id, &naming.names, &naming.unbound_names, &naming.through, &quoted, &loose],
        )?
        .iter()
        .filter(|r| {
            let kind: &str = r.get(1);
            let names: Vec<String> =
                if kind == "import" { serde_json::from_str(r.get(4)).unwrap_or_default() } else { Vec::new() };
            let facts = RefFacts { kind, target: r.get(2), target_name: r.get(3), bound: r.get(5), names: &names };
            naming.matches(&sets, facts)
        })
        .map(|r| r.get(0))
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    query_refs(c, "index_id = $1 AND ref_id = ANY($2)", &[&index_id, &ids])
}

/// Names of the current functions and methods whose signature names one of
/// `words` ([`agents_store::names_word`]), sorted, each once.
pub(crate) fn functions_mentioning(c: &mut Conn, index_id: &str, words: &[String]) -> Result<Vec<String>, StoreError> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: HashSet<&str> = words.iter().map(String::as_str).collect();
    let rows = c.query(
        "SELECT name, signature FROM uko_nodes WHERE index_id = $1 AND is_current \
         AND signature IS NOT NULL AND kind IN ('function', 'method')",
        &[&index_id],
    )?;
    let names: BTreeSet<String> =
        rows.iter().filter(|r| agents_store::names_word(r.get(1), &wanted)).map(|r| r.get(0)).collect();
    Ok(names.into_iter().collect())
}

/// The resolved references, imports aside, of the files outside `paths`
/// that import one of `paths` (an import reference resolved to the file), by ref id.
pub(crate) fn refs_importing(c: &mut Conn, index_id: &str, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
    let Some(rid) = c
        .query_opt("SELECT resource_id FROM repo_indexes WHERE index_id = $1", &[&index_id])?
        .map(|r| r.get::<_, String>(0))
    else {
        return Ok(Vec::new());
    };
    let files: Vec<String> = paths.iter().map(|p| format!("uko://{rid}/{p}")).collect();
    let found = query_refs(
        c,
        "index_id = $1 AND kind <> 'import' AND resolved_path IS NOT NULL AND path IN (SELECT i.path \
         FROM uko_refs i WHERE i.index_id = $1 AND i.resolved_uri = ANY($2) AND i.kind = 'import')",
        &[&index_id, &files],
    )?;
    let excluded: HashSet<&str> = paths.iter().map(String::as_str).collect();
    let by_id: BTreeMap<i64, UkoRef> = found.into_iter().filter(|(_, r)| !excluded.contains(r.path.as_str())).collect();
    Ok(by_id.into_iter().collect())
}

fn node_by_uri(c: &mut Conn, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM uko_nodes WHERE index_id = $1 AND uri = $2 AND is_current");
    Ok(c.query_opt(&sql, &[&index_id, &uri])?.map(|r| node_from_row(&r)))
}

fn strip_ids(rows: Vec<(i64, UkoRef)>) -> Vec<UkoRef> {
    rows.into_iter().map(|(_, r)| r).collect()
}

impl CodeGraphStore for PostgresStore {
    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            query_nodes(c, "index_id = $1 AND path = $2 AND is_current", "start_byte, symbol_path", &[&index_id, &path])
        })
    }

    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError> {
        self.read(|c| node_by_uri(c, index_id, uri))
    }

    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            query_nodes(
                c,
                "index_id = $1 AND is_current AND (symbol_path = $2 OR name = $2)",
                "uri",
                &[&index_id, &query],
            )
        })
    }

    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            query_nodes(
                c,
                "index_id = $1 AND parent_uri = $2 AND is_current",
                "start_byte, symbol_path",
                &[&index_id, &uri],
            )
        })
    }

    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| query_nodes(c, "index_id = $1 AND uri = $2", "node_id DESC", &[&index_id, &uri]))
    }

    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.snapshot(|c| {
            let Some(node) = node_by_uri(c, index_id, uri)? else { return Ok(Vec::new()) };
            let path = node.node.path;
            Ok(strip_ids(query_refs(c, "index_id = $1 AND path = $2 AND from_uri = $3", &[&index_id, &path, &uri])?))
        })
    }

    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        // Descendants' URIs extend the node's: `file#Sym` under a file,
        // `file#Sym.member` under a symbol. All live in the node's file.
        self.snapshot(|c| {
            let Some(node) = node_by_uri(c, index_id, uri)? else { return Ok(Vec::new()) };
            let child_prefix = if uri.contains('#') { format!("{uri}.") } else { format!("{uri}#") };
            let upper = format!("{child_prefix}\u{10FFFF}");
            Ok(strip_ids(query_refs(
                c,
                "index_id = $1 AND path = $2 AND (from_uri = $3 OR (from_uri >= $4 AND from_uri < $5))",
                &[&index_id, &node.node.path, &uri, &child_prefix, &upper],
            )?))
        })
    }

    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| Ok(strip_ids(query_refs(c, "index_id = $1 AND resolved_uri = $2", &[&index_id, &uri])?)))
    }

    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT uri, path, symbol_path, name, kind, parent_uri FROM uko_nodes \
                 WHERE index_id = $1 AND is_current ORDER BY uri",
                &[&index_id],
            )?
            .iter()
            .map(|r| UkoSymbol {
                uri: r.get(0),
                path: r.get(1),
                symbol_path: r.get(2),
                name: r.get(3),
                kind: r.get(4),
                parent_uri: r.get(5),
            })
            .collect())
        })
    }

    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| query_refs(c, "index_id = $1 AND path = $2", &[&index_id, &path]))
    }

    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        // One statement: the graph walk asks this of hundreds of nodes per query.
        self.read(|c| {
            let rows = c.query(
                "WITH node AS (SELECT path, parent_uri FROM uko_nodes \
                   WHERE index_id = $1 AND uri = $2 AND is_current LIMIT 1) \
                 SELECT uri, kind, outgoing FROM ( \
                   SELECT parent_uri AS uri, 'contains' AS kind, false AS outgoing, 0 AS part, 0::bigint AS k1, \
                          ''::text COLLATE \"C\" AS k2, 0::bigint AS k3, ''::text COLLATE \"C\" AS k4, 0::bigint AS id \
                     FROM node WHERE parent_uri IS NOT NULL \
                   UNION ALL \
                   SELECT n.uri, 'contains', true, 1, n.start_byte, n.symbol_path, 0, '', n.node_id FROM uko_nodes n \
                     WHERE n.index_id = $1 AND n.parent_uri = $2 AND n.is_current AND EXISTS (SELECT 1 FROM node) \
                   UNION ALL \
                   SELECT r.resolved_uri, r.kind, true, 2, r.line, r.target, 0, '', r.ref_id \
                     FROM uko_refs r, node WHERE r.index_id = $1 AND r.path = node.path AND r.from_uri = $2 \
                     AND r.resolved_uri IS NOT NULL \
                   UNION ALL \
                   SELECT r.from_uri, r.kind, false, 3, 0, r.path, r.line, r.target, r.ref_id FROM uko_refs r \
                     WHERE r.index_id = $1 AND r.resolved_uri = $2 \
                 ) parts ORDER BY part, k1, k2, k3, k4, id",
                &[&index_id, &uri],
            )?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
        })
    }

    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT DISTINCT resolved_path FROM uko_refs WHERE index_id = $1 AND path = $2 \
                 AND resolved_path IS NOT NULL AND resolved_path != path AND kind != 'mentions' \
                 ORDER BY resolved_path",
                &[&index_id, &path],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }

    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.snapshot(|c| refs_affected_by(c, index_id, paths, names))
    }

    fn uko_refs_importing(&self, index_id: &str, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.snapshot(|c| refs_importing(c, index_id, paths))
    }

    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| query_nodes(c, "index_id = $1 AND is_current", "uri", &[&index_id]))
    }

    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| Ok(strip_ids(query_refs(c, "index_id = $1", &[&index_id])?)))
    }

    fn uko_stats(&self, index_id: &str) -> Result<UkoStatsRows, StoreError> {
        self.snapshot(|c| {
            let nodes = c
                .query(
                    "SELECT language, kind, COUNT(*) FROM uko_nodes WHERE index_id = $1 AND is_current \
                     GROUP BY language, kind ORDER BY language, kind",
                    &[&index_id],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect();
            let refs = c
                .query(
                    "SELECT f.language, r.kind, COUNT(*), COUNT(r.resolved_uri) FROM uko_refs r \
                     JOIN indexed_files f ON f.index_id = r.index_id AND f.path = r.path \
                     WHERE r.index_id = $1 GROUP BY f.language, r.kind ORDER BY f.language, r.kind",
                    &[&index_id],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect();
            Ok(UkoStatsRows { nodes, refs })
        })
    }
}
