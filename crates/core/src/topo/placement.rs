//! Rank → node placement of a recorded run.

use crate::trace::RunTrace;
use std::collections::BTreeMap;

/// Which node each rank ran on. Node ids are dense, in order of first appearance by rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// Node id of each WORLD rank (index = rank).
    pub node_of_rank: Vec<u32>,
    /// Node names by id.
    pub names: Vec<String>,
}

impl Placement {
    /// Builds the placement from the ranks' metadata. A rank without metadata gets a node
    /// of its own (`?rank`), so it is never mistaken for a neighbour.
    pub fn from_run(run: &RunTrace) -> Placement {
        let size = run
            .world_size
            .max(run.ranks.iter().map(|r| r.meta.rank + 1).max().unwrap_or(0))
            .max(0) as usize;
        let mut by_rank: Vec<Option<&str>> = vec![None; size];
        for r in &run.ranks {
            if r.meta.rank >= 0 && (r.meta.rank as usize) < size {
                by_rank[r.meta.rank as usize] = Some(&r.meta.node);
            }
        }
        let names: Vec<String> = by_rank
            .iter()
            .enumerate()
            .map(|(i, n)| n.map(str::to_string).unwrap_or_else(|| format!("?{i}")))
            .collect();
        Placement::from_names(&names)
    }

    /// Builds the placement from one node name per rank.
    pub fn from_names(names: &[String]) -> Placement {
        let mut ids: BTreeMap<&str, u32> = BTreeMap::new();
        let mut order = Vec::new();
        let node_of_rank = names
            .iter()
            .map(|n| {
                *ids.entry(n.as_str()).or_insert_with(|| {
                    order.push(n.clone());
                    order.len() as u32 - 1
                })
            })
            .collect();
        Placement {
            node_of_rank,
            names: order,
        }
    }

    /// Node of `rank`, if the rank is in the run.
    pub fn node(&self, rank: i32) -> Option<u32> {
        if rank < 0 {
            None
        } else {
            self.node_of_rank.get(rank as usize).copied()
        }
    }

    /// The most ranks on one node (0 without ranks).
    pub fn most_per_node(&self) -> usize {
        let mut per = vec![0usize; self.nodes()];
        for &n in &self.node_of_rank {
            if let Some(c) = per.get_mut(n as usize) {
                *c += 1;
            }
        }
        per.into_iter().max().unwrap_or(0)
    }

    /// The launch's shape a profile's latency as launched is found by: ranks, and the
    /// most on one node.
    fn launch(&self) -> (u64, u64) {
        (self.node_of_rank.len() as u64, self.most_per_node() as u64)
    }

    /// The profile a run so placed is predicted with ([`Profile::for_launch`]).
    pub fn profile<'p>(
        &self,
        profile: &'p crate::profile::Profile,
    ) -> std::borrow::Cow<'p, crate::profile::Profile> {
        let (procs, per_node) = self.launch();
        profile.for_launch(procs, per_node)
    }

    /// What a reader should know of how `profile` fits a run so placed
    /// ([`Profile::launch_notes`]).
    pub fn launch_notes(&self, profile: &crate::profile::Profile) -> Vec<String> {
        let (procs, per_node) = self.launch();
        profile.launch_notes(procs, per_node)
    }

    /// Number of distinct nodes.
    pub fn nodes(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_ids_in_rank_order() {
        let p = Placement::from_names(&["b".into(), "a".into(), "b".into(), "c".into()]);
        assert_eq!(p.node_of_rank, vec![0, 1, 0, 2]);
        assert_eq!(p.names, vec!["b", "a", "c"]);
        assert_eq!(p.node(2), Some(0));
        assert_eq!(p.node(-1), None);
        assert_eq!(p.node(9), None);
        assert_eq!(p.nodes(), 3);
    }
}
