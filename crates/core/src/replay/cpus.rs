//! Ranks that outnumber the CPUs of the machine they share (an emulated cluster on one
//! host, a node run with more ranks than cores): when a rank whose MPI call could end gets
//! a CPU to notice it.
//!
//! A rank blocked in MPI polls, yielding the CPU between polls; a rank computing keeps its
//! CPU until it enters MPI or the kernel's time slice ends. So when the message (or the
//! collective's last member) a blocked rank waits for comes while every CPU of its machine
//! runs a rank that computes, the call ends only once one of those CPUs frees: when the
//! first of those ranks enters MPI, and no later than a time slice. Measured on GROMACS at 4
//! ranks on 2 CPUs (docs/accuracy.md, twenty-first session): its small `MPI_Sendrecv`s took
//! 13 µs (median, waits for the partner taken out) while no other rank computed, 92 µs
//! with two and 302 µs with three, where the replay predicted 9-21 µs for each.

use crate::topo::placement::Placement;
use crate::trace::RankMeta;

/// Where a rank runs, for the replay: the machine it shares with more ranks than it has
/// CPUs, and those CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedCpus {
    /// The machine, numbered among the oversubscribed ones of the run.
    pub machine: u32,
    /// CPUs its ranks can run on (the most any of them saw).
    pub cpus: u32,
    /// The longest a rank that computes keeps a CPU from one that waits for it (seconds).
    pub slice: f64,
}

/// Linux's default time slice on a machine of `cpus` CPUs: 0.75 ms times 1 + log2 of the
/// CPUs, up to 8 (the scheduler's `base_slice_ns` with its default logarithmic scaling:
/// 1.5 ms on 2 CPUs, 3 ms from 8).
pub fn time_slice(cpus: u32) -> f64 {
    let n = cpus.clamp(1, 8);
    0.75e-3 * f64::from(1 + n.ilog2())
}

/// By WORLD rank: the machine it shared with more ranks than that machine's CPUs (None:
/// it did not, or its metadata does not say: older spools, no boot id), as
/// [`crate::trace::oversubscribed`] finds them.
pub fn shared_cpus<'a>(metas: impl Iterator<Item = &'a RankMeta>) -> Vec<Option<SharedCpus>> {
    let metas: Vec<&RankMeta> = metas.collect();
    let machines = crate::trace::oversubscribed(metas.iter().copied());
    let mut by_rank = Vec::new();
    for m in &metas {
        let Ok(r) = usize::try_from(m.rank) else {
            continue;
        };
        let Some(k) = machines.iter().position(|x| x.0 == m.boot_id) else {
            continue;
        };
        if by_rank.len() <= r {
            by_rank.resize(r + 1, None);
        }
        let c = &machines[k].1;
        by_rank[r] = Some(SharedCpus {
            machine: k as u32,
            cpus: c.cpus,
            slice: c.time_slice_s,
        });
    }
    by_rank
}

/// The ranks' metadata as if each node of `placement` were a machine of `cpus` CPUs (a
/// what-if replay's `--cpus-per-node`): [`shared_cpus`] then finds the nodes whose ranks
/// outnumber them, in place of the machines the run was recorded on.
pub fn place_on_nodes(metas: &mut [RankMeta], placement: &Placement, cpus: u32) {
    for m in metas {
        let node = placement.node(m.rank);
        m.boot_id = node.map_or_else(String::new, |n| format!("replayed node {n}"));
        m.cpus = if node.is_some() { cpus } else { 0 };
    }
}

/// How long a rank whose call could end at some instant waits for a CPU: `computing` holds
/// how long each other rank of its machine that computes at that instant goes on computing
/// (its next call's start less the instant). While fewer of them compute than the machine
/// has CPUs, a CPU is free: no wait. Otherwise the rank gets the CPU of the first that
/// enters MPI beyond the CPUs it leaves busy, or at the end of a time slice. Reorders
/// `computing`.
pub fn cpu_wait(computing: &mut [f64], cpus: u32, slice: f64) -> f64 {
    let c = cpus.max(1) as usize;
    if computing.len() < c {
        return 0.0;
    }
    // With k computing on c CPUs, k - c + 1 of them must stop before a CPU is free.
    let k = computing.len() - c;
    let (_, nth, _) = computing.select_nth_unstable_by(k, f64::total_cmp);
    nth.max(0.0).min(slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(rank: i32, boot: &str, cpus: u32) -> RankMeta {
        RankMeta {
            rank,
            boot_id: boot.into(),
            cpus,
            ..Default::default()
        }
    }

    #[test]
    fn the_time_slice_grows_with_the_log_of_the_cpus() {
        for (cpus, ms) in [
            (1, 0.75),
            (2, 1.5),
            (3, 1.5),
            (4, 2.25),
            (8, 3.0),
            (64, 3.0),
        ] {
            let got = time_slice(cpus);
            assert!((got - ms * 1e-3).abs() < 1e-12, "{cpus} CPUs: {got}");
        }
    }

    #[test]
    fn only_machines_with_more_ranks_than_cpus_are_shared() {
        // Machine x: 4 ranks on 2 CPUs; y: 2 ranks on 4 CPUs; rank 6 says nothing.
        let m = [
            meta(0, "x", 2),
            meta(1, "x", 2),
            meta(2, "y", 4),
            meta(3, "x", 2),
            meta(4, "x", 1),
            meta(5, "y", 4),
            meta(6, "", 0),
        ];
        let s = shared_cpus(m.iter());
        let x = Some(SharedCpus {
            machine: 0,
            cpus: 2,
            slice: 1.5e-3,
        });
        assert_eq!(s, vec![x, x, None, x, x]);
        // Two ranks on two CPUs: nothing shared.
        assert!(
            shared_cpus([meta(0, "x", 2), meta(1, "x", 2)].iter())
                .iter()
                .all(Option::is_none)
        );
    }

    #[test]
    fn a_free_cpu_means_no_wait_and_a_busy_one_the_first_to_stop() {
        // Fewer computing than CPUs: no wait.
        assert_eq!(cpu_wait(&mut [5e-3], 2, 1.5e-3), 0.0);
        assert_eq!(cpu_wait(&mut [], 1, 1.5e-3), 0.0);
        // Two computing on 2 CPUs: the first to stop frees one.
        assert_eq!(cpu_wait(&mut [0.4e-3, 0.2e-3], 2, 1.5e-3), 0.2e-3);
        // Three on 2 CPUs: two must stop.
        assert_eq!(cpu_wait(&mut [0.9e-3, 0.1e-3, 0.3e-3], 2, 1.5e-3), 0.3e-3);
        // Long compute: the time slice.
        assert_eq!(cpu_wait(&mut [4e-3, 9e-3], 2, 1.5e-3), 1.5e-3);
        assert_eq!(cpu_wait(&mut [4e-3], 1, 0.75e-3), 0.75e-3);
    }
}
