//! The calibration run: which measurements to take for the ranks and nodes at hand and the
//! time budget, a progress display on rank 0's stderr, the fits, and the profile.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Value, json};

use super::bench::{self, Ctx};
use super::eager::{self, Knee};
use super::fit;
use super::mpi::Mpi;
use crate::model::Hockney;
use crate::profile::{Eager, EagerSource, PenaltyParams, Profile};

/// What `pmpi-predict calibrate` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    pub output: PathBuf,
    pub quick: bool,
    /// Wall-time budget in seconds: optional phases that would not fit are skipped, and
    /// essential ones drop to one repetition.
    pub budget_s: f64,
    /// Message size of the penalty schemes (default: scaled to the measured link speed).
    pub penalty_bytes: Option<usize>,
    /// This rank's node name (`PMPI_PREDICT_NODE`), else the host name.
    pub node: Option<String>,
    /// Measure the wide-area link between the two clusters this file names instead
    /// (`backbone`), and write the file completed with its `wan` section.
    pub clusters: Option<PathBuf>,
}

/// Target time of a lone penalty message: the three-arc schemes then take about three
/// times as long, ≲ 0.3 s per repetition on any link.
const PENALTY_TREF_S: f64 = 0.08;

/// Environment variables set by the launchers we know (Open MPI, MPICH/Hydra, PMIx, Slurm).
const LAUNCHER_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMIX_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
];

/// Message shown when calibration cannot measure the network.
pub const NEED_RANKS: &str = "calibrate needs at least 2 MPI ranks on at least 2 nodes to \
measure inter-node parameters (2 ranks on one node give the intra-node ones only); launch \
it with e.g. `mpirun -np 4 pmpi-predict calibrate -o PROFILE.json` (MPICH: `mpiexec -n 4 ...`)";

/// Rank 0's progress display on stderr: one line per phase with its duration.
pub(super) struct Progress {
    on: bool,
    start: Instant,
    phase: Instant,
    total: usize,
    done: usize,
}

impl Progress {
    /// A display of `total` phases, shown where `on` (rank 0).
    pub(super) fn new(on: bool, total: usize) -> Progress {
        Progress {
            on,
            start: Instant::now(),
            phase: Instant::now(),
            total,
            done: 0,
        }
    }
    pub(super) fn begin(&mut self, what: &str) {
        self.done += 1;
        self.phase = Instant::now();
        if self.on {
            eprint!(
                "calibrate [{}/{}] {what} ... ",
                self.done.min(self.total),
                self.total
            );
        }
    }
    pub(super) fn end(&self, note: &str) {
        if self.on {
            eprintln!(
                "{:.2} s{}{note}",
                self.phase.elapsed().as_secs_f64(),
                if note.is_empty() { "" } else { "  " }
            );
        }
    }
    fn skip(&mut self, what: &str, why: &str) {
        self.done += 1;
        if self.on {
            eprintln!(
                "calibrate [{}/{}] {what}: skipped ({why})",
                self.done.min(self.total),
                self.total
            );
        }
    }
    pub(super) fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// Is this process started by an MPI launcher? (A singleton would see one rank.)
pub fn under_launcher() -> bool {
    LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some())
}

fn sizes(v: &[usize]) -> Vec<usize> {
    v.to_vec()
}

/// A ping-pong and its Hockney fit. A sample disturbed on every repetition (a rank
/// descheduled on a loaded host) can make larger messages look faster and the fit fail;
/// then the sweep is measured again with three times the repetitions, at most twice,
/// keeping each size's minimum over all attempts. Every rank gets the same answer (the
/// times are shared), so all ranks retry together. Returns the times, the fit and the
/// number of attempts.
pub(super) fn ping_pong_fitted(
    ctx: &Ctx,
    a: i32,
    b: i32,
    grid: &[usize],
    reps: &[u32],
) -> (Vec<f64>, Result<fit::HockneyFit, fit::FitError>, u32) {
    let mut t = bench::ping_pong(ctx, a, b, grid, reps);
    let mut reps = reps.to_vec();
    let mut attempts = 1;
    loop {
        let samples: Vec<(f64, f64)> = grid.iter().map(|&s| s as f64).zip(t.clone()).collect();
        let fitted = fit::fit_hockney(&samples);
        if fitted.is_ok() || attempts == 3 {
            return (t, fitted, attempts);
        }
        reps.iter_mut().for_each(|r| *r *= 3);
        let again = bench::ping_pong(ctx, a, b, grid, &reps);
        t.iter_mut().zip(again).for_each(|(x, y)| *x = x.min(y));
        attempts += 1;
    }
}

/// Penalty message size for a link of `beta` s/B: a lone message takes ~80 ms, rounded
/// to 64 KiB, between 256 KiB and the paper's 20 MB.
pub fn penalty_bytes(beta: f64) -> usize {
    let raw = if beta > 0.0 {
        PENALTY_TREF_S / beta
    } else {
        20e6
    };
    let b = (raw.clamp(262144.0, 20e6) / 65536.0).round() as usize * 65536;
    b.max(262144)
}

/// The scheme of two opposite messages between one pair of nodes.
pub const BIDIRECTIONAL: &str = "bidirectional";

/// The scheme where every node sends to the next and receives from the previous one.
pub const RING: &str = "ring";

/// Resamples of the penalty schemes' repetitions that calibrate refits (about 5 ms each).
const BOOTSTRAP_RESAMPLES: usize = 20;

/// The widest 90 % range, over those resamples, of the chosen model's slope (gige's β,
/// infiniband's βs) relative to its value that calibrate writes: on the emulated cluster
/// it is 5-15 %; wider, the repetitions disagree too much to trust any fit.
const MAX_SLOPE_SPREAD: f64 = 0.5;

/// The chosen model's fitted parameters with their 90 % range over the resamples, e.g.
/// `gige beta 0.85 [0.81-0.88], gamma_o 0.16 [0.08-0.22], gamma_i 0.12 [0.05-0.20]`.
fn fitted_params(choice: &fit::PenaltyChoice, boot: &fit::PenaltyBootstrap) -> String {
    let model = choice.model.as_str();
    if model != "gige" && model != "infiniband" {
        return format!("{model} has no fitted parameters");
    }
    let fitted = PenaltyParams {
        gige: choice.gige,
        infiniband: choice.infiniband,
        ..Profile::builtin_default().penalty
    };
    let params = fitted.params_of(model);
    let shown: Vec<String> = params
        .iter()
        .map(|(n, v)| match boot.range(&format!("{model}.{n}")) {
            Some((lo, hi)) => format!("{n} {v:.2} [{lo:.2}-{hi:.2}]"),
            None => format!("{n} {v:.2}"),
        })
        .collect();
    format!("{model} {}", shown.join(", "))
}

/// The Fig. 2 schemes that `nodes` nodes allow, as `(name, arcs)`, and the ring.
pub fn schemes_for(nodes: usize) -> Vec<(&'static str, Vec<(usize, usize)>)> {
    // "bidirectional" is not fitted by the models (each of its arcs is alone at its ports):
    // its penalty is the profile's `penalty.reverse` factor.
    let mut v: Vec<(&'static str, Vec<(usize, usize)>)> = vec![
        ("lone", vec![(0, 1)]),
        (BIDIRECTIONAL, vec![(0, 1), (1, 0)]),
    ];
    if nodes >= 3 {
        v.push(("out2", vec![(0, 1), (0, 2)]));
        v.push(("in2", vec![(1, 0), (2, 0)]));
        v.push(("through", vec![(0, 1), (1, 2)]));
    }
    if nodes >= 4 {
        v.push(("out3", vec![(0, 1), (0, 2), (0, 3)]));
        v.push(("in3", vec![(1, 0), (2, 0), (3, 0)]));
        v.push(("mixed", vec![(0, 1), (0, 2), (3, 2)]));
        v.push(("out2-in3", vec![(0, 1), (0, 3), (1, 3), (2, 3)]));
    }
    // Not fitted by the models either (every node has one arc in and one out): every arc
    // of every repetition is a sample of the through-flow factor (`penalty.through`).
    if nodes >= 3 {
        v.push((RING, (0..nodes).map(|i| (i, (i + 1) % nodes)).collect()));
    }
    v
}

/// UTC date and time, ISO 8601.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// What the eager-limit read gave: the profile's field, a line for the user and the raw
/// section's record of the control variables.
struct EagerRead {
    eager: Option<Eager>,
    line: String,
    raw: Value,
    /// The control variables read between nodes and within a node, for the user's line.
    names: (String, String),
}

/// Sizes the eager-limit search spans (bytes). Above the kernel's socket buffers an eager
/// send over TCP would wait for the reader too, so a knee up there may be the buffers'.
const KNEE_LO: u64 = 64;
const KNEE_HI: u64 = 4 << 20;

/// The profile's eager limits once measured (`inter`, `intra`: the searches made) over the
/// MPI_T values (`mpit`; `names`: their control variables), and the line for the user. A
/// measured knee wins; where none was found below [`KNEE_HI`] or none was searched, the
/// MPI_T value stays.
fn eager_measured(
    inter: Option<Knee>,
    intra: Option<Knee>,
    mpit: Option<Eager>,
    names: &(String, String),
) -> (String, Option<Eager>) {
    let show = |k: Option<Knee>, t: Option<u64>, name: &str| {
        let cv = match t {
            Some(v) => format!("MPI_T {name} {v}"),
            None => "MPI_T: not exposed".to_string(),
        };
        match k {
            None => format!("not measured ({cv})"),
            Some(Knee::Found { eager, .. }) => format!("up to {eager} B measured ({cv})"),
            Some(Knee::RendezvousFrom(lo)) => format!("rendezvous from {lo} B measured ({cv})"),
            Some(Knee::EagerUpTo(hi)) => format!("eager up to {hi} B and beyond ({cv})"),
        }
    };
    let t_inter = mpit.and_then(|e| e.inter);
    let t_intra = mpit.and_then(|e| e.intra);
    let line = format!(
        "eager between nodes: {}; within a node: {}",
        show(inter, t_inter, &names.0),
        show(intra, t_intra, &names.1)
    );
    let m_inter = inter.and_then(Knee::limit);
    let m_intra = intra.and_then(Knee::limit);
    let measured = m_inter.is_some() || m_intra.is_some();
    let e = Eager {
        inter: m_inter.or(t_inter),
        intra: m_intra.or(t_intra),
        source: if measured {
            EagerSource::Measured
        } else {
            mpit.map_or(EagerSource::MpiT, |e| e.source)
        },
    };
    (line, (e.inter.is_some() || e.intra.is_some()).then_some(e))
}

/// Every rank reads the eager limits through MPI_T (a BTL's variables are listed only
/// where it is loaded: Open MPI's shared-memory one on ranks that share a node); each limit
/// is the largest any rank read. Collective over WORLD.
fn read_eager(mpi: &Mpi, library: &str) -> EagerRead {
    let cvars = eager::cvars_for(library);
    let read = match &cvars {
        Ok(c) => mpi.read_cvars(&c.names(), c.no_object),
        Err(e) => Err(e.clone()),
    };
    let (inter, intra) = match (&cvars, &read) {
        (Ok(c), Ok(r)) => eager::limits(c, r),
        _ => (None, None),
    };
    let mut v = [eager::encode(inter), eager::encode(intra)];
    mpi.allreduce_max(&mut v, mpi.world);
    let (inter, intra) = (eager::decode(v[0]), eager::decode(v[1]));
    let show = |v: Option<u64>, names: &[&str]| match v {
        Some(b) => format!("{b} B ({})", names.join(" or ")),
        None if names.is_empty() => "not exposed".to_string(),
        None => format!("not exposed ({} not listed or unset)", names.join(" or ")),
    };
    let (line, raw) = match (&cvars, &read) {
        (Ok(c), Ok(r)) => (
            format!(
                "eager limits from MPI_T: between nodes {}, within a node {}{}",
                show(inter, &c.inter),
                show(intra, &c.intra),
                if inter.is_none() || intra.is_none() {
                    "; the engine keeps the library's default where not exposed"
                } else {
                    ""
                }
            ),
            json!({"read": r.iter().map(|(n, x)| (n.clone(), json!(x))).collect::<serde_json::Map<String, Value>>()}),
        ),
        (Err(e), _) | (_, Err(e)) => (
            format!("eager limits not read ({e}); the engine keeps the library's defaults"),
            json!({"error": e}),
        ),
    };
    let eager = (inter.is_some() || intra.is_some()).then_some(Eager {
        inter,
        intra,
        source: EagerSource::MpiT,
    });
    let names = match &cvars {
        Ok(c) => (c.inter.join(" or "), c.intra.join(" or ")),
        Err(_) => (String::new(), String::new()),
    };
    EagerRead {
        eager,
        line,
        raw,
        names,
    }
}

/// Runs the calibration on every rank; rank 0 writes the profile. Returns the exit status
/// (0 ok, 2 cannot calibrate with these ranks, 69 MPI failed to start, 70 the fit gave an
/// invalid profile, 74 the profile cannot be written).
pub fn run(opts: &Options) -> i32 {
    if !under_launcher() {
        eprintln!("pmpi-predict: {NEED_RANKS}");
        return 2;
    }
    let mpi = match Mpi::init() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pmpi-predict: {e}");
            return crate::cli::EXIT_MPI;
        }
    };
    if mpi.size < 2 {
        eprintln!("pmpi-predict: {NEED_RANKS}");
        return 2;
    }
    // Before any measurement: the library's eager limits, from its control variables.
    let library = mpi.library_version();
    let eager = read_eager(&mpi, &library);
    let name = crate::topo::node_name(opts.node.as_deref());
    let ctx = Ctx::discover(&mpi, &name);
    if let Some(path) = &opts.clusters {
        return super::backbone::run(opts, &mpi, &ctx, path, library);
    }
    // TCP's counters at the start, on every rank (the node leaders' are kept).
    let tcp_before = super::tcp::start();
    let nnodes = ctx.nodes.len();
    let intra = ctx.intra_pair();
    let inter = nnodes >= 2;
    // Most ranks on one node: above 1, the all-to-all is measured as launched too.
    let per_node = (0..nnodes)
        .map(|k| ctx.node_of.iter().filter(|&&x| x == k).count())
        .max()
        .unwrap_or(1);
    // Pairs of ranks on different nodes: with two or more, the latency is measured with
    // every pair ping-ponging at once too (what a small message costs as launched).
    let pairs = bench::cross_pairs(&ctx.node_of);
    let loaded = inter && pairs.len() >= 2;
    let mut pg = Progress {
        on: mpi.rank == 0,
        start: Instant::now(),
        phase: Instant::now(),
        // The intra-node ping-pong is a phase of its own where a node has two ranks: counted
        // here, so that the first lines do not say [n/7] and the later ones [n/8].
        total: (if inter {
            7 + usize::from(per_node > 1)
        } else {
            0
        }) + usize::from(intra.is_some())
            + usize::from(loaded),
        done: 0,
    };
    if mpi.rank == 0 {
        eprintln!(
            "calibrate: {} ranks on {} node(s): {}{}",
            mpi.size,
            nnodes,
            ctx.nodes.join(", "),
            if opts.quick { "  (--quick)" } else { "" }
        );
        if !inter {
            eprintln!(
                "calibrate: warning: all ranks are on one node: only intra-node parameters are \
                 measured; inter-node, penalty and all-to-all parameters keep the built-in \
                 defaults. {NEED_RANKS}"
            );
        }
    }
    let q = opts.quick;
    let mut raw = serde_json::Map::new();
    let mut res = serde_json::Map::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut profile = Profile::builtin_default();
    profile.date = Some(utc_now());
    profile.mpi_library = Some(library);
    raw.insert("eager_cvars".into(), eager.raw.clone());
    if mpi.rank == 0 {
        eprintln!("calibrate: {}", eager.line);
    }
    profile.eager = eager.eager;
    profile.nodes = ctx.nodes.clone();
    raw.insert("ranks".into(), json!(mpi.size));
    raw.insert("node_of_rank".into(), json!(ctx.node_of));
    raw.insert("quick".into(), json!(q));
    raw.insert("budget_s".into(), json!(opts.budget_s));
    let over = |pg: &Progress, est: f64| ctx.agreed(pg.elapsed()) + est > opts.budget_s;

    let mut h_inter: Option<Hockney> = None;
    let mut pp_empty: Option<f64> = None;
    if inter {
        pg.begin("warm-up (connections between node leaders)");
        ctx.warm_up();
        pg.end("");

        let (a, b) = (ctx.leaders[0], ctx.leaders[1]);
        pg.begin(&format!(
            "inter-node ping-pong {} <-> {}",
            ctx.nodes[0], ctx.nodes[1]
        ));
        let grid = if q {
            sizes(&[0, 4096, 65536, 524288])
        } else {
            sizes(&[0, 1024, 4096, 16384, 65536, 262144, 1048576])
        };
        // Small messages take many more round trips (their minimum is the fit's latency,
        // which the median of the exchange's ping-pong replaces below). Of
        // 250 batches of 8 empty round trips between two emulated hosts, the batches'
        // minima spread over 6.5-8.6 us; one calibration's 8 gave 11.7 us, and ExaML's
        // prediction moved from 3.8 to 19.6 % with it (docs/accuracy.md, seventeenth
        // session).
        let reps: Vec<u32> = grid
            .iter()
            .map(|&s| match (q, s) {
                (true, s) if s >= 262144 => 2,
                (true, s) if s < 16384 => 16,
                (true, _) => 4,
                (false, s) if s >= 262144 => 3,
                (false, s) if s < 16384 => 64,
                (false, _) => 8,
            })
            .collect();
        let (t, fitted, attempts) = ping_pong_fitted(&ctx, a, b, &grid, &reps);
        let samples: Vec<(f64, f64)> = grid.iter().map(|&s| s as f64).zip(t.clone()).collect();
        pp_empty = samples.iter().find(|s| s.0 == 0.0).map(|s| s.1);
        raw.insert(
            "pingpong_inter".into(),
            json!({"ranks": [a, b], "bytes": grid, "one_way_s": t, "attempts": attempts}),
        );
        if attempts > 1 && fitted.is_ok() {
            notes.push(format!(
                "inter-node ping-pong: the first fit failed (a disturbed sample); measured {attempts} times"
            ));
        }
        match fitted {
            Ok(f) => {
                // The socket buffer: how much of a rendezvous send is still in the kernel
                // when MPI_Send returns (the replay lets the send return then). 128 KiB
                // pins the sends just above Open MPI's eager limit (LAMMPS's 87 KB at 1
                // Gbit/s took the 256 KiB figure).
                let sb_sizes = sizes(&[131072, 262144, 524288, 1048576, 2097152, 4194304]);
                let sb = bench::send_return(&ctx, a, b, &sb_sizes, if q { 2 } else { 3 });
                let buffer = fit::socket_buffer(&sb_sizes, &sb, f.hockney.beta);
                raw.insert(
                    "send_return".into(),
                    json!({"ranks": [a, b], "bytes": sb_sizes,
                           "send_s": sb.iter().map(|p| p.0).collect::<Vec<_>>(),
                           "recv_s": sb.iter().map(|p| p.1).collect::<Vec<_>>()}),
                );
                profile.socket_buffer = Some(match buffer {
                    Ok(b) | Err(b) => b,
                });
                profile.socket_buffer_by_size =
                    fit::socket_buffer_by_size(&sb_sizes, &sb, f.hockney.beta);
                if let Err(b) = buffer {
                    notes.push(format!(
                        "socket buffer: every blocking send of up to {} KiB returned before its transfer; the profile says {} KiB, a lower bound",
                        b / 1024,
                        b / 1024
                    ));
                }
                // A small message while the reverse one crosses (an 8-byte all-reduce of
                // two, a halo exchange): its medians against the ping-pong's, taking turns.
                let (one_way, both) = if q {
                    bench::small_exchange(&ctx, a, b, 10, 25)
                } else {
                    bench::small_exchange(&ctx, a, b, 20, 50)
                };
                let extra = (both - one_way).max(0.0);
                // The latency a small message takes, the median: the smallest of the
                // sweep's round trips is a time few messages of a run see (6.0-6.8 us
                // where 8 bytes took 7.6-8.9 at the median, three calibrations), and
                // OpenFOAM's and ExaML's microsecond calls are predicted best with the
                // median (docs/accuracy.md, nineteenth session).
                let bytes = bench::EXCHANGE_BYTES as f64;
                let typical = one_way - (f.hockney.lone_bytes(bytes) - f.hockney.alpha);
                let hockney = if typical > 0.0 {
                    Hockney {
                        alpha: typical,
                        ..f.hockney
                    }
                } else {
                    f.hockney
                };
                raw.insert(
                    "exchange".into(),
                    json!({"ranks": [a, b], "bytes": bench::EXCHANGE_BYTES,
                           "one_way_median_s": one_way, "exchange_median_s": both,
                           "alpha_smallest_s": f.hockney.alpha}),
                );
                profile.exchange = Some(extra);
                // What a call pays after time outside MPI, computing on data that fills
                // the core's caches (the replay adds it to a blocking call between nodes
                // after such a recorded gap).
                let gaps = bench::COLD_GAPS;
                let read = bench::cold_bytes();
                let (base, after) =
                    bench::cold_send(&ctx, a, b, &gaps, read, if q { 7 } else { 15 });
                profile.cold_call = fit::cold_call(&gaps, base, &after);
                raw.insert(
                    "cold_call".into(),
                    json!({"ranks": [a, b], "bytes": 8, "gaps_s": gaps, "read_bytes": read,
                           "back_to_back_median_s": base, "after_gap_median_s": after}),
                );
                // A shaped link's bucket again, from messages sent with full buckets (the
                // back-to-back ping-pong drains them with its small messages).
                let mut hockney = hockney;
                if f.hockney.burst > 0.0 && !q {
                    let b0 = f.hockney.burst;
                    let probe = fit::bucket_probe_sizes(b0);
                    // Long enough for the buckets to refill after the largest round trip.
                    let pause = (4.0 * b0 * f.hockney.beta).max(200e-6);
                    let t = bench::paused_ping_pong(&ctx, a, b, &probe, 16, pause);
                    let samples: Vec<(f64, f64)> = probe
                        .iter()
                        .map(|&s| s as f64)
                        .zip(t.iter().copied())
                        .collect();
                    let (burst, gamma) = fit::probed_bucket(&samples, f.hockney.beta, b0);
                    raw.insert(
                        "bucket_probe".into(),
                        json!({"ranks": [a, b], "bytes": probe, "one_way_s": t, "pause_s": pause,
                               "reps": 16, "ping_pong_burst": b0}),
                    );
                    hockney.burst = burst;
                    hockney.burst_gamma = gamma;
                }
                pg.end(&format!(
                    "alpha = {:.1} us (the median; smallest {:.1}), beta = {:.3e} s/B ({:.1} Mbit/s), burst allowance {:.0} B ({:.2} ns/B), socket buffer {} KiB; {} B both ways at once {:.1} us against {:.1} one way (medians): exchange +{:.1} us; after 20 ms outside MPI +{:.1} us",
                    hockney.alpha * 1e6,
                    f.hockney.alpha * 1e6,
                    f.hockney.beta,
                    8e-6 / f.hockney.beta.max(1e-300),
                    hockney.burst,
                    hockney.burst_gamma * 1e9,
                    profile.socket_buffer.unwrap_or(0) / 1024,
                    bench::EXCHANGE_BYTES,
                    both * 1e6,
                    one_way * 1e6,
                    extra * 1e6,
                    profile.cold_curve().map_or(0.0, |c| c.eval(20e-3)) * 1e6
                ));
                res.insert(
                    "hockney_inter".into(),
                    json!({"rms_rel": f.rms_rel, "relative": f.residuals}),
                );
                profile.hockney.inter = hockney;
                h_inter = Some(hockney);
            }
            Err(e) => {
                pg.end(&format!("fit failed: {e}"));
                skipped.push(format!("hockney inter: {e}"));
            }
        }
    }

    if loaded && let Some(h) = h_inter {
        // Where ranks share cores (an emulated cluster, an oversubscribed node), a small
        // message waits for its receiver to be scheduled: 4 ranks on the emulated
        // cluster's 2 cores took 26-29 us an exchange where 2 took 12-15.
        let reps = if q { 100 } else { 400 };
        pg.begin(&format!(
            "latency with all {} ranks at once ({} pairs across nodes)",
            mpi.size,
            pairs.len()
        ));
        let t = bench::pairs_ping_pong(&ctx, &pairs, reps);
        let alpha = bench::median(&mut t.clone());
        // A collective's step: every rank sends and receives at once, which a ping-pong's
        // pairs do not (the emulated cluster's 8 ranks: 57 us a step, the ping-pong 36-62).
        let allreduce = bench::allreduce_small(&ctx, reps);
        let steps = (mpi.size as f64).log2().ceil().max(1.0);
        let step = allreduce / steps;
        raw.insert(
            "latency_placed".into(),
            json!({"procs": mpi.size, "per_node": per_node, "pairs": pairs, "reps": reps, "one_way_s": t,
                   "allreduce_8b_s": allreduce}),
        );
        let (lo, hi) = t.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
        pg.end(&format!(
            "alpha = {:.1} us (median over the pairs, {:.1}-{:.1}), two ranks alone {:.1} us; a collective's step {:.1} us (8-byte MPI_Allreduce {:.1} us)",
            alpha * 1e6,
            lo * 1e6,
            hi * 1e6,
            h.alpha * 1e6,
            step * 1e6,
            allreduce * 1e6
        ));
        if alpha.is_finite() && alpha > 0.0 {
            profile.latency_placed = vec![crate::profile::PlacedLatency {
                procs: mpi.size as u64,
                per_node: per_node as u64,
                alpha,
                step: (step.is_finite() && step > 0.0).then_some(step),
            }];
        }
    }

    if let Some((a, b)) = intra {
        pg.begin(&format!("intra-node ping-pong ranks {a} <-> {b}"));
        let grid = sizes(&[0, 1024, 16384, 262144, 1048576]);
        let (t, fitted, attempts) = ping_pong_fitted(&ctx, a, b, &grid, &[8, 8, 8, 4, 3]);
        raw.insert(
            "pingpong_intra".into(),
            json!({"ranks": [a, b], "bytes": grid, "one_way_s": t, "attempts": attempts}),
        );
        match fitted {
            Ok(f) => {
                pg.end(&format!(
                    "alpha = {:.2} us, beta = {:.3e} s/B",
                    f.hockney.alpha * 1e6,
                    f.hockney.beta
                ));
                res.insert(
                    "hockney_intra".into(),
                    json!({"rms_rel": f.rms_rel, "relative": f.residuals}),
                );
                profile.hockney.intra = f.hockney;
            }
            Err(e) => pg.end(&format!("fit failed: {e}")),
        }
    } else if mpi.rank == 0 {
        skipped
            .push("intra-node ping-pong: no node holds two ranks (intra keeps the default)".into());
    }

    if let Some(h) = h_inter {
        // Penalty benchmark.
        let bytes = opts.penalty_bytes.unwrap_or_else(|| penalty_bytes(h.beta));
        let list = schemes_for(nnodes);
        let t_lone = h.time_bytes(bytes as f64);
        let arcs_total: usize = list.iter().map(|s| s.1.len()).sum();
        let mut reps = if q { 3 } else { 5 };
        // Keep a fifth of the budget for the all-to-all runs after this phase.
        let est = reps as f64 * t_lone * (arcs_total + 1) as f64;
        if over(&pg, est + 0.2 * opts.budget_s) {
            reps = 1;
        }
        pg.begin(&format!(
            "penalty schemes ({} schemes, {} KiB messages, {reps} rep(s))",
            list.len(),
            bytes / 1024
        ));
        let mut all_reps = Vec::new();
        let mut reps_now = reps;
        let mut scheme_bytes = Vec::new();
        // The hosts' interrupt time over the schemes, whose bytes between nodes are known.
        let machine = super::hostcpu::machine(&name);
        ctx.mpi.barrier(ctx.mpi.world);
        let cpu_before = crate::trace::read_host_cpu();
        let wall = Instant::now();
        let mut moved = 0u64;
        for (i, (name, arcs)) in list.iter().enumerate() {
            // The estimate above comes from the link model; a loaded or CPU-bound run can
            // be slower, so drop to one repetition once the budget is nearly used up.
            if i > 0 && reps_now > 1 && over(&pg, 0.2 * opts.budget_s) {
                reps_now = 1;
            }
            // T_ref is the denominator of every penalty: measure it twice as often. Opposite
            // messages are exchanged back to back (see `bench::exchange`), with messages well
            // above the socket buffer (which one of `bytes` can about fill), where the
            // coupling shows.
            let (r, b) = match (i, *name) {
                (0, _) => (2 * reps_now, bytes),
                (_, BIDIRECTIONAL) => (reps_now, 2 * bytes),
                _ => (reps_now, bytes),
            };
            let mut reps = if *name == BIDIRECTIONAL {
                // One exchange to line the pair up, then 2·r, each way.
                moved += (2 * u64::from(r.max(1)) + 1) * 2 * b as u64;
                bench::exchange(&ctx, arcs[0].0, arcs[0].1, b, r)
            } else {
                moved += u64::from(r.max(1)) * arcs.len() as u64 * b as u64;
                bench::scheme(&ctx, arcs, b, r)
            };
            if b != bytes {
                // In units of `bytes` (by the ping-pong's fit), so that T_ref stays the
                // denominator.
                let scale = t_lone / h.time_bytes(b as f64).max(1e-12);
                reps.iter_mut().flatten().for_each(|t| *t *= scale);
            }
            all_reps.push(reps);
            scheme_bytes.push(b);
        }
        ctx.mpi.barrier(ctx.mpi.world);
        let wall = wall.elapsed().as_secs_f64();
        let mine = cpu_before
            .zip(crate::trace::read_host_cpu())
            .map(|(before, after)| super::hostcpu::Reading {
                machine,
                before,
                after,
            });
        profile.host = super::hostcpu::cost(ctx.mpi, mine, moved, wall);
        if let Some(h) = profile.host {
            raw.insert(
                "host_irq".into(),
                json!({"bytes": moved, "wall_s": wall, "irq_s_per_byte": h.irq_s_per_byte}),
            );
        }
        // T_ref, the denominator of every penalty: the lone message's median repetition.
        let t_ref = bench::median(&mut all_reps[0].iter().map(|r| r[0]).collect::<Vec<_>>());
        let t_ref = t_ref.max(1e-12);
        // The lone message against the ping-pong's Hockney fit: both time the same link, so
        // they should agree; when they do not (a shaper's burst allowance, ranks sharing
        // cores, a link that changed speed), every penalty's denominator is suspect.
        let vs_pingpong = t_ref / t_lone.max(1e-12);
        if mpi.rank == 0 && !(0.9..=1.1).contains(&vs_pingpong) {
            notes.push(format!(
                "penalty: the lone {} KiB message took {vs_pingpong:.2} x the ping-pong's alpha + beta*m; the link was not steady between the two phases",
                bytes / 1024
            ));
        }
        // The scheme's penalty: when the last of its messages arrives (median over the
        // repetitions), over T_ref. TCP shares a port unfairly over short transfers, so
        // single arcs scatter more than the scheme as a whole.
        let whole: Vec<f64> = all_reps
            .iter()
            .map(|reps| {
                let mut last: Vec<f64> = reps.iter().map(|r| fit::last_arrival(r)).collect();
                bench::median(&mut last) / t_ref
            })
            .collect();
        // What the repetitions spread over: the smallest and largest of each scheme's
        // penalty (the lone message's too), so that a noisy link shows.
        let spread: Vec<(f64, f64)> = all_reps
            .iter()
            .map(|reps| {
                reps.iter()
                    .map(|r| fit::last_arrival(r) / t_ref)
                    .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                        (lo.min(x), hi.max(x))
                    })
            })
            .collect();
        // Each arc's penalty: the mean over the scheme's steady repetitions (see
        // `fit::steady_mean`); the stalled ones are named in a note.
        let mut stalled = Vec::new();
        let schemes: Vec<fit::SchemePenalties> = list
            .iter()
            .zip(&all_reps)
            .map(|((name, arcs), reps)| {
                let (penalties, dropped) = fit::steady_mean(reps, t_ref);
                if dropped > 0 {
                    stalled.push(format!("{name} {dropped} of {}", reps.len()));
                }
                fit::SchemePenalties {
                    name: name.to_string(),
                    arcs: arcs.iter().map(|&(s, d)| (s as u32, d as u32)).collect(),
                    penalties,
                }
            })
            .collect();
        if !stalled.is_empty() && mpi.rank == 0 {
            notes.push(format!(
                "penalty: repetitions left out of the model fits, their last arrival above {} x their scheme's best (TCP waited for a retransmission timeout): {}",
                fit::STEADY,
                stalled.join(", ")
            ));
        }
        let fitted: Vec<fit::SchemePenalties> = schemes
            .iter()
            .filter(|s| s.name != BIDIRECTIONAL && s.name != RING)
            .cloned()
            .collect();
        // How contended flows spread around their mean, from every scheme where messages
        // share a port or pay the through factor (`lone` shares nothing; `bidirectional`'s
        // two flows are timed as one exchange).
        let dispersion = fit::dispersion(
            &list
                .iter()
                .zip(&all_reps)
                .filter(|((name, _), _)| *name != "lone" && *name != BIDIRECTIONAL)
                .map(|(_, reps)| reps.as_slice())
                .collect::<Vec<_>>(),
        );
        let mut choice = fit::choose_penalty(&fitted);
        // The spread of the fits over resamples of the repetitions, and the model chosen
        // most often among them (one fit's choice hangs on a fraction of a point).
        let boot = fit::bootstrap_penalty(
            &list
                .iter()
                .zip(&all_reps)
                .filter(|((name, _), _)| *name != BIDIRECTIONAL && *name != RING)
                .map(|((name, arcs), reps)| fit::SchemeReps {
                    name,
                    arcs: arcs.iter().map(|&(s, d)| (s as u32, d as u32)).collect(),
                    reps,
                })
                .collect::<Vec<_>>(),
            t_ref,
            BOOTSTRAP_RESAMPLES,
            1,
        );
        if let Some(m) = boot.majority() {
            choice.model = m.to_string();
        }
        // The models' parameters need two contention schemes besides the lone message,
        // and the chosen model's slope must be pinned down by the repetitions.
        let slope = match choice.model.as_str() {
            "gige" => Some(("gige.beta", choice.gige.beta)),
            "infiniband" => Some(("infiniband.beta_s", choice.infiniband.beta_s)),
            _ => None,
        };
        let loose = slope.and_then(|(name, v)| {
            let (lo, hi) = boot.range(name)?;
            ((hi - lo) > MAX_SLOPE_SPREAD * v).then(|| format!("{name} {v:.2} [{lo:.2}-{hi:.2}]"))
        });
        if let Some(l) = &loose
            && mpi.rank == 0
        {
            skipped.push(format!(
                "penalty model parameters: {l} over {BOOTSTRAP_RESAMPLES} resamples of the repetitions, wider than {:.0} % of the value; the profile keeps the defaults",
                MAX_SLOPE_SPREAD * 100.0
            ));
        }
        let trusted = fitted.len() >= 3 && loose.is_none();
        if !trusted && mpi.rank == 0 {
            skipped.push(format!(
                "penalty model parameters: {} contention scheme(s), 2 needed; the profile keeps the defaults",
                fitted.len().saturating_sub(1)
            ));
        }
        // A scheme's last arrival, over T_ref, the median over its repetitions (NaN for a
        // scheme not run). The median, not the mean: one stalled repetition of five (a
        // ring step at 2.01 where the others took 1.16-1.24) made the mean 1.36, and hpcc
        // at 4 ranks 7.2 % over where the median (1.21) gave 1.7 %; over seven
        // calibrations the medians were 1.13-1.22 (through) and 2.00-2.03 (reverse).
        let median_last = |scheme: &str| {
            list.iter()
                .zip(&all_reps)
                .find(|((name, _), _)| *name == scheme)
                .map_or(f64::NAN, |(_, reps)| {
                    let mut last: Vec<f64> = reps.iter().map(|r| fit::last_arrival(r)).collect();
                    if last.is_empty() {
                        f64::NAN
                    } else {
                        bench::median(&mut last) / t_ref
                    }
                })
        };
        // Back-to-back exchanges; below 1 is the shaper's noise around a full-duplex port.
        // (Its times are in units of `bytes`: see the measurement.)
        let reverse = match median_last(BIDIRECTIONAL) {
            m if m.is_finite() => m.max(1.0),
            _ => 1.0,
        };
        // A message into a node that sends on: over TCP its acknowledgements queue behind
        // that node's outgoing data. The ring's last arrival: every rank waits for the
        // slowest flow at the next step (the median over every arc, 1.07-1.12 x in three
        // calibrations, left hpcc-4 11.7 % short).
        let through = match median_last(RING) {
            m if m.is_finite() => m.max(1.0),
            _ => 1.0,
        };
        let show: Vec<String> = schemes
            .iter()
            .skip(1)
            .zip(whole.iter().skip(1))
            .zip(spread.iter().skip(1))
            .map(|((s, w), (lo, hi))| {
                let p: Vec<String> = s.penalties.iter().map(|p| format!("{p:.2}")).collect();
                format!("{} {w:.2} [{lo:.2}-{hi:.2}] ({})", s.name, p.join("/"))
            })
            .collect();
        pg.end(&format!(
            "T_ref = {:.3} s [{:.2}-{:.2} x], {vs_pingpong:.2} x the ping-pong's; scheme [min-max over repetitions] (per-arc) penalties: {}; chosen model {} (in {} resamples of the repetitions: {}), {}; reverse-flow factor {reverse:.2}, through-flow factor {through:.2}; contended flows over their mean: {}",
            t_ref,
            spread[0].0,
            spread[0].1,
            show.join(", "),
            choice.model,
            boot.resamples,
            boot.wins
                .iter()
                .filter(|w| w.1 > 0)
                .map(|(m, k)| format!("{m} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
            fitted_params(&choice, &boot),
            dispersion.as_ref().map_or_else(
                || format!("fewer than {} samples", fit::DISPERSION_MIN_SAMPLES),
                |q| format!("10-90 % {:.2}-{:.2}, min {:.2}, max {:.2}", q[1], q[9], q[0], q[10])
            ),
        ));
        if let Some(h) = profile.host {
            eprintln!(
                "calibrate: the hosts' interrupts took {:.2} ns of CPU per byte sent between nodes ({} MB sent)",
                h.irq_s_per_byte * 1e9,
                h.bytes / 1_000_000
            );
        }
        raw.insert(
            "penalty".into(),
            json!({
                "bytes": bytes, "reps": reps, "t_ref_s": t_ref, "t_ref_over_pingpong": vs_pingpong,
                "schemes": list.iter().zip(&schemes).zip(&all_reps).zip(&whole).zip(&scheme_bytes).map(|(((((n, a), s), r), w), b)| json!({
                    "name": n, "arcs": a, "penalties": s.penalties,
                    "scheme_penalty": w, "reps_s": r, "bytes": b,
                })).collect::<Vec<Value>>(),
            }),
        );
        res.insert(
            "penalty".into(),
            json!({
                "mean_abs_rel_error_pct": choice.errors.iter().map(|(m, e)| (m.clone(), json!(e))).collect::<serde_json::Map<String, Value>>(),
                "chosen": choice.model,
                "stalled_repetitions": stalled,
                "bootstrap": boot,
                "written": trusted,
            }),
        );
        profile.penalty.reverse = reverse;
        profile.penalty.through = through;
        profile.penalty.dispersion = dispersion;
        // The ports' capacity from the fan schemes' best repetitions (stalls only slow a
        // port): what the replay never lets a port exceed.
        let fans: Vec<fit::FanReps> = schemes
            .iter()
            .zip(&all_reps)
            .map(|(s, r)| (s.arcs.as_slice(), r.as_slice()))
            .collect();
        profile.penalty.port_capacity = fit::port_capacity(&fans, t_ref);
        if trusted {
            profile.penalty = PenaltyParams {
                model: choice.model.clone(),
                gige: choice.gige,
                infiniband: choice.infiniband,
                ..profile.penalty.clone()
            };
        }

        // All-to-all signature.
        let n = nnodes as u64;
        let grid = if q {
            sizes(&[1024, 16384, 65536, 262144, 524288])
        } else {
            sizes(&[1024, 4096, 16384, 65536, 262144, 524288, 1048576])
        };
        // γ per size rests on the median of its repetitions: 21 below 1 MiB, 11 at 1 MiB
        // (quick: 5), the sizes taking turns. Over TCP the repetitions of one size fall in
        // two modes (at 256 KiB: 82-85 and 110-125 ms on 4 x 100 Mbit/s) and about one in
        // 40 stalls on a retransmission timeout (300-340 ms). The mean (2026-11-26 to 27)
        // let one stall decide a calibration (the demo's quick γ at 256 KiB 3.00 with two
        // of five runs stalled, 1.74-1.85 in the two before; four cp2k runs at 4 ranks,
        // each under four calibrations, 0.7-15.7 % per-rank error, 0.3-8.1 % with the
        // median, now that ranks wait for a CPU in the replay: docs/accuracy.md,
        // twenty-second session). With several ranks a node the mean (below).
        let mut reps: Vec<u32> = grid
            .iter()
            .map(|&m| match (q, m < 1 << 20) {
                (true, _) => 5,
                (false, true) => 21,
                (false, false) => 11,
            })
            .collect();
        let est: f64 = grid
            .iter()
            .zip(&reps)
            .map(|(&m, &r)| r as f64 * 3.0 * (n - 1) as f64 * h.time_bytes(m as f64))
            .sum();
        if over(&pg, est + 2.0) {
            reps.iter_mut().for_each(|r| *r = 1);
        }
        pg.begin(&format!(
            "all-to-all with {n} processes ({} sizes, {}-{} rep(s), in turns)",
            grid.len(),
            reps.iter().min().unwrap_or(&1),
            reps.iter().max().unwrap_or(&1)
        ));
        let runs = bench::alltoall(&ctx, &grid, &reps);
        // Eager below the limit MPI_T gave (the knee is measured later).
        let eager_now = profile.eager.and_then(|e| e.inter);
        let t: Vec<f64> = grid
            .iter()
            .zip(&runs)
            .map(|(&m, r)| bench::alltoall_time(m, eager_now, r, bench::Typical::Median))
            .collect();
        let samples: Vec<(u64, f64)> = grid.iter().map(|&s| s as u64).zip(t.clone()).collect();
        raw.insert(
            "alltoall".into(),
            json!({"procs": n, "bytes": grid, "seconds": t, "runs_s": runs, "eager_limit": eager_now}),
        );
        if n >= 2 {
            // γ per size as well: one γ does not fit TCP both below its eager limit (γ ≈ 1)
            // and above it.
            let (table, stalled) =
                crate::model::alltoall::GammaTable::from_samples(&h, n, &samples);
            if !stalled.is_empty() && mpi.rank == 0 {
                let sizes: Vec<String> = stalled
                    .iter()
                    .map(|m| format!("{} KiB", m / 1024))
                    .collect();
                notes.push(format!(
                    "all-to-all: {} left out of gamma per size (took longer than a larger size: the exchange stalled)",
                    sizes.join(", ")
                ));
            }
            let per_size = table.per_size();
            match fit::fit_alltoall(&h, n, &samples) {
                Ok(f) => {
                    pg.end(&format!(
                        "gamma = {:.3}, delta = {:.3} ms, M = {} B; gamma per size: {}",
                        f.signature.gamma,
                        f.signature.delta * 1e3,
                        f.signature.threshold,
                        per_size
                    ));
                    res.insert(
                        "alltoall".into(),
                        json!({"rms_rel": f.rms_rel, "relative": f.residuals, "thresholds_tried": f.tried}),
                    );
                    profile.alltoall = f.signature;
                }
                Err(e) => pg.end(&format!("fit failed: {e}")),
            }
            if table.0.len() >= 2 {
                profile.alltoall_gamma = table;
            }
        }

        // The all-to-all as launched, where nodes have several ranks: their flows share the
        // node's port, and the incasts stall TCP in some repetitions (cp2k at 8 ranks on 4
        // hosts: the slowest member of a 1 MB all-to-all left 1.2 s after the others in 63
        // of 613 exchanges). The mean of the slowest rank's time is what a run pays.
        if per_node > 1 && n >= 2 {
            let n_all = mpi.size as u64;
            // The leaders' sizes (`grid` above). A mean over stalls needs many runs: 15
            // (quick: 5), fewer where the budget is short, never under 5. Where a run is
            // short, up to three times as many: at 8 ranks on the emulated cluster a
            // third of the 64 KiB runs stalled (98-150 ms, or 266-321 ms), and γ at 64 KiB
            // came out 4.6, 5.6, 6.5 and 7.4 over four calibrations of 15 runs each.
            let per_rep: Vec<f64> = grid
                .iter()
                .map(|&m| 3.0 * (n_all - 1) as f64 * h.time_bytes(m as f64))
                .collect();
            let left = opts.budget_s - ctx.agreed(pg.elapsed()) - 2.0;
            let reps = fit::placed_reps(
                &per_rep,
                if q { 5 } else { 15 },
                if q { 2.0 } else { 6.0 },
                left,
            );
            let what = format!("all-to-all with all {n_all} ranks, {per_node} per node");
            if reps.is_empty() {
                pg.skip(&what, "time budget");
                skipped.push("alltoall_placed: time budget".into());
            } else {
                pg.begin(&format!(
                    "{what} ({} sizes, mean of {}-{})",
                    grid.len(),
                    reps.iter().min().unwrap_or(&0),
                    reps.iter().max().unwrap_or(&0)
                ));
                let t = bench::alltoall_world(&ctx, &grid, &reps);
                let (mean, med): (Vec<_>, Vec<_>) = grid
                    .iter()
                    .zip(&t)
                    .map(|(&m, v)| {
                        let mean = bench::alltoall_time(m, eager_now, v, bench::Typical::Mean);
                        ((m as u64, mean), (m as u64, bench::median(&mut v.clone())))
                    })
                    .unzip();
                raw.insert(
                    "alltoall_placed".into(),
                    json!({"procs": n_all, "per_node": per_node, "bytes": grid, "seconds": t, "eager_limit": eager_now}),
                );
                let (table, _) = crate::model::alltoall::GammaTable::from_samples(&h, n_all, &mean);
                let (by_median, _) =
                    crate::model::alltoall::GammaTable::from_samples(&h, n_all, &med);
                let per_size: Vec<String> = table
                    .0
                    .iter()
                    .map(|&(m, g)| {
                        let md = by_median.at(m).unwrap_or(f64::NAN);
                        format!("{} KiB {g:.2} ({md:.2})", m / 1024)
                    })
                    .collect();
                pg.end(&format!(
                    "gamma per size, mean, the best run below the eager limit (median): {}",
                    per_size.join(", ")
                ));
                if !table.is_empty() {
                    profile.alltoall_placed = vec![crate::profile::PlacedGamma {
                        procs: n_all,
                        per_node: per_node as u64,
                        gamma: table,
                    }];
                }
            }
        }

        // pLogP.
        let grid = if q {
            sizes(&[0, 16384, 65536])
        } else {
            sizes(&[0, 1024, 16384, 65536, 262144])
        };
        let reps = if q { 2 } else { 3 };
        // The streams, and the overhead exchanges with their waits (`bench::plogp`).
        let est: f64 = grid
            .iter()
            .map(|&m| {
                let t = h.time_bytes(m as f64);
                reps as f64 * (8.0 * t + bench::OR_REPS as f64 * (3.0 * t + 1e-3))
            })
            .sum();
        if over(&pg, est) {
            pg.skip("pLogP", "time budget");
            skipped.push("plogp: time budget".into());
        } else {
            pg.begin("pLogP (Kielmann: os, or, g by stream length)");
            let one_way: Vec<f64> = grid.iter().map(|&m| h.time_bytes(m as f64)).collect();
            let (rtt0, pts) =
                bench::plogp(&ctx, ctx.leaders[0], ctx.leaders[1], &grid, &one_way, reps);
            // The ping-pong phase measured the empty round trip more often: keep the best.
            let rtt0 = match pp_empty {
                Some(t) if t > 0.0 => rtt0.min(2.0 * t),
                _ => rtt0,
            };
            raw.insert("plogp".into(), json!({"rtt0_s": rtt0, "points": pts}));
            match fit::build_plogp(rtt0, &pts) {
                Ok((p, repaired)) => {
                    pg.end(&format!("L = {:.1} us", p.l * 1e6));
                    notes.extend(repaired);
                    if let Some(g) = fit::fit_upper_lower_gamma(&p, n, &samples) {
                        profile.upper_lower_gamma = Some(g);
                    }
                    profile.plogp = Some(p);
                }
                Err(e) => pg.end(&format!("fit failed: {e}")),
            }
        }

        // LOM.
        let lom_bytes = 65536usize;
        let sg: Vec<usize> = (1..=12).map(|i| i * 16384).collect();
        let est = 3.0 * (nnodes * nnodes) as f64 * 2.0 * h.time_bytes(lom_bytes as f64)
            + 2.0
                * 2.0
                * sg.iter()
                    .map(|&m| (n - 1) as f64 * h.time_bytes(m as f64))
                    .sum::<f64>();
        if q {
            pg.skip("LOM", "--quick");
            skipped.push("lom: --quick".into());
        } else if over(&pg, est) {
            pg.skip("LOM", "time budget");
            skipped.push("lom: time budget".into());
        } else {
            pg.begin("LOM (round trips, one-to-two, scatter/gather rows)");
            let ms = bench::lom(&ctx, lom_bytes, 3);
            let (sc, ga) = if nnodes >= 3 {
                bench::scatter_gather(&ctx, &sg, 2)
            } else {
                (Vec::new(), Vec::new())
            };
            raw.insert(
                "lom".into(),
                json!({"measurements": ms, "scatter": sc, "gather": ga}),
            );
            match fit::fit_lom(&ms) {
                Ok((mut lom, note)) => {
                    if let Some(n) = note {
                        notes.push(format!("lom: {n}"));
                    }
                    if !sc.is_empty() {
                        let peers: Vec<usize> = (1..nnodes).collect();
                        let th = fit::lom_thresholds(&lom, 0, &peers, &sc, &ga);
                        lom.scatter_threshold = th.scatter_threshold;
                        lom.gather_m1 = th.gather_m1;
                        lom.gather_m2 = th.gather_m2;
                        lom.kappa1 = th.kappa1;
                        lom.kappa2 = th.kappa2;
                    }
                    pg.end(&format!(
                        "S = {}",
                        lom.scatter_threshold
                            .map_or("-".into(), |s| format!("{s} B"))
                    ));
                    profile.lom = Some(lom);
                }
                Err(e) => pg.end(&format!("fit failed: {e}")),
            }
        }
    }

    // The eager limits, measured: where the library does not expose them (MPICH's ch4) and
    // where it does (Open MPI's limit counts its own header).
    let pair_inter = inter.then(|| (ctx.leaders[0], ctx.leaders[1]));
    if pair_inter.is_none() && intra.is_none() {
        // Nothing to probe.
    } else if over(&pg, 5.0) {
        pg.skip("eager limits", "time budget");
        skipped.push("eager limits (measured): time budget; MPI_T values kept".into());
    } else {
        pg.begin(&format!(
            "eager limits (late-receiver probe, {KNEE_LO} B - {} MiB)",
            KNEE_HI >> 20
        ));
        let search = |(a, b): (i32, i32)| {
            eager::find_knee(
                |bytes| bench::returns_early(&ctx, a, b, bytes as usize),
                KNEE_LO,
                KNEE_HI,
            )
        };
        let k_inter = pair_inter.map(search);
        let k_intra = intra.map(search);
        let mpit = profile.eager;
        let (line, e) = eager_measured(k_inter, k_intra, mpit, &eager.names);
        pg.end(&line);
        raw.insert(
            "eager_knee".into(),
            json!({
                "inter": k_inter.map(|k| format!("{k:?}")),
                "intra": k_intra.map(|k| format!("{k:?}")),
                "mpi_t": {"inter": mpit.and_then(|e| e.inter), "intra": mpit.and_then(|e| e.intra)},
                "probe_sleep_ms": bench::LATE_RECEIVER.as_millis() as u64,
            }),
        );
        profile.eager = e;
    }

    let wall = pg.elapsed();
    let tcp = super::tcp::finish(&ctx, tcp_before);
    if mpi.rank != 0 {
        return 0;
    }
    if let Some((v, line)) = tcp {
        eprintln!("calibrate: {line}");
        raw.insert("tcp".into(), v);
    }
    for n in &notes {
        eprintln!("calibrate: note: {n}");
    }
    raw.insert("skipped".into(), json!(skipped));
    raw.insert("notes".into(), json!(notes));
    raw.insert("wall_s".into(), json!(wall));
    profile.raw = Some(Value::Object(raw));
    profile.residuals = Some(Value::Object(res));
    if let Err(e) = profile.validate() {
        eprintln!("pmpi-predict: the fitted profile is invalid ({e}); not written");
        return crate::cli::EXIT_INTERNAL;
    }
    let tmp = opts.output.with_extension("json.tmp");
    let write = std::fs::write(&tmp, profile.to_json() + "\n")
        .and_then(|_| std::fs::rename(&tmp, &opts.output));
    if let Err(e) = write {
        eprintln!("pmpi-predict: cannot write {}: {e}", opts.output.display());
        return crate::cli::EXIT_IO;
    }
    eprintln!(
        "calibrate: wrote {} in {:.1} s (wall time)",
        opts.output.display(),
        wall
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_size_scales_with_link() {
        // 100 Mbit/s: ~1 MB, a lone message ~80 ms.
        let b = penalty_bytes(8.4e-8);
        assert!((900_000..1_100_000).contains(&b), "{b}");
        assert_eq!(
            penalty_bytes(8e-10) as f64,
            (20e6f64 / 65536.0).round() * 65536.0
        );
        assert_eq!(penalty_bytes(1.0), 262144);
    }

    #[test]
    fn schemes_by_node_count() {
        assert_eq!(schemes_for(2).len(), 2);
        assert_eq!(schemes_for(3).len(), 6);
        assert_eq!(schemes_for(4).len(), 10);
        assert_eq!(
            schemes_for(4)[9],
            (RING, vec![(0, 1), (1, 2), (2, 3), (3, 0)])
        );
        for n in 2..6 {
            let v = schemes_for(n);
            assert_eq!(v[0].0, "lone");
            assert_eq!(v[1], (BIDIRECTIONAL, vec![(0, 1), (1, 0)]));
            for (_, arcs) in v {
                assert!(arcs.iter().all(|&(s, d)| s < n && d < n && s != d));
            }
        }
    }

    #[test]
    fn date_format() {
        let d = utc_now();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20") && d.ends_with('Z'));
    }

    fn knee(eager: u64) -> Option<Knee> {
        Some(Knee::Found {
            eager,
            rendezvous: eager + 1,
        })
    }

    fn names() -> (String, String) {
        (
            "btl_tcp_eager_limit".to_string(),
            "btl_vader_eager_limit".to_string(),
        )
    }

    #[test]
    fn eager_limits_measured_win_over_mpi_t() {
        let mpit = Some(Eager {
            inter: Some(32768),
            intra: Some(4096),
            source: EagerSource::MpiT,
        });
        let (line, e) = eager_measured(knee(32712), knee(4040), mpit, &names());
        assert_eq!(
            line,
            "eager between nodes: up to 32712 B measured (MPI_T btl_tcp_eager_limit 32768); \
             within a node: up to 4040 B measured (MPI_T btl_vader_eager_limit 4096)"
        );
        assert_eq!(
            e,
            Some(Eager {
                inter: Some(32713),
                intra: Some(4041),
                source: EagerSource::Measured,
            })
        );
        // Rendezvous already at the smallest size probed: that size is the limit.
        let (_, e) = eager_measured(Some(Knee::RendezvousFrom(64)), None, mpit, &names());
        assert_eq!(e.and_then(|e| e.inter), Some(64));
    }

    #[test]
    fn eager_limits_without_a_knee_keep_mpi_t_or_stay_absent() {
        // Between nodes: no knee below the bound, MPI_T's value kept; within the node
        // measured. The source is `measured` as soon as one limit is.
        let mpit = Some(Eager {
            inter: Some(65536),
            intra: None,
            source: EagerSource::MpiT,
        });
        let (line, e) = eager_measured(Some(Knee::EagerUpTo(KNEE_HI)), knee(255), mpit, &names());
        assert!(
            line.starts_with(
                "eager between nodes: eager up to 4194304 B and beyond (MPI_T btl_tcp_eager_limit 65536)"
            ),
            "{line}"
        );
        assert!(
            line.ends_with("up to 255 B measured (MPI_T: not exposed)"),
            "{line}"
        );
        assert_eq!(
            e,
            Some(Eager {
                inter: Some(65536),
                intra: Some(256),
                source: EagerSource::Measured,
            })
        );
        // No knee and nothing from MPI_T (MPICH ch4): the limit stays absent, the engine's
        // default applies; with neither limit, no `eager` field at all.
        let (_, e) = eager_measured(Some(Knee::EagerUpTo(KNEE_HI)), knee(8254), None, &names());
        assert_eq!(
            e,
            Some(Eager {
                inter: None,
                intra: Some(8255),
                source: EagerSource::Measured,
            })
        );
        let (line, e) = eager_measured(Some(Knee::EagerUpTo(KNEE_HI)), None, None, &names());
        assert_eq!(e, None);
        assert!(
            line.ends_with("within a node: not measured (MPI_T: not exposed)"),
            "{line}"
        );
        // Nothing measured: MPI_T's values as read.
        let (_, e) = eager_measured(None, None, mpit, &names());
        assert_eq!(e, mpit);
    }
}
