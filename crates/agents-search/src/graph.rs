//! Graph retrieval over the UKO edges: expansion from focus nodes and personalised
//! PageRank.
//!
//! The edges live in the store; this module asks for them through [`NeighborSource`]
//! (one call per node visited), gathers the neighbourhood of the request's focus into a
//! petgraph [`DiGraph`], and ranks it there. Working on the neighbourhood rather than the
//! whole repository keeps a query's cost proportional to what it touches (the local
//! form of personalised PageRank), and keeps this crate free of SQL.
//!
//! - [`GraphBackend::expand`]: breadth-first from the focus, `breadth` hops along
//!   contains / dependsOn / references edges in both directions; a node's score is the
//!   best over paths of its seed weight times `decay` per hop and the edge kind's weight.
//! - [`GraphBackend::personalized_pagerank`]: power iteration with restarts to the seeds
//!   (weighted), over the same neighbourhood with edges made undirected, so a seed lends
//!   rank to what it uses and to what uses it.
//!
//! Results are sorted by score descending then id ascending.

use std::collections::{BTreeMap, HashMap, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

/// The three edge families of the UKO graph that retrieval follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// A file contains a class, a class a method.
    Contains,
    /// An import: the importing node depends on the imported one.
    DependsOn,
    /// A call, an inheritance or a mention.
    References,
}

impl EdgeKind {
    /// How much of a node's score flows along one edge of this kind.
    pub fn weight(self) -> f32 {
        match self {
            EdgeKind::Contains => 0.9,
            EdgeKind::DependsOn => 0.7,
            EdgeKind::References => 0.8,
        }
    }
}

/// One edge next to a node, in either direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbor {
    pub id: String,
    pub kind: EdgeKind,
    /// True when the edge points from the asked node to `id`.
    pub outgoing: bool,
}

/// Where edges come from: the store in production, a map in tests.
pub trait NeighborSource {
    type Error;
    /// Every edge touching `id`, in a stable order.
    fn neighbors(&self, id: &str) -> Result<Vec<Neighbor>, Self::Error>;
}

/// Limits of one graph walk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphWalk {
    /// Hops from the focus.
    pub breadth: u32,
    /// Score kept per hop, in (0, 1].
    pub decay: f32,
    /// Most nodes gathered; the walk stops growing past it, and once full reads
    /// the neighbours of no more nodes than the seeds.
    pub max_nodes: usize,
}

impl Default for GraphWalk {
    fn default() -> GraphWalk {
        GraphWalk { breadth: 2, decay: 0.6, max_nodes: 4_000 }
    }
}

/// A node reached by a walk.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphHit {
    pub id: String,
    pub score: f32,
    /// Hops from the nearest seed (0 for the seeds).
    pub hops: u32,
}

/// The neighbourhood of a request, gathered from a [`NeighborSource`].
pub struct GraphBackend {
    graph: DiGraph<String, EdgeKind>,
    index: HashMap<String, NodeIndex>,
    hops: HashMap<NodeIndex, u32>,
    best: HashMap<NodeIndex, f32>,
    seeds: Vec<(NodeIndex, f32)>,
}

impl GraphBackend {
    /// Walks from `seeds` (id, weight in (0, 1]) through `source`, `walk.breadth` hops out.
    pub fn gather<S: NeighborSource>(
        source: &S,
        seeds: &[(String, f32)],
        walk: GraphWalk,
    ) -> Result<GraphBackend, S::Error> {
        let mut backend = GraphBackend {
            graph: DiGraph::new(),
            index: HashMap::new(),
            hops: HashMap::new(),
            best: HashMap::new(),
            seeds: Vec::new(),
        };
        let mut queue = VecDeque::new();
        let mut sorted: Vec<&(String, f32)> = seeds.iter().collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (id, weight) in sorted {
            let node = backend.node(id);
            if backend.hops.contains_key(&node) {
                continue;
            }
            backend.hops.insert(node, 0);
            backend.best.insert(node, *weight);
            backend.seeds.push((node, *weight));
            queue.push_back(node);
        }
        let mut expanded = std::collections::HashSet::new();
        while let Some(node) = queue.pop_front() {
            let hops = backend.hops[&node];
            if hops >= walk.breadth || !expanded.insert(node) {
                continue;
            }
            // Full: past the seeds, a node's edges could only join nodes already
            // gathered, which costs a read of its neighbours for little.
            if hops > 0 && backend.graph.node_count() >= walk.max_nodes {
                continue;
            }
            let score = backend.best[&node];
            let id = backend.graph[node].clone();
            for neighbor in source.neighbors(&id)? {
                if neighbor.id == id {
                    continue;
                }
                let known = backend.index.contains_key(&neighbor.id);
                if !known && backend.graph.node_count() >= walk.max_nodes {
                    continue;
                }
                let other = backend.node(&neighbor.id);
                let (from, to) = if neighbor.outgoing { (node, other) } else { (other, node) };
                if backend.graph.find_edge(from, to).is_none() {
                    backend.graph.add_edge(from, to, neighbor.kind);
                }
                let reached = score * walk.decay * neighbor.kind.weight();
                let entry = backend.best.entry(other).or_insert(0.0);
                if reached > *entry {
                    *entry = reached;
                }
                if let std::collections::hash_map::Entry::Vacant(slot) = backend.hops.entry(other) {
                    slot.insert(hops + 1);
                    queue.push_back(other);
                }
            }
        }
        Ok(backend)
    }

    fn node(&mut self, id: &str) -> NodeIndex {
        if let Some(node) = self.index.get(id) {
            return *node;
        }
        let node = self.graph.add_node(id.to_owned());
        self.index.insert(id.to_owned(), node);
        node
    }

    /// Nodes gathered.
    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    /// Every reached node with its decayed score.
    pub fn expand(&self) -> Vec<GraphHit> {
        let mut hits: Vec<GraphHit> = self
            .best
            .iter()
            .map(|(node, score)| GraphHit { id: self.graph[*node].clone(), score: *score, hops: self.hops[node] })
            .collect();
        sort(&mut hits);
        hits
    }

    /// Personalised PageRank over the neighbourhood, restarting to the seeds with
    /// probability `1 - damping`; `iterations` rounds of power iteration.
    pub fn personalized_pagerank(&self, damping: f32, iterations: usize) -> Vec<GraphHit> {
        let n = self.graph.node_count();
        if n == 0 {
            return Vec::new();
        }
        let total: f32 = self.seeds.iter().map(|(_, w)| w).sum::<f32>().max(f32::MIN_POSITIVE);
        let mut restart = vec![0.0_f32; n];
        for (node, weight) in &self.seeds {
            restart[node.index()] += weight / total;
        }
        // Undirected, weighted adjacency; BTreeMap keeps the summation order fixed.
        let mut adjacency: Vec<BTreeMap<usize, f32>> = vec![BTreeMap::new(); n];
        for edge in self.graph.edge_references() {
            let (a, b, w) = (edge.source().index(), edge.target().index(), edge.weight().weight());
            *adjacency[a].entry(b).or_insert(0.0) += w;
            *adjacency[b].entry(a).or_insert(0.0) += w;
        }
        let out_weight: Vec<f32> = adjacency.iter().map(|m| m.values().sum()).collect();
        let mut rank = restart.clone();
        for _ in 0..iterations {
            let mut next: Vec<f32> = restart.iter().map(|r| (1.0 - damping) * r).collect();
            let mut dangling = 0.0;
            for (from, edges) in adjacency.iter().enumerate() {
                if out_weight[from] == 0.0 {
                    dangling += rank[from];
                    continue;
                }
                for (to, w) in edges {
                    next[*to] += damping * rank[from] * w / out_weight[from];
                }
            }
            for (value, r) in next.iter_mut().zip(&restart) {
                *value += damping * dangling * r;
            }
            rank = next;
        }
        let max = rank.iter().copied().fold(f32::MIN_POSITIVE, f32::max);
        let mut hits: Vec<GraphHit> = self
            .graph
            .node_indices()
            .map(|node| GraphHit {
                id: self.graph[node].clone(),
                score: rank[node.index()] / max,
                hops: self.hops.get(&node).copied().unwrap_or(u32::MAX),
            })
            .collect();
        sort(&mut hits);
        hits
    }
}

fn sort(hits: &mut [GraphHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Edges(Vec<(&'static str, &'static str, EdgeKind)>);

    impl NeighborSource for Edges {
        type Error = std::convert::Infallible;
        fn neighbors(&self, id: &str) -> Result<Vec<Neighbor>, Self::Error> {
            let mut out = Vec::new();
            for (a, b, kind) in &self.0 {
                if *a == id {
                    out.push(Neighbor { id: (*b).to_owned(), kind: *kind, outgoing: true });
                }
                if *b == id {
                    out.push(Neighbor { id: (*a).to_owned(), kind: *kind, outgoing: false });
                }
            }
            Ok(out)
        }
    }

    fn chain() -> Edges {
        use EdgeKind::*;
        Edges(vec![
            ("a.py", "a.py#f", Contains),
            ("a.py#f", "b.py#g", References),
            ("b.py", "b.py#g", Contains),
            ("c.py", "a.py", DependsOn),
            ("b.py#g", "d.py#h", References),
            ("d.py#h", "e.py#i", References),
        ])
    }

    #[test]
    fn expansion_honours_breadth_and_decays_per_hop() {
        let walk = GraphWalk { breadth: 2, decay: 0.5, max_nodes: 100 };
        let g = GraphBackend::gather(&chain(), &[("a.py#f".to_owned(), 1.0)], walk).unwrap();
        let hits = g.expand();
        let find = |id: &str| hits.iter().find(|h| h.id == id);
        assert_eq!(hits[0].id, "a.py#f");
        assert_eq!(find("b.py#g").unwrap().hops, 1);
        assert!((find("b.py#g").unwrap().score - 0.5 * 0.8).abs() < 1e-6);
        assert_eq!(find("d.py#h").unwrap().hops, 2);
        assert!(find("e.py#i").is_none(), "three hops away");
        assert!(find("c.py").is_some(), "incoming edges are followed too");
        assert!(find("d.py#h").unwrap().score < find("b.py#g").unwrap().score);
    }

    #[test]
    fn pagerank_favours_nodes_near_the_seeds_and_is_deterministic() {
        let walk = GraphWalk { breadth: 3, decay: 0.5, max_nodes: 100 };
        let g = GraphBackend::gather(&chain(), &[("a.py".to_owned(), 1.0)], walk).unwrap();
        let ranks = g.personalized_pagerank(0.85, 30);
        assert_eq!(ranks[0].id, "a.py");
        let pos = |id: &str| ranks.iter().position(|h| h.id == id).unwrap();
        assert!(pos("a.py#f") < pos("d.py#h"));
        assert_eq!(ranks, g.personalized_pagerank(0.85, 30));
    }

    #[test]
    fn the_walk_stops_growing_at_max_nodes() {
        let walk = GraphWalk { breadth: 5, decay: 0.5, max_nodes: 3 };
        let g = GraphBackend::gather(&chain(), &[("a.py#f".to_owned(), 1.0)], walk).unwrap();
        assert_eq!(g.node_count(), 3);
    }

    #[test]
    fn a_full_walk_reads_no_more_neighbours_past_the_seeds() {
        struct Counting(Edges, std::cell::RefCell<Vec<String>>);
        impl NeighborSource for Counting {
            type Error = std::convert::Infallible;
            fn neighbors(&self, id: &str) -> Result<Vec<Neighbor>, Self::Error> {
                self.1.borrow_mut().push(id.to_owned());
                self.0.neighbors(id)
            }
        }
        // a.py#f's neighbours fill the walk (a.py, b.py#g): neither is read.
        let full = Counting(chain(), Default::default());
        let walk = GraphWalk { breadth: 5, decay: 0.5, max_nodes: 3 };
        GraphBackend::gather(&full, &[("a.py#f".to_owned(), 1.0)], walk).unwrap();
        assert_eq!(*full.1.borrow(), ["a.py#f"]);
        // With room, they are.
        let roomy = Counting(chain(), Default::default());
        let walk = GraphWalk { breadth: 2, decay: 0.5, max_nodes: 100 };
        GraphBackend::gather(&roomy, &[("a.py#f".to_owned(), 1.0)], walk).unwrap();
        assert_eq!(*roomy.1.borrow(), ["a.py#f", "a.py", "b.py#g"]);
    }
}
