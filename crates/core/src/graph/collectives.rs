//! The messages a collective on MPI_COMM_WORLD is assumed to send, per rank. PMPI sees
//! only the call, so the graph uses the algorithm Open MPI 4.1's tuned component uses at
//! the sizes this project runs (documented in docs/engine.md); every message of a rank's
//! call is taken as in flight from the start of that rank's call. A call whose
//! per-destination bytes were recorded (`trace::arcs`: the v/w and neighbourhood ones) is
//! not spread: `graph::build` takes its recorded arcs.
//!
//! | call | messages sent by rank r (n ranks, m bytes per block) |
//! |---|---|
//! | Alltoall | m to every other rank (linear / pairwise exchange) |
//! | Alltoallv, Alltoallw | the rank's send total spread evenly over the other ranks |
//! | Bcast | m to its children in the binomial tree rooted at the root |
//! | Scatter(v) | root: m to every other rank (linear) |
//! | Gather(v) | every other rank: its block to the root (linear) |
//! | Reduce | m to its parent in the binomial tree |
//! | Allreduce | m to each recursive-doubling partner r XOR 2^k |
//! | Allgather(v) | the rank's block to each other rank |
//! | Barrier | none |

use crate::trace::{CallKind, Record};

/// Children of virtual rank `v` in a binomial tree of `n` (virtual root 0).
pub fn binomial_children(v: u32, n: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut mask = 1u32;
    // v's children are v + 2^k for 2^k greater than v's lowest set bit position range.
    while mask < n {
        if v & mask != 0 {
            break;
        }
        if v + mask < n {
            out.push(v + mask);
        }
        mask <<= 1;
    }
    out
}

/// Parent of virtual rank `v` (> 0) in a binomial tree.
pub fn binomial_parent(v: u32) -> u32 {
    v & (v - 1)
}

/// Messages `(destination WORLD rank, bytes)` that WORLD rank `me` sends in collective
/// `kind` on a communicator whose members are `members` (WORLD ranks by local rank), from
/// its record (whose root is a WORLD rank).
pub fn messages_in(kind: CallKind, me: i32, members: &[i32], r: &Record) -> Vec<(i32, u64)> {
    let Some(me_local) = members.iter().position(|&w| w == me) else {
        return Vec::new();
    };
    // A root outside the members (or none) leaves the rooted algorithms without messages.
    let root_local = members
        .iter()
        .position(|&w| r.root >= 0 && w == r.root)
        .map_or(-1, |x| x as i32);
    let local = Record {
        root: root_local,
        ..*r
    };
    messages(kind, me_local as i32, members.len() as u32, &local)
        .into_iter()
        .filter_map(|(q, b)| members.get(q as usize).map(|&w| (w, b)))
        .collect()
}

/// Messages `(destination rank, bytes)` that rank `me` sends in collective `kind` among
/// ranks `0..n`, from its record (root among `0..n` too).
pub fn messages(kind: CallKind, me: i32, n: u32, r: &Record) -> Vec<(i32, u64)> {
    if n < 2 || me < 0 {
        return Vec::new();
    }
    let me_u = me as u32;
    let others = || (0..n as i32).filter(move |&q| q != me);
    let root = r.root;
    let virt = |x: u32| (x + n - root.max(0) as u32) % n;
    let real = |v: u32| ((v + root.max(0) as u32) % n) as i32;
    match kind {
        CallKind::Alltoall => {
            let m = r.bytes_send / n as u64;
            if m == 0 {
                Vec::new()
            } else {
                others().map(|q| (q, m)).collect()
            }
        }
        CallKind::Alltoallv | CallKind::Alltoallw | CallKind::Allgatherv => {
            let m = if kind != CallKind::Allgatherv {
                r.bytes_send / (n as u64 - 1)
            } else {
                r.bytes_send
            };
            if m == 0 {
                Vec::new()
            } else {
                others().map(|q| (q, m)).collect()
            }
        }
        CallKind::Allgather => {
            if r.bytes_send == 0 {
                Vec::new()
            } else {
                others().map(|q| (q, r.bytes_send)).collect()
            }
        }
        CallKind::Bcast if root >= 0 => {
            let m = r.bytes_send.max(r.bytes_recv);
            if m == 0 {
                return Vec::new();
            }
            binomial_children(virt(me_u), n)
                .into_iter()
                .map(|c| (real(c), m))
                .collect()
        }
        CallKind::Scatter | CallKind::Scatterv if root == me => {
            let m = r.bytes_send / n as u64;
            if m == 0 {
                Vec::new()
            } else {
                others().map(|q| (q, m)).collect()
            }
        }
        CallKind::Gather | CallKind::Gatherv if root >= 0 && root != me && r.bytes_send > 0 => {
            vec![(root, r.bytes_send)]
        }
        CallKind::Reduce if root >= 0 && root != me && r.bytes_send > 0 => {
            vec![(real(binomial_parent(virt(me_u))), r.bytes_send)]
        }
        CallKind::Allreduce if r.bytes_send > 0 => {
            let mut out = Vec::new();
            let mut k = 1u32;
            while k < n {
                let q = me_u ^ k;
                if q < n {
                    out.push((q as i32, r.bytes_send));
                }
                k <<= 1;
            }
            out
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tree_of_8() {
        assert_eq!(binomial_children(0, 8), vec![1, 2, 4]);
        assert_eq!(binomial_children(2, 8), vec![3]);
        assert_eq!(binomial_children(4, 8), vec![5, 6]);
        assert_eq!(binomial_children(7, 8), Vec::<u32>::new());
        assert_eq!(binomial_children(0, 5), vec![1, 2, 4]);
        assert_eq!(binomial_parent(6), 4);
        assert_eq!(binomial_parent(5), 4);
        assert_eq!(binomial_parent(1), 0);
        // Every non-root node has exactly one parent listing it as a child.
        for n in 2..20u32 {
            for v in 1..n {
                assert!(
                    binomial_children(binomial_parent(v), n).contains(&v),
                    "n={n} v={v}"
                );
            }
        }
    }

    #[test]
    fn sub_communicator_messages_map_to_world_ranks() {
        // Members WORLD 6, 2, 4 (local 0, 1, 2); bcast from WORLD 2 (local 1): local 1 sends
        // to local 2 and 0 = WORLD 4 and 6.
        let b = Record {
            root: 2,
            bytes_send: 64,
            ..Default::default()
        };
        assert_eq!(
            messages_in(CallKind::Bcast, 2, &[6, 2, 4], &b),
            vec![(4, 64), (6, 64)]
        );
        let a = Record {
            root: -1,
            bytes_send: 300,
            ..Default::default()
        };
        assert_eq!(
            messages_in(CallKind::Alltoall, 4, &[6, 2, 4], &a),
            vec![(6, 100), (2, 100)]
        );
        assert!(messages_in(CallKind::Alltoall, 5, &[6, 2, 4], &a).is_empty());
    }

    #[test]
    fn alltoall_and_bcast_messages() {
        let r = Record {
            bytes_send: 4000,
            bytes_recv: 4000,
            ..Default::default()
        };
        assert_eq!(
            messages(CallKind::Alltoall, 1, 4, &r),
            vec![(0, 1000), (2, 1000), (3, 1000)]
        );
        // Bcast rooted at 2 on 4 ranks: virtual 0 = rank 2 sends to virtual 1, 2 = ranks 3, 0.
        let b = Record {
            root: 2,
            bytes_send: 256,
            ..Default::default()
        };
        assert_eq!(
            messages(CallKind::Bcast, 2, 4, &b),
            vec![(3, 256), (0, 256)]
        );
        let leaf = Record {
            root: 2,
            bytes_recv: 256,
            ..Default::default()
        };
        assert_eq!(messages(CallKind::Bcast, 3, 4, &leaf), vec![]);
        assert_eq!(messages(CallKind::Bcast, 0, 4, &leaf), vec![(1, 256)]);
        let sc = Record {
            root: 0,
            bytes_send: 128,
            ..Default::default()
        };
        assert_eq!(
            messages(CallKind::Scatter, 0, 4, &sc),
            vec![(1, 32), (2, 32), (3, 32)]
        );
        assert_eq!(
            messages(
                CallKind::Scatter,
                1,
                4,
                &Record {
                    root: 0,
                    bytes_recv: 32,
                    ..Default::default()
                }
            ),
            vec![]
        );
        let ar = Record {
            bytes_send: 8,
            bytes_recv: 8,
            ..Default::default()
        };
        assert_eq!(
            messages(CallKind::Allreduce, 1, 4, &ar),
            vec![(0, 8), (3, 8)]
        );
    }
}
