//! SQL of the UKO graph: nodes with revisions, and references.
//!
//! Storage (schema version 11, see `migrations.rs`): each index has a graph
//! (`uko_graphs`, an integer key); paths (`uko_paths`) and strings
//! (`uko_strings`: symbol paths, names, kinds, languages, target names) are
//! interned per graph, and node and reference rows hold their integer ids.
//! URIs are never stored: a node's is `uko://<resource>/<path>` or
//! `...#<symbol_path>`, its parent is a symbol path in the same file, a
//! reference is written in a symbol path of its file and resolves to a path
//! and (when it resolved to a node) a symbol path. Content hashes of 64 hex
//! digits are stored as 32-byte BLOBs (anything else as text).
//!
//! Revision rule, applied per file when it is re-analysed: a node whose URI
//! and content hash are unchanged is updated in place (it may have moved);
//! a node whose content changed is retired (`valid_until`, `is_current = 0`)
//! and a new revision inserted with `revision_of` pointing at it; a node
//! that disappeared is retired.
//!
//! Writes intern through in-memory maps ([`GraphWriter`]): the paths of the
//! graph are loaded when a run first writes, and strings are looked up in the
//! database only on a map miss in a graph that already had strings (never
//! during a first index).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use agents_core::ValidationError;
use agents_core::text_arena::{TextArena, TextSpan};
use rusqlite::{Connection, OptionalExtension, Row, params};
use rustc_hash::FxHashMap;

use super::classify;
use super::hashes::{hash_from, hash_value};
use crate::{
    Change, Naming, RefFacts, Reshaped, StoreError, UkoCommit, UkoNode, UkoNodeRecord, UkoRef, UkoStatsRows, UkoSymbol,
};

/// A failed graph write: SQLite's error, or a row that breaks the URI scheme
/// the graph derives URIs from.
#[derive(Debug)]
pub enum Failure {
    Sql(rusqlite::Error),
    Invalid(ValidationError),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        Failure::Sql(e)
    }
}

impl Failure {
    /// The store error, naming the database at `db`.
    pub fn into_store(self, db: &Path) -> StoreError {
        match self {
            Failure::Sql(e) => classify(db, e),
            Failure::Invalid(e) => StoreError::Invalid(e),
        }
    }
}

type WriteResult<T> = Result<T, Failure>;

/// The graph of one index: its key and the URI prefix of its resource.
pub struct Graph {
    id: i64,
    /// `uko://<resource_id>/`.
    prefix: String,
}

/// A node's identity in a graph: its path and symbol path, ids and text.
struct Key {
    path_id: i64,
    symbol_id: i64,
    path: String,
    symbol: String,
}

impl Graph {
    /// The graph of `index_id`, if it ever had one written.
    pub fn find(conn: &Connection, index_id: &str) -> rusqlite::Result<Option<Graph>> {
        conn.prepare_cached(
            "SELECT g.graph_id, r.resource_id FROM uko_graphs g JOIN repo_indexes r ON r.index_id = g.index_id \
             WHERE g.index_id = ?1",
        )?
        .query_row([index_id], |r| Ok(Graph { id: r.get(0)?, prefix: format!("uko://{}/", r.get::<_, String>(1)?) }))
        .optional()
    }

    /// The URI of the node at `symbol` (empty: the file) in `path`.
    fn uri(&self, path: &str, symbol: &str) -> String {
        let mut uri = String::with_capacity(self.prefix.len() + path.len() + symbol.len() + 1);
        uri.push_str(&self.prefix);
        uri.push_str(path);
        if !symbol.is_empty() {
            uri.push('#');
            uri.push_str(symbol);
        }
        uri
    }

    /// The symbol path `uri` names in `path`, if it is a URI of this graph
    /// in that file.
    fn symbol_in<'u>(&self, uri: &'u str, path: &str) -> Option<&'u str> {
        let rest = uri.strip_prefix(self.prefix.as_str())?.strip_prefix(path)?;
        if rest.is_empty() { Some("") } else { rest.strip_prefix('#').filter(|s| !s.is_empty()) }
    }

    fn path_id(&self, conn: &Connection, path: &str) -> rusqlite::Result<Option<i64>> {
        conn.prepare_cached("SELECT path_id FROM uko_paths WHERE graph_id = ?1 AND path = ?2")?
            .query_row(params![self.id, path], |r| r.get(0))
            .optional()
    }

    fn string_id(&self, conn: &Connection, text: &str) -> rusqlite::Result<Option<i64>> {
        conn.prepare_cached("SELECT string_id FROM uko_strings WHERE graph_id = ?1 AND text = ?2")?
            .query_row(params![self.id, text], |r| r.get(0))
            .optional()
    }

    /// The path and symbol path `uri` names, when both are known. A path may
    /// hold `#`: each split is tried, the first `#` first.
    fn key(&self, conn: &Connection, uri: &str) -> rusqlite::Result<Option<Key>> {
        let Some(rest) = uri.strip_prefix(self.prefix.as_str()) else { return Ok(None) };
        let splits = rest
            .match_indices('#')
            .map(|(at, _)| (&rest[..at], &rest[at + 1..]))
            .filter(|(_, symbol)| !symbol.is_empty())
            .chain([(rest, "")]);
        for (path, symbol) in splits {
            if let Some(path_id) = self.path_id(conn, path)?
                && let Some(symbol_id) = self.string_id(conn, symbol)?
            {
                return Ok(Some(Key { path_id, symbol_id, path: path.to_owned(), symbol: symbol.to_owned() }));
            }
        }
        Ok(None)
    }
}

// ---------------------------------------------------------------- reading

/// Every column of a node record; `p` is its path, `s` its symbol path.
const NODE_SELECT: &str = "SELECT n.node_id, p.path, s.text, k.text, nm.text, par.text, l.text, n.start_byte, \
     n.end_byte, n.start_line, n.start_col, n.end_line, n.end_col, n.signature, n.doc, n.content_hash, vf.at, \
     vu.at, n.is_current, n.revision_of \
     FROM uko_nodes n JOIN uko_paths p ON p.path_id = n.path_id JOIN uko_strings s ON s.string_id = n.symbol_id \
     JOIN uko_strings k ON k.string_id = n.kind_id JOIN uko_strings nm ON nm.string_id = n.name_id \
     LEFT JOIN uko_strings par ON par.string_id = n.parent_id JOIN uko_strings l ON l.string_id = n.language_id \
     JOIN uko_runs vf ON vf.run_id = n.valid_from LEFT JOIN uko_runs vu ON vu.run_id = n.valid_until";

/// Every column of a reference; `p` is its path, `r` the reference.
const REF_SELECT: &str = "SELECT r.ref_id, p.path, f.text, k.text, r.target, t.text, r.names, r.system, r.line, \
     tp.path, ts.text \
     FROM uko_refs r JOIN uko_paths p ON p.path_id = r.path_id JOIN uko_strings f ON f.string_id = r.from_id \
     JOIN uko_strings k ON k.string_id = r.kind_id JOIN uko_strings t ON t.string_id = r.target_name_id \
     LEFT JOIN uko_paths tp ON tp.path_id = r.to_path_id LEFT JOIN uko_strings ts ON ts.string_id = r.to_symbol_id";

const REF_ORDER: &str = "ORDER BY p.path, r.line, r.target, r.ref_id";

fn text_at(row: &Row<'_>, i: usize) -> rusqlite::Result<String> {
    row.get(i)
}

fn node_from_row(g: &Graph, row: &Row<'_>) -> rusqlite::Result<UkoNodeRecord> {
    let path = text_at(row, 1)?;
    let symbol_path = text_at(row, 2)?;
    let parent: Option<String> = row.get(5)?;
    Ok(UkoNodeRecord {
        node_id: row.get(0)?,
        node: UkoNode {
            uri: g.uri(&path, &symbol_path),
            parent_uri: parent.map(|p| g.uri(&path, &p)),
            kind: row.get(3)?,
            name: row.get(4)?,
            language: row.get(6)?,
            start_byte: row.get(7)?,
            end_byte: row.get(8)?,
            start_line: row.get(9)?,
            start_col: row.get(10)?,
            end_line: row.get(11)?,
            end_col: row.get(12)?,
            signature: row.get(13)?,
            doc: row.get(14)?,
            content_hash: hash_from(row.get_ref(15)?),
            path,
            symbol_path,
        },
        valid_from: row.get(16)?,
        valid_until: row.get(17)?,
        is_current: row.get::<_, i64>(18)? == 1,
        revision_of: row.get(19)?,
    })
}

fn ref_from_row(g: &Graph, row: &Row<'_>) -> rusqlite::Result<(i64, UkoRef)> {
    let path = text_at(row, 1)?;
    let from: String = row.get(2)?;
    let names: Option<String> = row.get(6)?;
    let resolved_path: Option<String> = row.get(9)?;
    let resolved_symbol: Option<String> = row.get(10)?;
    Ok((
        row.get(0)?,
        UkoRef {
            from_uri: g.uri(&path, &from),
            kind: row.get(3)?,
            target: row.get(4)?,
            target_name: row.get(5)?,
            names: names.and_then(|n| serde_json::from_str(&n).ok()).unwrap_or_default(),
            system: row.get::<_, i64>(7)? == 1,
            line: row.get(8)?,
            resolved_uri: match (&resolved_path, &resolved_symbol) {
                (Some(p), Some(s)) => Some(g.uri(p, s)),
                _ => None,
            },
            resolved_path,
            path,
        },
    ))
}

fn nodes(
    conn: &Connection,
    g: &Graph,
    sql_where: &str,
    order: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let sql = format!("{NODE_SELECT} WHERE {sql_where} {order}");
    let mut st = conn.prepare_cached(&sql)?;
    st.query_map(params, |row| node_from_row(g, row))?.collect()
}

fn refs(
    conn: &Connection,
    g: &Graph,
    sql_where: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let sql = format!("{REF_SELECT} WHERE {sql_where} {REF_ORDER}");
    let mut st = conn.prepare_cached(&sql)?;
    st.query_map(params, |row| ref_from_row(g, row))?.collect()
}

fn by_uri(mut nodes: Vec<UkoNodeRecord>) -> Vec<UkoNodeRecord> {
    nodes.sort_by(|a, b| a.node.uri.cmp(&b.node.uri).then(a.node_id.cmp(&b.node_id)));
    nodes
}

/// The graph of `index_id` and the key of `uri` in it.
fn graph_key(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Option<(Graph, Key)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(None) };
    Ok(g.key(conn, uri)?.map(|k| (g, k)))
}

/// Whether the node at `key` has a current revision.
fn is_current(conn: &Connection, key: &Key) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS(SELECT 1 FROM uko_nodes WHERE path_id = ?1 AND symbol_id = ?2 AND is_current = 1)",
    )?
    .query_row(params![key.path_id, key.symbol_id], |r| r.get(0))
}

/// Current nodes of one file, in source order.
pub fn file_nodes(conn: &Connection, index_id: &str, path: &str) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(path_id) = g.path_id(conn, path)? else { return Ok(Vec::new()) };
    nodes(conn, &g, "n.path_id = ?1 AND n.is_current = 1", "ORDER BY n.start_byte, s.text", &[&path_id])
}

/// The current revision of a node.
pub fn node(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Option<UkoNodeRecord>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(None) };
    let found = nodes(
        conn,
        &g,
        "n.path_id = ?1 AND n.symbol_id = ?2 AND n.is_current = 1",
        "",
        &[&key.path_id, &key.symbol_id],
    )?;
    Ok(found.into_iter().next())
}

/// Current nodes whose symbol path or name is `query`, by uri.
pub fn find(conn: &Connection, index_id: &str, query: &str) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(id) = g.string_id(conn, query)? else { return Ok(Vec::new()) };
    let mut found = nodes(conn, &g, "n.symbol_id = ?1 AND n.is_current = 1", "", &[&id])?;
    let seen: HashSet<i64> = found.iter().map(|n| n.node_id).collect();
    let named = nodes(conn, &g, "n.name_id = ?1 AND n.is_current = 1", "", &[&id])?;
    found.extend(named.into_iter().filter(|n| !seen.contains(&n.node_id)));
    Ok(by_uri(found))
}

/// The one current node named `name` of one of `kinds` (`None` when none or
/// several): reads at most two rows of the name's index, however many
/// nodes bear it.
pub fn the_one_named(
    conn: &Connection,
    index_id: &str,
    name: &str,
    kinds: &[&str],
) -> rusqlite::Result<Option<UkoNodeRecord>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(None) };
    let Some(id) = g.string_id(conn, name)? else { return Ok(None) };
    let mut kind_ids = Vec::new();
    for kind in kinds {
        kind_ids.extend(g.string_id(conn, kind)?);
    }
    if kind_ids.is_empty() {
        return Ok(None);
    }
    let listed = vec!["?"; kind_ids.len()].join(", ");
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&id];
    params.extend(kind_ids.iter().map(|k| k as &dyn rusqlite::ToSql));
    let mut found = nodes(
        conn,
        &g,
        &format!("n.name_id = ?1 AND n.is_current = 1 AND n.kind_id IN ({listed})"),
        "LIMIT 2",
        &params,
    )?;
    Ok(if found.len() == 1 { found.pop() } else { None })
}

/// Current children of a node, in source order.
pub fn children(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    nodes(
        conn,
        &g,
        "n.path_id = ?1 AND n.parent_id = ?2 AND n.is_current = 1",
        "ORDER BY n.start_byte, s.text",
        &[&key.path_id, &key.symbol_id],
    )
}

/// Every revision of a node, newest first.
pub fn revisions(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    nodes(conn, &g, "n.path_id = ?1 AND n.symbol_id = ?2", "ORDER BY n.node_id DESC", &[&key.path_id, &key.symbol_id])
}

/// References written in a current node, in line order.
pub fn refs_from(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<UkoRef>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    if !is_current(conn, &key)? {
        return Ok(Vec::new());
    }
    let rows = refs(conn, &g, "r.path_id = ?1 AND r.from_id = ?2", &[&key.path_id, &key.symbol_id])?;
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// References written in a current node or its descendants, whose symbol
/// paths extend its own (`Sym.member`; any symbol under a file).
pub fn refs_within(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<UkoRef>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    if !is_current(conn, &key)? {
        return Ok(Vec::new());
    }
    let rows = if key.symbol.is_empty() {
        refs(conn, &g, "r.path_id = ?1", &[&key.path_id])?
    } else {
        let lower = format!("{}.", key.symbol);
        let upper = format!("{lower}\u{10FFFF}");
        refs(
            conn,
            &g,
            "r.path_id = ?1 AND (r.from_id = ?2 OR (f.text >= ?3 AND f.text < ?4))",
            &[&key.path_id, &key.symbol_id, &lower, &upper],
        )?
    };
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// References resolved to a node, in path and line order.
pub fn refs_to(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<UkoRef>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    let rows = refs(conn, &g, "r.to_path_id = ?1 AND r.to_symbol_id = ?2", &[&key.path_id, &key.symbol_id])?;
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// Every current symbol, by uri.
pub fn symbols(conn: &Connection, index_id: &str) -> rusqlite::Result<Vec<UkoSymbol>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let mut st = conn.prepare_cached(
        "SELECT p.path, s.text, nm.text, k.text, par.text FROM uko_paths p \
         JOIN uko_nodes n ON n.path_id = p.path_id JOIN uko_strings s ON s.string_id = n.symbol_id \
         JOIN uko_strings nm ON nm.string_id = n.name_id JOIN uko_strings k ON k.string_id = n.kind_id \
         LEFT JOIN uko_strings par ON par.string_id = n.parent_id \
         WHERE p.graph_id = ?1 AND n.is_current = 1",
    )?;
    let mut out: Vec<UkoSymbol> = st
        .query_map([g.id], |r| {
            let path: String = r.get(0)?;
            let symbol_path: String = r.get(1)?;
            let parent: Option<String> = r.get(4)?;
            Ok(UkoSymbol {
                uri: g.uri(&path, &symbol_path),
                parent_uri: parent.map(|p| g.uri(&path, &p)),
                name: r.get(2)?,
                kind: r.get(3)?,
                path,
                symbol_path,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    out.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(out)
}

/// References written in `path`, with their ids, in line order.
pub fn file_refs(conn: &Connection, index_id: &str, path: &str) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(path_id) = g.path_id(conn, path)? else { return Ok(Vec::new()) };
    refs(conn, &g, "r.path_id = ?1", &[&path_id])
}

/// The neighbours of a node (see `CodeGraphStore::uko_neighbors`), reading
/// only the columns they need.
pub fn neighbors(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Vec<(String, String, bool)>> {
    let Some((g, key)) = graph_key(conn, index_id, uri)? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    let node: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT par.text FROM uko_nodes n LEFT JOIN uko_strings par ON par.string_id = n.parent_id \
             WHERE n.path_id = ?1 AND n.symbol_id = ?2 AND n.is_current = 1",
        )?
        .query_row(params![key.path_id, key.symbol_id], |r| r.get(0))
        .optional()?;
    // A node that is not current has only references into it.
    if let Some(parent) = node {
        if let Some(parent) = parent {
            out.push((g.uri(&key.path, &parent), "contains".to_owned(), false));
        }
        let mut children = conn.prepare_cached(
            "SELECT s.text FROM uko_nodes n JOIN uko_strings s ON s.string_id = n.symbol_id \
             WHERE n.path_id = ?1 AND n.parent_id = ?2 AND n.is_current = 1 ORDER BY n.start_byte, s.text",
        )?;
        for child in children.query_map(params![key.path_id, key.symbol_id], |r| r.get::<_, String>(0))? {
            out.push((g.uri(&key.path, &child?), "contains".to_owned(), true));
        }
        let mut from = conn.prepare_cached(
            "SELECT tp.path, ts.text, k.text FROM uko_refs r JOIN uko_strings k ON k.string_id = r.kind_id \
             JOIN uko_paths tp ON tp.path_id = r.to_path_id JOIN uko_strings ts ON ts.string_id = r.to_symbol_id \
             WHERE r.path_id = ?1 AND r.from_id = ?2 ORDER BY r.line, r.target, r.ref_id",
        )?;
        let rows = from.query_map(params![key.path_id, key.symbol_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })?;
        for row in rows {
            let (path, symbol, kind) = row?;
            out.push((g.uri(&path, &symbol), kind, true));
        }
    }
    let mut to = conn.prepare_cached(
        "SELECT p.path, f.text, k.text FROM uko_refs r JOIN uko_paths p ON p.path_id = r.path_id \
         JOIN uko_strings f ON f.string_id = r.from_id JOIN uko_strings k ON k.string_id = r.kind_id \
         WHERE r.to_path_id = ?1 AND r.to_symbol_id = ?2 ORDER BY p.path, r.line, r.target, r.ref_id",
    )?;
    let rows = to.query_map(params![key.path_id, key.symbol_id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
    })?;
    for row in rows {
        let (path, symbol, kind) = row?;
        out.push((g.uri(&path, &symbol), kind, false));
    }
    Ok(out)
}

/// The other files the references of `path` resolved into, except by
/// mentions, sorted.
pub fn file_dependencies(conn: &Connection, index_id: &str, path: &str) -> rusqlite::Result<Vec<String>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(path_id) = g.path_id(conn, path)? else { return Ok(Vec::new()) };
    let mut st = conn.prepare_cached(
        "SELECT DISTINCT tp.path FROM uko_refs r JOIN uko_paths tp ON tp.path_id = r.to_path_id \
         JOIN uko_strings k ON k.string_id = r.kind_id \
         WHERE r.path_id = ?1 AND r.to_path_id != ?1 AND k.text != 'mentions' ORDER BY tp.path",
    )?;
    st.query_map([path_id], |r| r.get::<_, String>(0))?.collect()
}

/// Every current node, by uri.
pub fn all_nodes(conn: &Connection, index_id: &str) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    Ok(by_uri(nodes(conn, &g, "p.graph_id = ?1 AND n.is_current = 1", "", &[&g.id])?))
}

/// Every reference, by path, line and target.
pub fn all_refs(conn: &Connection, index_id: &str) -> rusqlite::Result<Vec<UkoRef>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    Ok(refs(conn, &g, "p.graph_id = ?1", &[&g.id])?.into_iter().map(|(_, r)| r).collect())
}

/// Node and reference counts by language and kind.
pub fn stats(conn: &Connection, index_id: &str) -> rusqlite::Result<UkoStatsRows> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(UkoStatsRows::default()) };
    let mut st = conn.prepare_cached(
        "SELECT l.text, k.text, COUNT(*) FROM uko_paths p JOIN uko_nodes n ON n.path_id = p.path_id \
         JOIN uko_strings l ON l.string_id = n.language_id JOIN uko_strings k ON k.string_id = n.kind_id \
         WHERE p.graph_id = ?1 AND n.is_current = 1 GROUP BY l.text, k.text ORDER BY l.text, k.text",
    )?;
    let nodes = st.query_map([g.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut st = conn.prepare_cached(
        "SELECT f.language, k.text, COUNT(*), SUM(r.to_symbol_id IS NOT NULL) FROM uko_paths p \
         JOIN uko_refs r ON r.path_id = p.path_id JOIN uko_strings k ON k.string_id = r.kind_id \
         JOIN indexed_files f ON f.index_id = ?2 AND f.path = p.path \
         WHERE p.graph_id = ?1 GROUP BY f.language, k.text ORDER BY f.language, k.text",
    )?;
    let refs = st
        .query_map(params![g.id, index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    Ok(UkoStatsRows { nodes, refs })
}

/// References outside `paths` whose target in one of `paths` is gone (no
/// current node has it any more), or that are unresolved and whose target
/// name is one of `names`, by ref id. A reference whose target still exists
/// keeps its binding.
pub fn refs_affected_by(
    conn: &Connection,
    index_id: &str,
    paths: &[String],
    names: &[String],
) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let mut out = BTreeMap::new();
    for p in paths {
        let Some(path_id) = g.path_id(conn, p)? else { continue };
        let gone = refs(
            conn,
            &g,
            "r.to_path_id = ?1 AND r.to_symbol_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM uko_nodes n \
             WHERE n.path_id = r.to_path_id AND n.symbol_id = r.to_symbol_id AND n.is_current = 1)",
            &[&path_id],
        )?;
        out.extend(gone);
    }
    for n in names {
        let Some(name_id) = g.string_id(conn, n)? else { continue };
        out.extend(refs(conn, &g, "r.target_name_id = ?1 AND r.to_symbol_id IS NULL", &[&name_id])?);
    }
    let excluded: HashSet<&str> = paths.iter().map(String::as_str).collect();
    Ok(out.into_iter().filter(|(_, r)| !excluded.contains(r.path.as_str())).collect())
}

/// The references a [`Naming`] asks for, by ref id: one pass over the
/// graph's targets, then each match read whole.
pub fn refs_naming(conn: &Connection, index_id: &str, naming: &Naming<'_>) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    if naming.is_empty() {
        return Ok(Vec::new());
    }
    let sets = naming.sets();
    let import = g.string_id(conn, "import")?;
    let ids_of = |names: &[String]| -> rusqlite::Result<HashSet<i64>> {
        let mut ids = HashSet::new();
        for n in names {
            ids.extend(g.string_id(conn, n)?);
        }
        Ok(ids)
    };
    let (name_ids, unbound_ids) = (ids_of(naming.names)?, ids_of(naming.unbound_names)?);
    // SQLite narrows the pass where it can (a name's id, a word a target
    // or an import's names hold: each a superset of what is asked); the
    // rows left are tested exactly here. Past a few dozen words the plain
    // pass is cheaper than the long condition.
    let list = |ids: &HashSet<i64>| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let mut words: Vec<String> = Vec::new();
    let mut filter: Vec<String> = Vec::new();
    if !name_ids.is_empty() {
        filter.push(format!("r.target_name_id IN ({})", list(&name_ids)));
    }
    if !unbound_ids.is_empty() {
        filter.push(format!("(r.to_symbol_id IS NULL AND r.target_name_id IN ({}))", list(&unbound_ids)));
    }
    for w in naming.through {
        words.push(w.clone());
        filter.push(format!("instr(r.target, ?{}) > 0", words.len() + 1));
    }
    if let Some(import) = import {
        for n in naming.names {
            words.push(format!("\"{n}"));
            filter.push(format!("(r.kind_id = {import} AND instr(r.names, ?{}) > 0)", words.len() + 1));
        }
        let loose = |x: &str| format!("replace(replace(lower({x}), '_', ''), '-', '')");
        for w in naming.imports_holding {
            words.push(crate::file_index::loose(w));
            let k = words.len() + 1;
            filter.push(format!(
                "(r.kind_id = {import} AND (instr({}, ?{k}) > 0 OR instr({}, ?{k}) > 0))",
                loose("r.target"),
                loose("r.names")
            ));
        }
    }
    if filter.is_empty() {
        // Names the graph never interned, and no import to bring them.
        return Ok(Vec::new());
    }
    let narrowed = filter.len() <= 48;
    let sql = format!(
        "SELECT r.ref_id, r.target_name_id, r.target, r.kind_id, r.names, r.to_symbol_id IS NOT NULL \
         FROM uko_paths p JOIN uko_refs r ON r.path_id = p.path_id WHERE p.graph_id = ?1{}",
        if narrowed { format!(" AND ({})", filter.join(" OR ")) } else { String::new() }
    );
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&g.id];
    if narrowed {
        params.extend(words.iter().map(|w| w as &dyn rusqlite::ToSql));
    }
    let mut ids = Vec::new();
    {
        let mut st = conn.prepare(&sql)?;
        let mut rows = st.query(params.as_slice())?;
        while let Some(row) = rows.next()? {
            let name_id: i64 = row.get(1)?;
            let bound: bool = row.get(5)?;
            // The cheap tests first: most references match none. The last
            // name is tested by id here.
            let found = name_ids.contains(&name_id) || (!bound && unbound_ids.contains(&name_id)) || {
                let is_import = Some(row.get::<_, i64>(3)?) == import;
                let names: Vec<String> = if is_import && !(naming.names.is_empty() && naming.imports_holding.is_empty())
                {
                    row.get_ref(4)?.as_str_or_null()?.and_then(|n| serde_json::from_str(n).ok()).unwrap_or_default()
                } else {
                    Vec::new()
                };
                let target = row.get_ref(2)?.as_str().unwrap_or("");
                let kind = if is_import { "import" } else { "" };
                naming.matches(&sets, RefFacts { kind, target, target_name: "", bound, names: &names })
            };
            if found {
                ids.push(row.get::<_, i64>(0)?);
            }
        }
    }
    let mut out = BTreeMap::new();
    for id in ids {
        out.extend(refs(conn, &g, "r.ref_id = ?1", &[&id])?);
    }
    Ok(out.into_iter().collect())
}

/// Every import reference of the graph, by ref id.
pub fn import_refs(conn: &Connection, index_id: &str) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(import) = g.string_id(conn, "import")? else { return Ok(Vec::new()) };
    refs(conn, &g, "p.graph_id = ?1 AND r.kind_id = ?2", &[&g.id, &import])
}

/// Names of the current functions and methods whose signature names one of
/// `words` ([`crate::file_index::names_word`]), sorted, each once.
pub fn functions_mentioning(conn: &Connection, index_id: &str, words: &[String]) -> rusqlite::Result<Vec<String>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: HashSet<&str> = words.iter().map(String::as_str).collect();
    let mut out = BTreeSet::new();
    let mut st = conn.prepare_cached(
        "SELECT nm.text, n.signature FROM uko_paths p JOIN uko_nodes n ON n.path_id = p.path_id \
         JOIN uko_strings k ON k.string_id = n.kind_id JOIN uko_strings nm ON nm.string_id = n.name_id \
         WHERE p.graph_id = ?1 AND n.is_current = 1 AND n.signature IS NOT NULL AND k.text IN ('function', 'method')",
    )?;
    let mut rows = st.query([g.id])?;
    while let Some(row) = rows.next()? {
        let signature = row.get_ref(1)?.as_str().unwrap_or("");
        if crate::file_index::names_word(signature, &wanted) {
            out.insert(row.get::<_, String>(0)?);
        }
    }
    Ok(out.into_iter().collect())
}

/// The resolved references, imports aside, of the files outside `paths`
/// that import one of `paths` (an import reference resolved to it), by ref id.
pub fn refs_importing(conn: &Connection, index_id: &str, paths: &[String]) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(Vec::new()) };
    let Some(import) = g.string_id(conn, "import")? else { return Ok(Vec::new()) };
    let mut out = BTreeMap::new();
    for p in paths {
        let Some(path_id) = g.path_id(conn, p)? else { continue };
        out.extend(refs(conn, &g, IMPORTERS_WHERE, &[&path_id, &import])?);
    }
    let excluded: HashSet<&str> = paths.iter().map(String::as_str).collect();
    Ok(out.into_iter().filter(|(_, r)| !excluded.contains(r.path.as_str())).collect())
}

/// [`refs_importing`]'s references of the files whose import (kind `?2`)
/// resolved to the path `?1`.
const IMPORTERS_WHERE: &str = "r.path_id IN (SELECT i.path_id FROM uko_refs i \
     WHERE i.to_path_id = ?1 AND i.to_symbol_id IS NOT NULL AND i.kind_id = ?2) \
     AND r.kind_id != ?2 AND r.to_path_id IS NOT NULL";

/// Calls `f(path, symbol_path, name, kind, signature)` for every current
/// node sorted by path, or for those named one of `names`.
pub fn for_each_symbol(
    conn: &Connection,
    index_id: &str,
    names: Option<&[String]>,
    f: &mut dyn FnMut(&str, &str, &str, &str, &str),
) -> rusqlite::Result<()> {
    let Some(g) = Graph::find(conn, index_id)? else { return Ok(()) };
    const COLUMNS: &str = "SELECT p.path, s.text, nm.text, k.text, n.signature";
    const JOINS: &str = "JOIN uko_strings s ON s.string_id = n.symbol_id \
         JOIN uko_strings nm ON nm.string_id = n.name_id JOIN uko_strings k ON k.string_id = n.kind_id";
    let mut emit = |rows: &mut rusqlite::Rows<'_>| -> rusqlite::Result<()> {
        while let Some(row) = rows.next()? {
            let get = |i| row.get_ref(i).ok().and_then(|v| v.as_str().ok()).unwrap_or("");
            f(get(0), get(1), get(2), get(3), get(4));
        }
        Ok(())
    };
    match names {
        None => {
            let sql = format!(
                "{COLUMNS} FROM uko_paths p JOIN uko_nodes n ON n.path_id = p.path_id {JOINS} \
                 WHERE p.graph_id = ?1 AND n.is_current = 1 ORDER BY p.path"
            );
            let mut st = conn.prepare_cached(&sql)?;
            emit(&mut st.query([g.id])?)
        }
        Some(names) => {
            // The name is the one asked for, and kinds are few: each row
            // joins its path and symbol path only, and a kind's text is
            // looked up once (a refresh of a few files asks for hundreds of
            // names, some defined thousands of times).
            let mut st = conn.prepare_cached(
                "SELECT p.path, s.text, n.kind_id, n.signature FROM uko_nodes n INDEXED BY ix_uko_nodes_name \
                 JOIN uko_paths p ON p.path_id = n.path_id JOIN uko_strings s ON s.string_id = n.symbol_id \
                 WHERE n.name_id = ?1 AND n.is_current = 1",
            )?;
            let mut kinds: FxHashMap<i64, String> = FxHashMap::default();
            let mut kind_text = conn.prepare_cached("SELECT text FROM uko_strings WHERE string_id = ?1")?;
            for name in names {
                let Some(id) = g.string_id(conn, name)? else { continue };
                let mut rows = st.query([id])?;
                while let Some(row) = rows.next()? {
                    let kind_id: i64 = row.get(2)?;
                    let kind = match kinds.entry(kind_id) {
                        std::collections::hash_map::Entry::Occupied(held) => held.into_mut(),
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            let text: Option<String> = kind_text.query_row([kind_id], |r| r.get(0)).optional()?;
                            slot.insert(text.unwrap_or_default())
                        }
                    };
                    let get = |i| row.get_ref(i).ok().and_then(|v| v.as_str().ok()).unwrap_or("");
                    f(get(0), get(1), name, kind, get(3));
                }
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- writing

/// The interning state of one write transaction on one index's graph.
pub struct GraphWriter {
    graph: Graph,
    /// Every path of the graph (loaded when the writer opens).
    paths: FxHashMap<String, i64>,
    /// Strings interned or looked up so far.
    strings: StringIds,
    /// Whether `strings` holds every string of the graph (it had none when
    /// the writer opened), so a miss needs no lookup.
    strings_complete: bool,
    /// Whether the graph had no paths when the writer opened: a first
    /// index, with no old revisions to look up.
    pub fresh: bool,
    /// The `uko_runs` row of this transaction, once something needed it.
    run: Option<i64>,
    now: String,
}

/// The strings a [`GraphWriter`] interned or looked up, and their ids: each
/// text once in an arena, and a table of where it lies with its id (16
/// bytes a string). A first index of a large tree interns hundreds of
/// thousands (every node's symbol path, every reference's target name); a
/// map of `String` keys cost each its own allocation besides a 32-byte slot.
#[derive(Default)]
struct StringIds {
    text: TextArena,
    table: hashbrown::HashTable<(TextSpan, i64)>,
}

impl StringIds {
    fn hash(text: &str) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(text)
    }

    /// The id of `text`, whose [`StringIds::hash`] is `hash`.
    fn get(&self, hash: u64, text: &str) -> Option<i64> {
        self.table.find(hash, |(span, _)| self.text.get(*span) == text).map(|(_, id)| *id)
    }

    /// Keeps `text` (not kept yet) and its id; `false` when the arena's
    /// offsets cannot reach it and it is not kept.
    fn insert(&mut self, hash: u64, text: &str, id: i64) -> bool {
        let Some(span) = self.text.push(text) else { return false };
        let Self { text: arena, table } = self;
        table.insert_unique(hash, (span, id), |(span, _)| Self::hash(arena.get(*span)));
        true
    }
}

fn invalid(model: &'static str, field: &'static str, value: &str, path: &str) -> Failure {
    Failure::Invalid(ValidationError::new(
        model,
        field,
        format!("`{value}` is not the URI of a node of `{path}` in this index (uko://<resource>/<path>#<symbol_path>)"),
    ))
}

impl GraphWriter {
    /// The writer of the graph of `index_id` (created if the index has none
    /// yet); `None` when there is no such index. `now` is the run's time.
    pub fn open(conn: &Connection, index_id: &str, now: &str) -> WriteResult<Option<GraphWriter>> {
        let graph = match Graph::find(conn, index_id)? {
            Some(g) => g,
            None => {
                let resource: Option<String> = conn
                    .prepare_cached("SELECT resource_id FROM repo_indexes WHERE index_id = ?1")?
                    .query_row([index_id], |r| r.get(0))
                    .optional()?;
                let Some(resource) = resource else { return Ok(None) };
                conn.prepare_cached("INSERT INTO uko_graphs (index_id) VALUES (?1)")?.execute([index_id])?;
                Graph { id: conn.last_insert_rowid(), prefix: format!("uko://{resource}/") }
            }
        };
        let paths: FxHashMap<String, i64> = conn
            .prepare_cached("SELECT path, path_id FROM uko_paths WHERE graph_id = ?1")?
            .query_map([graph.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let has_strings: bool = conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM uko_strings WHERE graph_id = ?1)")?
            .query_row([graph.id], |r| r.get(0))?;
        Ok(Some(GraphWriter {
            fresh: paths.is_empty(),
            graph,
            paths,
            strings: StringIds::default(),
            strings_complete: !has_strings,
            run: None,
            now: now.to_owned(),
        }))
    }

    fn path_id(&mut self, conn: &Connection, path: &str) -> WriteResult<i64> {
        if let Some(id) = self.paths.get(path) {
            return Ok(*id);
        }
        conn.prepare_cached("INSERT INTO uko_paths (graph_id, path) VALUES (?1, ?2)")?
            .execute(params![self.graph.id, path])?;
        let id = conn.last_insert_rowid();
        self.paths.insert(path.to_owned(), id);
        Ok(id)
    }

    fn string_id(&mut self, conn: &Connection, text: &str) -> WriteResult<i64> {
        let hash = StringIds::hash(text);
        if let Some(id) = self.strings.get(hash, text) {
            return Ok(id);
        }
        let known = if self.strings_complete { None } else { self.graph.string_id(conn, text)? };
        let id = match known {
            Some(id) => id,
            None => {
                conn.prepare_cached("INSERT INTO uko_strings (graph_id, text) VALUES (?1, ?2)")?
                    .execute(params![self.graph.id, text])?;
                conn.last_insert_rowid()
            }
        };
        if !self.strings.insert(hash, text, id) {
            // Not kept: a later miss must look in the database.
            self.strings_complete = false;
        }
        Ok(id)
    }

    fn run_id(&mut self, conn: &Connection) -> WriteResult<i64> {
        if let Some(id) = self.run {
            return Ok(id);
        }
        conn.prepare_cached("INSERT INTO uko_runs (at) VALUES (?1)")?.execute([&self.now])?;
        let id = conn.last_insert_rowid();
        self.run = Some(id);
        Ok(id)
    }

    /// Applies the UKO part of a commit (inside the caller's transaction).
    pub fn apply(&mut self, conn: &Connection, uko: &UkoCommit) -> WriteResult<()> {
        for path in &uko.removed_paths {
            self.retire_path(conn, path)?;
        }
        for file in &uko.files {
            self.write_nodes(conn, &file.path, &file.nodes)?;
            self.write_refs(conn, &file.path, &file.refs)?;
        }
        for (ref_id, uri, path) in &uko.re_resolved {
            let (to_path, to_symbol) = self.resolution(conn, uri.as_deref(), path.as_deref())?;
            conn.prepare_cached("UPDATE uko_refs SET to_path_id = ?2, to_symbol_id = ?3 WHERE ref_id = ?1")?
                .execute(params![ref_id, to_path, to_symbol])?;
        }
        Ok(())
    }

    /// Retires every current node of a file and deletes its references.
    pub fn retire_path(&mut self, conn: &Connection, path: &str) -> WriteResult<()> {
        let Some(&path_id) = self.paths.get(path) else { return Ok(()) };
        let run = self.run_id(conn)?;
        conn.prepare_cached(
            "UPDATE uko_nodes SET is_current = 0, valid_until = ?2 WHERE path_id = ?1 AND is_current = 1",
        )?
        .execute(params![path_id, run])?;
        conn.prepare_cached("DELETE FROM uko_refs WHERE path_id = ?1")?.execute([path_id])?;
        Ok(())
    }

    /// The interned columns of a node: path, symbol path, name, kind,
    /// language and parent ids, after checking its URIs.
    fn node_ids(&mut self, conn: &Connection, n: &UkoNode) -> WriteResult<[Option<i64>; 6]> {
        if self.graph.symbol_in(&n.uri, &n.path) != Some(n.symbol_path.as_str()) {
            return Err(invalid("UkoNode", "uri", &n.uri, &n.path));
        }
        let parent = match &n.parent_uri {
            Some(p) => {
                let symbol =
                    self.graph.symbol_in(p, &n.path).ok_or_else(|| invalid("UkoNode", "parent_uri", p, &n.path))?;
                Some(self.string_id(conn, symbol)?)
            }
            None => None,
        };
        Ok([
            Some(self.path_id(conn, &n.path)?),
            Some(self.string_id(conn, &n.symbol_path)?),
            Some(self.string_id(conn, &n.name)?),
            Some(self.string_id(conn, &n.kind)?),
            Some(self.string_id(conn, &n.language)?),
            parent,
        ])
    }

    fn insert_node(
        &mut self,
        conn: &Connection,
        n: &UkoNode,
        ids: [Option<i64>; 6],
        revision_of: Option<i64>,
    ) -> WriteResult<()> {
        let run = self.run_id(conn)?;
        let [path_id, symbol_id, name_id, kind_id, language_id, parent_id] = ids;
        conn.prepare_cached(
            "INSERT INTO uko_nodes (path_id, symbol_id, name_id, kind_id, language_id, parent_id, start_byte, \
             end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, valid_from, \
             valid_until, is_current, revision_of) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, NULL, 1, ?17)",
        )?
        .execute(params![
            path_id,
            symbol_id,
            name_id,
            kind_id,
            language_id,
            parent_id,
            n.start_byte,
            n.end_byte,
            n.start_line,
            n.start_col,
            n.end_line,
            n.end_col,
            n.signature,
            n.doc,
            hash_value(&n.content_hash),
            run,
            revision_of
        ])?;
        Ok(())
    }

    /// Inserts the nodes of a file into a graph that had none (a first
    /// index: no revisions to look up). Returns the names of the symbols.
    pub fn insert_nodes(&mut self, conn: &Connection, nodes: &[UkoNode]) -> WriteResult<Vec<Reshaped>> {
        let mut names = BTreeSet::new();
        for n in nodes {
            let ids = self.node_ids(conn, n)?;
            self.insert_node(conn, n, ids, None)?;
            names.extend(Reshaped::of_node(n, None));
        }
        Ok(names.into_iter().collect())
    }

    /// Replaces the current nodes of one file, keeping revisions (module
    /// docs). Returns the names of the symbols whose definition changed
    /// shape: those the file did not define before, those it no longer
    /// defines, and those whose signature changed (sorted, once each).
    pub fn write_nodes(&mut self, conn: &Connection, path: &str, nodes: &[UkoNode]) -> WriteResult<Vec<Reshaped>> {
        // symbol id -> (node id, content hash, signature, the symbol, unless
        // it is the file's own node)
        let mut old: HashMap<i64, (i64, String, Option<String>, Option<Reshaped>)> = HashMap::new();
        if let Some(&path_id) = self.paths.get(path) {
            let mut st = conn.prepare_cached(
                "SELECT n.symbol_id, n.node_id, n.content_hash, n.signature, nm.text, k.text, sp.text = '' \
                 FROM uko_nodes n JOIN uko_strings nm ON nm.string_id = n.name_id \
                 JOIN uko_strings k ON k.string_id = n.kind_id JOIN uko_strings sp ON sp.string_id = n.symbol_id \
                 WHERE n.path_id = ?1 AND n.is_current = 1",
            )?;
            let mut rows = st.query([path_id])?;
            while let Some(row) = rows.next()? {
                let own: bool = row.get(6)?;
                let symbol = if own {
                    None
                } else {
                    Some(Reshaped {
                        name: row.get(4)?,
                        kind: row.get(5)?,
                        path: path.to_owned(),
                        change: Change::Removed,
                    })
                };
                old.insert(row.get(0)?, (row.get(1)?, hash_from(row.get_ref(2)?), row.get(3)?, symbol));
            }
        }
        let mut seen = HashSet::new();
        let mut reshaped = BTreeSet::new();
        for n in nodes {
            let ids = self.node_ids(conn, n)?;
            let [_, symbol_id, name_id, kind_id, language_id, parent_id] = ids;
            let symbol_id = symbol_id.unwrap_or_default();
            seen.insert(symbol_id);
            let was = old.get(&symbol_id);
            reshaped.extend(Reshaped::of_node(n, was.map(|(_, _, signature, _)| signature)));
            let revision_of = match was.map(|(id, hash, ..)| (id, hash)) {
                Some((id, hash)) if *hash == n.content_hash => {
                    conn.prepare_cached(
                        "UPDATE uko_nodes SET parent_id = ?2, start_byte = ?3, end_byte = ?4, start_line = ?5, \
                         start_col = ?6, end_line = ?7, end_col = ?8, signature = ?9, doc = ?10, kind_id = ?11, \
                         name_id = ?12, language_id = ?13 WHERE node_id = ?1",
                    )?
                    .execute(params![
                        id,
                        parent_id,
                        n.start_byte,
                        n.end_byte,
                        n.start_line,
                        n.start_col,
                        n.end_line,
                        n.end_col,
                        n.signature,
                        n.doc,
                        kind_id,
                        name_id,
                        language_id
                    ])?;
                    continue;
                }
                Some((id, _)) => {
                    self.retire(conn, *id)?;
                    Some(*id)
                }
                None => None,
            };
            self.insert_node(conn, n, ids, revision_of)?;
        }
        for (symbol_id, (id, _, _, symbol)) in &old {
            if !seen.contains(symbol_id) {
                self.retire(conn, *id)?;
                reshaped.extend(symbol.clone());
            }
        }
        Ok(reshaped.into_iter().collect())
    }

    fn retire(&mut self, conn: &Connection, node_id: i64) -> WriteResult<()> {
        let run = self.run_id(conn)?;
        conn.prepare_cached(
            "UPDATE uko_nodes SET is_current = 0, valid_until = ?2 WHERE node_id = ?1 AND is_current = 1",
        )?
        .execute(params![node_id, run])?;
        Ok(())
    }

    /// The stored form of a resolution: the resolved path's id and, when it
    /// resolved to a node, that node's symbol path id.
    fn resolution(
        &mut self,
        conn: &Connection,
        uri: Option<&str>,
        path: Option<&str>,
    ) -> WriteResult<(Option<i64>, Option<i64>)> {
        match (uri, path) {
            (None, None) => Ok((None, None)),
            (None, Some(path)) => Ok((Some(self.path_id(conn, path)?), None)),
            (Some(uri), Some(path)) => {
                let symbol =
                    self.graph.symbol_in(uri, path).ok_or_else(|| invalid("UkoRef", "resolved_uri", uri, path))?;
                Ok((Some(self.path_id(conn, path)?), Some(self.string_id(conn, symbol)?)))
            }
            (Some(uri), None) => Err(Failure::Invalid(ValidationError::new(
                "UkoRef",
                "resolved_path",
                format!("missing for resolved_uri `{uri}`"),
            ))),
        }
    }

    /// Replaces the references written in one file.
    pub fn write_refs(&mut self, conn: &Connection, path: &str, refs: &[UkoRef]) -> WriteResult<()> {
        if let Some(&path_id) = self.paths.get(path) {
            conn.prepare_cached("DELETE FROM uko_refs WHERE path_id = ?1")?.execute([path_id])?;
        }
        for r in refs {
            let from = self
                .graph
                .symbol_in(&r.from_uri, &r.path)
                .ok_or_else(|| invalid("UkoRef", "from_uri", &r.from_uri, &r.path))?;
            let from_id = self.string_id(conn, from)?;
            let path_id = self.path_id(conn, &r.path)?;
            let kind_id = self.string_id(conn, &r.kind)?;
            let target_name_id = self.string_id(conn, &r.target_name)?;
            let (to_path, to_symbol) = self.resolution(conn, r.resolved_uri.as_deref(), r.resolved_path.as_deref())?;
            let names = if r.names.is_empty() {
                None
            } else {
                Some(
                    serde_json::to_string(&r.names)
                        .map_err(|e| Failure::Invalid(ValidationError::new("UkoRef", "names", e.to_string())))?,
                )
            };
            conn.prepare_cached(
                "INSERT INTO uko_refs (path_id, from_id, kind_id, line, target, target_name_id, names, system, \
                 to_path_id, to_symbol_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                path_id,
                from_id,
                kind_id,
                r.line,
                r.target,
                target_name_id,
                names,
                r.system as i64,
                to_path,
                to_symbol
            ])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{NODE_SELECT, REF_ORDER, REF_SELECT, StringIds};
    use crate::SqliteStore;

    #[test]
    fn interned_strings_come_back_with_their_ids_and_others_do_not() {
        let mut ids = StringIds::default();
        let texts: Vec<String> = (0..5000).map(|i| format!("module.Class{}.method{}", i % 97, i)).collect();
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(ids.get(StringIds::hash(text), text), None);
            assert!(ids.insert(StringIds::hash(text), text, i as i64 + 1));
        }
        // The empty string and a prefix of a kept one are strings of their own.
        assert!(ids.insert(StringIds::hash(""), "", -7));
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(ids.get(StringIds::hash(text), text), Some(i as i64 + 1), "{text}");
        }
        assert_eq!(ids.get(StringIds::hash(""), ""), Some(-7));
        assert_eq!(ids.get(StringIds::hash("module.Class1"), "module.Class1"), None);
    }

    /// Every graph (and search-state) query searches an index or a primary
    /// key for each table; none scans a whole table.
    #[test]
    fn graph_queries_search_indexes_and_scan_nothing() {
        let store = SqliteStore::open_in_memory().unwrap();
        let nodes = [
            "n.path_id = ?1 AND n.is_current = 1 ORDER BY n.start_byte, s.text",
            "n.path_id = ?1 AND n.symbol_id = ?2 AND n.is_current = 1",
            "n.symbol_id = ?1 AND n.is_current = 1",
            "n.name_id = ?1 AND n.is_current = 1",
            "n.path_id = ?1 AND n.parent_id = ?2 AND n.is_current = 1 ORDER BY n.start_byte, s.text",
            "n.path_id = ?1 AND n.symbol_id = ?2 ORDER BY n.node_id DESC",
            "p.graph_id = ?1 AND n.is_current = 1",
        ]
        .map(|w| format!("{NODE_SELECT} WHERE {w}"));
        let refs = [
            "r.path_id = ?1",
            "r.path_id = ?1 AND r.from_id = ?2",
            "r.to_path_id = ?1 AND r.to_symbol_id = ?2",
            "r.target_name_id = ?1 AND r.to_symbol_id IS NULL",
            "r.to_path_id = ?1 AND r.to_symbol_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM uko_nodes n \
             WHERE n.path_id = r.to_path_id AND n.symbol_id = r.to_symbol_id AND n.is_current = 1)",
            super::IMPORTERS_WHERE,
            "p.graph_id = ?1",
            "p.graph_id = ?1 AND r.kind_id = ?2",
            "r.ref_id = ?1",
        ]
        .map(|w| format!("{REF_SELECT} WHERE {w} {REF_ORDER}"));
        let writes = [
            "SELECT n.symbol_id, n.node_id, n.content_hash, n.signature, nm.text, k.text, sp.text = '' \
             FROM uko_nodes n JOIN uko_strings nm ON nm.string_id = n.name_id \
             JOIN uko_strings k ON k.string_id = n.kind_id JOIN uko_strings sp ON sp.string_id = n.symbol_id \
             WHERE n.path_id = ?1 AND n.is_current = 1",
            "UPDATE uko_nodes SET is_current = 0, valid_until = ?2 WHERE path_id = ?1 AND is_current = 1",
            "DELETE FROM uko_refs WHERE path_id = ?1",
            "SELECT string_id FROM uko_strings WHERE graph_id = ?1 AND text = ?2",
            "SELECT path_id FROM uko_paths WHERE graph_id = ?1 AND path = ?2",
            "SELECT f.path, f.content_hash FROM search_sets s JOIN search_state f ON f.set_id = s.set_id \
             WHERE s.index_id = ?1 AND s.backend = ?2 ORDER BY f.path",
            "DELETE FROM search_state WHERE set_id = ?1 AND path = ?2",
        ]
        .map(str::to_owned);
        for sql in nodes.iter().chain(&refs).chain(&writes) {
            let plan: Vec<String> = store
                .read(|c| {
                    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                    let unbound = vec![rusqlite::types::Value::Null; st.parameter_count()];
                    st.query_map(rusqlite::params_from_iter(unbound), |r| r.get::<_, String>(3))?.collect()
                })
                .unwrap();
            assert!(plan.iter().all(|step| !step.starts_with("SCAN")), "{sql}\n{plan:#?}");
        }
    }
}
