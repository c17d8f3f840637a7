//! The calibration profile: every model's parameters in one versioned JSON file.
//!
//! Format (version 1), one JSON object; fields marked optional may be omitted:
//!
//! ```json
//! {
//!   "version": 1,
//!   "date": "2026-11-22T16:00:00Z",          // optional, free-form calibration date
//!   "mpi_library": "Open MPI v4.1.6",          // optional, MPI_Get_library_version
//!   "nodes": ["node0", "node1"],               // optional, node names by node id
//!   "hockney": {
//!     "inter": {"alpha": 5e-05, "beta": 8e-08},  // seconds, seconds per byte
//!     "intra": {"alpha": 1e-06, "beta": 2e-10}
//!   },
//!   "plogp": {"l": 5e-05, "g": [[0, 1e-06], [65536, 0.005]],   // optional; [bytes, s] tables
//!             "os": [[0, 5e-06]], "or": [[0, 5e-06]]},
//!   "lom": {"c": [...], "t": [...], "rate": [[...]], ...},     // optional, see model::Lom
//!   "penalty": {
//!     "model": "gige",                           // gige | myrinet | infiniband | maxmin
//!     "gige": {"beta": 0.75, "gamma_o": 0.115, "gamma_i": 0.036},
//!     "infiniband": {"beta_e": 0.965, "beta_s": 0.925, "gamma_r": 1.35},
//!     "myrinet": {"max_sets": 100000},
//!     "maxmin": {},
//!     "reverse": 2.0,                            // optional (default 1), see PenaltyParams
//!     "through": 1.1                             // optional (default 1), see PenaltyParams
//!   },
//!   "alltoall": {"gamma": 1.0195, "delta": 0.00823, "threshold": 2048},
//!   "alltoall_gamma": [[4096, 1.1], [65536, 2.2]], // optional, [bytes, γ] measured per size
//!   "alltoall_placed": [{"procs": 8, "per_node": 2,   // optional: γ per size measured over
//!                        "gamma": [[65536, 2.9]]}],   //   more ranks than nodes (mean)
//!   "latency_placed": [{"procs": 4, "per_node": 1, // optional: the latency between nodes
//!                       "alpha": 2.7e-5,           //   with every rank ping-ponging at once;
//!                       "step": 2.7e-5}],          //   optional: a collective's step, from an
//!                                                  //   8-byte MPI_Allreduce of all ranks
//!   "exchange": 3e-6,                          // optional (default 0): a small message's
//!                                              //   extra latency between nodes while the
//!                                              //   reverse one is under way (seconds)
//!   "cold_call": [[0.001, 1.5e-6], [0.02, 4.8e-5]], // optional, [gap s, extra s]: what
//!                                              //   a call between nodes costs beyond its
//!                                              //   model after that long outside MPI
//!   "upper_lower_gamma": 0.5,                  // optional, Table 3 ratio γ
//!   "socket_buffer": 262144,                   // optional, bytes (default 4 MiB)
//!   "socket_buffer_by_size": [[262144, 0]],    // optional, [bytes, left] per size measured
//!   "eager": {"inter": 65481, "intra": 4041,   // optional, each limit optional: the
//!             "source": "measured"},           //   smallest rendezvous message (bytes);
//!                                              //   source measured | mpi_t | user
//!                                              //   (measured: calibrate's late-receiver
//!                                              //   probe, the smallest blocking send that
//!                                              //   waits for a receive posted 20 ms late;
//!                                              //   MPI_T's values kept in raw.eager_knee)
//!   "raw": {...},                              // optional, free-form measurements
//!   "residuals": {...}                         // optional, free-form fit residuals
//! }
//! ```
//!
//! Unknown fields are errors (a typo must not silently fall back to a default); a file with
//! another `version` is refused with a message saying which versions this build reads.
//! docs/profile.md describes the same format for users.
#![forbid(unsafe_code)]

use std::path::Path;

use crate::error::Error;

use serde::{Deserialize, Serialize};

use crate::model::alltoall::{GammaTable, Signature};
use crate::model::plogp::PiecewiseLinear;
use crate::model::{
    GigabitEthernet, Hockney, InfiniBand, Lom, ModelError, ModelName, Myrinet, PLogP, PenaltyModel,
    penalty_model_by_name,
};

/// The profile format version this build reads and writes.
pub const PROFILE_VERSION: u32 = 1;

/// γ per size of an all-to-all over `procs` ranks with at most `per_node` on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacedGamma {
    pub procs: u64,
    pub per_node: u64,
    pub gamma: GammaTable,
}

/// The latency between nodes measured with every rank of a launch of `procs` ranks, at most
/// `per_node` on a node, ping-ponging at once (`calibrate`): where ranks share cores, a
/// small message waits for its receiver to be scheduled (the emulated cluster's 4 ranks on
/// 2 cores: 26-29 µs against 13 µs with two ranks alone).
///
/// `step`: the latency of one step of a collective between nodes in that launch, an 8-byte
/// `MPI_Allreduce` of every rank timed and divided by its ⌈log2 procs⌉ recursive-doubling
/// steps: every rank sends and receives at once, as in the collectives' steps (the
/// emulated cluster: 27 µs a step at 4 ranks, 57 µs at 8, where the ping-pong gave 21-25
/// and 36-62). Where present it is the latency of the collectives' formulas in such a
/// launch (not the all-to-all's, whose signature is measured as launched).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacedLatency {
    pub procs: u64,
    pub per_node: u64,
    pub alpha: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
}

/// A calibration profile. See the module documentation for the JSON format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_library: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    pub hockney: HockneyPair,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plogp: Option<PLogP>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lom: Option<Lom>,
    pub penalty: PenaltyParams,
    pub alltoall: Signature,
    /// γ measured per message size (calibrate); where present it replaces the signature's
    /// single γ and δ.
    #[serde(default, skip_serializing_if = "GammaTable::is_empty")]
    pub alltoall_gamma: GammaTable,
    /// γ per size measured with several ranks per node (`calibrate` launched with more
    /// ranks than nodes), from the mean of the slowest rank's time: where an all-to-all
    /// has as many members and at most as many per node, it replaces `alltoall_gamma` and
    /// the port-load scaling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alltoall_placed: Vec<PlacedGamma>,
    /// The latency between nodes with every rank of a launch active: where a run has as
    /// many ranks and at most as many on a node, it replaces `hockney.inter.alpha`
    /// ([`Profile::for_launch`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_placed: Vec<PlacedLatency>,
    /// What a small message between nodes takes beyond the latency while the reverse
    /// message between the same two ranks is under way (`calibrate`: the median 8-byte
    /// exchange of two ranks alone less the median one-way time of their ping-pong; the
    /// emulated cluster: +1.5 to +3.7 µs over twelve calibrations). Absent: 0. The
    /// replay adds it to both messages of such an exchange that cross in the latency
    /// ([`Hockney::in_latency`]; the emulated cluster's 256 B exchange cost 3-4 µs more
    /// than a one-way message, its 1 KiB exchange the shaper's rate) and to the step of a
    /// two-member collective whose members send to each other at once, where the launch
    /// measured no step of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<f64>,
    /// What a blocking call between nodes costs beyond its model when its rank spent
    /// `gap` seconds outside MPI before it, `[gap, extra]` in seconds, gaps increasing
    /// (`calibrate`: the median 8-byte blocking send after `gap` spent reading memory, four
    /// times the L2 cache, less the median back to back; the emulated cluster: +3.8 µs
    /// after 0.1 ms, +2.7 after 1, +23 after 5, +55 after 20, every call alike,
    /// `bench/cold_calls.c`). The replay interpolates from no extra
    /// at no gap and keeps the last entry beyond the table ([`Profile::cold_curve`]).
    /// Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cold_call: Vec<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_lower_gamma: Option<f64>,
    /// Bytes a blocking rendezvous send between nodes leaves in the kernel's socket buffer
    /// when it returns (measured by `calibrate`; absent: Linux's 4 MiB maximum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_buffer: Option<u64>,
    /// The same per size measured, `[bytes, left]`, sorted by size: a blocking send of
    /// `bytes` returned with `left` bytes still to cross (`bytes` where it returned before
    /// its transfer). A rendezvous send takes the entry of the smallest size at least its
    /// own, `socket_buffer` above them all: on the emulated cluster's 1 Gbit/s ports a
    /// 256 KiB send returned with nothing left, where a 1 MiB one left 118 KB, and
    /// LAMMPS's 87 KB sends took 612 µs, most of their transfer (calibrate measures it
    /// since the twenty-seventh session; empty: `socket_buffer` for every size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub socket_buffer_by_size: Vec<[u64; 2]>,
    /// The MPI library's eager limits (read by `calibrate` through MPI_T where the library
    /// exposes them); absent ones keep the library's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager: Option<Eager>,
    /// What moving bytes between nodes costs the hosts' CPUs (measured by `calibrate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostCost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<serde_json::Value>,
    /// The latency of a collective's step between nodes in the launch this profile was
    /// narrowed to ([`Profile::for_launch`], [`PlacedLatency::step`]); never read or
    /// written in JSON.
    #[serde(skip)]
    pub launch_step: Option<f64>,
    /// The latency between nodes this profile was calibrated with, where
    /// [`Profile::for_launch`] replaced it with the launch's: the α its all-to-all γ were
    /// solved with, which the signature must take to give back the times `calibrate`
    /// measured. Never read or written in JSON.
    #[serde(skip)]
    pub fitted_alpha: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residuals: Option<serde_json::Value>,
}

/// The hosts' CPU time spent in interrupts (the network's packets; on an emulated
/// cluster also its shapers' timers) per byte sent between nodes, summed over the
/// machines: taken out of the ranks' compute on the network it was measured on, and what
/// a what-if replay onto another network scales the recorded compute by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCost {
    /// Seconds of interrupt time per byte sent between nodes.
    pub irq_s_per_byte: f64,
    /// Bytes sent between nodes while it was measured.
    pub bytes: u64,
}

/// Eager limits (bytes) of the library the profile was calibrated on: a message of at
/// least the limit waits for its receive to be posted (rendezvous). A limit that is absent
/// keeps the default the engine knows for the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eager {
    /// Between nodes (Open MPI: `btl_tcp_eager_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter: Option<u64>,
    /// Within a node (Open MPI: `btl_vader_eager_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra: Option<u64>,
    /// Where the limits come from.
    #[serde(default)]
    pub source: EagerSource,
}

/// Where a profile's eager limits come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EagerSource {
    /// Read by `calibrate` from the library's MPI_T control variables.
    MpiT,
    /// Measured by `calibrate` (the knee of a late-receiver probe; where it measured only
    /// one of the limits, the other is the MPI_T value, see the profile's `raw.eager_knee`).
    Measured,
    /// Written by hand (the value of a profile that does not say).
    #[default]
    User,
}

/// MPI library families whose protocols differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryFamily {
    OpenMpi,
    Mpich,
}

impl LibraryFamily {
    /// The family named in an `MPI_Get_library_version` string, if known.
    pub fn of(library: &str) -> Option<LibraryFamily> {
        if library.contains("MPICH") {
            Some(LibraryFamily::Mpich)
        } else if library.contains("Open MPI") {
            Some(LibraryFamily::OpenMpi)
        } else {
            None
        }
    }
}

/// Hockney parameters between nodes (network) and within a node (shared memory).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HockneyPair {
    pub inter: Hockney,
    pub intra: Hockney,
}

/// The chosen penalty model and the parameters of every penalty model (so a profile can be
/// re-analysed under another model without recalibrating what it has).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PenaltyParams {
    pub model: String,
    #[serde(default)]
    pub gige: GigeParams,
    #[serde(default)]
    pub infiniband: InfinibandParams,
    #[serde(default)]
    pub myrinet: MyrinetParams,
    #[serde(default)]
    pub maxmin: MaxminParams,
    /// Factor on a flow's penalty while a flow runs the other way between the same two
    /// nodes, whatever the model (1: full-duplex ports, the papers' assumption and the
    /// value of a profile that does not say). `calibrate` measures it as the
    /// "bidirectional" scheme's penalty.
    #[serde(default = "one")]
    pub reverse: f64,
    /// Factor on a flow's penalty while its destination node sends to a third node (TCP's
    /// acknowledgements queue behind that node's outgoing data), whatever the model (1 where
    /// a profile does not say). `calibrate` measures it as the mean over the repetitions of
    /// its "ring" scheme (every node sends to the next) of the last arrival, over T_ref.
    #[serde(default = "one")]
    pub through: f64,
    /// What a node's port carries each way, in lone messages' worth (1: a lone message
    /// fills it, as over TCP on a shaped 100 Mbit/s port; the bandwidth-sharing paper's
    /// Gigabit Ethernet carries about 1.33). The replay never lets the flows through a
    /// port move more than this, whatever the model's penalties. `calibrate` measures it
    /// from the one-to-many and many-to-one schemes; absent: ports are not capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_capacity: Option<f64>,
    /// How a contended flow's time spreads around the model's: quantiles, at evenly spaced
    /// probabilities from 0 to 1, of each contended message's time over its mean (TCP
    /// shares a port unfairly, and which flow gets ahead changes from one exchange to the
    /// next). The replay draws each contended flow's factor from it, so that the ranks
    /// whose flows lost wait for the others at the next dependency, as in the run.
    /// `calibrate` measures it over the contention schemes' steady repetitions; absent:
    /// every flow takes the model's share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispersion: Option<Vec<f64>>,
}

fn one() -> f64 {
    1.0
}

/// Gigabit Ethernet penalty parameters (defaults: the paper's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GigeParams {
    pub beta: f64,
    pub gamma_o: f64,
    pub gamma_i: f64,
}

impl Default for GigeParams {
    fn default() -> Self {
        let d = GigabitEthernet::default();
        GigeParams {
            beta: d.beta,
            gamma_o: d.gamma_o,
            gamma_i: d.gamma_i,
        }
    }
}

/// InfiniBand penalty parameters (defaults: SimGrid's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfinibandParams {
    pub beta_e: f64,
    pub beta_s: f64,
    pub gamma_r: f64,
}

impl Default for InfinibandParams {
    fn default() -> Self {
        let d = InfiniBand::default();
        InfinibandParams {
            beta_e: d.beta_e,
            beta_s: d.beta_s,
            gamma_r: d.gamma_r,
        }
    }
}

/// Myrinet model settings: the exact-enumeration bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MyrinetParams {
    pub max_sets: u64,
}

impl Default for MyrinetParams {
    fn default() -> Self {
        MyrinetParams {
            max_sets: Myrinet::default().max_sets,
        }
    }
}

/// Max-min fair sharing has no parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxminParams {}

impl PenaltyParams {
    /// Parameters of `model` as `(name, value)` pairs for [`penalty_model_by_name`].
    pub fn params_of(&self, model: &str) -> Vec<(String, f64)> {
        let p = |n: &str, v: f64| (n.to_string(), v);
        match model {
            "gige" => vec![
                p("beta", self.gige.beta),
                p("gamma_o", self.gige.gamma_o),
                p("gamma_i", self.gige.gamma_i),
            ],
            "infiniband" => vec![
                p("beta_e", self.infiniband.beta_e),
                p("beta_s", self.infiniband.beta_s),
                p("gamma_r", self.infiniband.gamma_r),
            ],
            "myrinet" => vec![p("max_sets", self.myrinet.max_sets as f64)],
            _ => Vec::new(),
        }
    }
}

impl Profile {
    /// The profile used when none is given: a 100 Mbit/s-class switched Ethernet cluster.
    /// Inter-node Hockney α = 50 µs, β = 8.0e-8 s/B (12.5 MB/s, 100 Mbit/s line rate);
    /// intra-node α = 1 µs, β = 2e-10 s/B (5 GB/s shared-memory copy): round, typical
    /// figures, not a measurement. Penalty: Gigabit Ethernet with the bandwidth-sharing
    /// paper's β = 0.75, γo = 0.115, γi = 0.036 (TCP behaves alike at both speeds).
    /// All-to-all signature: the Fast Ethernet one measured in
    /// alltoall-contention-signature.txt (γ = 1.0195, δ = 8.23 ms for m ≥ 2 kB).
    /// No pLogP tables: collectives use [`PLogP::from_hockney`].
    pub fn builtin_default() -> Profile {
        Profile {
            version: PROFILE_VERSION,
            date: None,
            mpi_library: None,
            nodes: Vec::new(),
            hockney: HockneyPair {
                inter: Hockney {
                    alpha: 50e-6,
                    beta: 8.0e-8,
                    burst: 0.0,
                    burst_gamma: 0.0,
                },
                intra: Hockney {
                    alpha: 1e-6,
                    beta: 2e-10,
                    burst: 0.0,
                    burst_gamma: 0.0,
                },
            },
            plogp: None,
            lom: None,
            penalty: PenaltyParams {
                model: "gige".into(),
                gige: GigeParams::default(),
                infiniband: InfinibandParams::default(),
                myrinet: MyrinetParams::default(),
                maxmin: MaxminParams::default(),
                reverse: 1.0,
                through: 1.0,
                port_capacity: None,
                dispersion: None,
            },
            alltoall: Signature {
                gamma: 1.0195,
                delta: 8.23e-3,
                threshold: 2048,
            },
            alltoall_gamma: GammaTable::default(),
            alltoall_placed: Vec::new(),
            latency_placed: Vec::new(),
            exchange: None,
            cold_call: Vec::new(),
            upper_lower_gamma: None,
            socket_buffer: None,
            socket_buffer_by_size: Vec::new(),
            eager: None,
            host: None,
            raw: None,
            launch_step: None,
            fitted_alpha: None,
            residuals: None,
        }
    }

    /// Reads and validates a profile. Errors name the file and the problem (with line and
    /// column for malformed JSON): malformed content is bad input, a file that cannot be
    /// read for another reason than its absence is I/O.
    pub fn load(path: impl AsRef<Path>) -> Result<Profile, Error> {
        let path = path.as_ref();
        let text = Error::read_text(path, "read profile")?;
        Profile::from_json(&text).map_err(|e| match e {
            Error::Input(m) => Error::Input(format!("profile {}: {m}", path.display())),
            e => e,
        })
    }

    /// Parses and validates a profile from JSON text; every error is bad input.
    pub fn from_json(text: &str) -> Result<Profile, Error> {
        let bad = Error::Input;
        // Check the version before the fields, so a newer file gets the right message.
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        match v.get("version").and_then(|x| x.as_u64()) {
            Some(x) if x == PROFILE_VERSION as u64 => {}
            Some(x) => {
                return Err(bad(format!(
                    "version {x} is not supported (this build reads version {PROFILE_VERSION})"
                )));
            }
            None => return Err(bad("missing or non-integer \"version\" field".into())),
        }
        let p: Profile = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
        p.validate().map_err(|e| bad(e.to_string()))?;
        Ok(p)
    }

    /// Serialises as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks every model's parameters.
    pub fn validate(&self) -> Result<(), ModelError> {
        self.hockney.inter.validate()?;
        self.hockney.intra.validate()?;
        if let Some(p) = &self.plogp {
            p.validate()?;
        }
        if let Some(l) = &self.lom {
            l.validate()?;
        }
        self.alltoall.validate()?;
        self.alltoall_gamma.validate()?;
        for p in &self.alltoall_placed {
            if p.procs < 2 || p.per_node < 1 || p.per_node > p.procs || p.gamma.is_empty() {
                return Err(ModelError::BadTable {
                    name: "alltoall_placed".into(),
                    why: format!(
                        "procs {} / per_node {}: needs procs >= 2, 1 <= per_node <= procs and a gamma table",
                        p.procs, p.per_node
                    ),
                });
            }
            p.gamma.validate()?;
        }
        for p in &self.latency_placed {
            if p.procs < 2 || p.per_node < 1 || p.per_node > p.procs {
                return Err(ModelError::BadTable {
                    name: "latency_placed".into(),
                    why: format!(
                        "procs {} / per_node {}: needs procs >= 2 and 1 <= per_node <= procs",
                        p.procs, p.per_node
                    ),
                });
            }
            crate::model::positive("latency_placed.alpha", p.alpha)?;
            if let Some(step) = p.step {
                crate::model::positive("latency_placed.step", step)?;
            }
        }
        if let Some(g) = self.upper_lower_gamma {
            crate::model::non_negative("upper_lower_gamma", g)?;
        }
        if let Some(x) = self.exchange {
            crate::model::non_negative("exchange", x)?;
        }
        let mut last = 0.0;
        for &[gap, extra] in &self.cold_call {
            if !(gap.is_finite() && gap > last && extra.is_finite() && extra >= 0.0) {
                return Err(ModelError::BadTable {
                    name: "cold_call".into(),
                    why: format!(
                        "[{gap}, {extra}]: needs finite gaps > 0 in increasing order and finite extras >= 0"
                    ),
                });
            }
            last = gap;
        }
        for (name, r) in [
            ("penalty.reverse", self.penalty.reverse),
            ("penalty.through", self.penalty.through),
        ] {
            if !(r.is_finite() && r >= 1.0) {
                return Err(ModelError::BadParam {
                    name: name.into(),
                    value: r,
                    why: "must be a finite factor >= 1",
                });
            }
        }
        if let Some(q) = &self.penalty.dispersion
            && !crate::replay::net::valid_dispersion(q)
        {
            return Err(ModelError::BadTable {
                name: "penalty.dispersion".into(),
                why: "needs at least 2 positive, finite, non-decreasing quantiles".into(),
            });
        }
        // Every parameter set must build, not only the chosen model's.
        for m in ModelName::ALL.map(ModelName::as_str) {
            penalty_model_by_name(m, &self.penalty.params_of(m)).map_err(|why| {
                ModelError::BadTable {
                    name: format!("penalty.{m}"),
                    why,
                }
            })?;
        }
        self.penalty_model().map(|_| ())
    }

    /// [`Profile::cold_call`] as a function of the gap (none without a table): linear
    /// between the entries, from no extra at no gap, the last entry's beyond them (a flat
    /// segment after it, where [`PiecewiseLinear`] would extend the last slope).
    pub fn cold_curve(&self) -> Option<PiecewiseLinear> {
        let &[last_gap, last] = self.cold_call.last()?;
        let mut points = vec![(0.0, 0.0)];
        points.extend(self.cold_call.iter().map(|e| (e[0], e[1])));
        points.push((last_gap + 1.0, last));
        Some(PiecewiseLinear { points })
    }

    /// The chosen penalty model with this profile's parameters.
    pub fn penalty_model(&self) -> Result<Box<dyn PenaltyModel>, ModelError> {
        let m = &self.penalty.model;
        penalty_model_by_name(m, &self.penalty.params_of(m)).map_err(|why| ModelError::BadTable {
            name: "penalty.model".into(),
            why,
        })
    }

    /// The all-to-all signature measured with `n` ranks and at most `per_node` on a node,
    /// at `m` bytes per message, if the profile has that placement
    /// ([`Profile::alltoall_placed`]).
    pub fn alltoall_placed_at(&self, n: u64, per_node: u64, m: u64) -> Option<Signature> {
        let p = self
            .alltoall_placed
            .iter()
            .find(|p| p.procs == n && p.per_node == per_node)?;
        p.gamma.at(m).map(|gamma| Signature {
            gamma,
            delta: 0.0,
            threshold: u64::MAX,
        })
    }

    /// The latency as launched that a run of `procs` ranks with at most `per_node` on a
    /// node takes: the one measured so launched, else the one measured with as many ranks
    /// and the nearest count per node (the fewer of two as near), else none. As many
    /// ranks active load the hosts alike: OpenFOAM's and ScaLAPACK's 4-rank runs replayed
    /// from 4 hosts onto 2 with the two-rank ping-pong's α came out 27.5 and 13.1 % short
    /// of the real runs on 2 hosts; with the 4 ranks' latency as launched on 4 hosts,
    /// +6.1 and −7.8 % (docs/accuracy.md, twenty-fifth session).
    /// Two ranks one a node are the ping-pong's own launch: its α unless measured again.
    pub fn launch_latency(&self, procs: u64, per_node: u64) -> Option<&PlacedLatency> {
        let same = self.latency_placed.iter().filter(|p| p.procs == procs);
        if (procs, per_node) == (2, 1) {
            return same.into_iter().find(|p| p.per_node == 1);
        }
        same.min_by_key(|p| (p.per_node.abs_diff(per_node), p.per_node))
    }

    /// What a user should know about how this profile fits a launch of `procs` ranks with
    /// at most `per_node` on a node: a latency as launched taken from another count per
    /// node or missing where the profile has others, and ranks sharing a node where the
    /// calibration had none (the path within a node is then the built-in default).
    pub fn launch_notes(&self, procs: u64, per_node: u64) -> Vec<String> {
        let mut notes = Vec::new();
        let per = |k: u64| {
            if k == 1 {
                "1 a node".to_string()
            } else {
                format!("{k} a node")
            }
        };
        match self.launch_latency(procs, per_node) {
            Some(l) if l.per_node != per_node => notes.push(format!(
                "the profile has no latency measured as launched with {procs} ranks, {}: the one with {procs} ranks, {} is taken (calibrate launched as the ranks are placed to measure it)",
                per(per_node),
                per(l.per_node)
            )),
            None if !self.latency_placed.is_empty() && (procs, per_node) != (2, 1) => {
                let have: Vec<String> = self
                    .latency_placed
                    .iter()
                    .map(|l| format!("{} ranks, {}", l.procs, per(l.per_node)))
                    .collect();
                notes.push(format!(
                    "the profile has no latency measured as launched with {procs} ranks (it has {}): the two-rank ping-pong's is taken",
                    have.join("; ")
                ));
            }
            _ => {}
        }
        // A calibration with one rank a node keeps the default's path within a node.
        let intra_default = self.hockney.intra == Profile::builtin_default().hockney.intra;
        if per_node >= 2 && intra_default && self.raw.is_some() {
            notes.push(format!(
                "ranks share nodes ({}) but the profile's calibration had one rank a node: messages within a node take the built-in default path (calibrate with two ranks on a node to measure it)",
                per(per_node)
            ));
        }
        notes
    }

    /// The profile a run of `procs` ranks with at most `per_node` on a node is predicted
    /// with: the latency between nodes as launched ([`Profile::launch_latency`]) where the
    /// profile has one for as many ranks, else this profile.
    pub fn for_launch(&self, procs: u64, per_node: u64) -> std::borrow::Cow<'_, Profile> {
        match self.launch_latency(procs, per_node) {
            Some(p) => {
                let mut q = self.clone();
                q.fitted_alpha = Some(self.sig_alpha());
                q.hockney.inter.alpha = p.alpha;
                q.launch_step = p.step;
                std::borrow::Cow::Owned(q)
            }
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The latency between nodes the all-to-all's γ were solved with (`calibrate` solves
    /// them with the two-rank ping-pong's α, not the latency as launched).
    pub fn sig_alpha(&self) -> f64 {
        self.fitted_alpha.unwrap_or(self.hockney.inter.alpha)
    }

    /// The Hockney parameters between nodes that the all-to-all's signature takes: the
    /// link's, with [`Profile::sig_alpha`].
    pub fn sig_hockney(&self) -> Hockney {
        Hockney {
            alpha: self.sig_alpha(),
            ..self.hockney.inter
        }
    }

    /// The all-to-all signature at `m` bytes per message: with a measured γ per size, that
    /// γ (interpolated) and no δ; otherwise the fitted signature.
    pub fn alltoall_at(&self, m: u64) -> Signature {
        match self.alltoall_gamma.at(m) {
            Some(gamma) => Signature {
                gamma,
                delta: 0.0,
                threshold: u64::MAX,
            },
            None => self.alltoall,
        }
    }

    /// Hockney parameters for a message within one node (`same_node`) or between nodes.
    pub fn hockney_for(&self, same_node: bool) -> Hockney {
        if same_node {
            self.hockney.intra
        } else {
            self.hockney.inter
        }
    }

    /// Contention-free reference time T_ref of one message of `bytes` bytes. Intra-node
    /// messages use the shared-memory parameters and never get a network penalty.
    pub fn reference_time(&self, same_node: bool, bytes: u64) -> f64 {
        self.hockney_for(same_node).time_bytes(bytes as f64)
    }

    /// The eager limits that apply to a run on `library` (its `MPI_Get_library_version`
    /// string): this profile's, when it was calibrated on the same library family or names
    /// no library; None when it names another family (its limits say nothing about this
    /// library) or has none.
    pub fn eager_for(&self, library: &str) -> Option<Eager> {
        let e = self.eager?;
        self.measured_on(LibraryFamily::of(library)).then_some(e)
    }

    /// Whether what this profile measured of its MPI library's transport holds for a run
    /// on a library of `family`: a profile that names no library holds for any run; one
    /// that names a library, for runs on the same known family.
    pub fn measured_on(&self, family: Option<LibraryFamily>) -> bool {
        match self.mpi_library.as_deref() {
            None => true,
            Some(mine) => {
                let f = LibraryFamily::of(mine);
                f.is_some() && f == family
            }
        }
    }

    /// The pLogP parameters: the calibrated tables, or the inter-node Hockney view.
    pub fn plogp_or_hockney(&self) -> PLogP {
        self.plogp
            .clone()
            .unwrap_or_else(|| PLogP::from_hockney(&self.hockney.inter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_all_to_all_is_found_by_members_and_ranks_per_node() {
        let mut p = Profile::builtin_default();
        p.alltoall_placed = vec![PlacedGamma {
            procs: 8,
            per_node: 2,
            gamma: GammaTable(vec![(65536, 4.0), (1 << 20, 2.0)]),
        }];
        p.validate().unwrap();
        let q = Profile::from_json(&p.to_json()).unwrap();
        assert_eq!(p, q);
        assert_eq!(p.alltoall_placed_at(8, 2, 65536).unwrap().gamma, 4.0);
        // Halfway in log m between the two sizes.
        assert!((p.alltoall_placed_at(8, 2, 1 << 18).unwrap().gamma - 3.0).abs() < 1e-12);
        assert!(p.alltoall_placed_at(8, 1, 65536).is_none());
        assert!(p.alltoall_placed_at(16, 2, 65536).is_none());
        // The latency as launched: a run of as many ranks, as many per node, takes it.
        p.latency_placed = vec![PlacedLatency {
            procs: 8,
            per_node: 2,
            alpha: 3e-5,
            step: Some(6e-5),
        }];
        assert_eq!(p.for_launch(8, 2).hockney.inter.alpha, 3e-5);
        assert_eq!(p.for_launch(8, 2).launch_step, Some(6e-5));
        // The all-to-all's γ keep the α they were solved with.
        assert_eq!(p.for_launch(8, 2).sig_alpha(), p.hockney.inter.alpha);
        assert_eq!(p.sig_alpha(), p.hockney.inter.alpha);
        // As many ranks, another count per node: the nearest measured.
        assert_eq!(p.for_launch(8, 1).launch_step, Some(6e-5));
        assert_eq!(p.for_launch(8, 1).hockney.inter.alpha, 3e-5);
        // The step survives JSON; the narrowed profile's own field never goes there.
        let json = serde_json::to_string(&*p.for_launch(8, 2)).unwrap();
        assert!(!json.contains("launch_step"), "{json}");
        let back: Profile = serde_json::from_str(&json).unwrap();
        assert_eq!(back.latency_placed[0].step, Some(6e-5));
        assert_eq!(back.launch_step, None);
        // Another count of ranks: none.
        assert_eq!(
            p.for_launch(16, 2).hockney.inter.alpha,
            p.hockney.inter.alpha
        );
        assert!(matches!(p.for_launch(4, 1), std::borrow::Cow::Borrowed(_)));
        // Of several for as many ranks, the nearest count per node, the fewer on a tie.
        let with = |k: u64, alpha: f64| PlacedLatency {
            procs: 8,
            per_node: k,
            alpha,
            step: None,
        };
        let mut q = p.clone();
        q.latency_placed = vec![with(4, 4e-5), with(1, 1e-5), with(2, 2e-5)];
        assert_eq!(q.launch_latency(8, 2).unwrap().alpha, 2e-5);
        assert_eq!(q.launch_latency(8, 3).unwrap().alpha, 2e-5);
        assert_eq!(q.launch_latency(8, 8).unwrap().alpha, 4e-5);
        assert!(q.launch_latency(4, 1).is_none());
        // Two ranks one a node: the ping-pong's launch, whatever else was measured.
        q.latency_placed.push(PlacedLatency {
            procs: 2,
            per_node: 2,
            alpha: 5e-5,
            step: None,
        });
        assert!(q.launch_latency(2, 1).is_none());
        assert!(q.launch_notes(2, 1).is_empty());
        assert_eq!(q.launch_latency(2, 2).unwrap().alpha, 5e-5);
        q.latency_placed.pop();
        // What a user is told.
        assert!(q.launch_notes(8, 2).is_empty());
        let n = q.launch_notes(8, 3);
        assert_eq!(n.len(), 1);
        assert!(
            n[0].contains("8 ranks, 3 a node") && n[0].contains("8 ranks, 2 a node"),
            "{n:?}"
        );
        let n = q.launch_notes(4, 1);
        assert!(
            n[0].contains("with 4 ranks (it has 8 ranks, 4 a node;"),
            "{n:?}"
        );
        // A calibrated profile (it keeps its measurements) with the default's path
        // within a node: said where ranks share a node; a measured path or the built-in
        // default profile itself, not.
        q.raw = Some(serde_json::json!({"skipped": [
            "intra-node ping-pong: no node holds two ranks (intra keeps the default)"]}));
        assert_eq!(q.launch_notes(8, 2).len(), 1);
        assert!(q.launch_notes(8, 2)[0].contains("built-in default path"));
        assert!(q.launch_notes(8, 1).is_empty());
        q.hockney.intra = Hockney::new(20e-6, 1e-9).unwrap();
        assert!(q.launch_notes(8, 2).is_empty());
        assert!(Profile::builtin_default().launch_notes(4, 2).is_empty());
        p.validate().unwrap();
        p.latency_placed[0].alpha = 0.0;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("latency_placed"), "{e}");
        p.latency_placed[0].alpha = 3e-5;
        p.latency_placed[0].step = Some(-1e-6);
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("latency_placed.step"), "{e}");
        p.latency_placed[0].step = None;
        p.latency_placed[0].per_node = 9;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("latency_placed"), "{e}");
        p.latency_placed.clear();
        p.alltoall_placed[0].per_node = 9;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("alltoall_placed"), "{e}");
    }

    #[test]
    fn default_round_trips() {
        let p = Profile::builtin_default();
        p.validate().unwrap();
        let q = Profile::from_json(&p.to_json()).unwrap();
        assert_eq!(p, q);
    }

    #[test]
    fn version_and_unknown_fields() {
        let mut v: serde_json::Value =
            serde_json::from_str(&Profile::builtin_default().to_json()).unwrap();
        v["version"] = 2.into();
        let e = Profile::from_json(&v.to_string()).unwrap_err();
        assert!(e.to_string().contains("version 2"), "{e}");
        v["version"] = 1.into();
        v["hockney"]["inter"]["alfa"] = 1.0.into();
        let e = Profile::from_json(&v.to_string()).unwrap_err();
        assert!(e.to_string().contains("alfa"), "{e}");
    }

    #[test]
    fn docs_example_loads() {
        let md = include_str!("../../../docs/profile.md");
        let start = md.find("```json").unwrap() + "```json".len();
        let end = start + md[start..].find("```").unwrap();
        let p = Profile::from_json(&md[start..end]).unwrap();
        assert_eq!(p.penalty.gige.beta, 0.75);
        assert!(p.plogp.is_some());
        assert_eq!(
            p.eager,
            Some(Eager {
                inter: Some(65536),
                intra: Some(4096),
                source: EagerSource::MpiT
            })
        );
    }

    #[test]
    fn eager_round_trips_and_defaults_to_user() {
        let mut p = Profile::builtin_default();
        p.eager = Some(Eager {
            inter: Some(32768),
            intra: None,
            source: EagerSource::MpiT,
        });
        let j = p.to_json();
        assert!(j.contains("\"source\": \"mpi_t\""), "{j}");
        assert!(!j.contains("intra\": null"), "{j}");
        assert_eq!(Profile::from_json(&j).unwrap(), p);
        let mut v: serde_json::Value = serde_json::from_str(&j).unwrap();
        v["eager"] = serde_json::json!({"intra": 2048});
        let q = Profile::from_json(&v.to_string()).unwrap();
        assert_eq!(
            q.eager,
            Some(Eager {
                inter: None,
                intra: Some(2048),
                source: EagerSource::User
            })
        );
        v["eager"] = serde_json::json!({"inter": 1, "knee": 2});
        let e = Profile::from_json(&v.to_string()).unwrap_err();
        assert!(e.to_string().contains("knee"), "{e}");
        v["eager"] = serde_json::json!({"inter": 1, "source": "guess"});
        assert!(Profile::from_json(&v.to_string()).is_err());
    }

    #[test]
    fn eager_applies_to_the_same_family_only() {
        let e = Eager {
            inter: Some(32768),
            intra: None,
            source: EagerSource::MpiT,
        };
        let mut p = Profile::builtin_default();
        p.eager = Some(e);
        // No library named: the limits apply to any run.
        assert_eq!(p.eager_for("MPICH Version:\t4.0.2"), Some(e));
        p.mpi_library = Some("Open MPI v4.1.6, package: Debian OpenMPI".into());
        assert_eq!(p.eager_for("Open MPI v4.1.2"), Some(e));
        assert_eq!(p.eager_for("MPICH Version:\t4.0.2"), None);
        assert_eq!(p.eager_for(""), None);
        p.mpi_library = Some("MPICH Version:\t4.0.2".into());
        assert_eq!(p.eager_for("MPICH Version:\t3.4"), Some(e));
        assert_eq!(p.eager_for("Open MPI v4.1.6"), None);
        p.mpi_library = Some("Some MPI 1.0".into());
        assert_eq!(p.eager_for("Some MPI 1.0"), None);
        p.eager = None;
        assert_eq!(p.eager_for("MPICH Version:\t3.4"), None);
        // What a profile measured of its library's transport holds for runs on that family.
        assert!(!p.measured_on(LibraryFamily::of("Some MPI 1.0")));
        p.mpi_library = Some("MPICH Version:\t4.0.2".into());
        assert!(p.measured_on(LibraryFamily::of("MPICH Version:\t4.0")));
        assert!(!p.measured_on(LibraryFamily::of("Open MPI v4.1.4")));
        assert!(!p.measured_on(None));
        p.mpi_library = None;
        assert!(p.measured_on(None) && p.measured_on(Some(LibraryFamily::OpenMpi)));
    }

    #[test]
    fn bad_values_rejected() {
        let mut p = Profile::builtin_default();
        p.hockney.inter.beta = -1.0;
        assert!(Profile::from_json(&p.to_json()).is_err());
        let mut p = Profile::builtin_default();
        p.penalty.model = "token-ring".into();
        let e = Profile::from_json(&p.to_json()).unwrap_err();
        assert!(e.to_string().contains("token-ring"), "{e}");
        assert_eq!(e.exit_code(), 2);
        // The dispersion's quantiles: at least 2, positive, non-decreasing.
        for bad in [
            vec![1.0],
            vec![1.2, 0.9],
            vec![0.0, 1.0],
            vec![1.0, f64::NAN],
        ] {
            let mut p = Profile::builtin_default();
            p.penalty.dispersion = Some(bad.clone());
            let e = p.validate().unwrap_err();
            assert!(e.to_string().contains("penalty.dispersion"), "{bad:?}: {e}");
        }
        let mut p = Profile::builtin_default();
        p.penalty.dispersion = Some(vec![0.6, 1.0, 1.4]);
        let back = Profile::from_json(&p.to_json()).unwrap();
        assert_eq!(back.penalty.dispersion, Some(vec![0.6, 1.0, 1.4]));
        // The cold-call table: gaps > 0 increasing, extras finite and >= 0.
        for bad in [
            vec![[0.0, 1e-6]],
            vec![[2e-3, 1e-6], [1e-3, 2e-6]],
            vec![[1e-3, -1e-6]],
            vec![[1e-3, f64::INFINITY]],
        ] {
            let mut p = Profile::builtin_default();
            p.cold_call = bad.clone();
            let e = p.validate().unwrap_err();
            assert!(e.to_string().contains("cold_call"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn cold_call_round_trips_and_interpolates_from_no_gap() {
        let mut p = Profile::builtin_default();
        assert!(!p.to_json().contains("cold_call"));
        p.cold_call = vec![[1e-3, 1e-4], [2e-2, 1e-3]];
        let back = Profile::from_json(&p.to_json()).unwrap();
        assert_eq!(back.cold_call, p.cold_call);
        let t = back.cold_curve().unwrap();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert_eq!(t.eval(0.0), 0.0);
        assert!(near(t.eval(5e-4), 5e-5));
        assert!(near(t.eval(1e-3), 1e-4));
        assert!(near(t.eval(1.05e-2), 1e-4 + 0.5 * 9e-4));
        assert!(near(t.eval(0.5), 1e-3));
        assert!(near(t.eval(5.0), 1e-3));
        assert!(Profile::builtin_default().cold_curve().is_none());
    }
}
