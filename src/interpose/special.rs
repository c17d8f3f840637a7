//! Hand-written lifecycle interposers: MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Abort.
//! Start-up and shutdown of the recorder happen here, never on the hot path.
//!
//! Nothing runs before PMPI_Init succeeds, so the library is inert in `mpirun` and its
//! daemons, which the preload reaches too. At exit, an MPI rank whose MPI_Init the layer
//! never saw says so (`on_unload`), so that a program the layer cannot see is not
//! silently left unrecorded.

use super::hook::{OFF, ON, PASS, POLL_COUNT, POLL_NS, STATE};
use super::{handles, real};
use crate::config::Config;
use crate::record::netsample::NetSampler;
use crate::record::{
    self,
    spool::{PENDING_SIGNAL, Spooler},
};
use crate::topo::clock::{PingPong, estimate_offset, now_ns};
use crate::trace::{self, ClockSample, PollStat, RankMeta};
use mpi_sys as ffi;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the layer holds between init and finalize.
struct Run {
    cfg: Config,
    rank: c_int,
    size: c_int,
    /// Private duplicate of MPI_COMM_WORLD for the layer's own messages.
    comm: ffi::MPI_Comm,
    dir: Option<PathBuf>,
    meta: RankMeta,
    spooler: Option<Spooler>,
    /// The node's counters sampled (its lowest rank).
    net: Option<NetSampler>,
}

// SAFETY: the communicator handle is only used by the thread that calls MPI_Init or
// MPI_Finalize; the Mutex serialises access.
unsafe impl Send for Run {}

static RUN: Mutex<Option<Run>> = Mutex::new(None);
static IS_CHILD: AtomicBool = AtomicBool::new(false);
/// Set by [`super::inert`]: this process makes its own MPI calls (the CLI binary).
pub(crate) static INERT: AtomicBool = AtomicBool::new(false);

const TAG_CLOCK: c_int = 31_415;
/// Rank 0's decision at init, broadcast to every rank.
const DECISION_RECORD: u8 = 0;
const DECISION_DISABLED: u8 = 1;
const DECISION_NO_DIR: u8 = 2;
const PATH_MAX: usize = 4096;

/// `MPI_Init`: the real call, then the layer starts.
///
/// # Safety
/// The arguments must be valid for the MPI call of the same name.
pub(super) unsafe fn init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the caller's arguments go unchanged to the real PMPI_Init.
    let rc = unsafe { real::PMPI_Init(argc, argv) };
    if rc == 0 {
        start();
    }
    rc
}

/// `MPI_Init_thread`: the real call, then the layer starts.
///
/// # Safety
/// The arguments must be valid for the MPI call of the same name.
pub(super) unsafe fn init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments go unchanged to the real PMPI_Init_thread.
    let rc = unsafe { real::PMPI_Init_thread(argc, argv, required, provided) };
    if rc == 0 {
        start();
    }
    rc
}

/// `MPI_Finalize`: closes the spool, and rank 0 writes the report, all before the real
/// PMPI_Finalize.
pub(super) fn finalize() -> c_int {
    if std::panic::catch_unwind(finish).is_err() {
        super::fail("internal error at MPI_Finalize; the report may be incomplete");
    }
    // SAFETY: plain call of the real PMPI_Finalize.
    unsafe { real::PMPI_Finalize() }
}

/// `MPI_Abort`: flushes what this rank recorded, then aborts.
///
/// # Safety
/// The arguments must be valid for MPI_Abort.
pub(super) unsafe fn abort(comm: ffi::MPI_Comm, errorcode: c_int) -> c_int {
    let _ = std::panic::catch_unwind(|| flush_on_exit(&format!("MPI_Abort({errorcode})")));
    // SAFETY: the caller's arguments go unchanged to the real PMPI_Abort.
    unsafe { real::PMPI_Abort(comm, errorcode) }
}

extern "C" fn on_fork_child() {
    // The child has only the forking thread: no drainer, and it must never write the
    // parent's spool or report.
    IS_CHILD.store(true, Ordering::Relaxed);
    STATE.store(PASS, Ordering::Relaxed);
}

fn start() {
    if STATE.load(Ordering::Relaxed) != OFF {
        return;
    }
    match std::panic::catch_unwind(start_inner) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => super::fail(&e),
        Err(_) => super::fail("internal error at MPI_Init"),
    }
}

fn world() -> ffi::MPI_Comm {
    // SAFETY: a constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

fn start_inner() -> Result<(), String> {
    let (cfg, warnings) = Config::from_env();
    // Before any timestamp of the run: the counter where it can be trusted.
    let timestamps = if cfg.tsc && !cfg.disabled {
        crate::topo::clock::use_tsc(Duration::from_millis(10))
    } else {
        "clock_gettime"
    };
    let (mut rank, mut size) = (0, 0);
    let mut comm = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    // SAFETY: PMPI queries and a dup of WORLD into a local handle, right after PMPI_Init succeeded.
    let comm = unsafe {
        ffi::PMPI_Comm_rank(world(), &mut rank);
        ffi::PMPI_Comm_size(world(), &mut size);
        if real::PMPI_Comm_dup(world(), comm.as_mut_ptr()) != 0 {
            return Err("cannot duplicate MPI_COMM_WORLD at MPI_Init".into());
        }
        comm.assume_init()
    };
    super::RANK.store(rank, Ordering::Relaxed);
    if rank == 0 {
        for w in &warnings {
            super::say(w);
        }
    }
    // Rank 0 decides for everyone (enabled, directory), so that the collective steps
    // below and at finalize match on every rank even if environments differ. It also
    // creates the directory first, so that a directory that cannot be created is
    // reported once, by rank 0, and every rank passes through.
    let mut shared = [0u8; PATH_MAX + 1];
    let node = crate::topo::node_name(cfg.node.as_deref());
    if rank == 0 {
        let dir = match &cfg.out_dir {
            Some(d) if spawned() => subdir(d, "spawned-", &node),
            Some(d) if live_run_in(d) => subdir(d, "concurrent-", &node),
            Some(d) => d.clone(),
            None => default_dir(),
        };
        shared[0] = if cfg.disabled {
            DECISION_DISABLED
        } else if let Err(e) = std::fs::create_dir_all(crate::config::expand_out(&dir, &node, 0)) {
            super::fail(&format!(
                "cannot create output directory {} (PMPI_PREDICT_OUT): {e}",
                dir.display()
            ));
            DECISION_NO_DIR
        } else {
            DECISION_RECORD
        };
        let b = dir.as_os_str().as_encoded_bytes();
        let n = b.len().min(PATH_MAX - 1);
        shared[1..1 + n].copy_from_slice(&b[..n]);
    }
    // SAFETY: broadcast of a local byte buffer on the layer's private communicator.
    unsafe {
        real::PMPI_Bcast(
            shared.as_mut_ptr() as *mut c_void,
            shared.len() as c_int,
            ffi::RSMPI_UINT8_T,
            0,
            comm,
        )
    };
    let disabled = shared[0] == DECISION_DISABLED;
    if shared[0] == DECISION_NO_DIR {
        super::fail_quietly();
        let mut comm = comm;
        // SAFETY: frees the private communicator duplicated above, on every rank.
        unsafe { real::PMPI_Comm_free(&mut comm) };
        return Ok(());
    }
    let end = shared[1..].iter().position(|&b| b == 0).unwrap_or(PATH_MAX);
    let template = String::from_utf8_lossy(&shared[1..1 + end]).into_owned();
    // `%h` and `%r` in PMPI_PREDICT_OUT: a directory per node or per rank (node-local disks).
    let dir = crate::config::expand_out(std::path::Path::new(&template), &node, rank);

    super::binding::find_bindings();
    handles::init_sentinels(size);
    handles::init_comms(cfg.max_comms, size, rank);
    handles::init_requests(1 << 15);
    let net_leader = lowest_on_node(comm, rank, size, &node);
    if !disabled {
        // One rank a directory sets an earlier run's files aside before any rank writes.
        let mover = if template.contains("%r") {
            true
        } else if template.contains("%h") {
            net_leader
        } else {
            rank == 0
        };
        if mover
            && let Some(to) = set_aside_earlier_run(&dir)
            && rank == 0
        {
            super::say(&format!(
                "{} held the files of an earlier run: moved them to {}",
                dir.display(),
                to.display()
            ));
        }
        // SAFETY: a barrier on the layer's private communicator, on every rank (all
        // took rank 0's decision above).
        unsafe { real::PMPI_Barrier(comm) };
    }
    let clock = sync_clock(comm, rank, size, cfg.clock_rounds);

    let mut meta = RankMeta {
        format_version: trace::SPOOL_VERSION,
        rank,
        world_size: size,
        node,
        pid: std::process::id(),
        mpi_library: library_version(),
        calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
        clock_init: clock,
        init_ns: now_ns(),
        timestamps: timestamps.to_string(),
        profile: cfg.profile.as_ref().map(|p| {
            std::fs::canonicalize(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        }),
        // Which machine's CPUs the rank shares (read once, at init): the reports warn
        // when ranks outnumber them.
        boot_id: trace::read_boot_id(),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
        // And which: ranks bound to distinct cores share none of them.
        cpu_list: trace::read_cpu_list(),
        host_cpu_init: trace::read_host_cpu(),
        net_init: (cfg.net_ms > 0)
            .then(|| trace::netstat::read_counters(now_ns()))
            .flatten(),
        gap_polls: true,
        progress_thread: cfg.progress_thread,
        ..Default::default()
    };
    let mut run = Run {
        cfg,
        rank,
        size,
        comm,
        dir: None,
        meta: meta.clone(),
        spooler: None,
        net: None,
    };
    if disabled {
        STATE.store(PASS, Ordering::Relaxed);
        *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
        return Ok(());
    }
    let setup = (|| -> Result<Spooler, String> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "cannot create output directory {} (PMPI_PREDICT_OUT): {e}",
                dir.display()
            )
        })?;
        trace::write_meta(&dir, &meta).map_err(|e| e.to_string())?;
        let reg = record::init(run.cfg.buffer_records, run.cfg.max_threads);
        Spooler::start(
            &trace::spool_path(&dir, rank),
            reg,
            Duration::from_millis(run.cfg.flush_ms),
            on_signal_drained,
        )
    })();
    meta.init_ns = run.meta.init_ns;
    match setup {
        Ok(sp) => {
            if rank == 0 && !run.cfg.quiet {
                let opts = crate::report::ReportOptions::from_env();
                pmpi_core::say_line!("{}", crate::report::banner_init(&opts, size, &dir));
            }
            run.spooler = Some(sp);
            if let (true, Some(first)) = (net_leader && run.cfg.net_ms > 0, run.meta.net_init) {
                match NetSampler::start(
                    &trace::netstat::samples_path(&dir, rank),
                    Duration::from_millis(run.cfg.net_ms),
                    first,
                    now_ns,
                ) {
                    Ok(s) => {
                        run.net = Some(s);
                        run.meta.net_samples = true;
                    }
                    Err(e) => super::say(&format!("{e}; the node's TCP counters are not sampled")),
                }
            }
            run.dir = Some(dir);
            let catch = run.cfg.catch_signals;
            // SAFETY: registers plain extern "C" functions as the fork child handler and
            // as an exit handler.
            unsafe {
                libc::pthread_atfork(None, None, Some(on_fork_child));
                libc::atexit(on_exit);
            }
            *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
            STATE.store(ON, Ordering::Release);
            if catch {
                install_signal_handlers();
            }
            Ok(())
        }
        Err(e) => {
            *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
            Err(e)
        }
    }
}

/// True if MPI_Comm_spawn started this process's world (it has a parent).
fn spawned() -> bool {
    let mut parent = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    // SAFETY: a PMPI query (not wrapped by the layer) after PMPI_Init, into a local
    // handle; COMM_NULL is a constant of mpi-sys's C shim.
    unsafe {
        ffi::PMPI_Comm_get_parent(parent.as_mut_ptr()) == 0
            && parent.assume_init() != ffi::RSMPI_COMM_NULL
    }
}

/// A fresh directory `PREFIX-K` inside `parent`, the first K whose directory rank 0
/// creates. A world that MPI_Comm_spawn started records in `spawned-K` of its parent's
/// directory (both inherit PMPI_PREDICT_OUT), a run started while another one records in
/// the directory on this machine in `concurrent-K`: neither overwrites the other's rank
/// files.
fn subdir(parent: &std::path::Path, prefix: &str, node: &str) -> PathBuf {
    let _ = std::fs::create_dir_all(crate::config::expand_out(parent, node, 0));
    // Failing for another reason than an existing one: creating it again reports.
    parent.join(
        first_new_dir(prefix, |name| {
            std::fs::create_dir(crate::config::expand_out(&parent.join(name), node, 0))
        })
        .unwrap_or_else(|name| name),
    )
}

/// The first name `PREFIX-K` (K = 1, 2, ...) for which `create` makes a new directory:
/// `mkdir` is atomic, so processes that race for one get distinct K. `Err` with the name
/// whose creation failed for another reason than an existing directory (or one with the
/// process id, if all were taken).
fn first_new_dir(
    prefix: &str,
    create: impl Fn(&str) -> std::io::Result<()>,
) -> Result<String, String> {
    for k in 1..100_000 {
        let name = format!("{prefix}{k}");
        match create(&name) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return Err(name),
        }
    }
    Err(format!("{prefix}{}", std::process::id()))
}

/// True if `dir` (without `%` patterns) holds a run that is recording now on this
/// machine: its rank 0's metadata, not finalized, from a process of this boot that is
/// alive. (A run whose rank 0 is on another machine cannot be told from an earlier one.)
fn live_run_in(dir: &std::path::Path) -> bool {
    if dir.to_string_lossy().contains('%') {
        return false;
    }
    let Ok(meta) = trace::read_meta(&trace::meta_path(dir, 0)) else {
        return false;
    };
    let alive = || {
        // SAFETY: kill with signal 0 only checks that the process exists (EPERM: it
        // does, another user's).
        let rc = unsafe { libc::kill(meta.pid as libc::pid_t, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    };
    !meta.finalized
        && meta.ended_by.is_none()
        && meta.pid != std::process::id()
        && meta.boot_id == trace::read_boot_id()
        && alive()
}

/// Moves the files of an earlier run in `dir` (a job script's second `mpirun` with the
/// same PMPI_PREDICT_OUT) into `dir/earlier-K`, the first K free, and returns where:
/// left there, a smaller earlier run's rank files would be read as this run's ranks,
/// and a larger one's overwritten in part. Only the layer's and the reports' own files
/// move (the directory may be the job's working directory); `None` if `dir` holds no
/// recorded rank.
fn set_aside_earlier_run(dir: &std::path::Path) -> Option<PathBuf> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !names.iter().any(|n| trace::is_rank_file(n)) {
        return None;
    }
    let ours = |n: &str| {
        trace::is_rank_file(n)
            || (n.starts_with("net-") && n.ends_with(".csv"))
            || crate::report::REPORT_FILES.contains(&n)
            || crate::report::is_temporary_file(n)
            || n.starts_with("spawned-")
    };
    let to = dir.join(first_new_dir("earlier-", |name| std::fs::create_dir(dir.join(name))).ok()?);
    for n in names.iter().filter(|n| ours(n)) {
        let _ = std::fs::rename(dir.join(n), to.join(n));
    }
    Some(to)
}

/// `pmpi-predict.<YYYYmmdd-HHMMSS>.<pid>` in the working directory.
fn default_dir() -> PathBuf {
    PathBuf::from(format!(
        "pmpi-predict.{}.{}",
        crate::topo::clock::local_stamp(),
        std::process::id()
    ))
}

fn library_version() -> String {
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING in both Open MPI and MPICH.
    let rc = unsafe { ffi::PMPI_Get_library_version(buf.as_mut_ptr() as *mut c_char, &mut len) };
    if rc != 0 {
        return String::new();
    }
    let end = buf
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(len.max(0) as usize);
    String::from_utf8_lossy(&buf[..end])
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// True on the lowest rank of its node (by node name): the one that samples the node's
/// network counters. Collective on the layer's communicator.
fn lowest_on_node(comm: ffi::MPI_Comm, rank: c_int, size: c_int, node: &str) -> bool {
    use std::hash::{Hash, Hasher};
    // The same fixed keys in every process of the job: equal names, equal hashes.
    let mut h = std::hash::DefaultHasher::new();
    node.hash(&mut h);
    let mine: u64 = h.finish();
    let mut all = vec![0u64; size.max(1) as usize];
    // SAFETY: an allgather of one u64 per rank into a buffer of `size` u64, on the
    // layer's private communicator, called by every rank at init.
    let rc = unsafe {
        real::PMPI_Allgather(
            &mine as *const u64 as *const c_void,
            1,
            ffi::RSMPI_UINT64_T,
            all.as_mut_ptr() as *mut c_void,
            1,
            ffi::RSMPI_UINT64_T,
            comm,
        )
    };
    rc == 0 && all.iter().position(|&x| x == mine) == Some(rank as usize)
}

/// Min-RTT ping-pongs between rank 0 and every other rank, over the private
/// communicator; returns this rank's offset to rank 0's clock.
fn sync_clock(comm: ffi::MPI_Comm, rank: c_int, size: c_int, rounds: u32) -> Option<ClockSample> {
    let rounds = rounds.max(1) as usize;
    // SAFETY: matched PMPI point-to-point calls on the private communicator with local
    // buffers; every rank runs this at the same point of init and finalize.
    unsafe {
        let mut st = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let u64t = ffi::RSMPI_UINT64_T;
        if rank == 0 {
            for r in 1..size {
                let mut samples = Vec::with_capacity(rounds + 1);
                for _ in 0..rounds + 1 {
                    let t0 = now_ns();
                    let mut tr: u64 = 0;
                    real::PMPI_Send(
                        &t0 as *const u64 as *const c_void,
                        1,
                        u64t,
                        r,
                        TAG_CLOCK,
                        comm,
                    );
                    real::PMPI_Recv(
                        &mut tr as *mut u64 as *mut c_void,
                        1,
                        u64t,
                        r,
                        TAG_CLOCK,
                        comm,
                        st.as_mut_ptr(),
                    );
                    let t1 = now_ns();
                    samples.push(PingPong { t0, tr, t1 });
                }
                // The first exchange sets up the connection; leave it out.
                let c = estimate_offset(&samples[1..]).unwrap_or_default();
                let out: [i64; 3] = [c.at_ns as i64, c.offset_ns, c.rtt_ns as i64];
                real::PMPI_Send(
                    out.as_ptr() as *const c_void,
                    3,
                    ffi::RSMPI_INT64_T,
                    r,
                    TAG_CLOCK,
                    comm,
                );
            }
            Some(ClockSample {
                at_ns: now_ns(),
                offset_ns: 0,
                rtt_ns: 0,
            })
        } else {
            for _ in 0..rounds + 1 {
                let mut t0: u64 = 0;
                real::PMPI_Recv(
                    &mut t0 as *mut u64 as *mut c_void,
                    1,
                    u64t,
                    0,
                    TAG_CLOCK,
                    comm,
                    st.as_mut_ptr(),
                );
                let tr = now_ns();
                real::PMPI_Send(
                    &tr as *const u64 as *const c_void,
                    1,
                    u64t,
                    0,
                    TAG_CLOCK,
                    comm,
                );
            }
            let mut got = [0i64; 3];
            real::PMPI_Recv(
                got.as_mut_ptr() as *mut c_void,
                3,
                ffi::RSMPI_INT64_T,
                0,
                TAG_CLOCK,
                comm,
                st.as_mut_ptr(),
            );
            Some(ClockSample {
                at_ns: got[0] as u64,
                offset_ns: got[1],
                rtt_ns: got[2] as u64,
            })
        }
    }
}

fn polls() -> Vec<PollStat> {
    (0..trace::CALL_NAMES.len().min(POLL_COUNT.len()))
        .filter_map(|i| {
            let count = POLL_COUNT[i].load(Ordering::Relaxed);
            (count > 0).then(|| PollStat {
                call: trace::CALL_NAMES[i].to_string(),
                count,
                time_ns: POLL_NS[i].load(Ordering::Relaxed),
            })
        })
        .collect()
}

/// Stops the drainer and rewrites the metadata; returns the output directory if any.
fn close_spool(run: &mut Run, ended_by: Option<String>) -> Option<PathBuf> {
    if let Some(sp) = run.spooler.take() {
        let stats = sp.finish();
        run.meta.lost = stats.records_lost.load(Ordering::Relaxed);
    }
    run.meta.dropped = record::registry().map_or(0, |r| r.dropped());
    run.meta.dropped_requests = handles::dropped_requests();
    run.meta.polls = polls();
    run.meta.comms = handles::comm_log()
        .into_iter()
        .map(|(id, world, inter)| trace::CommMembers { id, world, inter })
        .collect();
    run.meta.finalized = ended_by.is_none();
    run.meta.ended_by = ended_by;
    run.meta.host_cpu_end = trace::read_host_cpu();
    match run.net.take() {
        Some(s) => (run.meta.net_end, run.meta.net_timeouts) = s.finish(),
        None if run.meta.net_init.is_some() => {
            run.meta.net_end = trace::netstat::read_counters(now_ns())
        }
        None => {}
    }
    let dir = run.dir.clone()?;
    if let Err(e) = trace::write_meta(&dir, &run.meta) {
        super::say(&e.to_string());
    }
    Some(dir)
}

fn finish() {
    if IS_CHILD.load(Ordering::Relaxed) {
        return;
    }
    let Some(mut run) = RUN.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    let _ = super::hook::record_unfinished(crate::topo::clock::now_ns());
    // Calls made from here on (other threads, the layer's own) are not recorded.
    STATE.store(PASS, Ordering::Release);
    let clock = sync_clock(run.comm, run.rank, run.size, run.cfg.clock_rounds);
    run.meta.clock_finalize = clock;
    if run.meta.timestamps == "tsc" {
        run.meta.tsc_drift_ns = Some(crate::topo::clock::check_tsc());
    }
    let dir = close_spool(&mut run, None);
    // Every rank's spool and metadata are complete before rank 0 reads them.
    // SAFETY: barrier and free of the layer's private communicator, on every rank.
    unsafe { real::PMPI_Barrier(run.comm) };
    // Rank 0 decides whether there will be a report, so that every rank takes part in
    // gathering the spools it cannot see (node-local output directories), or none does.
    let mut report = u8::from(run.cfg.report && dir.is_some());
    // SAFETY: broadcast of one local byte on the layer's private communicator.
    unsafe {
        real::PMPI_Bcast(
            &mut report as *mut u8 as *mut c_void,
            1,
            ffi::RSMPI_UINT8_T,
            0,
            run.comm,
        )
    };
    if report == 1 {
        let (got, problems) =
            super::gather::gather_to_root(run.comm, run.rank, run.size, dir.as_deref());
        if !got.is_empty() && !run.cfg.quiet {
            pmpi_core::say_line!(
                "pmpi-predict: gathered the spools of {} ranks from node-local directories",
                got.len()
            );
        }
        for p in problems {
            pmpi_core::say_line!("pmpi-predict: {p}");
        }
    }
    if let (0, 1, Some(dir)) = (run.rank, report, dir) {
        let spooled = crate::report::spool_bytes(&dir);
        let limit = run.cfg.report_max_mb.saturating_mul(1 << 20);
        if spooled > limit {
            // Analysing a very large trace here would hold the whole job at MPI_Finalize.
            pmpi_core::say_line!(
                "pmpi-predict: {} MB of records exceed PMPI_PREDICT_REPORT_MAX_MB={}; no report at MPI_Finalize, run: pmpi-predict analyze {}",
                spooled >> 20,
                run.cfg.report_max_mb,
                dir.display()
            );
        } else {
            let t0 = std::time::Instant::now();
            match crate::report::write_report(&dir) {
                Ok(s) => {
                    if !run.cfg.quiet {
                        pmpi_core::say_line!(
                            "{}",
                            crate::report::banner_finalize(&s, t0.elapsed().as_secs_f64(), &dir)
                        );
                    }
                }
                Err(e) => pmpi_core::say_line!(
                    "pmpi-predict: cannot write the report in {}: {e}",
                    dir.display()
                ),
            }
        }
    }
    // SAFETY: frees the private communicator this layer created.
    unsafe { real::PMPI_Comm_free(&mut run.comm) };
}

/// Called where the process is about to end without MPI_Finalize (MPI_Abort, exit):
/// drains the spool and writes the metadata with `ended_by = why`, once; makes no MPI
/// call.
pub fn flush_on_exit(why: &str) {
    if IS_CHILD.load(Ordering::Relaxed) {
        return;
    }
    STATE.store(PASS, Ordering::Relaxed);
    // try_lock: never wait on a thread that holds the lock (it may be this one, if exit
    // was called from inside the layer).
    let run = match RUN.try_lock() {
        Ok(mut g) => g.take(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    if let Some(mut run) = run {
        // Operations still pending are recorded too (incomplete): their messages may have
        // been received.
        let _ = super::hook::record_unfinished(crate::topo::clock::now_ns());
        close_spool(&mut run, Some(why.to_string()));
    }
}

/// atexit handler: a process that ends without MPI_Finalize (exit, or return from main)
/// still leaves its records and metadata. Does nothing after MPI_Finalize or in a
/// forked child.
extern "C" fn on_exit() {
    let _ = std::panic::catch_unwind(|| {
        if STATE.load(Ordering::Relaxed) == ON {
            flush_on_exit("exit without MPI_Finalize");
        }
    });
}

/// Signals whose default action ends the process and that a batch system or mpirun sends
/// to stop a job.
const CAUGHT: [c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// Installs [`on_signal`] for SIGTERM and SIGINT where their action is the default one. A
/// program that ignores them or handles them itself keeps its disposition untouched (flags
/// and mask included): its handler decides, and an exit it makes runs our atexit flush.
fn install_signal_handlers() {
    for sig in CAUGHT {
        // SAFETY: sigaction with locals we own; the handler is async-signal-safe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Restores the default action of `sig` and sends it to the process again.
fn die_by(sig: c_int) {
    // SAFETY: sigaction, getpid and kill are async-signal-safe; locals only.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
}

/// The signal handler, installed only over the default action. Async-signal-safe:
/// atomics, sigaction and kill only. The drainer is asked to flush and end the process; a
/// second signal, or a layer that is not recording, ends it at once.
extern "C" fn on_signal(sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    if STATE.load(Ordering::Relaxed) != ON
        || IS_CHILD.load(Ordering::Relaxed)
        || PENDING_SIGNAL
            .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        die_by(sig);
    }
}

/// Runs on the drainer thread once everything recorded before signal `sig` is on disk:
/// writes the metadata (ended by the signal), then lets the signal's default action end
/// the process.
fn on_signal_drained(sig: i32) {
    STATE.store(PASS, Ordering::Relaxed);
    let _ = std::panic::catch_unwind(|| {
        let g = RUN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(run) = g.as_ref() {
            let mut meta = run.meta.clone();
            meta.dropped = record::registry().map_or(0, |r| r.dropped());
            meta.dropped_requests = handles::dropped_requests();
            meta.polls = polls();
            meta.finalized = false;
            meta.ended_by = Some(format!("signal {sig}"));
            if meta.net_init.is_some() {
                meta.net_end = trace::netstat::read_counters(now_ns());
            }
            if let Some(s) = &run.net {
                meta.net_timeouts = s.episodes();
            }
            if let Some(dir) = &run.dir {
                let _ = trace::write_meta(dir, &meta);
            }
        }
    });
    die_by(sig);
}

// Runs at process exit (the library's destructor): see `on_unload`.
#[used]
#[unsafe(link_section = ".fini_array")]
static ON_UNLOAD: extern "C" fn() = on_unload;

/// Variables that launchers set in MPI ranks only (not in mpirun, orted/prted,
/// hydra_pmi_proxy or slurmstepd themselves).
const RANK_VARS: [&std::ffi::CStr; 4] = [
    c"OMPI_COMM_WORLD_RANK",
    c"PMIX_RANK",
    c"PMI_RANK",
    c"SLURM_PROCID",
];

fn getenv(name: &std::ffi::CStr) -> Option<String> {
    // SAFETY: getenv with a NUL-terminated name; the value is copied at once. Nothing
    // else in this process changes the environment while it exits.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    (!v.is_null()).then(|| {
        // SAFETY: getenv returned a NUL-terminated string (checked non-null).
        unsafe { std::ffi::CStr::from_ptr(v) }
            .to_string_lossy()
            .into_owned()
    })
}

/// This process's rank according to its launcher, if it is an MPI rank. SLURM_PROCID
/// counts only inside a job step (srun), where SLURM_STEP_ID is set too.
fn launcher_rank() -> Option<String> {
    for v in RANK_VARS {
        if let Some(r) = getenv(v) {
            if v == c"SLURM_PROCID" && getenv(c"SLURM_STEP_ID").is_none() {
                continue;
            }
            return Some(r);
        }
    }
    getenv(c"PMI_SIZE").map(|_| "?".into())
}

/// The line a rank prints when it ends without the layer having seen MPI_Init.
fn unseen_init_line(rank: &str) -> String {
    format!(
        "pmpi-predict (rank {rank}): the layer never saw MPI_Init in this rank, so nothing was recorded: the program never called MPI_Init, or reaches MPI by a path the layer does not wrap (a layer built for another MPI library, calls straight to PMPI_Init); see \"What is and is not recorded\" in LD_PRELOAD.md\n"
    )
}

/// Destructor: a process that is an MPI rank (launcher variables), is linked with MPI
/// (`PMPI_Init` resolves after this library, and the program or one of its libraries
/// needs an MPI library: the layer's own need of libmpi does not count) and never got
/// through MPI_Init under the layer says so in one line. Processes the preload reaches
/// that are not ranks (mpirun, daemons) or not MPI programs (a shell, `time`, a command
/// a rank runs with `system()`) say nothing.
extern "C" fn on_unload() {
    let _ = std::panic::catch_unwind(|| {
        if INERT.load(Ordering::Relaxed)
            || IS_CHILD.load(Ordering::Relaxed)
            || STATE.load(Ordering::Relaxed) != OFF
        {
            return;
        }
        let Some(rank) = launcher_rank() else { return };
        if !real::have_mpi() || !real::program_links_mpi() {
            return;
        }
        let line = unseen_init_line(&rank);
        // SAFETY: write(2) of a buffer we own; no Rust stderr machinery at exit.
        unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    });
}
