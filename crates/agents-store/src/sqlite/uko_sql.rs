//! SQL of the UKO graph: nodes with revisions, and references.
//!
//! Revision rule, applied per file when it is re-analysed: a node whose URI
//! and content hash are unchanged is updated in place (it may have moved);
//! a node whose content changed is retired (`valid_until`, `is_current = 0`)
//! and a new revision inserted with `revision_of` pointing at it; a node
//! that disappeared is retired.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::{UkoCommit, UkoNode, UkoNodeRecord, UkoRef};

pub const NODE_COLUMNS: &str = "node_id, uri, path, symbol_path, kind, name, parent_uri, language, start_byte, \
     end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, valid_from, valid_until, \
     is_current, revision_of";

pub const REF_COLUMNS: &str =
    "ref_id, path, from_uri, kind, target, target_name, names, system, line, resolved_uri, resolved_path";

pub fn node_from_row(row: &Row<'_>) -> rusqlite::Result<UkoNodeRecord> {
    Ok(UkoNodeRecord {
        node_id: row.get(0)?,
        node: UkoNode {
            uri: row.get(1)?,
            path: row.get(2)?,
            symbol_path: row.get(3)?,
            kind: row.get(4)?,
            name: row.get(5)?,
            parent_uri: row.get(6)?,
            language: row.get(7)?,
            start_byte: row.get(8)?,
            end_byte: row.get(9)?,
            start_line: row.get(10)?,
            start_col: row.get(11)?,
            end_line: row.get(12)?,
            end_col: row.get(13)?,
            signature: row.get(14)?,
            doc: row.get(15)?,
            content_hash: row.get(16)?,
        },
        valid_from: row.get(17)?,
        valid_until: row.get(18)?,
        is_current: row.get::<_, i64>(19)? == 1,
        revision_of: row.get(20)?,
    })
}

pub fn ref_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, UkoRef)> {
    let names: String = row.get(6)?;
    Ok((
        row.get(0)?,
        UkoRef {
            path: row.get(1)?,
            from_uri: row.get(2)?,
            kind: row.get(3)?,
            target: row.get(4)?,
            target_name: row.get(5)?,
            names: serde_json::from_str(&names).unwrap_or_default(),
            system: row.get::<_, i64>(7)? == 1,
            line: row.get(8)?,
            resolved_uri: row.get(9)?,
            resolved_path: row.get(10)?,
        },
    ))
}

pub fn query_nodes(
    conn: &Connection,
    sql_where: &str,
    order: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<UkoNodeRecord>> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM uko_nodes WHERE {sql_where} ORDER BY {order}");
    let mut st = conn.prepare_cached(&sql)?;
    st.query_map(params, node_from_row)?.collect()
}

pub fn query_refs(
    conn: &Connection,
    sql_where: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    query_refs_by(conn, None, sql_where, params)
}

/// [`query_refs`] through a named index. Without statistics SQLite prefers
/// the index that avoids the final sort (by path), which for a selective
/// condition on another column means scanning the whole index.
pub fn query_refs_by(
    conn: &Connection,
    index: Option<&str>,
    sql_where: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let hint = index.map(|i| format!(" INDEXED BY {i}")).unwrap_or_default();
    let sql = format!("SELECT {REF_COLUMNS} FROM uko_refs{hint} WHERE {sql_where} ORDER BY path, line, target, ref_id");
    let mut st = conn.prepare_cached(&sql)?;
    st.query_map(params, ref_from_row)?.collect()
}

/// Applies the UKO part of a commit inside the caller's transaction.
pub fn apply(conn: &Connection, index_id: &str, uko: &UkoCommit, now: &str) -> rusqlite::Result<()> {
    for path in &uko.removed_paths {
        retire_path(conn, index_id, path, now)?;
    }
    for file in &uko.files {
        write_nodes(conn, index_id, &file.path, &file.nodes, now)?;
        write_refs(conn, index_id, &file.path, &file.refs)?;
    }
    let mut re_resolve =
        conn.prepare_cached("UPDATE uko_refs SET resolved_uri = ?2, resolved_path = ?3 WHERE ref_id = ?1")?;
    for (ref_id, uri, path) in &uko.re_resolved {
        re_resolve.execute(params![ref_id, uri, path])?;
    }
    Ok(())
}

/// Retires every current node of a file and deletes its references.
pub fn retire_path(conn: &Connection, index_id: &str, path: &str, now: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE uko_nodes SET is_current = 0, valid_until = ?3 WHERE index_id = ?1 AND path = ?2 AND is_current = 1",
    )?
    .execute(params![index_id, path, now])?;
    conn.prepare_cached("DELETE FROM uko_refs WHERE index_id = ?1 AND path = ?2")?.execute(params![index_id, path])?;
    Ok(())
}

const INSERT_NODE: &str = "INSERT INTO uko_nodes (index_id, uri, path, symbol_path, kind, name, parent_uri, \
     language, start_byte, end_byte, start_line, start_col, end_line, end_col, signature, doc, content_hash, \
     valid_from, valid_until, is_current, revision_of) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, NULL, 1, ?19)";

fn insert_node(
    st: &mut rusqlite::CachedStatement<'_>,
    index_id: &str,
    n: &UkoNode,
    now: &str,
    revision_of: Option<i64>,
) -> rusqlite::Result<()> {
    st.execute(params![
        index_id,
        n.uri,
        n.path,
        n.symbol_path,
        n.kind,
        n.name,
        n.parent_uri,
        n.language,
        n.start_byte,
        n.end_byte,
        n.start_line,
        n.start_col,
        n.end_line,
        n.end_col,
        n.signature,
        n.doc,
        n.content_hash,
        now,
        revision_of
    ])?;
    Ok(())
}

/// Inserts the nodes of a file into an index that has none yet (a first
/// index: no revisions to look up). Returns the names of the symbols.
pub fn insert_nodes(conn: &Connection, index_id: &str, nodes: &[UkoNode], now: &str) -> rusqlite::Result<Vec<String>> {
    let mut insert = conn.prepare_cached(INSERT_NODE)?;
    let mut names = Vec::with_capacity(nodes.len());
    for n in nodes {
        insert_node(&mut insert, index_id, n, now, None)?;
        if !n.symbol_path.is_empty() {
            names.push(n.name.clone());
        }
    }
    Ok(names)
}

/// Replaces the current nodes of one file, keeping revisions (module docs).
pub fn write_nodes(
    conn: &Connection,
    index_id: &str,
    path: &str,
    nodes: &[UkoNode],
    now: &str,
) -> rusqlite::Result<Vec<String>> {
    let mut retire = conn.prepare_cached(
        "UPDATE uko_nodes SET is_current = 0, valid_until = ?2 WHERE node_id = ?1 AND is_current = 1",
    )?;
    let mut insert = conn.prepare_cached(INSERT_NODE)?;
    let mut update = conn.prepare_cached(
        "UPDATE uko_nodes SET parent_uri = ?2, start_byte = ?3, end_byte = ?4, start_line = ?5, start_col = ?6, \
         end_line = ?7, end_col = ?8, signature = ?9, doc = ?10, kind = ?11, name = ?12, language = ?13 \
         WHERE node_id = ?1",
    )?;
    let old: HashMap<String, (i64, String)> = conn
        .prepare_cached(
            "SELECT node_id, uri, content_hash FROM uko_nodes WHERE index_id = ?1 AND path = ?2 AND is_current = 1",
        )?
        .query_map(params![index_id, path], |r| Ok((r.get::<_, String>(1)?, (r.get(0)?, r.get(2)?))))?
        .collect::<rusqlite::Result<_>>()?;
    let mut seen = std::collections::HashSet::new();
    let mut introduced = Vec::new();
    for n in nodes {
        seen.insert(n.uri.as_str());
        let revision_of = match old.get(&n.uri) {
            Some((id, hash)) if *hash == n.content_hash => {
                update.execute(params![
                    id,
                    n.parent_uri,
                    n.start_byte,
                    n.end_byte,
                    n.start_line,
                    n.start_col,
                    n.end_line,
                    n.end_col,
                    n.signature,
                    n.doc,
                    n.kind,
                    n.name,
                    n.language
                ])?;
                continue;
            }
            Some((id, _)) => {
                retire.execute(params![id, now])?;
                Some(*id)
            }
            None => {
                if !n.symbol_path.is_empty() {
                    introduced.push(n.name.clone());
                }
                None
            }
        };
        insert_node(&mut insert, index_id, n, now, revision_of)?;
    }
    for (uri, (id, _)) in &old {
        if !seen.contains(uri.as_str()) {
            retire.execute(params![id, now])?;
        }
    }
    Ok(introduced)
}

/// Replaces the references written in one file.
pub fn write_refs(conn: &Connection, index_id: &str, path: &str, refs: &[UkoRef]) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM uko_refs WHERE index_id = ?1 AND path = ?2")?.execute(params![index_id, path])?;
    let mut insert_ref = conn.prepare_cached(
        "INSERT INTO uko_refs (index_id, path, from_uri, kind, target, target_name, names, system, line, \
         resolved_uri, resolved_path) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for r in refs {
        insert_ref.execute(params![
            index_id,
            r.path,
            r.from_uri,
            r.kind,
            r.target,
            r.target_name,
            serde_json::to_string(&r.names).expect("names serialise"),
            r.system as i64,
            r.line,
            r.resolved_uri,
            r.resolved_path
        ])?;
    }
    Ok(())
}

/// References outside `paths` whose target in one of `paths` is gone (no
/// current node has its URI any more), or that are unresolved and whose
/// target name is one of `names`, by ref id. A reference whose target
/// still exists keeps its binding.
pub fn refs_affected_by(
    conn: &Connection,
    index_id: &str,
    paths: &[String],
    names: &[String],
) -> rusqlite::Result<Vec<(i64, UkoRef)>> {
    let mut out = std::collections::BTreeMap::new();
    let Some(rid) = resource_of(conn, index_id)? else { return Ok(Vec::new()) };
    for p in paths {
        // The file's URI and every symbol URI under it (`file#...`).
        let file_uri = format!("uko://{rid}/{p}");
        let lower = format!("{file_uri}#");
        let upper = format!("{file_uri}#\u{10FFFF}");
        for (id, r) in query_refs_by(
            conn,
            Some("ix_uko_refs_resolved_uri"),
            "index_id = ?1 AND (resolved_uri = ?2 OR (resolved_uri >= ?3 AND resolved_uri < ?4)) \
             AND NOT EXISTS (SELECT 1 FROM uko_nodes n WHERE n.uri = uko_refs.resolved_uri AND n.is_current = 1)",
            &[&index_id, &file_uri, &lower, &upper],
        )? {
            out.insert(id, r);
        }
    }
    for n in names {
        for (id, r) in query_refs_by(
            conn,
            Some("ix_uko_refs_target_name"),
            "index_id = ?1 AND target_name = ?2 AND resolved_uri IS NULL",
            &[&index_id, n],
        )? {
            out.insert(id, r);
        }
    }
    let excluded: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
    Ok(out.into_iter().filter(|(_, r)| !excluded.contains(r.path.as_str())).collect())
}

fn resource_of(conn: &Connection, index_id: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT resource_id FROM repo_indexes WHERE index_id = ?1")?
        .query_row([index_id], |r| r.get(0))
        .optional()
}

pub fn node_by_uri(conn: &Connection, index_id: &str, uri: &str) -> rusqlite::Result<Option<UkoNodeRecord>> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM uko_nodes WHERE index_id = ?1 AND uri = ?2 AND is_current = 1");
    conn.query_row(&sql, params![index_id, uri], node_from_row).optional()
}
