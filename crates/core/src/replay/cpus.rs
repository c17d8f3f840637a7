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
        // The recorded affinity was the recorded machine's.
        m.cpu_list.clear();
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
    fn ranks_bound_to_distinct_cores_do_not_share_them() {
        let bound = |rank: i32, list: &str, cpus: u32| RankMeta {
            cpu_list: list.into(),
            ..meta(rank, "x", cpus)
        };
        let shared = |m: &[RankMeta]| -> Vec<(usize, u32)> {
            crate::trace::oversubscribed(m.iter())
                .into_iter()
                .map(|(_, c)| (c.ranks, c.cpus))
                .collect()
        };
        // Four ranks each bound to its own core (`--bind-to core`, Slurm): each may use one
        // CPU, none shares it.
        let own: Vec<RankMeta> = (0..4).map(|r| bound(r, &r.to_string(), 1)).collect();
        assert_eq!(shared(&own), []);
        assert!(shared_cpus(own.iter()).iter().all(Option::is_none));
        // Two ranks bound to one core share it.
        assert_eq!(shared(&[bound(0, "0", 1), bound(1, "0", 1)]), [(2, 1)]);
        // Four ranks free on two CPUs (the emulated cluster) share them.
        let free: Vec<RankMeta> = (0..4).map(|r| bound(r, "0-1", 2)).collect();
        assert_eq!(shared(&free), [(4, 2)]);
        // A cgroup's quota of 2 CPUs over an affinity of 8: the quota counts.
        let quota: Vec<RankMeta> = (0..4).map(|r| bound(r, "0-7", 2)).collect();
        assert_eq!(shared(&quota), [(4, 2)]);
        // Bound by pairs to cores 0 and 1: four ranks on two CPUs.
        let pairs: Vec<RankMeta> = (0..4).map(|r| bound(r, &(r % 2).to_string(), 1)).collect();
        assert_eq!(shared(&pairs), [(4, 2)]);
        // A rank without a list (an older recording): the most any rank saw, as before.
        let mut old = own.clone();
        old[3].cpu_list.clear();
        assert_eq!(shared(&old), [(4, 1)]);
        // A what-if machine of 2 CPUs per node forgets the recorded affinities.
        let mut placed = own.clone();
        let p = Placement::from_names(&vec!["n".to_string(); 4]);
        place_on_nodes(&mut placed, &p, 2);
        assert!(placed.iter().all(|m| m.cpu_list.is_empty() && m.cpus == 2));
        assert_eq!(shared(&placed), [(4, 2)]);
    }

    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        use crate::trace::{format_cpu_list, parse_cpu_list};
        let l = parse_cpu_list("0-3,8,10-11").unwrap();
        assert_eq!(l, [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(format_cpu_list(&l), "0-3,8,10-11");
        assert_eq!(parse_cpu_list(" 5 ").unwrap(), [5]);
        assert_eq!(format_cpu_list(&parse_cpu_list("1,1,0").unwrap()), "0-1");
        for bad in ["", "a", "3-1", "1-", "65536", "0-70000", "1,,2"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad:?}");
        }
        assert_eq!(format_cpu_list(&[]), "");
        // This thread's own list (Linux): at least one CPU.
        let mine = crate::trace::read_cpu_list();
        if std::path::Path::new("/proc/thread-self/status").exists() {
            assert!(!parse_cpu_list(&mine).unwrap().is_empty(), "{mine:?}");
        }
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
