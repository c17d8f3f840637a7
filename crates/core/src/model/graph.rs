//! The graph of concurrent inter-node communications that penalty models read.
//!
//! Nodes are plain integers (node ids, not ranks); each arc is one message in flight.
//! Arcs keep their input order: every penalty model answers one value per arc, in order.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ModelError;

/// One message in flight from node `src` to node `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
}

/// A set of concurrent inter-node communications (a directed multigraph).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommGraph {
    pub edges: Vec<Edge>,
}

impl CommGraph {
    /// Builds a graph from `(src, dst, bytes)` triples.
    pub fn from_triples(t: &[(u32, u32, u64)]) -> Self {
        CommGraph {
            edges: t
                .iter()
                .map(|&(src, dst, bytes)| Edge { src, dst, bytes })
                .collect(),
        }
    }

    /// Rejects self-loops: a message from a node to itself is intra-node traffic, which the
    /// network models must never see. The error names the arc's index.
    pub fn validate(&self) -> Result<(), ModelError> {
        for (i, e) in self.edges.iter().enumerate() {
            if e.src == e.dst {
                return Err(ModelError::SelfLoop {
                    index: i,
                    node: e.src,
                });
            }
        }
        Ok(())
    }

    /// Dense renumbering of the graph's nodes, so models can use vectors, not maps.
    pub(crate) fn dense(&self) -> Dense {
        let mut arcs = Vec::with_capacity(self.edges.len());
        let max_id = self
            .edges
            .iter()
            .map(|e| e.src.max(e.dst))
            .max()
            .unwrap_or(0) as usize;
        let nodes = if max_id < 4 * self.edges.len() + 1024 {
            // Small ids (the engine's dense node numbers): a table beats hashing.
            let mut ids = vec![usize::MAX; max_id + 1];
            let mut next = 0usize;
            let mut id = |x: u32| {
                let slot = &mut ids[x as usize];
                if *slot == usize::MAX {
                    *slot = next;
                    next += 1;
                }
                *slot
            };
            for e in &self.edges {
                let s = id(e.src);
                let d = id(e.dst);
                arcs.push((s, d));
            }
            next
        } else {
            let mut ids: HashMap<u32, usize> = HashMap::new();
            for e in &self.edges {
                let n = ids.len();
                let s = *ids.entry(e.src).or_insert(n);
                let n = ids.len();
                let d = *ids.entry(e.dst).or_insert(n);
                arcs.push((s, d));
            }
            ids.len()
        };
        let mut out_deg = vec![0usize; nodes];
        let mut in_deg = vec![0usize; nodes];
        for &(s, d) in &arcs {
            out_deg[s] += 1;
            in_deg[d] += 1;
        }
        Dense {
            nodes,
            arcs,
            out_deg,
            in_deg,
        }
    }
}

/// A graph renumbered to `0..nodes`, with degrees.
pub(crate) struct Dense {
    pub nodes: usize,
    pub arcs: Vec<(usize, usize)>,
    pub out_deg: Vec<usize>,
    pub in_deg: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_loop_names_index() {
        let g = CommGraph::from_triples(&[(0, 1, 1), (3, 3, 1)]);
        match g.validate() {
            Err(ModelError::SelfLoop { index: 1, node: 3 }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dense_degrees() {
        let g = CommGraph::from_triples(&[(10, 20, 1), (10, 30, 1), (30, 20, 1)]);
        let d = g.dense();
        assert_eq!(d.nodes, 3);
        assert_eq!(d.out_deg, vec![2, 0, 1]);
        assert_eq!(d.in_deg, vec![0, 2, 1]);
    }
}
