//! The trace format shared by the recorder, `analyze` and the engine: the fixed-size
//! record, the per-rank spool file and its JSON metadata.

pub mod arcs;
pub mod netstat;
pub mod order;

pub use arcs::{ARC_CALL, CallArcs};

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// `peer`/`root` value where the call has none.
pub const NO_RANK: i32 = -1;
/// `peer` value for MPI_PROC_NULL.
pub const PROC_NULL: i32 = -2;
/// `peer` value when the rank could not be translated (unknown communicator, or a
/// completion without status).
pub const UNKNOWN_RANK: i32 = -3;

/// Record flag: MPI_IN_PLACE was passed as the send buffer.
pub const FLAG_IN_PLACE: u16 = 1;
/// Record flag: a nonblocking operation; `t_posted` is when its post call returned.
pub const FLAG_NONBLOCKING: u16 = 2;
/// Record flag: the call returned an error code.
pub const FLAG_ERROR: u16 = 4;
/// Record flag: a nonblocking operation cancelled or freed without completion.
pub const FLAG_INCOMPLETE: u16 = 8;
/// Record flag: per-peer bytes of this v/w or neighbourhood call follow in continuation
/// records ([`arcs`]).
pub const FLAG_ARCS: u16 = 16;
/// Record flag: the v/w or neighbourhood call had more peers with bytes than
/// [`arcs::MAX_ARCS`]: its totals alone are recorded (the engine spreads them, as for
/// spools without arcs; a neighbourhood call's give it no messages).
pub const FLAG_ARCS_CAPPED: u16 = 32;
/// Record flag: this successful MPI_Test*/MPI_Iprobe ended a tight polling loop
/// (unsuccessful calls of the thread on the same request(s) since its previous recorded
/// call or post, at most [`POLL_TIGHT_NS`] apart on average outside MPI). As written by the
/// layer, `t_posted` is the entry of the loop's first unsuccessful call and `reserved` how
/// many there were (saturated); reading a spool settles the record (see [`Record::settle`]).
pub const FLAG_POLLED: u16 = 64;
/// Record flag: unsuccessful MPI_Test*/MPI_Iprobe calls not folded into a record (not a
/// tight loop this record ends) ran on the thread since its previous recorded call or
/// post: the library's progress engine ran in the gap before this record, where the trace
/// does not otherwise show it (HPL tests its broadcasts between chunks of the update).
/// Written by layers whose metadata says so ([`RankMeta::gap_polls`]).
pub const FLAG_GAP_POLLS: u16 = 128;
/// Record flag: the send's datatype is not contiguous in memory (a vector, an indexed
/// block: what ScaLAPACK's BLACS sends of a matrix), for messages from
/// [`PACKED_MIN_BYTES`] on. MPICH over UCX packs such a message into a buffer of its own
/// and the blocking send returns once the receiver has matched it, where a contiguous one
/// waits for the whole transfer (docs/engine.md).
pub const FLAG_PACKED: u16 = 256;
/// The smallest send whose datatype the layer checks for [`FLAG_PACKED`]: below it every
/// library sends eagerly, and the check would cost the small calls two queries.
pub const PACKED_MIN_BYTES: u64 = 4096;
/// A polling loop whose unsuccessful calls came at most this far apart on average (ns,
/// outside the polls themselves) is a wait spent in MPI: nothing but the polls ran
/// between them.
pub const POLL_TIGHT_NS: u64 = 50_000;

/// One MPI call, as recorded on the hot path. Fixed size, plain old data: spool files
/// are these records back to back in native byte order (with, after a v/w or
/// neighbourhood collective's, continuation records of its per-peer bytes: [`arcs`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Record {
    /// Entry time, ns, on the rank's monotonic clock.
    pub t_start: u64,
    /// Exit time, ns (for a nonblocking send/receive: when the completion call returned).
    pub t_end: u64,
    /// For nonblocking operations, when the post call returned; else equal to `t_end`.
    pub t_posted: u64,
    /// Bytes this rank sends in the call.
    pub bytes_send: u64,
    /// Bytes this rank receives in the call.
    pub bytes_recv: u64,
    /// Peer as a WORLD rank, or one of `NO_RANK`, `PROC_NULL`, `UNKNOWN_RANK`.
    pub peer: i32,
    /// Root as a WORLD rank, or `NO_RANK`; for `MPI_Sendrecv(_replace)`, which has no root,
    /// the receive's tag ([`Record::recv_tag`]).
    pub root: i32,
    /// Communicator id, stable within the run on this rank (0 = MPI_COMM_WORLD).
    pub comm: u32,
    /// Communicator size.
    pub comm_size: u32,
    /// Message tag (point-to-point), else 0.
    pub tag: i32,
    /// Thread number within the rank (order of first MPI call).
    pub thread: u16,
    /// Index into [`CALL_NAMES`].
    pub call: u16,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Reserved, zero.
    pub reserved: u16,
    /// Second peer: the source of MPI_Sendrecv (WORLD rank or sentinel), else `NO_RANK`.
    pub peer2: i32,
}

/// Size of a record in a spool file.
pub const RECORD_SIZE: usize = std::mem::size_of::<Record>();
const _: () = assert!(RECORD_SIZE == 72);

/// Spool file magic, followed by u32 version and u32 record size.
pub const SPOOL_MAGIC: &[u8; 8] = b"PMPISPL\0";
/// Spool format version.
pub const SPOOL_VERSION: u32 = 1;
/// Size of the spool header.
pub const SPOOL_HEADER: usize = 16;

include!(concat!(env!("OUT_DIR"), "/calls.rs"));

/// Name of call number `id`, or "?" when out of range.
pub fn call_name(id: u16) -> &'static str {
    CALL_NAMES.get(id as usize).copied().unwrap_or("?")
}

/// Call number of `name`.
pub fn call_id(name: &str) -> Option<u16> {
    CALL_NAMES.iter().position(|n| *n == name).map(|i| i as u16)
}

/// What a call does, for the graph and the reports.
pub fn call_kind(id: u16) -> CallKind {
    CALL_KINDS
        .get(id as usize)
        .copied()
        .unwrap_or(CallKind::Unknown)
}

impl Record {
    /// The record as bytes, for the spool writer.
    pub fn as_bytes(&self) -> &[u8; RECORD_SIZE] {
        // Plain old data without padding (derived `Pod`): a byte view costs nothing.
        bytemuck::cast_ref(self)
    }

    /// Parses one record from bytes written by `as_bytes` on a machine of the same endianness.
    pub fn from_bytes(b: &[u8; RECORD_SIZE]) -> Record {
        bytemuck::pod_read_unaligned(b)
    }

    /// The record as the engine and the reports read it. A successful test or probe that
    /// ended a tight polling loop ([`FLAG_POLLED`]) starts where the loop started: the rank
    /// was waiting in MPI all along, and the unsuccessful calls are not recorded (a loop
    /// with other work between the polls is not flagged: the call keeps its own times).
    /// `t_posted` is set back to `t_end`, as for any blocking call; the flag and the count
    /// stay.
    pub fn settle(mut self) -> Record {
        self.settle_in_place();
        self
    }

    /// [`Record::settle`] where the record is.
    #[inline]
    pub fn settle_in_place(&mut self) {
        if self.flags & FLAG_POLLED != 0
            && self.flags & FLAG_NONBLOCKING == 0
            && !self.is_continuation()
        {
            if self.t_posted <= self.t_start {
                self.t_start = self.t_posted;
            }
            self.t_posted = self.t_end;
        }
    }

    /// The tag of the message the record receives: an `MPI_Sendrecv(_replace)`'s receive
    /// tag, kept in `root` (FFTW's transposes send and receive under different tags;
    /// spools of layers before it have `NO_RANK` there, and the send's tag is taken, as
    /// they matched), else `tag`.
    #[inline]
    pub fn recv_tag(&self) -> i32 {
        if self.root >= 0 && call_kind(self.call) == CallKind::Sendrecv {
            self.root
        } else {
            self.tag
        }
    }

    /// The root as the reports show it: none for a send-receive, whose `root` holds its
    /// receive tag.
    pub fn root_rank(&self) -> i32 {
        if call_kind(self.call) == CallKind::Sendrecv {
            NO_RANK
        } else {
            self.root
        }
    }

    /// Duration in seconds (rank clock).
    pub fn duration_s(&self) -> f64 {
        self.t_end.saturating_sub(self.t_start) as f64 * 1e-9
    }
}

/// Writes the spool header.
pub fn write_spool_header<W: Write>(w: &mut W) -> io::Result<()> {
    w.write_all(SPOOL_MAGIC)?;
    w.write_all(&SPOOL_VERSION.to_le_bytes())?;
    w.write_all(&(RECORD_SIZE as u32).to_le_bytes())
}

/// What reading a spool file found.
#[derive(Debug, Default)]
pub struct SpoolRead {
    pub records: Vec<Record>,
    /// Bytes at the end that did not form a whole record (a write cut short by a kill).
    pub trailing_bytes: usize,
}

/// Reads a whole spool (`path` names it in errors). A truncated final record is
/// reported, not an error; a read failure is I/O, a header that is not a spool's is bad
/// input.
pub fn read_spool<R: Read>(r: R, path: &Path) -> Result<SpoolRead, Error> {
    read_spool_sized(r, 0, path)
}

/// [`read_spool`] of a spool about `len` bytes long: the records are parsed as the bytes
/// arrive, a few hundred KiB at a time, into a vector of the right size, so that the file's
/// bytes and its records are never in memory together.
fn read_spool_sized<R: Read>(mut r: R, len: u64, path: &Path) -> Result<SpoolRead, Error> {
    let mut out = read_spool_header(&mut r, path)?;
    out.records
        .reserve((len.saturating_sub(SPOOL_HEADER as u64) / RECORD_SIZE as u64) as usize);
    let mut buf = vec![0u8; 4096 * RECORD_SIZE];
    let mut have = 0;
    loop {
        match r.read(&mut buf[have..]) {
            Ok(0) => break,
            Ok(k) => have += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::read(path, e)),
        }
        let whole = have - have % RECORD_SIZE;
        out.records.extend(
            buf[..whole]
                .chunks_exact(RECORD_SIZE)
                .map(|c| Record::from_bytes(c.try_into().unwrap()).settle()),
        );
        buf.copy_within(whole..have, 0);
        have -= whole;
    }
    out.trailing_bytes = have;
    Ok(out)
}

/// Reads and checks a spool's header (a spool without records is what it gives).
fn read_spool_header<R: Read>(r: &mut R, path: &Path) -> Result<SpoolRead, Error> {
    let mut head = Vec::with_capacity(SPOOL_HEADER);
    r.take(SPOOL_HEADER as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::read(path, e))?;
    parse_spool(&head).map_err(|e| e.in_file(path))
}

/// What [`load_run`] says of a spool it cannot open.
fn cannot_open(path: &Path, e: io::Error) -> String {
    format!("cannot open {}: {e}", path.display())
}

/// What [`load_run`] reports of the spool at `path` without reading its records: the
/// bytes of a final record cut short, and the problem opening it or reading its header
/// (the rank then has no records), for a reader of the run in time order.
pub fn spool_state(path: &Path) -> (usize, Option<String>) {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return (0, Some(cannot_open(path, e))),
    };
    let len = f.metadata().map_or(0, |m| m.len());
    match read_spool_header(&mut f, path) {
        Ok(_) => (
            (len.saturating_sub(SPOOL_HEADER as u64) % RECORD_SIZE as u64) as usize,
            None,
        ),
        Err(e) => (0, Some(e.to_string())),
    }
}

/// Parses spool bytes; a header that is not a spool's is bad input.
pub fn parse_spool(data: &[u8]) -> Result<SpoolRead, Error> {
    if data.len() < SPOOL_HEADER {
        return Err(Error::Input(format!(
            "file too short for a spool header ({} bytes)",
            data.len()
        )));
    }
    if &data[..8] != SPOOL_MAGIC {
        return Err(Error::Input(
            "not a pmpi-predict spool file (bad magic)".into(),
        ));
    }
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    let rsize = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
    if version != SPOOL_VERSION {
        return Err(Error::Input(format!(
            "spool version {version} not supported (expected {SPOOL_VERSION})"
        )));
    }
    if rsize != RECORD_SIZE {
        return Err(Error::Input(format!(
            "spool record size {rsize}, expected {RECORD_SIZE}"
        )));
    }
    let body = &data[SPOOL_HEADER..];
    let n = body.len() / RECORD_SIZE;
    let records = body
        .chunks_exact(RECORD_SIZE)
        .map(|c| Record::from_bytes(c.try_into().unwrap()).settle())
        .collect::<Vec<_>>();
    debug_assert_eq!(records.len(), n);
    Ok(SpoolRead {
        records,
        trailing_bytes: body.len() % RECORD_SIZE,
    })
}

/// A clock offset measurement against rank 0: `rank0_time = local_time + offset_ns`
/// near local time `at_ns`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClockSample {
    pub at_ns: u64,
    pub offset_ns: i64,
    pub rtt_ns: u64,
}

/// Per-rank metadata, written at init and rewritten at finalize.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RankMeta {
    pub format_version: u32,
    pub rank: i32,
    pub world_size: i32,
    pub node: String,
    pub pid: u32,
    pub mpi_library: String,
    /// Call names, indexed by `Record::call`.
    pub calls: Vec<String>,
    pub clock_init: Option<ClockSample>,
    pub clock_finalize: Option<ClockSample>,
    /// Records lost because a thread's buffer was full.
    pub dropped: u64,
    /// Nonblocking operations whose request table was full.
    pub dropped_requests: u64,
    /// True once MPI_Finalize was reached and the spool closed.
    pub finalized: bool,
    /// How the run ended when not finalized ("abort", "signal 15", ...), if known.
    pub ended_by: Option<String>,
    /// Local time (ns) when recording began: rank 0's is the origin of `start_s`.
    pub init_ns: u64,
    /// Unsuccessful MPI_Test*/MPI_Iprobe calls, counted rather than recorded.
    #[serde(default)]
    pub polls: Vec<PollStat>,
    /// Records drained but not written (spool write failure).
    #[serde(default)]
    pub lost: u64,
    /// Intracommunicators other than MPI_COMM_WORLD that calls ran on, in registration
    /// order: the engine expands their collectives.
    #[serde(default)]
    pub comms: Vec<CommMembers>,
    /// `comms` by id, built on first use ([`RankMeta::comms_with_id`]); not written.
    #[serde(skip)]
    pub comm_index: CommIndex,
    /// The clock of the timestamps: "tsc" (the invariant time-stamp counter on
    /// CLOCK_MONOTONIC's scale) or "clock_gettime" (also when empty: older spools).
    #[serde(default)]
    pub timestamps: String,
    /// At finalize, the converted counter minus CLOCK_MONOTONIC, ns (with "tsc").
    #[serde(default)]
    pub tsc_drift_ns: Option<i64>,
    /// The calibration profile the layer predicted with (`PMPI_PREDICT_PROFILE`, made
    /// absolute where it existed); `analyze`, `accuracy` and `replay` take it when not
    /// given `--profile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The running kernel's boot id (`/proc/sys/kernel/random/boot_id`): ranks of several
    /// node names with one boot id share one machine's CPUs (an emulated cluster).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
    /// CPUs the rank could run on (its affinity, a cgroup's quota), 0 if unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpus: u32,
    /// Which CPUs its affinity holds, in the kernel's list format (`0-3,8`; empty if
    /// unknown, and in recordings before 2026-11-27): ranks bound to distinct cores of one
    /// machine do not share them, however few each may use ([`oversubscribed`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_list: String,
    /// The machine's CPU time at init and at the end (`/proc/stat`): the share its
    /// interrupts took (the network's packets, a shaper's timers) came out of the ranks'
    /// compute, which a what-if replay on another network corrects ([`irq_share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu_init: Option<CpuTicks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu_end: Option<CpuTicks>,
    /// The layer flags the records after unsuccessful polls ([`FLAG_GAP_POLLS`]); false in
    /// older recordings, whose polls the engine cannot place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gap_polls: bool,
    /// The MPI library ran its progress engine on a thread of its own (Open MPI's
    /// `btl_tcp_progress_thread`, [`crate::config::Config::progress_thread`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub progress_thread: bool,
    /// The node's TCP and interface counters at init and at the end ([`netstat`]): what
    /// the transport did during the run (retransmissions, timeouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_init: Option<netstat::NetCounters>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_end: Option<netstat::NetCounters>,
    /// This rank sampled its node's counters into `net-RANK.csv` ([`netstat`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net_samples: bool,
    /// Where the node's retransmission timeouts fired during the run, from those samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net_timeouts: Vec<netstat::Episode>,
}

/// A machine's CPU time since boot over all its CPUs, in clock ticks (`/proc/stat`'s
/// first line): all of it, and the part spent serving interrupts (hard and soft).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CpuTicks {
    pub total: u64,
    pub irq: u64,
    /// The machine's CPUs (`cpuN` lines): `total` grows by this many ticks per tick.
    #[serde(default)]
    pub cpus: u32,
}

/// The `cpu` line of `/proc/stat`'s text: user nice system idle iowait irq softirq steal
/// (guest time is inside user's, so not added); None if it is not there.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 7 {
        return None;
    }
    let cpus = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u32;
    Some(CpuTicks {
        total: v.iter().sum(),
        irq: v[5] + v[6],
        cpus,
    })
}

/// This machine's CPU time now (`/proc/stat`; None where there is none).
pub fn read_host_cpu() -> Option<CpuTicks> {
    parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The running kernel's boot id (`/proc/sys/kernel/random/boot_id`), empty where there
/// is none: processes of several node names with one boot id share one machine.
pub fn read_boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The CPUs the calling thread may run on (`Cpus_allowed_list` of
/// `/proc/thread-self/status`), as [`format_cpu_list`] writes them; empty where unknown.
pub fn read_cpu_list() -> String {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/status") else {
        return String::new();
    };
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| parse_cpu_list(v.trim()))
        .map(|c| format_cpu_list(&c))
        .unwrap_or_default()
}

/// Most CPUs a list may name: more is not a machine's list but a mistake.
const MAX_CPUS: u32 = 1 << 16;

/// The CPUs of a list in the kernel's format (`0-3,8,10-11`), sorted and without repeats;
/// None if it is empty, malformed, or names a CPU at or above 65,536.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (a, b) = match part.trim().split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let a = part.trim().parse::<u32>().ok()?;
                (a, a)
            }
        };
        if a > b || b >= MAX_CPUS {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// `cpus` (sorted, no repeats) in the kernel's list format: runs of consecutive CPUs as
/// `a-b`, joined by commas.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < cpus.len() {
        let start = cpus[k];
        while k + 1 < cpus.len() && cpus[k + 1] == cpus[k] + 1 {
            k += 1;
        }
        parts.push(if cpus[k] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[k])
        });
        k += 1;
    }
    parts.join(",")
}

/// Each machine's CPU time between two readings, from the first of its readings given as
/// (machine, before, after): its ticks, interrupts and CPUs (at the end). Ranks of one
/// machine read the same counters, so a machine counts once.
pub fn per_machine<'a>(
    readings: impl IntoIterator<Item = (&'a str, CpuTicks, CpuTicks)>,
) -> Vec<CpuTicks> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (machine, a, b) in readings {
        if seen.contains(&machine) {
            continue;
        }
        seen.push(machine);
        out.push(CpuTicks {
            total: b.total.saturating_sub(a.total),
            irq: b.irq.saturating_sub(a.irq),
            cpus: b.cpus,
        });
    }
    out
}

/// The share of the machines' CPU time their interrupts took while the job ran: per
/// machine (boot id; the node name where there is none) the first rank that read its
/// CPU time at both ends, summed over machines. None where no rank did, or no time passed.
pub fn irq_share(metas: &[&RankMeta]) -> Option<f64> {
    let machines = per_machine(metas.iter().filter_map(|m| {
        let machine = if m.boot_id.is_empty() {
            m.node.as_str()
        } else {
            m.boot_id.as_str()
        };
        Some((machine, m.host_cpu_init?, m.host_cpu_end?))
    }));
    let irq: u64 = machines.iter().map(|d| d.irq).sum();
    let total: u64 = machines.iter().map(|d| d.total).sum();
    (total > 0).then(|| irq as f64 / total as f64)
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

/// Ranks that outnumbered the CPUs of the one machine they ran on: their waits include
/// waiting to be scheduled, which the replay predicts from the ranks it finds computing
/// (`replay::cpus`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuSharing {
    /// Ranks on that machine, and the CPUs they could run on (the union of their
    /// affinities; in older recordings the most any of them saw).
    pub ranks: usize,
    pub cpus: u32,
    /// The node names of those ranks (several: an emulated cluster on one machine).
    pub nodes: Vec<String>,
    /// The longest the replay lets a rank that computes keep a CPU from one whose call
    /// could end ([`crate::replay::cpus::time_slice`]).
    pub time_slice_s: f64,
}

impl CpuSharing {
    /// One line for stderr and the reports.
    pub fn text(&self) -> String {
        format!(
            "{} ranks shared {} CPU{} of one machine (node{} {}): their measured waits include \
             waiting for a CPU, which the replay predicts: a rank whose call could end while \
             every CPU ran a rank that computes waits until one of them enters MPI, at most \
             a time slice ({:.2} ms)",
            self.ranks,
            self.cpus,
            if self.cpus == 1 { "" } else { "s" },
            if self.nodes.len() == 1 { "" } else { "s" },
            self.nodes.join(", "),
            self.time_slice_s * 1e3
        )
    }
}

/// The machines (by boot id) whose ranks outnumbered their CPUs, most ranks first; none
/// for ranks that did not record both (older spools).
pub fn cpu_sharing(metas: &[&RankMeta]) -> Vec<CpuSharing> {
    let mut v: Vec<CpuSharing> = oversubscribed(metas.iter().copied())
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    v.sort_by(|a, b| b.ranks.cmp(&a.ranks).then(a.nodes.cmp(&b.nodes)));
    v
}

/// What the ranks of one machine could run on, as [`oversubscribed`] gathers it.
#[derive(Default)]
struct MachineCpus {
    ranks: usize,
    /// The most CPUs any of its ranks could use.
    most: u32,
    /// The union of their affinities, while every rank gave one.
    union: Option<std::collections::BTreeSet<u32>>,
    /// The least a cgroup's quota left a rank (its CPUs fewer than its affinity's).
    quota: Option<u32>,
    nodes: Vec<String>,
}

impl MachineCpus {
    /// The CPUs its ranks share: the union of their affinities (ranks bound to one core
    /// each, as Open MPI and Slurm bind them, use as many cores as they are), within a
    /// quota; without every rank's affinity (older recordings), the most any rank saw.
    fn cpus(&self) -> u32 {
        match &self.union {
            Some(u) => {
                let n = u32::try_from(u.len()).unwrap_or(u32::MAX);
                self.quota.map_or(n, |q| n.min(q))
            }
            None => self.most,
        }
    }
}

/// The machines whose ranks outnumbered their CPUs, each with its boot id, in boot id
/// order: what [`cpu_sharing`] reports and the replay's waits for a CPU
/// (`replay::cpus::shared_cpus`) place ranks on.
pub fn oversubscribed<'a>(
    metas: impl IntoIterator<Item = &'a RankMeta>,
) -> Vec<(&'a str, CpuSharing)> {
    let mut by_boot: std::collections::BTreeMap<&str, MachineCpus> = Default::default();
    for m in metas {
        if m.boot_id.is_empty() || m.cpus == 0 {
            continue;
        }
        let e = by_boot.entry(m.boot_id.as_str()).or_default();
        let list = parse_cpu_list(&m.cpu_list);
        e.union = match (e.ranks, e.union.take(), &list) {
            (0, _, Some(l)) => Some(l.iter().copied().collect()),
            (_, Some(mut u), Some(l)) => {
                u.extend(l.iter().copied());
                Some(u)
            }
            _ => None,
        };
        if let Some(l) = &list
            && (m.cpus as usize) < l.len()
        {
            e.quota = Some(e.quota.map_or(m.cpus, |q| q.min(m.cpus)));
        }
        e.ranks += 1;
        e.most = e.most.max(m.cpus);
        if !e.nodes.contains(&m.node) {
            e.nodes.push(m.node.clone());
        }
    }
    by_boot
        .into_iter()
        .map(|(boot, e)| (boot, (e.ranks, e.cpus(), e.nodes)))
        .filter(|(_, (ranks, cpus, _))| *ranks > *cpus as usize)
        .map(|(boot, (ranks, cpus, mut nodes))| {
            nodes.sort();
            let c = CpuSharing {
                ranks,
                cpus,
                nodes,
                time_slice_s: crate::replay::cpus::time_slice(cpus),
            };
            (boot, c)
        })
        .collect()
}

/// A communicator's id on this rank and its members' WORLD ranks, by local rank; for an
/// intercommunicator (`inter`), the WORLD ranks of both its groups, sorted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CommMembers {
    pub id: u32,
    pub world: Vec<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inter: bool,
}

/// The positions in [`RankMeta::comms`] of each communicator id, with the length of the
/// list it was built from. A cache: equal to any other, empty when cloned.
#[derive(Default)]
pub struct CommIndex(std::sync::OnceLock<(usize, std::collections::HashMap<u32, Vec<u32>>)>);

impl Clone for CommIndex {
    fn clone(&self) -> Self {
        CommIndex::default()
    }
}

impl PartialEq for CommIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for CommIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommIndex")
    }
}

impl RankMeta {
    /// The entries of `comms` with id `id`, last registered first. A run that made
    /// thousands of communicators has as many entries, and a collective on each asks for
    /// its own: the list is indexed once, not scanned each time.
    pub fn comms_with_id(&self, id: u32) -> impl Iterator<Item = &CommMembers> {
        let (len, index) = self.comm_index.0.get_or_init(|| {
            let mut m: std::collections::HashMap<u32, Vec<u32>> = Default::default();
            for (i, c) in self.comms.iter().enumerate() {
                m.entry(c.id).or_default().push(i as u32);
            }
            (self.comms.len(), m)
        });
        // A list changed since it was indexed is scanned instead.
        let stale = *len != self.comms.len();
        let indexed = (!stale)
            .then(|| index.get(&id))
            .flatten()
            .into_iter()
            .flat_map(|v| v.iter().rev().map(|&i| &self.comms[i as usize]));
        let scanned = self.comms.iter().rev().filter(move |c| stale && c.id == id);
        indexed.chain(scanned)
    }
}

/// Count and total time of unsuccessful polls of one call.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PollStat {
    pub call: String,
    pub count: u64,
    pub time_ns: u64,
}

/// Writes a rank's metadata atomically (temporary file, then rename), so that a reader
/// never sees half a file even if the process is killed.
pub fn write_meta(dir: &Path, m: &RankMeta) -> Result<(), Error> {
    let path = meta_path(dir, m.rank);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(m)
        .map_err(|e| Error::Internal(format!("cannot encode metadata: {e}")))?;
    std::fs::write(&tmp, text).map_err(|e| Error::write(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::write(&path, e))
}

/// Reads a rank's metadata.
pub fn read_meta(path: &Path) -> Result<RankMeta, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Input(format!("{}: malformed metadata: {e}", path.display())))
}

/// True when two offset samples differ by more than their uncertainty (half of each
/// round trip): only then is a drift between them a measurement rather than noise. A short
/// run on busy nodes otherwise turns noise into a steep, wrong drift.
fn drift_is_measurable(a: &ClockSample, b: &ClockSample) -> bool {
    let diff = (b.offset_ns as i128 - a.offset_ns as i128).unsigned_abs();
    diff > (a.rtt_ns as u128 + b.rtt_ns as u128) / 2
}

/// Whether `name` is a rank's metadata or spool file (`rank-NNNNN.json`,
/// `rank-NNNNN.spool`): what a recorded rank leaves.
pub fn is_rank_file(name: &str) -> bool {
    name.starts_with("rank-") && (name.ends_with(".json") || name.ends_with(".spool"))
}

/// Spool file of `rank` in `dir`.
pub fn spool_path(dir: &Path, rank: i32) -> PathBuf {
    dir.join(format!("rank-{rank:05}.spool"))
}

/// Writes a whole spool of `records` for `rank` in `dir` (offline tools and tests; the
/// layer streams its spool through `record::spool`).
pub fn write_spool(dir: &Path, rank: i32, records: &[Record]) -> Result<(), Error> {
    let path = spool_path(dir, rank);
    let mut bytes = Vec::with_capacity(SPOOL_HEADER + records.len() * RECORD_SIZE);
    write_spool_header(&mut bytes).map_err(|e| Error::write(&path, e))?;
    for r in records {
        bytes.extend_from_slice(r.as_bytes());
    }
    std::fs::write(&path, bytes).map_err(|e| Error::write(&path, e))
}

/// Metadata file of `rank` in `dir`.
pub fn meta_path(dir: &Path, rank: i32) -> PathBuf {
    dir.join(format!("rank-{rank:05}.json"))
}

impl RankMeta {
    /// Time inside the rank's unsuccessful polls (MPI time that is in no record), ns.
    pub fn poll_ns(&self) -> u64 {
        self.polls.iter().map(|p| p.time_ns).sum()
    }

    /// Converts a local timestamp to rank 0's clock: offsets measured at init and
    /// finalize are interpolated linearly (drift); with one sample, a constant offset.
    /// Saturates at the ends of `i64` (a corrupt metadata file must not overflow).
    pub fn to_global_ns(&self, t: u64) -> i64 {
        self.clock().to_global_ns(t)
    }

    /// What [`RankMeta::to_global_ns`] does to a timestamp, decided once (a reader of
    /// every record converts two timestamps a record).
    pub fn clock(&self) -> Clock {
        match (self.clock_init, self.clock_finalize) {
            (Some(a), Some(b)) if b.at_ns > a.at_ns && drift_is_measurable(&a, &b) => {
                Clock::Drift {
                    at: a.at_ns as f64,
                    span: (b.at_ns - a.at_ns) as f64,
                    from: a.offset_ns as f64,
                    by: b.offset_ns as f64 - a.offset_ns as f64,
                }
            }
            // Without a measurable drift, the sample with the smaller round trip is the
            // better offset.
            (Some(a), Some(b)) => Clock::Offset(if b.rtt_ns < a.rtt_ns {
                b.offset_ns
            } else {
                a.offset_ns
            }),
            (Some(a), None) => Clock::Offset(a.offset_ns),
            (None, Some(b)) => Clock::Offset(b.offset_ns),
            (None, None) => Clock::Offset(0),
        }
    }
}

/// A rank's clock against rank 0's ([`RankMeta::clock`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Clock {
    /// A constant offset (ns).
    Offset(i64),
    /// Offsets measured at init and finalize, interpolated linearly: `from` at local time
    /// `at`, `from + by` a `span` later (ns).
    Drift {
        at: f64,
        span: f64,
        from: f64,
        by: f64,
    },
}

impl Clock {
    /// [`RankMeta::to_global_ns`].
    #[inline]
    pub fn to_global_ns(&self, t: u64) -> i64 {
        let ti = i64::try_from(t).unwrap_or(i64::MAX);
        match *self {
            Clock::Offset(o) => ti.saturating_add(o),
            Clock::Drift { at, span, from, by } => {
                let f = (t as f64 - at) / span;
                let off = from + f * by;
                // `as` saturates a finite f64 to the i64 range.
                ti.saturating_add(off.round() as i64)
            }
        }
    }

    /// Seconds from `origin` (ns on rank 0's clock) to local timestamp `t`, as
    /// [`RunTrace::seconds_since`] gives them.
    #[inline]
    pub fn seconds_since(&self, t: u64, origin: i64) -> f64 {
        RunTrace::seconds_from(self.to_global_ns(t), origin)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn communicators_are_found_by_id_last_registered_first() {
        let c = |id, world: &[i32]| super::CommMembers {
            id,
            world: world.to_vec(),
            inter: false,
        };
        let mut meta = super::RankMeta {
            comms: vec![c(5, &[0, 1]), c(1, &[2]), c(7, &[0, 2]), c(5, &[1, 3])],
            ..Default::default()
        };
        let worlds = |m: &super::RankMeta, id| {
            m.comms_with_id(id)
                .map(|c| c.world.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(worlds(&meta, 5), [vec![1, 3], vec![0, 1]]);
        assert_eq!(worlds(&meta, 7), [vec![0, 2]]);
        assert!(worlds(&meta, 9).is_empty());
        // A list changed after it was indexed is read as it is now.
        meta.comms.push(c(9, &[3]));
        assert_eq!(worlds(&meta, 9), [vec![3]]);
        assert_eq!(worlds(&meta, 5), [vec![1, 3], vec![0, 1]]);
        // A clone indexes its own list; equality ignores the index.
        let copy = meta.clone();
        assert_eq!(copy, meta);
        assert_eq!(worlds(&copy, 9), [vec![3]]);
    }

    #[test]
    fn proc_stat_s_interrupt_time_is_irq_plus_softirq() {
        let text = "cpu  3335353 3525278 3632164 4140708 30762 7 444742 6635 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        let t = super::parse_proc_stat(text).unwrap();
        assert_eq!(t.irq, 444_749);
        assert_eq!(t.cpus, 1);
        assert_eq!(
            t.total,
            3335353 + 3525278 + 3632164 + 4140708 + 30762 + 7 + 444742 + 6635
        );
        assert_eq!(super::parse_proc_stat("cpu0 1 2 3\n"), None);
        assert_eq!(super::parse_proc_stat("cpu  1 2 x 4 5 6 7 8\n"), None);
    }

    #[test]
    fn the_interrupt_share_counts_each_machine_once() {
        let m = |node: &str, boot: &str, a: (u64, u64), b: (u64, u64)| RankMeta {
            node: node.into(),
            boot_id: boot.into(),
            host_cpu_init: Some(CpuTicks {
                total: a.0,
                irq: a.1,
                cpus: 2,
            }),
            host_cpu_end: Some(CpuTicks {
                total: b.0,
                irq: b.1,
                cpus: 2,
            }),
            ..Default::default()
        };
        // Two node names on machine A (one reading), a machine B, a rank without readings.
        let metas = [
            m("h0", "A", (1000, 10), (1400, 50)),
            m("h1", "A", (1001, 10), (1399, 60)),
            m("big", "B", (0, 0), (600, 10)),
            RankMeta::default(),
        ];
        let refs: Vec<&RankMeta> = metas.iter().collect();
        let f = super::irq_share(&refs).unwrap();
        assert!((f - 50.0 / 1000.0).abs() < 1e-12, "{f}");
        assert_eq!(super::irq_share(&refs[3..]), None);
    }

    #[test]
    fn ranks_outnumbering_one_machine_s_cpus_are_found_by_boot_id() {
        let m = |rank: i32, node: &str, boot: &str, cpus: u32| RankMeta {
            rank,
            node: node.into(),
            boot_id: boot.into(),
            cpus,
            ..Default::default()
        };
        // An emulated cluster: four node names on one machine of 2 CPUs; a real node of
        // 8 CPUs with 2 ranks; a rank of an older spool (no boot id) counts for none.
        let metas = [
            m(0, "h0", "A", 2),
            m(1, "h1", "A", 2),
            m(2, "h2", "A", 2),
            m(3, "h3", "A", 2),
            m(4, "big", "B", 8),
            m(5, "big", "B", 8),
            m(6, "old", "", 0),
        ];
        let refs: Vec<&RankMeta> = metas.iter().collect();
        let v = cpu_sharing(&refs);
        assert_eq!(
            v,
            [CpuSharing {
                ranks: 4,
                cpus: 2,
                nodes: vec!["h0".into(), "h1".into(), "h2".into(), "h3".into()],
                time_slice_s: 1.5e-3,
            }]
        );
        assert!(
            v[0].text()
                .starts_with("4 ranks shared 2 CPUs of one machine (nodes h0, h1, h2, h3)")
        );
        // As many ranks as CPUs: nothing to say.
        assert!(cpu_sharing(&[&metas[0], &metas[1]]).is_empty());
    }
    use super::*;

    #[test]
    fn a_tight_polling_loop_settles_into_the_successful_call() {
        let test = call_id("MPI_Test").unwrap();
        let polled = |first: u64, misses: u16| Record {
            t_start: 1_000_000,
            t_end: 1_000_500,
            t_posted: first,
            call: test,
            flags: FLAG_POLLED,
            reserved: misses,
            ..Default::default()
        };
        // The row starts at the loop (the layer flags tight loops only).
        let r = polled(1_000, 100).settle();
        assert_eq!(
            (r.t_start, r.t_posted, r.t_end),
            (1_000, 1_000_500, 1_000_500)
        );
        assert_eq!((r.flags, r.reserved), (FLAG_POLLED, 100));
        // Settling twice changes nothing more.
        assert_eq!(r.settle(), r);
        // A loop start after the call's entry (a clock oddity) is ignored.
        let r = polled(1_000_100, 1).settle();
        assert_eq!(r.t_start, 1_000_000);
        // Records without the flag, and continuations, are untouched.
        let mut plain = polled(1_000, 100);
        plain.flags = 0;
        assert_eq!(plain.settle(), plain);
        let mut cont = polled(1_000, 100);
        cont.call = arcs::ARC_CALL;
        assert_eq!(cont.settle(), cont);
    }

    #[test]
    fn record_roundtrip_through_spool_bytes() {
        let r = Record {
            t_start: 5,
            t_end: 9,
            peer: 3,
            call: 2,
            bytes_send: 1 << 40,
            ..Default::default()
        };
        let mut buf = Vec::new();
        write_spool_header(&mut buf).unwrap();
        buf.extend_from_slice(r.as_bytes());
        buf.extend_from_slice(&[1, 2, 3]);
        let s = parse_spool(&buf).unwrap();
        assert_eq!(s.records, vec![r]);
        assert_eq!(s.trailing_bytes, 3);
    }

    /// Read in pieces, a spool gives what its bytes parsed at once give: records split
    /// across reads, a cut final record, a header alone, a short header.
    #[test]
    fn spool_read_in_pieces_is_spool_parsed_whole() {
        /// Returns at most 7 bytes per read.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                let k = b.len().min(7).min(self.0.len());
                b[..k].copy_from_slice(&self.0[..k]);
                self.0 = &self.0[k..];
                Ok(k)
            }
        }
        let mut buf = Vec::new();
        write_spool_header(&mut buf).unwrap();
        for i in 0..5000u64 {
            let r = Record {
                t_start: i,
                t_end: i * 3,
                peer: i as i32,
                ..Default::default()
            };
            buf.extend_from_slice(r.as_bytes());
        }
        buf.extend_from_slice(&[9; 40]);
        for cut in [
            buf.len(),
            buf.len() - 40,
            SPOOL_HEADER,
            1000 * RECORD_SIZE + 5,
        ] {
            let whole = parse_spool(&buf[..cut]).unwrap();
            let read = read_spool(Trickle(&buf[..cut]), Path::new("t")).unwrap();
            assert_eq!(read.records, whole.records);
            assert_eq!(read.trailing_bytes, whole.trailing_bytes);
            let sized = read_spool_sized(&buf[..cut], cut as u64, Path::new("t")).unwrap();
            assert_eq!(sized.records, whole.records);
        }
        let short = read_spool(&buf[..10], Path::new("t")).unwrap_err();
        assert_eq!(short.exit_code(), 2);
        assert_eq!(
            short.to_string(),
            format!("t: {}", parse_spool(&buf[..10]).unwrap_err())
        );
    }

    /// Records released and read again are the records loaded; a spool that lost records
    /// meanwhile is an error, one that gained some gives the first ones.
    #[test]
    fn released_records_read_again_are_the_same() {
        let dir = std::env::temp_dir().join(format!("pmpi-trace-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let recs: Vec<Record> = (0..3000u64)
            .map(|i| Record {
                t_start: i,
                tag: i as i32,
                ..Default::default()
            })
            .collect();
        for rank in 0..2 {
            let m = RankMeta {
                rank,
                world_size: 2,
                ..Default::default()
            };
            write_meta(&dir, &m).unwrap();
            write_spool(&dir, rank, &recs[..1000 * (rank as usize + 1)]).unwrap();
        }
        let mut run = load_run(&dir).unwrap();
        let before = run.clone();
        let counts: Vec<usize> = run.ranks.iter().map(|r| r.records.len()).collect();
        assert_eq!(counts, [1000, 2000]);
        for rk in &mut run.ranks {
            rk.records = Vec::new();
        }
        reload_records(&dir, &mut run, &counts).unwrap();
        assert_eq!(run.ranks[0].records, before.ranks[0].records);
        assert_eq!(run.ranks[1].records, before.ranks[1].records);
        write_spool(&dir, 0, &recs).unwrap();
        reload_records(&dir, &mut run, &counts).unwrap();
        assert_eq!(run.ranks[0].records, before.ranks[0].records);
        write_spool(&dir, 1, &recs[..10]).unwrap();
        assert!(
            reload_records(&dir, &mut run, &counts)
                .unwrap_err()
                .to_string()
                .contains("spool changed")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_spool_is_an_error() {
        assert!(parse_spool(b"short").is_err());
        assert!(
            parse_spool(b"XXXXXXXX\x01\0\0\0\x48\0\0\0")
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
    }

    #[test]
    fn drift_within_the_round_trip_noise_is_ignored() {
        // Offsets 200 ns apart, but each sample is only good to about ±500 ns: a constant
        // offset, from the sample with the smaller round trip.
        let m = RankMeta {
            clock_init: Some(ClockSample {
                at_ns: 1000,
                offset_ns: 100,
                rtt_ns: 1000,
            }),
            clock_finalize: Some(ClockSample {
                at_ns: 3000,
                offset_ns: 300,
                rtt_ns: 900,
            }),
            ..Default::default()
        };
        assert_eq!(m.to_global_ns(1000), 1300);
        assert_eq!(m.to_global_ns(3000), 3300);
    }

    #[test]
    fn ranks_on_rank_0s_node_share_its_clock() {
        let dir = std::env::temp_dir().join(format!("pmpi-trace-node-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sample = Some(ClockSample {
            at_ns: 5,
            offset_ns: 777,
            rtt_ns: 10,
        });
        for (rank, node) in [(0, "a"), (1, "a"), (2, "b")] {
            let m = RankMeta {
                rank,
                world_size: 3,
                node: node.into(),
                clock_init: sample,
                ..Default::default()
            };
            write_meta(&dir, &m).unwrap();
        }
        let run = load_run(&dir).unwrap();
        assert_eq!(run.ranks[1].meta.to_global_ns(1000), 1000);
        assert_eq!(run.ranks[2].meta.to_global_ns(1000), 1777);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn clock_interpolates_drift() {
        let m = RankMeta {
            clock_init: Some(ClockSample {
                at_ns: 1000,
                offset_ns: 100,
                rtt_ns: 1,
            }),
            clock_finalize: Some(ClockSample {
                at_ns: 3000,
                offset_ns: 300,
                rtt_ns: 1,
            }),
            ..Default::default()
        };
        assert_eq!(m.to_global_ns(1000), 1100);
        assert_eq!(m.to_global_ns(2000), 2200);
        assert_eq!(m.to_global_ns(3000), 3300);
    }

    /// Found by fuzz/fuzz_targets/meta.rs: extreme timestamps and offsets overflowed i64
    /// (a panic in debug builds); they now saturate.
    #[test]
    fn clock_conversion_saturates() {
        let s = |at_ns, offset_ns| ClockSample {
            at_ns,
            offset_ns,
            rtt_ns: 0,
        };
        let mut m = RankMeta {
            clock_init: Some(s(1, i64::MIN)),
            clock_finalize: Some(s(2, i64::MAX)),
            ..Default::default()
        };
        assert_eq!(m.to_global_ns(u64::MAX), i64::MAX);
        assert_eq!(m.to_global_ns(0), i64::MIN);
        m.clock_init = Some(s(0, 0));
        m.clock_finalize = Some(s(10, 0));
        assert_eq!(m.to_global_ns(i64::MAX as u64), i64::MAX);
        assert_eq!(m.to_global_ns(u64::MAX), i64::MAX);
        m.clock_finalize = None;
        m.clock_init = Some(s(0, i64::MAX));
        assert_eq!(m.to_global_ns(5), i64::MAX);
        m.clock_init = None;
        m.clock_finalize = Some(s(0, i64::MIN));
        assert_eq!(m.to_global_ns(0), i64::MIN);
        assert_eq!(RankMeta::default().to_global_ns(u64::MAX), i64::MAX);
    }
}

/// One rank of a recorded run: its metadata and records.
#[derive(Debug, Clone, Default)]
pub struct RankTrace {
    pub meta: RankMeta,
    pub records: Vec<Record>,
    /// Bytes of a final record cut short (a kill during a write).
    pub trailing_bytes: usize,
    /// Problem reading the spool, if any (the rank then has no records).
    pub spool_error: Option<String>,
    /// Per-peer bytes of the v/w and neighbourhood calls that recorded them, by record
    /// index (ascending).
    pub arcs: Vec<CallArcs>,
}

impl RankTrace {
    /// Per-peer bytes of record `rec`, if recorded.
    pub fn arcs_of(&self, rec: usize) -> Option<&CallArcs> {
        self.arcs
            .binary_search_by_key(&(rec as u32), |a| a.rec)
            .ok()
            .map(|i| &self.arcs[i])
    }
}

/// A whole run as found in its output directory.
#[derive(Debug, Clone, Default)]
pub struct RunTrace {
    /// Ranks found, in rank order.
    pub ranks: Vec<RankTrace>,
    /// World size according to the metadata.
    pub world_size: i32,
    /// Ranks of the world with no metadata file.
    pub missing: Vec<i32>,
}

impl RunTrace {
    /// True when every rank reached MPI_Finalize and wrote its metadata.
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
            && self
                .ranks
                .iter()
                .all(|r| r.meta.finalized && r.spool_error.is_none())
    }

    /// Seconds from `origin` (see [`RunTrace::origin_ns`]) to the local time `t` of the
    /// rank described by `meta`, on rank 0's clock.
    pub fn seconds_since(meta: &RankMeta, t: u64, origin: i64) -> f64 {
        RunTrace::seconds_from(meta.to_global_ns(t), origin)
    }

    /// Seconds from `origin` to `ns`, both on rank 0's clock.
    pub fn seconds_from(ns: i64, origin: i64) -> f64 {
        ns.saturating_sub(origin) as f64 * 1e-9
    }

    /// Origin of `start_s`, in ns on rank 0's clock.
    pub fn origin_ns(&self) -> i64 {
        // The earliest recording start of any rank, on rank 0's clock.
        self.ranks
            .iter()
            .map(|r| r.meta.to_global_ns(r.meta.init_ns))
            .min()
            .unwrap_or(0)
    }
}

/// Why a directory holds no run: no rank got through MPI_Init under the layer, or it is
/// another directory.
fn no_ranks(dir: &Path) -> String {
    format!(
        "{} holds no rank metadata (rank-NNNNN.json): no rank of the run got through MPI_Init under the layer (see \"What is and is not recorded\" in LD_PRELOAD.md), or this is not a pmpi-predict output directory",
        dir.display()
    )
}

/// Ranks of a run that left no files, found from the file names and the world size in
/// the metadata (cheap: no spool is read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MissingRanks {
    pub world_size: i32,
    /// Ranks with no rank-NNNNN.json.
    pub no_meta: Vec<i32>,
    /// Ranks with metadata but no rank-NNNNN.spool.
    pub no_spool: Vec<i32>,
}

/// The metadata of every rank in `dir` (`rank-NNNNN.json`), in directory order; an error
/// if there is none.
fn read_metas(dir: &Path) -> Result<Vec<RankMeta>, Error> {
    let mut metas = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::read(dir, e))? {
        let e = e.map_err(|e| Error::read(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("rank-") && name.ends_with(".json") {
            metas.push(read_meta(&e.path())?);
        }
    }
    if metas.is_empty() {
        return Err(Error::Input(no_ranks(dir)));
    }
    Ok(metas)
}

/// Which ranks of the run in `dir` left no metadata or no spool.
pub fn missing_ranks(dir: &Path) -> Result<MissingRanks, Error> {
    let metas = read_metas(dir)?;
    let world_size = metas.iter().map(|m| m.world_size).max().unwrap_or(0);
    let have: std::collections::BTreeSet<i32> = metas.iter().map(|m| m.rank).collect();
    Ok(MissingRanks {
        world_size,
        no_meta: (0..world_size).filter(|r| !have.contains(r)).collect(),
        no_spool: have
            .iter()
            .copied()
            .filter(|r| !spool_path(dir, *r).exists())
            .collect(),
    })
}

/// Copies into `into` the rank files (`rank-NNNNN.json` and `.spool`) of the directories
/// `from` that `into` lacks: the spools of a run whose ranks wrote to node-local disks,
/// copied back from each node. A rank found in several directories is taken from the
/// first that has it. Returns the ranks copied.
pub fn merge_dirs(into: &Path, from: &[&Path]) -> Result<Vec<i32>, Error> {
    let copy = |from: &Path, to: &Path| {
        std::fs::copy(from, to).map_err(|e| Error::Io {
            action: "copy",
            path: from.to_path_buf(),
            source: e,
        })
    };
    let mut copied = Vec::new();
    for dir in from {
        for m in read_metas(dir)? {
            let meta_name = format!("rank-{:05}.json", m.rank);
            if into.join(&meta_name).exists() {
                continue;
            }
            let spool = spool_path(dir, m.rank);
            if spool.exists() {
                copy(&spool, &spool_path(into, m.rank))?;
            }
            // The metadata last: a rank counts as present once its spool is in place.
            copy(&dir.join(&meta_name), &into.join(&meta_name))?;
            copied.push(m.rank);
        }
    }
    copied.sort_unstable();
    Ok(copied)
}

/// Reads again the records of a run loaded from `dir` whose records were released (see
/// `predict::predict_run_releasing`): each rank's first `counts[i]` records, the ones the
/// first load found. A spool that now holds fewer is an error (the run changed meanwhile).
pub fn reload_records(dir: &Path, run: &mut RunTrace, counts: &[usize]) -> Result<(), Error> {
    for (rk, &n) in run.ranks.iter_mut().zip(counts) {
        if n == 0 {
            continue;
        }
        let path = spool_path(dir, rk.meta.rank);
        let f = std::fs::File::open(&path).map_err(|e| Error::read(&path, e))?;
        let s = read_spool_sized(&f, f.metadata().map_or(0, |m| m.len()), &path)?;
        let (mut records, mut arcs) = arcs::split(s.records);
        if records.len() < n {
            return Err(Error::Input(format!(
                "{}: {} records where {n} were read before (the spool changed during the analysis)",
                path.display(),
                records.len()
            )));
        }
        records.truncate(n);
        records.shrink_to_fit();
        arcs.retain(|a| (a.rec as usize) < n);
        rk.records = records;
        rk.arcs = arcs;
    }
    Ok(())
}

/// Ranks on rank 0's node read the same system-wide monotonic clock: their offset is 0
/// exactly, whatever the ping-pongs measured.
fn same_clock_as_rank0<'a>(metas: impl IntoIterator<Item = &'a mut RankMeta>) {
    let mut metas: Vec<&mut RankMeta> = metas.into_iter().collect();
    if let Some(node0) = metas.iter().find(|m| m.rank == 0).map(|m| m.node.clone()) {
        for m in metas.iter_mut().filter(|m| m.node == node0) {
            m.clock_init = None;
            m.clock_finalize = None;
        }
    }
}

/// Every rank's metadata in a run's output directory, by rank, with the clocks the
/// loader gives them ([`load_run`]).
pub(crate) fn run_metas(dir: &Path) -> Result<Vec<RankMeta>, Error> {
    let mut metas = read_metas(dir)?;
    metas.sort_by_key(|m| m.rank);
    same_clock_as_rank0(metas.iter_mut());
    Ok(metas)
}

/// The run of the ranks `metas` describes, without records (nothing missing said).
pub(crate) fn shell_of(metas: &[RankMeta]) -> RunTrace {
    RunTrace {
        world_size: metas.iter().map(|m| m.world_size).max().unwrap_or(0),
        ranks: metas
            .iter()
            .map(|m| RankTrace {
                meta: m.clone(),
                ..Default::default()
            })
            .collect(),
        missing: vec![],
    }
}

/// The ranks of the run in `dir` from their metadata alone, no spool read: enough to
/// place them (`Placement::from_run`) before a streamed prediction.
pub fn load_shell(dir: &Path) -> Result<RunTrace, Error> {
    Ok(shell_of(&run_metas(dir)?))
}

/// The ranks of a world of `world_size` without metadata among `metas` (sorted by rank).
pub(crate) fn missing_of(metas: &[RankMeta], world_size: i32) -> Vec<i32> {
    (0..world_size)
        .filter(|r| metas.binary_search_by_key(r, |m| m.rank).is_err())
        .collect()
}

/// Loads every rank's metadata and spool from a run's output directory.
pub fn load_run(dir: &Path) -> Result<RunTrace, Error> {
    let mut metas = read_metas(dir)?;
    metas.sort_by_key(|m| m.rank);
    let world_size = metas.iter().map(|m| m.world_size).max().unwrap_or(0);
    let missing = missing_of(&metas, world_size);
    let mut ranks = Vec::with_capacity(metas.len());
    for meta in metas {
        let path = spool_path(dir, meta.rank);
        let (raw, trailing_bytes, spool_error) = match std::fs::File::open(&path) {
            Ok(f) => match read_spool_sized(&f, f.metadata().map_or(0, |m| m.len()), &path) {
                Ok(s) => (s.records, s.trailing_bytes, None),
                Err(e) => (Vec::new(), 0, Some(e.to_string())),
            },
            Err(e) => (Vec::new(), 0, Some(cannot_open(&path, e))),
        };
        // Continuation records carry per-peer bytes of the call before them: not calls.
        let (records, arcs) = arcs::split(raw);
        ranks.push(RankTrace {
            meta,
            records,
            trailing_bytes,
            spool_error,
            arcs,
        });
    }
    same_clock_as_rank0(ranks.iter_mut().map(|r| &mut r.meta));
    Ok(RunTrace {
        ranks,
        world_size,
        missing,
    })
}
