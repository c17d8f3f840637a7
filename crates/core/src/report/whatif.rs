//! The report of a what-if replay: `replay.json` and its one-screen comparison with the
//! recorded run. Pure: takes the run, the replay under the recorded conditions and the
//! replay under the new ones, or their rows one at a time ([`WhatIfAgg`], the streamed
//! replay's way).

use super::callagg::CallFigures;
use super::hotspots::{self, Hotspots};
use crate::predict::{CallPrediction, RunPrediction};
use crate::topo::placement::Placement;
use crate::trace::{self, FLAG_NONBLOCKING, RankMeta, RunTrace};
use serde::Serialize;
use std::collections::BTreeMap;

/// MPI time of a set of calls split into wait, transfer and contention, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Split {
    pub mpi_s: f64,
    pub wait_s: f64,
    pub transfer_s: f64,
    pub contention_s: f64,
}

impl Split {
    fn add(&mut self, o: &Split) {
        self.mpi_s += o.mpi_s;
        self.wait_s += o.wait_s;
        self.transfer_s += o.transfer_s;
        self.contention_s += o.contention_s;
    }
}

/// The measured and predicted split of one blocking or completion call; None for a
/// nonblocking post (its span runs to its completion call, which is counted) and for a
/// call without a prediction.
fn splits(r: &trace::Record, c: &CallPrediction) -> Option<(Split, Split)> {
    if r.flags & FLAG_NONBLOCKING != 0 {
        return None;
    }
    let p = c.predicted?;
    let m = r.duration_s();
    let mw = c.measured_wait.seconds.min(m);
    let pw = c.wait.seconds.min(p);
    let cont = c.contention.min(p - pw).max(0.0);
    Some((
        Split {
            mpi_s: m,
            wait_s: mw,
            transfer_s: m - mw,
            contention_s: 0.0,
        },
        Split {
            mpi_s: p,
            wait_s: pw,
            transfer_s: p - pw - cont,
            contention_s: cont,
        },
    ))
}

/// One rank in `replay.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RankRow {
    pub rank: i32,
    pub recorded_node: String,
    pub node: String,
    pub measured: Split,
    /// Replayed under the recorded conditions.
    pub replayed: Split,
    /// Replayed under the new conditions.
    pub predicted: Split,
}

/// One call family in `replay.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyRow {
    pub call: String,
    pub count: u64,
    pub measured: Split,
    pub predicted: Split,
}

/// Makespans, seconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Makespans {
    pub measured_s: f64,
    /// The replay under the recorded conditions: its distance to `measured_s` is the
    /// engine's own error on this run.
    pub replayed_s: f64,
    pub predicted_s: f64,
    pub predicted_free_s: f64,
}

impl Makespans {
    /// From the replay as recorded's makespan and the what-if replay's (measured,
    /// predicted, contention-free).
    pub fn new(replayed_s: f64, whatif: [f64; 3]) -> Makespans {
        let [measured_s, predicted_s, predicted_free_s] = whatif;
        Makespans {
            measured_s,
            replayed_s,
            predicted_s,
            predicted_free_s,
        }
    }
}

/// `replay.json`.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub ranks_n: usize,
    pub records: usize,
    /// The conditions, as given (placement, nodes, model, profile, clusters, all-to-all).
    pub conditions: serde_json::Value,
    pub makespan: Makespans,
    pub total: BTreeMap<&'static str, Split>,
    pub ranks: Vec<RankRow>,
    pub families: Vec<FamilyRow>,
    /// Predicted seconds other ranks wait for each rank under the new conditions.
    pub waited_for: BTreeMap<i32, f64>,
    pub hotspots: Hotspots,
}

/// Builds the report of a what-if replay of the loaded `run`: `recorded` is the replay
/// under the recorded conditions, `whatif` under the new ones, `figs` the per-call figures
/// of `whatif` (`CallAggregates::of_run`). The rows are fed in calls.csv order, as the
/// streamed replay feeds them (`report::stream::replay_streamed`), so both give the same
/// sums to the bit.
pub fn build(
    run: &RunTrace,
    recorded: &RunPrediction,
    whatif: &RunPrediction,
    figs: &CallFigures,
    conditions: serde_json::Value,
) -> WhatIf {
    let mut a = WhatIfAgg::new(run.ranks.len());
    for (_, ri, i) in super::Timeline::new(run) {
        let rk = &run.ranks[ri];
        a.add(
            ri,
            &rk.meta,
            &rk.records[i],
            &recorded.calls[ri][i],
            &whatif.calls[ri][i],
        );
    }
    let makespan = Makespans::new(
        recorded.makespan,
        [
            whatif.makespan_measured,
            whatif.makespan,
            whatif.makespan_free,
        ],
    );
    let hotspots = hotspots::compute_with(run, whatif, figs, 10);
    a.finish(run, &whatif.placement, makespan, conditions, hotspots)
}

/// replay.json's sums, fed one row at a time in calls.csv's order
/// ([`super::Timeline`]): per rank, per call family, per rank waited for.
pub struct WhatIfAgg {
    /// Measured, replayed as recorded, predicted under the new conditions; by rank index.
    ranks: Vec<[Split; 3]>,
    families: BTreeMap<String, FamilyRow>,
    waited_for: BTreeMap<i32, f64>,
    records: usize,
}

impl WhatIfAgg {
    /// An empty accumulator for a run of `ranks` ranks.
    pub fn new(ranks: usize) -> WhatIfAgg {
        WhatIfAgg {
            ranks: vec![[Split::default(); 3]; ranks],
            families: BTreeMap::new(),
            waited_for: BTreeMap::new(),
            records: 0,
        }
    }

    /// Adds record `r` of rank index `ri` (described by `meta`), predicted as `recorded`
    /// under the recorded conditions and as `whatif` under the new ones.
    pub fn add(
        &mut self,
        ri: usize,
        meta: &RankMeta,
        r: &trace::Record,
        recorded: &CallPrediction,
        whatif: &CallPrediction,
    ) {
        self.records += 1;
        if whatif.wait.seconds > 0.0 && whatif.wait.on >= 0 {
            *self.waited_for.entry(whatif.wait.on).or_default() += whatif.wait.seconds;
        }
        let (Some((m, rp)), Some((_, wp))) = (splits(r, recorded), splits(r, whatif)) else {
            return;
        };
        if ri >= self.ranks.len() {
            self.ranks.resize(ri + 1, [Split::default(); 3]);
        }
        let row = &mut self.ranks[ri];
        row[0].add(&m);
        row[1].add(&rp);
        row[2].add(&wp);
        let name = super::callagg::call_of(meta, r);
        if !self.families.contains_key(name) {
            self.families.insert(
                name.to_string(),
                FamilyRow {
                    call: name.to_string(),
                    count: 0,
                    measured: Split::default(),
                    predicted: Split::default(),
                },
            );
        }
        let f = self.families.get_mut(name).expect("inserted above");
        f.count += 1;
        f.measured.add(&m);
        f.predicted.add(&wp);
    }

    /// replay.json of the run whose ranks `run` holds (a shell will do), replayed on
    /// `placement` under the new conditions.
    pub fn finish(
        self,
        run: &RunTrace,
        placement: &Placement,
        makespan: Makespans,
        conditions: serde_json::Value,
        hotspots: Hotspots,
    ) -> WhatIf {
        let mut tot = [Split::default(); 3];
        let none = [Split::default(); 3];
        let ranks = run
            .ranks
            .iter()
            .enumerate()
            .map(|(ri, rk)| {
                let row = self.ranks.get(ri).unwrap_or(&none);
                for (t, x) in tot.iter_mut().zip(row) {
                    t.add(x);
                }
                RankRow {
                    rank: rk.meta.rank,
                    recorded_node: rk.meta.node.clone(),
                    node: placement
                        .node(rk.meta.rank)
                        .and_then(|n| placement.names.get(n as usize).cloned())
                        .unwrap_or_default(),
                    measured: row[0],
                    replayed: row[1],
                    predicted: row[2],
                }
            })
            .collect();
        let mut families: Vec<FamilyRow> = self.families.into_values().collect();
        families.sort_by(|a, b| b.predicted.mpi_s.total_cmp(&a.predicted.mpi_s));
        WhatIf {
            ranks_n: run.ranks.len(),
            records: self.records,
            conditions,
            makespan,
            total: [
                ("measured", tot[0]),
                ("replayed", tot[1]),
                ("predicted", tot[2]),
            ]
            .into_iter()
            .collect(),
            ranks,
            families,
            waited_for: self.waited_for,
            hotspots,
        }
    }
}

fn pct(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:+.1} %", (a - b) / b * 100.0)
    } else {
        "-".into()
    }
}

/// The one-screen comparison: recorded run, replay as recorded, replay under the new
/// conditions (`label` names them).
pub fn text(w: &WhatIf, label: &str) -> String {
    let mut s = String::new();
    let m = &w.makespan;
    s += &format!(
        "{} ranks, {} records; what-if: {label}\n\n",
        w.ranks_n, w.records
    );
    s += &format!(
        "{:<22}{:>14}{:>22}{:>20}\n",
        "", "recorded", "replayed as recorded", "what-if"
    );
    s += &format!(
        "{:<22}{:>12.3} s{:>20.3} s{:>18.3} s\n",
        "makespan", m.measured_s, m.replayed_s, m.predicted_s
    );
    s += &format!(
        "{:<22}{:>14}{:>22}{:>20}\n",
        "  vs recorded",
        "",
        pct(m.replayed_s, m.measured_s),
        pct(m.predicted_s, m.measured_s)
    );
    s += &format!(
        "{:<22}{:>14}{:>22}{:>20}\n",
        "  vs replayed as rec.",
        "",
        "",
        pct(m.predicted_s, m.replayed_s)
    );
    let t = |k: &str| w.total.get(k).copied().unwrap_or_default();
    let (a, b, c) = (t("measured"), t("replayed"), t("predicted"));
    for (name, f) in [
        (
            "MPI time, all ranks",
            (|x: &Split| x.mpi_s) as fn(&Split) -> f64,
        ),
        ("  wait", |x| x.wait_s),
        ("  transfer", |x| x.transfer_s),
    ] {
        s += &format!(
            "{:<22}{:>12.3} s{:>20.3} s{:>18.3} s\n",
            name,
            f(&a),
            f(&b),
            f(&c)
        );
    }
    // A measured transfer is not split: contention is the model's.
    s += &format!(
        "{:<22}{:>14}{:>20.3} s{:>18.3} s\n",
        "  contention", "-", b.contention_s, c.contention_s
    );
    s += "\nlargest call families (what-if against measured, seconds summed over ranks):\n";
    for f in w.families.iter().take(6) {
        s += &format!(
            "  {:<20}{:>9} calls{:>12.3} s{:>12.3} s  ({})\n",
            f.call,
            f.count,
            f.measured.mpi_s,
            f.predicted.mpi_s,
            pct(f.predicted.mpi_s, f.measured.mpi_s)
        );
    }
    if let Some((r, sec)) = w
        .waited_for
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .filter(|x| *x.1 > 0.0)
    {
        s += &format!("\nothers wait longest for rank {r}: {sec:.3} s (what-if)\n");
    }
    if c.contention_s <= 0.0 {
        s += "no contention predicted under the new conditions\n";
    } else if let Some(n) = w.hotspots.nodes.first() {
        s += &format!("most penalised node: {} ({})\n", n.node, n.cause.text());
    } else {
        s += "the predicted contention is inside collectives (their models, not the network)\n";
    }
    s
}
