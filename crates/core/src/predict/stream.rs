//! The prediction of a run read in time order, in memory bounded by what is in flight:
//! the model's replay and the contention-free one side by side over one read of the run
//! ([`replay_windows`]), each record's [`CallPrediction`] handed over once both have
//! finished it (docs/engine.md, "Both replays over one read").

use super::{
    AlltoallAlgo, Assumptions, CallPrediction, CollOp, Conditions, coll_cost_of_ranks,
    penalty_model,
};
use crate::error::Error;
use crate::graph::NodePair;
use crate::model::PenaltyModel;
use crate::profile::Profile;
use crate::replay::net::{InFlight, NetSink};
use crate::replay::window::{Finished, Side, Stats, replay_windows};
use crate::replay::{P2p, Protocol};
use crate::topo::placement::Placement;
use crate::trace::order::RunOrder;
use std::cell::RefCell;

/// What a streamed prediction held: per replay (the model's, then the contention-free
/// one's where there is a model), and the most records one had finished and the other not
/// yet; and the makespans, as [`super::RunPrediction`]'s.
#[derive(Debug, Clone, Default)]
pub struct StreamStats {
    pub replays: Vec<Stats>,
    pub most_joined: usize,
    pub makespan: f64,
    pub makespan_free: f64,
    pub makespan_measured: f64,
    /// The penalty model's name ([`super::model_name`]), as [`super::RunPrediction`]'s.
    pub model: String,
}

/// The last of the finite times seen so far (0 before any), as the batch path's makespans.
fn last(sofar: &mut f64, t: f64) {
    if t.is_finite() {
        *sofar = sofar.max(t);
    }
}

/// Told of the model replay's network as a streamed prediction runs ([`NetSink`]: flows
/// added, intervals closed, each inter-node flow's owner as `rank index << 32 | record`)
/// and of each record's prediction by that replay. A record that sends an inter-node
/// message is told after every interval that names it.
pub trait StreamNet: NetSink {
    /// Record `rec` of rank index `rank`, of measured duration `measured_s`
    /// (`Record::duration_s`), predicted `c` (`c.free` not yet known).
    fn call(&mut self, rank: u32, rec: u32, measured_s: f64, c: &CallPrediction);
    /// A collective operation the model replay timed with its own model, with its node
    /// pairs, as [`super::RunPrediction`]'s `collectives` and `coll_traffic` have it, once
    /// its members' figures are made.
    fn collective(&mut self, _op: &CollOp, _pairs: &[NodePair]) {}
}

/// Counts the bytes a streamed prediction sends between nodes (as
/// [`super::RunPrediction::inter_node_bytes`]).
#[derive(Debug, Default)]
pub struct InterNodeBytes(pub u64);

impl NetSink for InterNodeBytes {
    fn added(&mut self, src: u32, dst: u32, bytes: u64) {
        if src != dst {
            self.0 += bytes;
        }
    }
    fn closed(&mut self, _start: f64, _end: f64, _flows: &[crate::replay::net::InFlight]) {}
}

impl StreamNet for InterNodeBytes {
    fn call(&mut self, _rank: u32, _rec: u32, _measured_s: f64, _c: &CallPrediction) {}
    fn collective(&mut self, _op: &CollOp, pairs: &[NodePair]) {
        self.0 += crate::graph::inter_node_bytes(pairs);
    }
}

/// Which replay finished a record first ([`Joins`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Half {
    None,
    Model,
    Free,
}

/// The records one replay finished and the other not yet, by slot ([`Finished::slot`]):
/// what the first left for the second (the model replay's figures, or the contention-free
/// duration), how many are held, and the most held at once.
#[derive(Default)]
struct Joins {
    first: Vec<Half>,
    model: Vec<CallPrediction>,
    free: Vec<f64>,
    held: usize,
    most: usize,
}

impl Joins {
    /// The contention-free duration of the record in slot `g`, if that replay came first.
    fn free_first(&mut self, g: u32) -> Option<f64> {
        let g = g as usize;
        (self.first.get(g) == Some(&Half::Free)).then(|| {
            self.first[g] = Half::None;
            self.held -= 1;
            self.free[g]
        })
    }

    /// The model replay's figures of the record in slot `g`, if it came first.
    fn model_first(&mut self, g: u32) -> Option<CallPrediction> {
        let g = g as usize;
        (self.first.get(g) == Some(&Half::Model)).then(|| {
            self.first[g] = Half::None;
            self.held -= 1;
            self.model[g]
        })
    }

    /// Keeps what replay `half`, first, left of the record in slot `g` (`put`).
    fn hold(&mut self, g: u32, half: Half, put: impl FnOnce(&mut Joins, usize)) {
        let g = g as usize;
        if self.first.len() <= g {
            self.first.resize(g + 1, Half::None);
            self.model.resize(g + 1, CallPrediction::default());
            self.free.resize(g + 1, 0.0);
        }
        self.first[g] = half;
        put(self, g);
        self.held += 1;
        self.most = self.most.max(self.held);
    }
}

/// Forwards the network's events to the shared [`StreamNet`].
struct NetOf<'s, 'n>(&'s RefCell<&'n mut dyn StreamNet>);

impl NetSink for NetOf<'_, '_> {
    fn added(&mut self, src: u32, dst: u32, bytes: u64) {
        self.0.borrow_mut().added(src, dst, bytes);
    }
    fn closed(&mut self, start: f64, end: f64, flows: &[InFlight]) {
        self.0.borrow_mut().closed(start, end, flows);
    }
}

/// Predicts the run in `dir` as [`super::predict_run_with`] does (the same
/// [`CallPrediction`] for every record, to the bit), calling `out` with (rank index,
/// record number, measured entry on rank 0's clock in ns, prediction) for each record as
/// soon as both replays have finished it.
pub fn predict_stream(
    dir: &std::path::Path,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
    out: &mut dyn FnMut(u32, u32, i64, CallPrediction),
) -> Result<StreamStats, Error> {
    predict_stream_with(dir, profile, model_override, assume, out, None)
}

/// [`predict_stream`], telling `net` (where given) of the model replay's network and
/// predictions as they are made.
pub fn predict_stream_with(
    dir: &std::path::Path,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
    out: &mut dyn FnMut(u32, u32, i64, CallPrediction),
    net: Option<&mut dyn StreamNet>,
) -> Result<StreamStats, Error> {
    let model = penalty_model(profile, model_override).map_err(Error::Input)?;
    let order = RunOrder::open(dir)?;
    // The recorded placement, from the metadata alone, and no clusters: as
    // `predict_run_with`.
    let cond = Conditions {
        placement: Placement::from_run(&order.shell()),
        clusters: None,
        alltoall: AlltoallAlgo::Direct,
        compute_scale: 1.0,
        progress: Default::default(),
        cpus_per_node: None,
    };
    stream_under(order, profile, model, assume, &cond, out, net)
}

/// The what-if replay in bounded memory: predicts the run in `dir` under `cond` (another
/// placement, clusters joined by a wide-area link, the all-to-all algorithm across them)
/// as [`super::predict_run_under`] does on the run loaded whole (the same
/// [`CallPrediction`] for every record and the same makespans, to the bit), handing each
/// record to `out` and telling `net` as [`predict_stream_with`] does.
#[allow(clippy::too_many_arguments)]
pub fn predict_stream_under(
    dir: &std::path::Path,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
    cond: &Conditions,
    out: &mut dyn FnMut(u32, u32, i64, CallPrediction),
    net: Option<&mut dyn StreamNet>,
) -> Result<StreamStats, Error> {
    let model = penalty_model(profile, model_override).map_err(Error::Input)?;
    let order = RunOrder::open(dir)?;
    stream_under(order, profile, model, assume, cond, out, net)
}

/// Both replays of the run `order` reads under `cond` ([`predict_stream_under`]).
#[allow(clippy::too_many_arguments)]
fn stream_under(
    mut order: RunOrder,
    profile: &Profile,
    model: Option<Box<dyn PenaltyModel>>,
    assume: &Assumptions,
    cond: &Conditions,
    out: &mut dyn FnMut(u32, u32, i64, CallPrediction),
    net: Option<&mut dyn StreamNet>,
) -> Result<StreamStats, Error> {
    if let Some(c) = cond.cpus_per_node {
        crate::replay::cpus::place_on_nodes(&mut order.metas, &cond.placement, c);
    }
    // The protocol of the recorded library, from the metadata alone; the nodes, the
    // paths' parameters and the collectives' costs of the conditions, as `predict_plan`.
    let library = order.metas.first().map_or("", |m| m.mpi_library.as_str());
    let protocol = Protocol::for_library_with(library, Some(profile));
    // The recorded library's collective algorithms.
    let assume = &assume.for_library(protocol.library);
    let placement = &cond.placement;
    // The latency measured as the run was launched, where the profile has it.
    let launched = placement.profile(profile);
    let profile: &Profile = &launched;
    let p2p = P2p::under(profile, cond, protocol.library);
    let cost = |i: &crate::replay::Instance, ranks: &[i32]| {
        coll_cost_of_ranks(
            profile,
            assume,
            i,
            ranks.iter().copied(),
            cond,
            protocol.eager_inter,
        )
    };
    // Records one replay finished and the other not yet, by their slot (`Finished::slot`:
    // the same in both replays, and not reused before both have handed the record over).
    let joins = RefCell::new(Joins::default());
    let out = RefCell::new(out);
    let (mut makespan, mut makespan_free, mut makespan_measured) = (0.0, 0.0, 0.0);
    let net = net.map(RefCell::new);
    let mut on_collective = |op: &CollOp, pairs: &[NodePair]| {
        if let Some(n) = &net {
            n.borrow_mut().collective(op, pairs);
        }
    };
    let mut on_model = |f: Finished| {
        last(&mut makespan, f.end);
        last(&mut makespan_measured, f.measured_end);
        let mut c = f.prediction.expect("figures asked for");
        if let Some(n) = &net {
            n.borrow_mut().call(f.rank, f.rec, f.measured_s, &c);
        }
        // Without a model the prediction is the contention-free replay itself.
        if model.is_some() {
            let mut j = joins.borrow_mut();
            match j.free_first(f.slot) {
                Some(free) => c.free = Some(free),
                None => return j.hold(f.slot, Half::Model, |j, g| j.model[g] = c),
            }
        }
        (out.borrow_mut())(f.rank, f.rec, f.entry_ns, c);
    };
    let mut on_free = |f: Finished| {
        last(&mut makespan_free, f.end);
        let mut j = joins.borrow_mut();
        let Some(mut c) = j.model_first(f.slot) else {
            return j.hold(f.slot, Half::Free, |j, g| j.free[g] = f.duration);
        };
        drop(j);
        c.free = Some(f.duration);
        (out.borrow_mut())(f.rank, f.rec, f.entry_ns, c);
    };
    let mut sides = vec![Side {
        model: model.as_deref(),
        contention: model.is_some(),
        figures: true,
        finished: &mut on_model,
        net: net.as_ref().map(|n| Box::new(NetOf(n)) as Box<dyn NetSink>),
        collectives: net.is_some().then_some(&mut on_collective as _),
    }];
    if model.is_some() {
        sides.push(Side {
            model: None,
            contention: false,
            figures: false,
            finished: &mut on_free,
            net: None,
            collectives: None,
        });
    }
    let replays = replay_windows(order, placement, protocol, &p2p, &cost, sides)?;
    // (The most held counted by the joins themselves: a borrow of the stats each time
    // was a `RefCell` more a record.)
    let mut stats = StreamStats {
        replays,
        most_joined: joins.into_inner().most,
        ..StreamStats::default()
    };
    stats.makespan = makespan;
    // Without a model the prediction is the contention-free replay.
    stats.makespan_free = if model.is_some() {
        makespan_free
    } else {
        makespan
    };
    stats.makespan_measured = makespan_measured;
    stats.model = super::model_name(model.as_deref());
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{RunPrediction, Wait, predict_run_with};
    use crate::testing::write_run;

    /// Two figures are the same when their bits are (any NaN is the same as any NaN).
    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn same_wait(a: Wait, b: Wait) -> bool {
        a.kind == b.kind && a.on == b.on && same(a.seconds, b.seconds)
    }

    fn same_prediction(a: &CallPrediction, b: &CallPrediction) -> bool {
        let opt = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => same(x, y),
            (x, y) => x.is_none() && y.is_none(),
        };
        opt(a.predicted, b.predicted)
            && opt(a.free, b.free)
            && same_wait(a.wait, b.wait)
            && same_wait(a.measured_wait, b.measured_wait)
            && same(a.contention, b.contention)
            && a.reason == b.reason
    }

    /// What [`check_stream`] saw: records, those with a wait, with contention, forced.
    #[derive(Default)]
    struct Seen {
        records: usize,
        waited: usize,
        contended: usize,
        forced: usize,
    }

    /// Runs `stream` (a streamed prediction handing its records to the sink it is given)
    /// and asserts that every record is handed over once with `batch`'s prediction, and
    /// that the makespans are `batch`'s, to the bit.
    fn check_stream(
        batch: &RunPrediction,
        at: &str,
        seen: &mut Seen,
        stream: impl FnOnce(&mut dyn FnMut(u32, u32, i64, CallPrediction)) -> StreamStats,
    ) {
        let mut got: Vec<Vec<Option<CallPrediction>>> =
            batch.calls.iter().map(|r| vec![None; r.len()]).collect();
        let stats = stream(&mut |ri, rec, _, c| {
            let slot = &mut got[ri as usize][rec as usize];
            assert!(slot.is_none(), "{at}: ({ri}, {rec}) twice");
            *slot = Some(c);
        });
        for (a, b) in [
            (stats.makespan, batch.makespan),
            (stats.makespan_free, batch.makespan_free),
            (stats.makespan_measured, batch.makespan_measured),
        ] {
            assert!(same(a, b), "{at}: makespans {stats:?}");
        }
        for (ri, (want, got)) in batch.calls.iter().zip(&got).enumerate() {
            for (rec, (w, g)) in want.iter().zip(got).enumerate() {
                let g = g.unwrap_or_else(|| panic!("{at}, record ({ri}, {rec}): never predicted"));
                assert!(
                    same_prediction(w, &g),
                    "{at}, record ({ri}, {rec}):\n batch  {w:?}\n stream {g:?}"
                );
                seen.records += 1;
                seen.waited += usize::from(w.wait.seconds > 0.0 || w.measured_wait.seconds > 0.0);
                seen.contended += usize::from(w.contention > 0.0);
                seen.forced += usize::from(w.reason == crate::replay::Reason::Unresolved);
            }
        }
    }

    /// Random runs (point-to-point calls of every kind, waits, probes, two threads,
    /// collectives from random roots, nonblocking barriers; some with clock offsets, some
    /// long, some with a rank's spool lost), written to spools and predicted as they are read back: every record's
    /// prediction is `predict_run_with`'s of the loaded run, to the bit, under `gige`
    /// (with the built-in profile and with a calibrated profile's factors) and without a
    /// model. The replays pause 3 calls ahead of each other here (unit tests' lead), and
    /// many of these runs' replays deadlock (calls forced, whose figures wait for the end).
    #[test]
    fn the_streamed_prediction_is_the_batch_one() {
        let mut rnd = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        let dir = std::env::temp_dir().join(format!("pmpi-stream-{}", std::process::id()));
        let builtin = Profile::builtin_default();
        let calibrated = crate::testing::calibrated_profile();
        let assume = Assumptions::default();
        let mut seen = Seen::default();
        for case in 0..240 {
            crate::testing::write_random_case(&mut rnd, &dir, case, 220, 30);
            let loaded = crate::trace::load_run(&dir).unwrap();
            for (profile, model) in [
                (&builtin, "gige"),
                (&calibrated, "gige"),
                (&builtin, "none"),
            ] {
                let batch = predict_run_with(&loaded, profile, Some(model), &assume).unwrap();
                let at = format!("case {case}, {model}, reverse {}", profile.penalty.reverse);
                check_stream(&batch, &at, &mut seen, |out| {
                    predict_stream(&dir, profile, Some(model), &assume, out).unwrap()
                });
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        let Seen {
            records,
            waited,
            contended,
            forced,
        } = seen;
        assert!(
            records > 10_000 && waited > 1_000 && contended > 100 && forced > 1_000,
            "{records} records, {waited} waited, {contended} contended, {forced} forced"
        );
    }

    /// The calibrated profile's cold-call cost acts on the random runs that the test above
    /// streams (so that its equality covers it): some predictions differ without it.
    #[test]
    fn the_random_runs_pay_the_cold_call_cost() {
        let mut rnd = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        let dir = std::env::temp_dir().join(format!("pmpi-stream-cold-{}", std::process::id()));
        let cold = crate::testing::calibrated_profile();
        assert!(!cold.cold_call.is_empty());
        let warm = Profile {
            cold_call: Vec::new(),
            ..cold.clone()
        };
        let assume = Assumptions::default();
        let mut differ = 0;
        for case in 0..4 {
            crate::testing::write_random_case(&mut rnd, &dir, case, 220, 30);
            let loaded = crate::trace::load_run(&dir).unwrap();
            let a = predict_run_with(&loaded, &cold, Some("gige"), &assume).unwrap();
            let b = predict_run_with(&loaded, &warm, Some("gige"), &assume).unwrap();
            differ += a
                .calls
                .iter()
                .flatten()
                .zip(b.calls.iter().flatten())
                .filter(|(x, y)| x.predicted != y.predicted)
                .count();
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(differ > 20, "{differ} predictions differ");
    }

    /// The what-if replay streamed: random runs (as above, every other one with its
    /// barriers as all-to-alls of 64 KiB, the collective the clusters' all-to-all
    /// algorithm times) under random placements, with and without two clusters, the
    /// direct and the Local Group all-to-all: every record's prediction and the makespans
    /// are `predict_run_under`'s of the loaded run under the same conditions, to the bit,
    /// under `gige` (built-in and calibrated profiles) and without a model. The conditions
    /// change the predictions (against the recorded placement), and the algorithm the
    /// predictions of runs whose all-to-alls cross the clusters.
    #[test]
    fn the_streamed_what_if_prediction_is_the_batch_one() {
        use crate::predict::predict_run_under;
        let mut rnd = crate::testing::xorshift(0x51de_c0de_2026_1126);
        let dir = std::env::temp_dir().join(format!("pmpi-stream-whatif-{}", std::process::id()));
        let builtin = Profile::builtin_default();
        let calibrated = crate::testing::calibrated_profile();
        let assume = Assumptions::default();
        let mut seen = Seen::default();
        // Cases with clusters, with Local Group; records whose prediction the conditions
        // moved; records whose prediction the all-to-all algorithm changed.
        let (mut clustered, mut local_group, mut moved, mut by_algo) = (0, 0, 0usize, 0usize);
        for case in 0..160 {
            let (loaded, cond) = crate::testing::whatif_case(
                &mut rnd,
                &dir,
                case,
                150,
                20,
                crate::trace::call::MPI_Barrier,
                Some(65536),
            );
            clustered += usize::from(cond.clusters.is_some());
            local_group += usize::from(cond.alltoall == AlltoallAlgo::LocalGroup);
            for (profile, model) in [
                (&builtin, "gige"),
                (&calibrated, "gige"),
                (&builtin, "none"),
            ] {
                let batch =
                    predict_run_under(&loaded, profile, Some(model), &assume, &cond).unwrap();
                let at = format!(
                    "case {case}, {model}, reverse {}, {:?} {} clusters {:?} {}",
                    profile.penalty.reverse,
                    cond.placement.node_of_rank,
                    cond.placement.nodes(),
                    cond.clusters.as_ref().map(|c| &c.cluster_of_node),
                    cond.alltoall,
                );
                check_stream(&batch, &at, &mut seen, |out| {
                    predict_stream_under(&dir, profile, Some(model), &assume, &cond, out, None)
                        .unwrap()
                });
                if std::ptr::eq(profile, &builtin) && model == "gige" {
                    let differ = |other: &RunPrediction| {
                        batch
                            .calls
                            .iter()
                            .flatten()
                            .zip(other.calls.iter().flatten())
                            .filter(|(a, b)| !same_prediction(a, b))
                            .count()
                    };
                    let recorded = predict_run_with(&loaded, profile, Some(model), &assume);
                    moved += differ(&recorded.unwrap());
                    if cond.clusters.is_some() {
                        let other = Conditions {
                            alltoall: match cond.alltoall {
                                AlltoallAlgo::Direct => AlltoallAlgo::LocalGroup,
                                AlltoallAlgo::LocalGroup => AlltoallAlgo::Direct,
                            },
                            ..cond.clone()
                        };
                        let o = predict_run_under(&loaded, profile, Some(model), &assume, &other);
                        by_algo += differ(&o.unwrap());
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        let Seen {
            records,
            waited,
            contended,
            forced,
        } = seen;
        assert!(
            records > 10_000
                && waited > 1_000
                && contended > 100
                && forced > 1_000
                && clustered > 40
                && local_group > 40
                && moved > 1_000
                && by_algo > 10,
            "{records} records, {waited} waited, {contended} contended, {forced} forced, \
             {clustered} clustered, {local_group} local group, {moved} moved, {by_algo} by algorithm"
        );
    }

    /// Open MPI's scan is a chain: a member returns once it passed its prefix on, before
    /// later members enter. Such a member's wait reads the last member's entry, which the
    /// streamed prediction waits for (it read the entries known so far before: LAMMPS at
    /// 4 ranks, one `MPI_Scan` row of 50,096 with a wait of 8.9 µs streamed, 1.5 µs batch).
    /// Random runs on Open MPI with their all-reduces as 8-byte scans: every record as
    /// `predict_run_with` gives it.
    #[test]
    fn a_scan_member_that_returns_first_is_predicted_as_in_the_batch() {
        let mut rnd = crate::testing::xorshift(0x5ca4_c4a1_2026_1127);
        let dir = std::env::temp_dir().join(format!("pmpi-stream-scan-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let (mut seen, mut scans) = (Seen::default(), 0);
        for case in 0..60 {
            let mut run = crate::testing::random_case(&mut rnd, case, 50, 10);
            for rk in &mut run.ranks {
                rk.meta.mpi_library = crate::testing::OPEN_MPI.into();
                for r in &mut rk.records {
                    if r.call == crate::trace::call::MPI_Allreduce {
                        r.call = crate::trace::call::MPI_Scan;
                        (r.bytes_send, r.bytes_recv) = (8, 8);
                        scans += 1;
                    }
                }
            }
            crate::testing::write_case(&dir, case, &run);
            let loaded = crate::trace::load_run(&dir).unwrap();
            for model in ["gige", "none"] {
                let batch = predict_run_with(&loaded, &profile, Some(model), &assume).unwrap();
                check_stream(&batch, &format!("case {case}, {model}"), &mut seen, |out| {
                    predict_stream(&dir, &profile, Some(model), &assume, out).unwrap()
                });
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            scans > 200 && seen.waited > 500,
            "{scans} scans, {} waited",
            seen.waited
        );
    }

    /// Sends and receives with a process of another MPI world (a spawned one: the layer
    /// records its peer as UNKNOWN_RANK) keep their measured time, marked unmatched, in
    /// both paths; the receives that matched those sends are unmatched too.
    #[test]
    fn messages_with_another_world_keep_their_measured_time() {
        let mut rnd = crate::testing::xorshift(0x5a3e_d0c0_2026_1128);
        let dir = std::env::temp_dir().join(format!("pmpi-stream-spawn-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let (mut seen, mut outside) = (Seen::default(), 0);
        for case in 0..40 {
            let mut run = crate::testing::random_case(&mut rnd, case, 30, 10);
            for rk in &mut run.ranks {
                for r in &mut rk.records {
                    let blocking = r.call == crate::trace::call::MPI_Send
                        || r.call == crate::trace::call::MPI_Recv;
                    if blocking && r.peer >= 0 && rnd(5) == 0 {
                        r.peer = crate::trace::UNKNOWN_RANK;
                    }
                }
            }
            crate::testing::write_case(&dir, case, &run);
            let loaded = crate::trace::load_run(&dir).unwrap();
            for model in ["gige", "none"] {
                let batch = predict_run_with(&loaded, &profile, Some(model), &assume).unwrap();
                for (rk, preds) in loaded.ranks.iter().zip(&batch.calls) {
                    for (r, c) in rk.records.iter().zip(preds) {
                        if r.peer == crate::trace::UNKNOWN_RANK {
                            let measured = (r.t_end - r.t_start) as f64 * 1e-9;
                            assert_eq!(c.reason, crate::replay::Reason::Unmatched, "case {case}");
                            // (From the replayed start: the same seconds, to rounding.)
                            let near = |x: Option<f64>| (x.unwrap() - measured).abs() < 1e-15;
                            assert!(
                                near(c.predicted) && near(c.free),
                                "case {case}: {r:?} {c:?}"
                            );
                            outside += 1;
                        }
                    }
                }
                check_stream(&batch, &format!("case {case}, {model}"), &mut seen, |out| {
                    predict_stream(&dir, &profile, Some(model), &assume, out).unwrap()
                });
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(outside > 200, "{outside} calls with another world");
    }

    /// A long ring (4 ranks, 20,000 records, requests freed, a receive matching nothing):
    /// each replay holds what is in flight and the join what one replay has finished and
    /// the other not, a few records, not the run.
    #[test]
    fn the_streamed_prediction_holds_what_is_in_flight() {
        let dir = std::env::temp_dir().join(format!("pmpi-stream-ring-{}", std::process::id()));
        write_run(&dir, &crate::testing::ring_run(4, 5000));
        let profile = Profile::builtin_default();
        let mut n = 0;
        let stats = predict_stream(
            &dir,
            &profile,
            Some("gige"),
            &Assumptions::default(),
            &mut |_, _, _, _| n += 1,
        )
        .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(n, 20_000);
        assert!(
            stats.replays.iter().all(|s| s.most_records < 40) && stats.most_joined < 40,
            "{stats:?}"
        );
    }
}
