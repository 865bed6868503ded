//! [`CodeGraphStore`] for [`SqliteStore`]: reads of `uko_nodes` and
//! `uko_refs` (what an indexing run writes is in `uko_sql`).

use rusqlite::OptionalExtension;

use super::{SqliteStore, uko_sql};
use crate::{CodeGraphStore, StoreError, UkoNodeRecord, UkoRef, UkoStatsRows, UkoSymbol};

impl CodeGraphStore for SqliteStore {
    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND path = ?2 AND is_current = 1",
                "start_byte, symbol_path",
                &[&index_id, &path],
            )
        })
    }

    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::node_by_uri(c, index_id, uri))
    }

    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND is_current = 1 AND (symbol_path = ?2 OR name = ?2)",
                "uri",
                &[&index_id, &query],
            )
        })
    }

    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND parent_uri = ?2 AND is_current = 1",
                "start_byte, symbol_path",
                &[&index_id, &uri],
            )
        })
    }

    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::query_nodes(c, "index_id = ?1 AND uri = ?2", "node_id DESC", &[&index_id, &uri]))
    }

    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        // A node's references are written in its file: find them through the
        // path index instead of scanning every reference of the index.
        let Some(node) = self.uko_node(index_id, uri)? else { return Ok(Vec::new()) };
        let path = node.node.path;
        let rows = self.read(|c| {
            uko_sql::query_refs_by(
                c,
                Some("ix_uko_refs_path"),
                "index_id = ?1 AND path = ?2 AND from_uri = ?3",
                &[&index_id, &path, &uri],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        // Descendants' URIs extend the node's: `file#Sym` under a file,
        // `file#Sym.member` under a symbol. All live in the node's file.
        let Some(node) = self.uko_node(index_id, uri)? else { return Ok(Vec::new()) };
        let child_prefix = if uri.contains('#') { format!("{uri}.") } else { format!("{uri}#") };
        let upper = format!("{child_prefix}\u{10FFFF}");
        let rows = self.read(|c| {
            uko_sql::query_refs(
                c,
                "index_id = ?1 AND path = ?2 AND (from_uri = ?3 OR (from_uri >= ?4 AND from_uri < ?5))",
                &[&index_id, &node.node.path, &uri, &child_prefix, &upper],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        let rows = self.read(|c| {
            uko_sql::query_refs_by(
                c,
                Some("ix_uko_refs_resolved_uri"),
                "index_id = ?1 AND resolved_uri = ?2",
                &[&index_id, &uri],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT uri, path, symbol_path, name, kind, parent_uri FROM uko_nodes \
                 WHERE index_id = ?1 AND is_current = 1 ORDER BY uri",
            )?;
            st.query_map([index_id], |r| {
                Ok(UkoSymbol {
                    uri: r.get(0)?,
                    path: r.get(1)?,
                    symbol_path: r.get(2)?,
                    name: r.get(3)?,
                    kind: r.get(4)?,
                    parent_uri: r.get(5)?,
                })
            })?
            .collect()
        })
    }

    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::query_refs(c, "index_id = ?1 AND path = ?2", &[&index_id, &path]))
    }

    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        // Only the columns the graph needs, each part through its index: the
        // graph walk asks this of hundreds of nodes per query.
        self.read(|c| {
            let node: Option<(String, Option<String>)> = c
                .prepare_cached(
                    "SELECT path, parent_uri FROM uko_nodes INDEXED BY ix_uko_nodes_uri \
                     WHERE index_id = ?1 AND uri = ?2 AND is_current = 1",
                )?
                .query_row(rusqlite::params![index_id, uri], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let mut out = Vec::new();
            let mut children = c.prepare_cached(
                "SELECT uri FROM uko_nodes INDEXED BY ix_uko_nodes_parent \
                 WHERE index_id = ?1 AND parent_uri = ?2 AND is_current = 1 ORDER BY start_byte, symbol_path",
            )?;
            let mut from = c.prepare_cached(
                "SELECT resolved_uri, kind FROM uko_refs INDEXED BY ix_uko_refs_path \
                 WHERE index_id = ?1 AND path = ?2 AND from_uri = ?3 AND resolved_uri IS NOT NULL \
                 ORDER BY line, target, ref_id",
            )?;
            // A node that is not current has only references into it.
            if let Some((path, parent)) = node {
                if let Some(parent) = parent {
                    out.push((parent, "contains".to_owned(), false));
                }
                for child in children.query_map(rusqlite::params![index_id, uri], |row| row.get::<_, String>(0))? {
                    out.push((child?, "contains".to_owned(), true));
                }
                for row in from.query_map(rusqlite::params![index_id, path, uri], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })? {
                    let (target, kind) = row?;
                    out.push((target, kind, true));
                }
            }
            let mut to = c.prepare_cached(
                "SELECT from_uri, kind FROM uko_refs INDEXED BY ix_uko_refs_resolved_uri \
                 WHERE index_id = ?1 AND resolved_uri = ?2 ORDER BY path, line, target, ref_id",
            )?;
            for row in to.query_map(rusqlite::params![index_id, uri], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })? {
                let (source, kind) = row?;
                out.push((source, kind, false));
            }
            Ok(out)
        })
    }

    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT DISTINCT resolved_path FROM uko_refs WHERE index_id = ?1 AND path = ?2 \
                 AND resolved_path IS NOT NULL AND resolved_path != path AND kind != 'mentions' \
                 ORDER BY resolved_path",
            )?;
            st.query_map(rusqlite::params![index_id, path], |row| row.get::<_, String>(0))?.collect()
        })
    }

    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::refs_affected_by(c, index_id, paths, names))
    }

    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::query_nodes(c, "index_id = ?1 AND is_current = 1", "uri", &[&index_id]))
    }

    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError> {
        let rows = self.read(|c| uko_sql::query_refs(c, "index_id = ?1", &[&index_id]))?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_stats(&self, index_id: &str) -> Result<UkoStatsRows, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT language, kind, COUNT(*) FROM uko_nodes WHERE index_id = ?1 AND is_current = 1 \
                 GROUP BY language, kind ORDER BY language, kind",
            )?;
            let nodes =
                st.query_map([index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
            let mut st = c.prepare(
                "SELECT f.language, r.kind, COUNT(*), SUM(r.resolved_uri IS NOT NULL) FROM uko_refs r \
                 JOIN indexed_files f ON f.index_id = r.index_id AND f.path = r.path \
                 WHERE r.index_id = ?1 GROUP BY f.language, r.kind ORDER BY f.language, r.kind",
            )?;
            let refs = st
                .query_map([index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?;
            Ok(UkoStatsRows { nodes, refs })
        })
    }
}
