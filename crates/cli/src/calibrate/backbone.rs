//! `calibrate --clusters FILE`: measures the wide-area link between two clusters (the
//! what-if replay's `wan`): its α and β by a ping-pong across it, and how messages crossing
//! it at once slow each other (k = 1, 2, ... messages one way and each way at once, their
//! last arrival over a lone message's). Direct all-to-all sends n1·n2 blocks across at
//! once, Local Group n1 larger ones: on a shaped link with a short queue their many flows
//! lose packets and wait for retransmissions, which a fair share of the link's bandwidth
//! does not say (measured on the emulated testbed: direct 50 % above the link's bound).

use std::path::Path;

use serde_json::{Value, json};

use super::bench::{self, Ctx};
use super::mpi::Mpi;
use super::run::{self, Options, Progress};

/// Crossing messages measured at once, at most (each way).
const MAX_FLOWS: usize = 8;

/// The two clusters of the file, as the job's node ids, and the file's JSON.
#[derive(Debug)]
pub struct Split {
    pub names: [String; 2],
    pub nodes: [Vec<usize>; 2],
    pub file: Value,
}

/// Reads the clusters of `text` (`{"clusters": {"A": [nodes], "B": [nodes]}, ...}`)
/// against the job's `nodes`: exactly two clusters, every node of the job in one of them,
/// none named that the job does not have.
pub fn split(text: &str, nodes: &[String]) -> Result<Split, String> {
    let file: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(cl) = file.get("clusters").and_then(Value::as_object) else {
        return Err(
            r#"no "clusters" object (e.g. {"clusters": {"A": ["n0", "n1"], "B": ["n2", "n3"]}})"#
                .into(),
        );
    };
    if cl.len() != 2 {
        return Err(format!(
            "calibrate measures the link between two clusters; the file names {}",
            cl.len()
        ));
    }
    let mut of: Vec<Option<usize>> = vec![None; nodes.len()];
    let mut names: Vec<String> = Vec::new();
    let mut sets: Vec<Vec<usize>> = Vec::new();
    for (ci, (name, list)) in cl.iter().enumerate() {
        let Some(list) = list.as_array() else {
            return Err(format!("cluster {name}: give a list of node names"));
        };
        let mut set = Vec::new();
        for n in list {
            let Some(n) = n.as_str() else {
                return Err(format!("cluster {name}: {n} is not a node name"));
            };
            let Some(id) = nodes.iter().position(|x| x == n) else {
                return Err(format!(
                    "cluster {name}: node {n:?} has no rank in this job (nodes: {})",
                    nodes.join(", ")
                ));
            };
            if of[id].is_some() {
                return Err(format!("node {n:?} is in two clusters"));
            }
            of[id] = Some(ci);
            set.push(id);
        }
        if set.is_empty() {
            return Err(format!("cluster {name} has no node"));
        }
        names.push(name.clone());
        sets.push(set);
    }
    let missing: Vec<&str> = of
        .iter()
        .zip(nodes)
        .filter(|(c, _)| c.is_none())
        .map(|(_, n)| n.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!("node(s) {} in no cluster", missing.join(", ")));
    }
    let (b, a) = (
        sets.pop().unwrap_or_default(),
        sets.pop().unwrap_or_default(),
    );
    let (nb, na) = (
        names.pop().unwrap_or_default(),
        names.pop().unwrap_or_default(),
    );
    Ok(Split {
        names: [na, nb],
        nodes: [a, b],
        file,
    })
}

/// Every (a, b) pair of nodes across, ordered so that the first k pairs spread over as
/// many sources and destinations as k allows (pair r: a = r mod n_a, b shifted by a).
pub fn crossing_pairs(a: &[usize], b: &[usize]) -> Vec<(usize, usize)> {
    let (na, nb) = (a.len(), b.len());
    (0..na * nb)
        .map(|r| {
            let i = r % na;
            (a[i], b[(r / na + i) % nb])
        })
        .collect()
}

/// Penalties from the repetitions of each k's scheme: the mean over repetitions of the
/// last arrival, over `t_ref`. Stalls are kept: they are what crossing at once costs.
/// A penalty below the previous k's is raised to it (one more message cannot make the
/// others faster; the difference is noise) and counted in the second value.
pub fn penalties(reps: &[Vec<Vec<f64>>], t_ref: f64) -> (Vec<f64>, usize) {
    let mut out: Vec<f64> = Vec::new();
    let mut raised = 0;
    for r in reps {
        let last: Vec<f64> = r
            .iter()
            .map(|arcs| arcs.iter().copied().fold(0.0, f64::max))
            .collect();
        let mut p = last.iter().sum::<f64>() / last.len().max(1) as f64 / t_ref.max(1e-12);
        if let Some(&prev) = out.last()
            && p < prev
        {
            p = prev;
            raised += 1;
        }
        out.push(p);
    }
    (out, raised)
}

/// Runs the wide-area calibration on every rank; rank 0 writes the clusters file with its
/// `wan` section. Returns the exit status.
pub fn run(opts: &Options, mpi: &Mpi, ctx: &Ctx, clusters: &Path, library: String) -> i32 {
    // Every rank reads the file; all agree on whether it is usable before any measurement.
    let read = std::fs::read_to_string(clusters)
        .map_err(|e| format!("cannot read {}: {e}", clusters.display()))
        .and_then(|t| split(&t, &ctx.nodes).map_err(|e| format!("{}: {e}", clusters.display())));
    let mut bad = [f64::from(u8::from(read.is_err()))];
    mpi.allreduce_max(&mut bad, mpi.world);
    let sp = match read {
        Ok(s) if bad[0] == 0.0 => s,
        Ok(_) => return crate::cli::EXIT_INPUT,
        Err(e) => {
            eprintln!("pmpi-predict: calibrate --clusters {e}");
            return crate::cli::EXIT_INPUT;
        }
    };
    let q = opts.quick;
    let mut pg = Progress::new(mpi.rank == 0, 3);
    if mpi.rank == 0 {
        eprintln!(
            "calibrate: the wide-area link between {} ({}) and {} ({}){}",
            sp.names[0],
            sp.nodes[0]
                .iter()
                .map(|&i| ctx.nodes[i].as_str())
                .collect::<Vec<_>>()
                .join(", "),
            sp.names[1],
            sp.nodes[1]
                .iter()
                .map(|&i| ctx.nodes[i].as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if q { "  (--quick)" } else { "" }
        );
    }
    pg.begin("warm-up (connections between node leaders)");
    ctx.warm_up();
    pg.end("");

    let (na, nb) = (sp.nodes[0][0], sp.nodes[1][0]);
    let (a, b) = (ctx.leaders[na], ctx.leaders[nb]);
    pg.begin(&format!(
        "wide-area ping-pong {} <-> {}",
        ctx.nodes[na], ctx.nodes[nb]
    ));
    let grid = if q {
        vec![0, 4096, 65536, 524288]
    } else {
        vec![0, 1024, 16384, 65536, 262144, 1048576]
    };
    let reps: Vec<u32> = grid
        .iter()
        .map(|&s| if s >= 262144 { 3 } else { 6 })
        .collect();
    let (t, fitted, attempts) = run::ping_pong_fitted(ctx, a, b, &grid, &reps);
    let h = match fitted {
        Ok(f) => f.hockney,
        Err(e) => {
            pg.end(&format!("fit failed: {e}"));
            if mpi.rank == 0 {
                eprintln!(
                    "pmpi-predict: the wide-area ping-pong gave no usable alpha and beta ({e}); nothing written"
                );
            }
            return crate::cli::EXIT_INTERNAL;
        }
    };
    pg.end(&format!(
        "alpha = {:.1} us, beta = {:.3e} s/B ({:.1} Mbit/s)",
        h.alpha * 1e6,
        h.beta,
        8e-6 / h.beta.max(1e-300)
    ));

    let bytes = opts
        .penalty_bytes
        .unwrap_or_else(|| run::penalty_bytes(h.beta));
    let pairs = crossing_pairs(&sp.nodes[0], &sp.nodes[1]);
    let kmax = pairs.len().min(MAX_FLOWS);
    let nreps = if q { 4 } else { 8 };
    pg.begin(&format!(
        "crossing messages (1-{kmax} at once, one way and each way, {} KiB, {nreps} reps)",
        bytes / 1024
    ));
    let mut one: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut both: Vec<Vec<Vec<f64>>> = Vec::new();
    for k in 1..=kmax {
        let arcs: Vec<(usize, usize)> = pairs[..k].to_vec();
        // The lone message is the denominator: measured twice as often.
        one.push(bench::scheme(
            ctx,
            &arcs,
            bytes,
            if k == 1 { 2 * nreps } else { nreps },
        ));
        let mut two = arcs.clone();
        two.extend(arcs.iter().map(|&(s, d)| (d, s)));
        both.push(bench::scheme(ctx, &two, bytes, nreps));
    }
    let t_ref = bench::median(&mut one[0].iter().map(|r| r[0]).collect::<Vec<_>>());
    let (p_one, raised_one) = penalties(&one, t_ref);
    let (p_both, raised_both) = penalties(&both, t_ref);
    let show = |p: &[f64]| {
        p.iter()
            .enumerate()
            .map(|(i, v)| format!("{} {v:.2}", i + 1))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let vs_pingpong = t_ref / h.time_bytes(bytes as f64).max(1e-12);
    pg.end(&format!(
        "lone message {:.3} s ({vs_pingpong:.2} x the ping-pong's); penalty by messages at once, one way: {}; each way: {}",
        t_ref,
        show(&p_one),
        show(&p_both)
    ));
    if mpi.rank != 0 {
        return 0;
    }
    let mut notes = Vec::new();
    if raised_one + raised_both > 0 {
        notes.push(format!(
            "{} penalty(ies) came out below the one for one message fewer and were raised to it (noise between repetitions)",
            raised_one + raised_both
        ));
    }
    if !(0.8..=1.25).contains(&vs_pingpong) {
        notes.push(format!(
            "the lone {} KiB message took {vs_pingpong:.2} x the ping-pong's alpha + beta*m: the link was not steady between the two phases",
            bytes / 1024
        ));
    }
    for n in &notes {
        eprintln!("calibrate: note: {n}");
    }
    let mut out = sp.file;
    out["wan"] = json!({
        "alpha": h.alpha,
        "beta": h.beta,
        "crossing": {"bytes": bytes, "one_way": p_one, "both_ways": p_both},
    });
    out["calibration"] = json!({
        "date": run::utc_now(),
        "mpi_library": library,
        "nodes": ctx.nodes,
        "pingpong": {"ranks": [a, b], "bytes": grid, "one_way_s": t, "attempts": attempts},
        "crossing": {
            "pairs": pairs[..kmax].iter().map(|&(s, d)| [ctx.nodes[s].clone(), ctx.nodes[d].clone()]).collect::<Vec<_>>(),
            "t_ref_s": t_ref,
            "one_way_reps_s": one,
            "both_ways_reps_s": both,
        },
        "notes": notes,
    });
    let text = serde_json::to_string_pretty(&out).unwrap_or_default() + "\n";
    let tmp = opts.output.with_extension("json.tmp");
    if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &opts.output)) {
        eprintln!("pmpi-predict: cannot write {}: {e}", opts.output.display());
        return crate::cli::EXIT_IO;
    }
    eprintln!(
        "calibrate: wrote {} in {:.1} s (wall time)",
        opts.output.display(),
        pg.elapsed()
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("h{i}")).collect()
    }

    #[test]
    fn clusters_are_read_against_the_jobs_nodes() {
        let s = split(
            r#"{"clusters": {"A": ["h0", "h1"], "B": ["h2", "h3"]}, "wan": {"alpha": 1, "beta": 1}}"#,
            &names(4),
        )
        .unwrap();
        assert_eq!(s.names, ["A".to_string(), "B".to_string()]);
        assert_eq!(s.nodes, [vec![0, 1], vec![2, 3]]);
        for (text, why) in [
            (
                r#"{"clusters": {"A": ["h0"], "B": ["h1"], "C": ["h2", "h3"]}}"#,
                "names 3",
            ),
            (
                r#"{"clusters": {"A": ["h0", "h1"], "B": ["h2"]}}"#,
                "h3 in no cluster",
            ),
            (
                r#"{"clusters": {"A": ["h0", "h1"], "B": ["h2", "h9", "h3"]}}"#,
                "\"h9\" has no rank",
            ),
            (
                r#"{"clusters": {"A": ["h0", "h1"], "B": ["h1", "h2", "h3"]}}"#,
                "in two clusters",
            ),
            (r#"{"nodes": []}"#, "no \"clusters\""),
            ("{", "not JSON"),
        ] {
            let e = split(text, &names(4)).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn the_first_pairs_spread_over_sources_and_destinations() {
        let p = crossing_pairs(&[0, 1], &[2, 3]);
        assert_eq!(p, vec![(0, 2), (1, 3), (0, 3), (1, 2)]);
        let p = crossing_pairs(&[0], &[1, 2, 3]);
        assert_eq!(p, vec![(0, 1), (0, 2), (0, 3)]);
        let mut all = crossing_pairs(&[0, 1, 2], &[3, 4]);
        assert_eq!(&all[..2], &[(0, 3), (1, 4)]);
        all.sort_unstable();
        assert_eq!(all, vec![(0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4)]);
    }

    #[test]
    fn penalties_are_mean_last_arrivals_and_never_fall_with_more_messages() {
        let reps = vec![
            vec![vec![1.0], vec![1.0]],
            // Two messages: last arrivals 2.5 and 3.5 (a stall kept): mean 3.
            vec![vec![2.0, 2.5], vec![3.5, 1.0]],
            // Three: 2.8, below two's: raised to 3.
            vec![vec![2.8, 2.0, 1.0]],
        ];
        let (p, raised) = penalties(&reps, 1.0);
        assert_eq!(p, vec![1.0, 3.0, 3.0]);
        assert_eq!(raised, 1);
    }
}
