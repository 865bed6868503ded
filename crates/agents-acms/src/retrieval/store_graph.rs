//! The stored UKO edges as a [`NeighborSource`] for the graph backend.
//!
//! Containment comes from `parent_uri` (both ways), dependencies from resolved
//! imports, references from resolved calls, inheritance and mentions. External
//! targets (unresolved references) are not nodes of the graph.

use agents_search::graph::{EdgeKind, Neighbor, NeighborSource};
use agents_store::{Store, StoreError};

/// Edges of one index, read from the store on demand.
pub struct StoreGraph<'a> {
    pub store: &'a dyn Store,
    pub index_id: &'a str,
}

fn edge_kind(kind: &str) -> EdgeKind {
    match kind {
        "contains" => EdgeKind::Contains,
        "import" => EdgeKind::DependsOn,
        _ => EdgeKind::References,
    }
}

impl NeighborSource for StoreGraph<'_> {
    type Error = StoreError;

    fn neighbors(&self, id: &str) -> Result<Vec<Neighbor>, StoreError> {
        let mut out: Vec<Neighbor> = self
            .store
            .uko_neighbors(self.index_id, id)?
            .into_iter()
            .map(|(id, kind, outgoing)| Neighbor { id, kind: edge_kind(&kind), outgoing })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.kind.cmp(&b.kind)).then(a.outgoing.cmp(&b.outgoing)));
        out.dedup();
        Ok(out)
    }
}
