//! Hand-written lifecycle interposers: MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Abort.
//! Start-up and shutdown of the recorder happen here, never on the hot path.
//!
//! Nothing runs before PMPI_Init succeeds, so the library is inert in `mpirun` and its
//! daemons, which the preload reaches too.

use super::handles;
use super::hook::{OFF, ON, PASS, POLL_COUNT, POLL_NS, STATE};
use crate::config::Config;
use crate::record::{self, spool::Spooler};
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
}

// SAFETY: the communicator handle is only used by the thread that calls MPI_Init or
// MPI_Finalize; the Mutex serialises access.
unsafe impl Send for Run {}

static RUN: Mutex<Option<Run>> = Mutex::new(None);
static IS_CHILD: AtomicBool = AtomicBool::new(false);

const TAG_CLOCK: c_int = 31_415;
const PATH_MAX: usize = 4096;

/// Interposer for `MPI_Init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the caller's arguments go unchanged to PMPI_Init.
    let rc = unsafe { ffi::PMPI_Init(argc, argv) };
    if rc == 0 {
        start();
    }
    rc
}

/// Interposer for `MPI_Init_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments go unchanged to PMPI_Init_thread.
    let rc = unsafe { ffi::PMPI_Init_thread(argc, argv, required, provided) };
    if rc == 0 {
        start();
    }
    rc
}

/// Interposer for `MPI_Finalize`: closes the spool, and rank 0 writes the report, all
/// before PMPI_Finalize.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    if std::panic::catch_unwind(finish).is_err() {
        super::fail("internal error at MPI_Finalize; the report may be incomplete");
    }
    // SAFETY: plain call of the real MPI_Finalize.
    unsafe { ffi::PMPI_Finalize() }
}

/// Interposer for `MPI_Abort`: flushes what this rank recorded, then aborts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm: ffi::MPI_Comm, errorcode: c_int) -> c_int {
    let _ = std::panic::catch_unwind(|| flush_on_exit(&format!("MPI_Abort({errorcode})")));
    // SAFETY: the caller's arguments go unchanged to PMPI_Abort.
    unsafe { ffi::PMPI_Abort(comm, errorcode) }
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
    let (mut rank, mut size) = (0, 0);
    let mut comm = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    // SAFETY: PMPI queries and a dup of WORLD into a local handle, right after PMPI_Init succeeded.
    let comm = unsafe {
        ffi::PMPI_Comm_rank(world(), &mut rank);
        ffi::PMPI_Comm_size(world(), &mut size);
        if ffi::PMPI_Comm_dup(world(), comm.as_mut_ptr()) != 0 {
            return Err("cannot duplicate MPI_COMM_WORLD at MPI_Init".into());
        }
        comm.assume_init()
    };
    if rank == 0 {
        for w in &warnings {
            eprintln!("pmpi-predict: {w}");
        }
    }
    // Rank 0 decides for everyone (enabled, directory), so that the collective steps
    // below and at finalize match on every rank even if environments differ.
    let mut shared = [0u8; PATH_MAX + 1];
    if rank == 0 {
        shared[0] = cfg.disabled as u8;
        let dir = cfg.out_dir.clone().unwrap_or_else(default_dir);
        let b = dir.as_os_str().as_encoded_bytes();
        let n = b.len().min(PATH_MAX - 1);
        shared[1..1 + n].copy_from_slice(&b[..n]);
    }
    // SAFETY: broadcast of a local byte buffer on the layer's private communicator.
    unsafe {
        ffi::PMPI_Bcast(
            shared.as_mut_ptr() as *mut c_void,
            shared.len() as c_int,
            ffi::RSMPI_UINT8_T,
            0,
            comm,
        )
    };
    let disabled = shared[0] != 0;
    let end = shared[1..].iter().position(|&b| b == 0).unwrap_or(PATH_MAX);
    let dir = PathBuf::from(String::from_utf8_lossy(&shared[1..1 + end]).into_owned());

    let s = handles::init_sentinels(rank, size);
    let _ = s;
    handles::init_comms(4096, size, rank);
    handles::init_requests(1 << 15);
    let clock = sync_clock(comm, rank, size, cfg.clock_rounds);

    let mut meta = RankMeta {
        format_version: trace::SPOOL_VERSION,
        rank,
        world_size: size,
        node: crate::topo::node_name(cfg.node.as_deref()),
        pid: std::process::id(),
        mpi_library: library_version(),
        calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
        clock_init: clock,
        init_ns: now_ns(),
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
        trace::write_meta(&dir, &meta)?;
        let reg = record::init(run.cfg.buffer_records, run.cfg.max_threads);
        Spooler::start(
            &trace::spool_path(&dir, rank),
            reg,
            Duration::from_millis(run.cfg.flush_ms),
        )
    })();
    meta.init_ns = run.meta.init_ns;
    match setup {
        Ok(sp) => {
            run.spooler = Some(sp);
            run.dir = Some(dir);
            // SAFETY: registers a plain extern "C" function as the fork child handler.
            unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) };
            *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
            STATE.store(ON, Ordering::Release);
            Ok(())
        }
        Err(e) => {
            *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
            Err(e)
        }
    }
}

/// `pmpi-predict.<YYYYmmdd-HHMMSS>.<pid>` in the working directory.
fn default_dir() -> PathBuf {
    let mut t: libc::time_t = 0;
    // SAFETY: libc time and localtime_r write into locals we own.
    let tm = unsafe {
        libc::time(&mut t);
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    PathBuf::from(format!(
        "pmpi-predict.{:04}{:02}{:02}-{:02}{:02}{:02}.{}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
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
                    ffi::PMPI_Send(
                        &t0 as *const u64 as *const c_void,
                        1,
                        u64t,
                        r,
                        TAG_CLOCK,
                        comm,
                    );
                    ffi::PMPI_Recv(
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
                ffi::PMPI_Send(
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
                ffi::PMPI_Recv(
                    &mut t0 as *mut u64 as *mut c_void,
                    1,
                    u64t,
                    0,
                    TAG_CLOCK,
                    comm,
                    st.as_mut_ptr(),
                );
                let tr = now_ns();
                ffi::PMPI_Send(
                    &tr as *const u64 as *const c_void,
                    1,
                    u64t,
                    0,
                    TAG_CLOCK,
                    comm,
                );
            }
            let mut got = [0i64; 3];
            ffi::PMPI_Recv(
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
    run.meta.finalized = ended_by.is_none();
    run.meta.ended_by = ended_by;
    let dir = run.dir.clone()?;
    if let Err(e) = trace::write_meta(&dir, &run.meta) {
        eprintln!("pmpi-predict: {e}");
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
    let was = STATE.swap(PASS, Ordering::AcqRel);
    let _ = was;
    let clock = sync_clock(run.comm, run.rank, run.size, run.cfg.clock_rounds);
    run.meta.clock_finalize = clock;
    let dir = close_spool(&mut run, None);
    // Every rank's spool and metadata are complete before rank 0 reads them.
    // SAFETY: barrier and free of the layer's private communicator, on every rank.
    unsafe { ffi::PMPI_Barrier(run.comm) };
    if run.rank == 0 && run.cfg.report {
        if let Some(dir) = dir {
            match crate::report::write_report(&dir) {
                Ok(s) => {
                    if !run.cfg.quiet {
                        eprintln!(
                            "pmpi-predict: {} records from {} ranks; report in {}",
                            s.records,
                            s.ranks,
                            dir.display()
                        );
                    }
                }
                Err(e) => eprintln!(
                    "pmpi-predict: cannot write the report in {}: {e}",
                    dir.display()
                ),
            }
        }
    }
    // SAFETY: frees the private communicator this layer created.
    unsafe { ffi::PMPI_Comm_free(&mut run.comm) };
}

/// Called where the process is about to end without MPI_Finalize (MPI_Abort).
pub fn flush_on_exit(why: &str) {
    if IS_CHILD.load(Ordering::Relaxed) {
        return;
    }
    STATE.store(PASS, Ordering::Relaxed);
    let guard = RUN.try_lock();
    if let Ok(mut g) = guard {
        if let Some(run) = g.as_mut() {
            close_spool(run, Some(why.to_string()));
        }
    }
}
