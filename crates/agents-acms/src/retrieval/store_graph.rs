//! The stored UKO edges as a [`NeighborSource`] for the graph backend.
//!
//! Containment comes from `parent_uri` (both ways), dependencies from resolved
//! imports, references from resolved calls, inheritance and mentions. External
//! targets (unresolved references) are not nodes of the graph.

use agents_search::graph::{EdgeKind, Neighbor, NeighborSource};
use agents_store::{Store, StoreError, UkoRef};

/// Edges of one index, read from the store on demand.
pub struct StoreGraph<'a> {
    pub store: &'a dyn Store,
    pub index_id: &'a str,
}

fn edge_kind(r: &UkoRef) -> EdgeKind {
    if r.kind == "import" { EdgeKind::DependsOn } else { EdgeKind::References }
}

impl NeighborSource for StoreGraph<'_> {
    type Error = StoreError;

    fn neighbors(&self, id: &str) -> Result<Vec<Neighbor>, StoreError> {
        let mut out = Vec::new();
        if let Some(node) = self.store.uko_node(self.index_id, id)?
            && let Some(parent) = node.node.parent_uri
        {
            out.push(Neighbor { id: parent, kind: EdgeKind::Contains, outgoing: false });
        }
        for child in self.store.uko_children(self.index_id, id)? {
            out.push(Neighbor { id: child.node.uri, kind: EdgeKind::Contains, outgoing: true });
        }
        for r in self.store.uko_refs_from(self.index_id, id)? {
            if let Some(target) = &r.resolved_uri {
                out.push(Neighbor { id: target.clone(), kind: edge_kind(&r), outgoing: true });
            }
        }
        for r in self.store.uko_refs_to(self.index_id, id)? {
            out.push(Neighbor { id: r.from_uri.clone(), kind: edge_kind(&r), outgoing: false });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.kind.cmp(&b.kind)).then(a.outgoing.cmp(&b.outgoing)));
        out.dedup();
        Ok(out)
    }
}
