//! The hot path. Every generated interposer calls one function here per call kind: it
//! takes two timestamps around the PMPI call and appends one fixed-size record to the
//! calling thread's ring. No allocation, lock, system call or formatting happens here;
//! the record is built inside `catch_unwind` so that no panic can reach C.

use super::handles::{self, CommInfo, Pending, Sentinels, key};
use crate::record;
use crate::topo::clock::now_ns;
use crate::trace::{
    FLAG_ERROR, FLAG_IN_PLACE, FLAG_INCOMPLETE, FLAG_NONBLOCKING, NO_RANK, PROC_NULL, Record,
    UNKNOWN_RANK,
};
use mpi_sys as ffi;
use std::cell::{Cell, UnsafeCell};
use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// Before MPI_Init succeeded (and in processes that never call it, like mpirun's daemons).
pub const OFF: u8 = 0;
/// Recording.
pub const ON: u8 = 1;
/// Pass-through: disabled, failed, finalized, or a forked child.
pub const PASS: u8 = 2;

/// Layer state; read with one relaxed load per call.
pub static STATE: AtomicU8 = AtomicU8::new(OFF);

unsafe extern "C" {
    static pmpi_predict_BYTE: ffi::MPI_Datatype;
    static pmpi_predict_DATATYPE_NULL: ffi::MPI_Datatype;
}

thread_local! {
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    static SCRATCH: UnsafeCell<Scratch> = const { UnsafeCell::new(Scratch::new()) };
    /// Bytes this thread put and got by one-sided calls since its last synchronisation
    /// that completes them (recorded in that call's row).
    static RMA_BYTES: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Request arrays longer than this are passed through untracked beyond this index.
const MAX_REQS: usize = 4096;
/// Status arrays substituted for MPI_STATUSES_IGNORE up to this length.
const MAX_STATUSES: usize = 512;

/// Per-thread storage for request handles (overwritten by MPI on completion) and
/// statuses (when the caller ignores them), so that the hot path never allocates.
struct Scratch {
    reqs: [usize; MAX_REQS],
    statuses: [MaybeUninit<ffi::MPI_Status>; MAX_STATUSES],
    status: MaybeUninit<ffi::MPI_Status>,
}

impl Scratch {
    const fn new() -> Scratch {
        Scratch {
            reqs: [0; MAX_REQS],
            statuses: [const { MaybeUninit::uninit() }; MAX_STATUSES],
            status: MaybeUninit::uninit(),
        }
    }
}

/// Unsuccessful MPI_Test*/MPI_Iprobe calls are counted, not recorded: polling loops would
/// otherwise flood the buffers. Indexed by call number: count and total ns.
pub static POLL_COUNT: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];
pub static POLL_NS: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];
const _: () = assert!(
    crate::trace::CALL_NAMES.len() <= 256,
    "more wrapped calls than poll counters"
);

/// Marks the thread as inside a hook; resets on drop. MPI calls made by the MPI library
/// itself from inside a wrapped call (ROMIO does this) pass through unrecorded.
struct Guard;

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        let _ = IN_HOOK.try_with(|c| c.set(false));
    }
}

#[inline]
fn enter() -> Option<(Guard, &'static Sentinels)> {
    if STATE.load(Ordering::Relaxed) != ON {
        return None;
    }
    if !IN_HOOK.try_with(|c| !c.replace(true)).unwrap_or(false) {
        return None;
    }
    let g = Guard;
    let s = handles::sentinels()?;
    Some((g, s))
}

/// Runs the recording step; a panic in it disables the layer instead of unwinding into C.
#[inline]
fn guarded(f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        super::fail("internal error while recording a call");
    }
}

#[inline]
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> Option<R> {
    // SAFETY: the IN_HOOK guard makes hooks non-reentrant per thread, so this is the only
    // live reference to the thread's scratch.
    SCRATCH.try_with(|s| f(unsafe { &mut *s.get() })).ok()
}

const NO_COMM: CommInfo = CommInfo {
    id: u32::MAX,
    size: 0,
    my_rank: -1,
    world: None,
    indeg: 0,
    outdeg: 0,
};

#[inline]
fn comm_of(comm: ffi::MPI_Comm, s: &Sentinels) -> CommInfo {
    handles::comm_info(comm, s).unwrap_or(NO_COMM)
}

#[inline]
fn base(call: u16, t0: u64, t1: u64, ci: &CommInfo, rc: c_int) -> Record {
    Record {
        t_start: t0,
        t_end: t1,
        t_posted: t1,
        peer: NO_RANK,
        root: NO_RANK,
        peer2: NO_RANK,
        comm: ci.id,
        comm_size: ci.size,
        call,
        flags: if rc != 0 { FLAG_ERROR } else { 0 },
        ..Default::default()
    }
}

#[inline]
fn status_ptr(
    status: *mut ffi::MPI_Status,
    s: &Sentinels,
    scratch: *mut ffi::MPI_Status,
) -> *mut ffi::MPI_Status {
    if status as usize == s.status_ignore || status.is_null() {
        scratch
    } else {
        status
    }
}

/// Bytes received according to a status (MPI_Get_count in MPI_BYTE).
#[inline]
fn status_bytes(st: *const ffi::MPI_Status) -> Option<u64> {
    let mut n: c_int = 0;
    // SAFETY: `st` points to a status MPI just filled; PMPI_Get_count only reads it.
    let rc = unsafe { ffi::PMPI_Get_count(st, pmpi_predict_BYTE, &mut n) };
    (rc == 0 && n >= 0).then_some(n as u64)
}

#[inline]
fn status_source(st: *const ffi::MPI_Status) -> c_int {
    // SAFETY: `st` points to a status MPI just filled.
    unsafe { (*st).MPI_SOURCE }
}

/// The matched tag in a status (the real tag of an MPI_ANY_TAG receive).
#[inline]
fn status_tag(st: *const ffi::MPI_Status) -> c_int {
    // SAFETY: `st` points to a status MPI just filled.
    unsafe { (*st).MPI_TAG }
}

/// Translates the source in a status through a communicator's table.
#[inline]
fn source_world(src: c_int, world: Option<&'static [i32]>, size: u32, s: &Sentinels) -> i32 {
    let ci = CommInfo {
        id: 0,
        size,
        my_rank: 0,
        world,
        indeg: 0,
        outdeg: 0,
    };
    ci.world_rank(src, s)
}

fn poll_miss(call: u16, t0: u64, t1: u64) {
    if let (Some(c), Some(n)) = (POLL_COUNT.get(call as usize), POLL_NS.get(call as usize)) {
        c.fetch_add(1, Ordering::Relaxed);
        n.fetch_add(t1.saturating_sub(t0), Ordering::Relaxed);
    }
}

/// Emits the record of a tracked nonblocking operation that just completed.
#[inline]
fn complete(req: usize, st: *const ffi::MPI_Status, t_end: u64, s: &Sentinels) {
    let Some(mut p) = handles::take(req) else {
        return;
    };
    if p.is_recv && !st.is_null() {
        if p.peer != PROC_NULL {
            p.peer = source_world(status_source(st), p.world, p.comm_size, s);
            p.tag = status_tag(st);
        }
        if let Some(b) = status_bytes(st) {
            p.bytes = b;
        }
    }
    emit_done(p, t_end);
}

// ---- point-to-point ----

/// Blocking sends.
#[inline]
pub fn send(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        let ci = comm_of(comm, s);
        let mut r = base(call, t0, t1, &ci, rc);
        r.peer = ci.world_rank(peer, s);
        r.tag = tag;
        if r.peer != PROC_NULL {
            r.bytes_send = handles::bytes(count, dtype);
        }
        record::push(r);
    });
    rc
}

/// Blocking receive: the actual source and size come from the status.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn recv(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        let ci = comm_of(comm, s);
        let mut r = base(call, t0, t1, &ci, rc);
        r.tag = tag;
        if peer == s.proc_null {
            r.peer = PROC_NULL;
        } else if rc == 0 {
            r.peer = ci.world_rank(status_source(st), s);
            r.tag = status_tag(st);
            r.bytes_recv = status_bytes(st).unwrap_or_else(|| handles::bytes(count, dtype));
        } else {
            r.peer = ci.world_rank(peer, s);
        }
        record::push(r);
    });
    rc
}

#[allow(clippy::too_many_arguments)]
fn post(
    call: u16,
    is_recv: bool,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        if rc != 0 || request.is_null() {
            return;
        }
        let ci = comm_of(comm, s);
        let wp = ci.world_rank(peer, s);
        let elem = handles::type_size(dtype);
        let p = Pending {
            call,
            thread: record::thread_ring().map_or(0, |r| r.thread),
            is_recv,
            t_start: t0,
            t_posted: t1,
            bytes: if wp == PROC_NULL || count <= 0 {
                0
            } else {
                count as u64 * elem
            },
            bytes_recv: 0,
            root: NO_RANK,
            flags: 0,
            peer: wp,
            tag,
            comm: ci.id,
            comm_size: ci.size,
            world: ci.world,
        };
        track_posted(request, p, t1);
    });
    rc
}

/// Tracks an operation MPI just posted under the handle it wrote through `request`
/// (called only when the post succeeded).
fn track_posted(request: *mut ffi::MPI_Request, p: Pending, t1: u64) {
    // SAFETY: MPI wrote a request handle through the caller's pointer (rc == 0).
    let handle = unsafe { *request };
    let req = key(handle);
    if handles::is_shared_request(req) {
        emit_done(p, t1);
        return;
    }
    if handles::track(req, p) == Err(handles::TrackError::Duplicate) {
        if request_complete(handle) {
            // A handle shared by operations that completed at post: the earlier one
            // completed at its post too.
            handles::learn_shared_request(req);
            if let Some(old) = handles::take(req) {
                let end = old.t_posted;
                emit_done(old, end);
            }
            emit_done(p, t1);
        } else {
            // A stale entry (its completion was not seen): the new operation replaces it.
            let _ = handles::take(req);
            let _ = handles::track(req, p);
        }
    }
}

/// True if the request is complete, without freeing it.
fn request_complete(mut h: ffi::MPI_Request) -> bool {
    let mut flag: c_int = 0;
    let mut st = MaybeUninit::<ffi::MPI_Status>::uninit();
    // SAFETY: MPI_Request_get_status only inspects the request (it never frees it) and
    // writes the flag and status we own.
    let rc = unsafe { ffi::PMPI_Request_get_status(h, &mut flag, st.as_mut_ptr()) };
    let _ = &mut h;
    rc == 0 && flag != 0
}

/// Records a completed nonblocking operation.
fn emit_done(p: Pending, t_end: u64) {
    emit(p, t_end, 0);
}

fn emit(p: Pending, t_end: u64, flags: u16) {
    let mut r = Record {
        t_start: p.t_start,
        t_end,
        t_posted: p.t_posted,
        peer: p.peer,
        root: p.root,
        peer2: NO_RANK,
        comm: p.comm,
        comm_size: p.comm_size,
        tag: p.tag,
        thread: p.thread,
        call: p.call,
        flags: FLAG_NONBLOCKING | p.flags | flags,
        ..Default::default()
    };
    if p.is_recv {
        r.bytes_recv = p.bytes;
    } else {
        r.bytes_send = p.bytes;
        r.bytes_recv = p.bytes_recv;
    }
    record::push_as_is(r);
}

/// Nonblocking sends: one record from post to completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn isend(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    post(call, false, count, dtype, peer, tag, comm, request, f)
}

/// Nonblocking receives: one record from post to completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn irecv(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    post(call, true, count, dtype, peer, tag, comm, request, f)
}

/// MPI_Sendrecv: `peer` is the destination, `peer2` the actual source.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn sendrecv(
    call: u16,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    dest: c_int,
    tag: c_int,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    source: c_int,
    _rtag: c_int,
    comm: ffi::MPI_Comm,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        let ci = comm_of(comm, s);
        let mut r = base(call, t0, t1, &ci, rc);
        r.tag = tag;
        r.peer = ci.world_rank(dest, s);
        if r.peer != PROC_NULL {
            r.bytes_send = handles::bytes(scount, stype);
        }
        if source == s.proc_null {
            r.peer2 = PROC_NULL;
        } else if rc == 0 {
            r.peer2 = ci.world_rank(status_source(st), s);
            r.bytes_recv = status_bytes(st).unwrap_or_else(|| handles::bytes(rcount, rtype));
        }
        record::push(r);
    });
    rc
}

/// MPI_Probe: records the matched source; moves no data.
#[inline]
pub fn probe(
    call: u16,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        let ci = comm_of(comm, s);
        let mut r = base(call, t0, t1, &ci, rc);
        r.tag = tag;
        if peer == s.proc_null || rc != 0 {
            r.peer = ci.world_rank(peer, s);
        } else {
            r.peer = ci.world_rank(status_source(st), s);
            r.tag = status_tag(st);
        }
        record::push(r);
    });
    rc
}

/// MPI_Iprobe: recorded when a message was found, counted otherwise.
#[inline]
pub fn iprobe(
    call: u16,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    flag: *mut c_int,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        // SAFETY: MPI wrote the flag through the caller's pointer.
        let found = rc == 0 && !flag.is_null() && unsafe { *flag } != 0;
        if !found {
            poll_miss(call, t0, t1);
            return;
        }
        let ci = comm_of(comm, s);
        let mut r = base(call, t0, t1, &ci, rc);
        r.tag = tag;
        r.peer = if peer == s.proc_null {
            PROC_NULL
        } else {
            ci.world_rank(status_source(st), s)
        };
        record::push(r);
    });
    rc
}

// ---- completions ----

fn completion_record(call: u16, t0: u64, t1: u64, rc: c_int) {
    let mut r = base(call, t0, t1, &NO_COMM, rc);
    r.comm = u32::MAX;
    record::push(r);
}

/// MPI_Wait.
#[inline]
pub fn wait(
    call: u16,
    request: *mut ffi::MPI_Request,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let req = if request.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
        key(unsafe { *request })
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        if rc == 0 {
            complete(req, st, t1, s);
        }
        completion_record(call, t0, t1, rc);
    });
    rc
}

/// MPI_Test: a completion is recorded; an unsuccessful test is counted.
#[inline]
pub fn test(
    call: u16,
    request: *mut ffi::MPI_Request,
    flag: *mut c_int,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let req = if request.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
        key(unsafe { *request })
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        // SAFETY: MPI wrote the flag through the caller's pointer.
        if rc == 0 && !flag.is_null() && unsafe { *flag } != 0 {
            complete(req, st, t1, s);
            completion_record(call, t0, t1, rc);
        } else {
            poll_miss(call, t0, t1);
        }
    });
    rc
}

/// Copies up to MAX_REQS request handles into the thread scratch; returns how many.
fn save_requests(n: c_int, reqs: *const ffi::MPI_Request) -> usize {
    if reqs.is_null() || n <= 0 {
        return 0;
    }
    let m = (n as usize).min(MAX_REQS);
    with_scratch(|x| {
        for i in 0..m {
            // SAFETY: MPI requires `reqs` to hold n handles; i < m <= n.
            x.reqs[i] = key(unsafe { *reqs.add(i) });
        }
        m
    })
    .unwrap_or(0)
}

fn saved_request(i: usize) -> usize {
    with_scratch(|x| x.reqs.get(i).copied().unwrap_or(0)).unwrap_or(0)
}

fn statuses_ptr(statuses: *mut ffi::MPI_Status, n: c_int, s: &Sentinels) -> *mut ffi::MPI_Status {
    if statuses as usize == s.statuses_ignore && n > 0 && n as usize <= MAX_STATUSES {
        with_scratch(|x| x.statuses.as_mut_ptr() as *mut ffi::MPI_Status).unwrap_or(statuses)
    } else {
        statuses
    }
}

#[inline]
fn status_at(st: *mut ffi::MPI_Status, i: usize, s: &Sentinels) -> *const ffi::MPI_Status {
    if st as usize == s.statuses_ignore || st.is_null() {
        std::ptr::null()
    } else {
        // SAFETY: MPI requires the status array to hold as many entries as requests (or outcount).
        unsafe { st.add(i) }
    }
}

/// Completes the saved requests `0..m` whose handle MPI reset to MPI_REQUEST_NULL, or all
/// of them when `all` completed (a persistent request keeps its handle).
fn complete_nulled(
    m: usize,
    reqs: *const ffi::MPI_Request,
    st: *mut ffi::MPI_Status,
    t1: u64,
    s: &Sentinels,
    all: bool,
) {
    for i in 0..m {
        let before = saved_request(i);
        // SAFETY: i < m <= the caller's array length.
        let now = key(unsafe { *reqs.add(i) });
        if before != s.request_null && (all || now == s.request_null) {
            complete(before, status_at(st, i, s), t1, s);
        }
    }
}

/// MPI_Waitall.
#[inline]
pub fn waitall(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    statuses: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(statuses);
    };
    let m = save_requests(n, reqs);
    let st = statuses_ptr(statuses, n, s);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        complete_nulled(m, reqs, st, t1, s, rc == 0);
        completion_record(call, t0, t1, rc);
    });
    rc
}

/// MPI_Testall: completes all or none.
#[inline]
pub fn testall(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    flag: *mut c_int,
    statuses: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(statuses);
    };
    let m = save_requests(n, reqs);
    let st = statuses_ptr(statuses, n, s);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        // SAFETY: MPI wrote the flag through the caller's pointer.
        if rc == 0 && !flag.is_null() && unsafe { *flag } != 0 {
            complete_nulled(m, reqs, st, t1, s, true);
            completion_record(call, t0, t1, rc);
        } else {
            poll_miss(call, t0, t1);
        }
    });
    rc
}

#[allow(clippy::too_many_arguments)]
fn any_done(
    call: u16,
    m: usize,
    index: *mut c_int,
    st: *mut ffi::MPI_Status,
    t0: u64,
    t1: u64,
    rc: c_int,
    s: &Sentinels,
) {
    let i = if index.is_null() {
        -1
    } else {
        // SAFETY: MPI wrote the index through the caller's pointer.
        unsafe { *index }
    };
    if i >= 0 && (i as usize) < m {
        complete(saved_request(i as usize), st, t1, s);
    }
    completion_record(call, t0, t1, rc);
}

/// MPI_Waitany.
#[inline]
pub fn waitany(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    index: *mut c_int,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let m = save_requests(n, reqs);
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| any_done(call, m, index, st, t0, t1, rc, s));
    rc
}

/// MPI_Testany.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn testany(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let m = save_requests(n, reqs);
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        // SAFETY: MPI wrote flag and index through the caller's pointers.
        let done = rc == 0
            && !flag.is_null()
            && unsafe { *flag } != 0
            && !index.is_null()
            && unsafe { *index } >= 0;
        if done {
            any_done(call, m, index, st, t0, t1, rc, s);
        } else {
            poll_miss(call, t0, t1);
        }
    });
    rc
}

#[allow(clippy::too_many_arguments)]
fn some_done(
    call: u16,
    m: usize,
    outcount: *mut c_int,
    indices: *mut c_int,
    st: *mut ffi::MPI_Status,
    times: (u64, u64),
    rc: c_int,
    s: &Sentinels,
    poll: bool,
) {
    let (t0, t1) = times;
    let k = if outcount.is_null() {
        0
    } else {
        // SAFETY: MPI wrote outcount through the caller's pointer.
        unsafe { *outcount }
    };
    if k <= 0 || indices.is_null() {
        if poll {
            poll_miss(call, t0, t1);
        } else {
            completion_record(call, t0, t1, rc);
        }
        return;
    }
    for j in 0..k as usize {
        // SAFETY: MPI wrote `outcount` indices.
        let i = unsafe { *indices.add(j) };
        if i >= 0 && (i as usize) < m {
            // Statuses of *some calls are indexed by position in `indices`.
            complete(saved_request(i as usize), status_at(st, j, s), t1, s);
        }
    }
    completion_record(call, t0, t1, rc);
}

/// MPI_Waitsome.
#[inline]
pub fn waitsome(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(statuses);
    };
    let m = save_requests(n, reqs);
    let st = statuses_ptr(statuses, n, s);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| some_done(call, m, outcount, indices, st, (t0, t1), rc, s, false));
    rc
}

/// MPI_Testsome.
#[inline]
pub fn testsome(
    call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(statuses);
    };
    let m = save_requests(n, reqs);
    let st = statuses_ptr(statuses, n, s);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| some_done(call, m, outcount, indices, st, (t0, t1), rc, s, true));
    rc
}

/// MPI_Request_free: a tracked operation is recorded as incomplete at the free.
#[inline]
pub fn request_free(
    _call: u16,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, _)) = enter() else { return f() };
    let req = if request.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
        key(unsafe { *request })
    };
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        if let Some(p) = handles::take(req) {
            emit(p, t1, FLAG_INCOMPLETE);
        }
        handles::forget_persistent(req);
    });
    rc
}

// ---- collectives ----

/// Shared tail of the collective hooks: times the call, then records what `bytes`
/// computes (send, receive, root, in-place) for this rank. A nonblocking collective
/// (`request` not null) is tracked like a nonblocking send and recorded at the completion
/// call that finishes it.
#[inline]
fn collective(
    call: u16,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
    bytes: impl FnOnce(&CommInfo, &Sentinels) -> (u64, u64, i32, bool),
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        let ci = comm_of(comm, s);
        let (snd, rcv, root, in_place) = bytes(&ci, s);
        if !request.is_null() {
            if rc != 0 {
                return;
            }
            let p = Pending {
                call,
                thread: record::thread_ring().map_or(0, |r| r.thread),
                is_recv: false,
                t_start: t0,
                t_posted: t1,
                bytes: snd,
                bytes_recv: rcv,
                root,
                flags: if in_place { FLAG_IN_PLACE } else { 0 },
                peer: NO_RANK,
                tag: 0,
                comm: ci.id,
                comm_size: ci.size,
                world: ci.world,
            };
            track_posted(request, p, t1);
            return;
        }
        let mut r = base(call, t0, t1, &ci, rc);
        r.bytes_send = snd;
        r.bytes_recv = rcv;
        r.root = root;
        if in_place {
            r.flags |= FLAG_IN_PLACE;
        }
        record::push(r);
    });
    rc
}

#[inline]
fn is_in_place(buf: *const std::ffi::c_void, s: &Sentinels) -> bool {
    buf as usize == s.in_place
}

/// Root as a WORLD rank, and whether this rank is the root.
#[inline]
fn root_of(ci: &CommInfo, root: c_int, s: &Sentinels) -> (i32, bool) {
    (ci.world_rank(root, s), root == ci.my_rank)
}

/// MPI_Alltoall.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn alltoall(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let n = ci.size as u64;
        let rb = handles::bytes(rcount, rtype) * n;
        let ip = is_in_place(sbuf, s);
        let sb = if ip {
            rb
        } else {
            handles::bytes(scount, stype) * n
        };
        (sb, rb, NO_RANK, ip)
    })
}

/// MPI_Alltoallv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn alltoallv(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scounts: *const c_int,
    stype: ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let rb = handles::bytes_v(rcounts, ci.size, rtype);
        let ip = is_in_place(sbuf, s);
        let sb = if ip {
            rb
        } else {
            handles::bytes_v(scounts, ci.size, stype)
        };
        (sb, rb, NO_RANK, ip)
    })
}

/// MPI_Allgather.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn allgather(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let one = handles::bytes(rcount, rtype);
        let ip = is_in_place(sbuf, s);
        let sb = if ip {
            one
        } else {
            handles::bytes(scount, stype)
        };
        (sb, one * ci.size as u64, NO_RANK, ip)
    })
}

/// MPI_Allgatherv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn allgatherv(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let ip = is_in_place(sbuf, s);
        let rb = handles::bytes_v(rcounts, ci.size, rtype);
        let sb = if ip {
            handles::count_at(rcounts, ci.my_rank, ci.size, rtype)
        } else {
            handles::bytes(scount, stype)
        };
        (sb, rb, NO_RANK, ip)
    })
}

/// MPI_Gather: receive counts are significant only at the root.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn gather(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let ip = me && is_in_place(sbuf, s);
        let rb = if me {
            handles::bytes(rcount, rtype) * ci.size as u64
        } else {
            0
        };
        let sb = if ip {
            handles::bytes(rcount, rtype)
        } else {
            handles::bytes(scount, stype)
        };
        (sb, rb, wr, ip)
    })
}

/// MPI_Gatherv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn gatherv(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let ip = me && is_in_place(sbuf, s);
        let rb = if me {
            handles::bytes_v(rcounts, ci.size, rtype)
        } else {
            0
        };
        // In place, the root's own share counts as sent, as in the out-of-place call.
        let sb = if ip {
            handles::count_at(rcounts, ci.my_rank, ci.size, rtype)
        } else {
            handles::bytes(scount, stype)
        };
        (sb, rb, wr, ip)
    })
}

/// MPI_Scatter: send counts are significant only at the root; MPI_IN_PLACE is the
/// root's receive buffer, and the root's own share counts as received, as in the
/// out-of-place call (MPI ignores the receive count and type then).
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn scatter(
    call: u16,
    rbuf: *mut std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let ip = me && is_in_place(rbuf, s);
        let sb = if me {
            handles::bytes(scount, stype) * ci.size as u64
        } else {
            0
        };
        let rb = if ip {
            handles::bytes(scount, stype)
        } else {
            handles::bytes(rcount, rtype)
        };
        (sb, rb, wr, ip)
    })
}

/// MPI_Scatterv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn scatterv(
    call: u16,
    rbuf: *mut std::ffi::c_void,
    scounts: *const c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let ip = me && is_in_place(rbuf, s);
        let sb = if me {
            handles::bytes_v(scounts, ci.size, stype)
        } else {
            0
        };
        let rb = if ip {
            handles::count_at(scounts, ci.my_rank, ci.size, stype)
        } else {
            handles::bytes(rcount, rtype)
        };
        (sb, rb, wr, ip)
    })
}

/// MPI_Bcast: the root sends, the others receive.
#[inline]
pub fn bcast(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let b = handles::bytes(count, dtype);
        if me {
            (b, 0, wr, false)
        } else {
            (0, b, wr, false)
        }
    })
}

/// MPI_Reduce.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    call: u16,
    sbuf: *const std::ffi::c_void,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    root: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let (wr, me) = root_of(ci, root, s);
        let b = handles::bytes(count, dtype);
        let ip = me && is_in_place(sbuf, s);
        (b, if me { b } else { 0 }, wr, ip)
    })
}

/// MPI_Allreduce.
#[inline]
pub fn allreduce(
    call: u16,
    sbuf: *const std::ffi::c_void,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |_ci, s| {
        let b = handles::bytes(count, dtype);
        (b, b, NO_RANK, is_in_place(sbuf, s))
    })
}

/// MPI_Barrier.
#[inline]
pub fn barrier(
    call: u16,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |_, _| (0, 0, NO_RANK, false))
}

/// MPI_Alltoallw: per-peer counts and datatypes.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn alltoallw(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scounts: *const c_int,
    stypes: *const ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtypes: *const ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let rb = handles::bytes_w(rcounts, rtypes, ci.size);
        let ip = is_in_place(sbuf, s);
        let sb = if ip {
            rb
        } else {
            handles::bytes_w(scounts, stypes, ci.size)
        };
        (sb, rb, NO_RANK, ip)
    })
}

/// MPI_Reduce_scatter: sends every block, receives its own.
#[inline]
pub fn reduce_scatter(
    call: u16,
    sbuf: *const std::ffi::c_void,
    rcounts: *const c_int,
    dtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let sb = handles::bytes_v(rcounts, ci.size, dtype);
        let rb = handles::count_at(rcounts, ci.my_rank, ci.size, dtype);
        (sb, rb, NO_RANK, is_in_place(sbuf, s))
    })
}

/// MPI_Reduce_scatter_block: sends n blocks, receives one.
#[inline]
pub fn reduce_scatter_block(
    call: u16,
    sbuf: *const std::ffi::c_void,
    rcount: c_int,
    dtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, s| {
        let rb = handles::bytes(rcount, dtype);
        (rb * ci.size as u64, rb, NO_RANK, is_in_place(sbuf, s))
    })
}

/// MPI_Scan, MPI_Exscan: the contribution sent, the prefix received.
#[inline]
pub fn scan(
    call: u16,
    sbuf: *const std::ffi::c_void,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |_ci, s| {
        let b = handles::bytes(count, dtype);
        (b, b, NO_RANK, is_in_place(sbuf, s))
    })
}

// ---- neighbourhood collectives ----
// A rank sends to its out-neighbours and receives from its in-neighbours in the
// communicator's topology; the bytes are the sums over them.

/// MPI_Neighbor_allgather: its block to every out-neighbour, one from every in-neighbour.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn neighbor_allgather(
    call: u16,
    _sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, _| {
        let sb = handles::bytes(scount, stype) * ci.outdeg as u64;
        let rb = handles::bytes(rcount, rtype) * ci.indeg as u64;
        (sb, rb, NO_RANK, false)
    })
}

/// MPI_Neighbor_allgatherv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn neighbor_allgatherv(
    call: u16,
    _sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, _| {
        let sb = handles::bytes(scount, stype) * ci.outdeg as u64;
        let rb = handles::bytes_v(rcounts, ci.indeg, rtype);
        (sb, rb, NO_RANK, false)
    })
}

/// MPI_Neighbor_alltoall: one block per out-neighbour, one per in-neighbour.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn neighbor_alltoall(
    call: u16,
    sbuf: *const std::ffi::c_void,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    neighbor_allgather(call, sbuf, scount, stype, rcount, rtype, comm, request, f)
}

/// MPI_Neighbor_alltoallv.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn neighbor_alltoallv(
    call: u16,
    _sbuf: *const std::ffi::c_void,
    scounts: *const c_int,
    stype: ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtype: ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, _| {
        let sb = handles::bytes_v(scounts, ci.outdeg, stype);
        let rb = handles::bytes_v(rcounts, ci.indeg, rtype);
        (sb, rb, NO_RANK, false)
    })
}

/// MPI_Neighbor_alltoallw: per-neighbour counts and datatypes.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn neighbor_alltoallw(
    call: u16,
    _sbuf: *const std::ffi::c_void,
    scounts: *const c_int,
    stypes: *const ffi::MPI_Datatype,
    rcounts: *const c_int,
    rtypes: *const ffi::MPI_Datatype,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    collective(call, comm, request, f, |ci, _| {
        let sb = handles::bytes_w(scounts, stypes, ci.outdeg);
        let rb = handles::bytes_w(rcounts, rtypes, ci.indeg);
        (sb, rb, NO_RANK, false)
    })
}

// ---- persistent requests ----

fn thread_no() -> u16 {
    record::thread_ring().map_or(0, |r| r.thread)
}

/// MPI_Send_init and friends: remembers what each start will send. Not recorded itself.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn send_init(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    persistent_init(call, false, count, dtype, peer, tag, comm, request, f)
}

/// MPI_Recv_init: remembers what each start will receive. Not recorded itself.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn recv_init(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    persistent_init(call, true, count, dtype, peer, tag, comm, request, f)
}

#[allow(clippy::too_many_arguments)]
fn persistent_init(
    call: u16,
    is_recv: bool,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let rc = f();
    guarded(|| {
        if rc != 0 || request.is_null() {
            return;
        }
        let ci = comm_of(comm, s);
        let wp = ci.world_rank(peer, s);
        let p = Pending {
            call,
            thread: 0,
            is_recv,
            t_start: 0,
            t_posted: 0,
            bytes: if wp == PROC_NULL {
                0
            } else {
                handles::bytes(count, dtype)
            },
            bytes_recv: 0,
            root: NO_RANK,
            flags: 0,
            peer: wp,
            tag,
            comm: ci.id,
            comm_size: ci.size,
            world: ci.world,
        };
        // SAFETY: MPI wrote the new request handle through the caller's pointer (rc == 0).
        handles::set_persistent(key(unsafe { *request }), p);
    });
    rc
}

/// A persistent request started at `t0`..`t1`: one operation from now to its completion,
/// recorded under the name of the call that created the request.
fn started(req: usize, t0: u64, t1: u64, thread: u16) {
    let Some(mut p) = handles::persistent(req) else {
        return;
    };
    p.t_start = t0;
    p.t_posted = t1;
    p.thread = thread;
    if handles::track(req, p) == Err(handles::TrackError::Duplicate) {
        // The previous start's completion was not seen: this start replaces it.
        let _ = handles::take(req);
        let _ = handles::track(req, p);
    }
}

/// MPI_Start.
#[inline]
pub fn start(_call: u16, request: *mut ffi::MPI_Request, f: impl FnOnce() -> c_int) -> c_int {
    let Some((_g, _)) = enter() else { return f() };
    let req = if request.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid request pointer.
        key(unsafe { *request })
    };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        if rc == 0 {
            started(req, t0, t1, thread_no());
        }
    });
    rc
}

/// MPI_Startall.
#[inline]
pub fn startall(
    _call: u16,
    n: c_int,
    reqs: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, _)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        if rc != 0 || reqs.is_null() {
            return;
        }
        let th = thread_no();
        for i in 0..n.max(0) as usize {
            // SAFETY: MPI requires `reqs` to hold n handles (unchanged by a start).
            started(key(unsafe { *reqs.add(i) }), t0, t1, th);
        }
    });
    rc
}

// ---- matched probes ----

/// Records a successful matched probe and remembers what it matched under the message
/// handle, for the MPI_Mrecv/MPI_Imrecv that receives it (they name no communicator).
#[allow(clippy::too_many_arguments)]
fn matched_probe(
    call: u16,
    times: (u64, u64),
    rc: c_int,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    message: *mut ffi::MPI_Message,
    st: *mut ffi::MPI_Status,
    s: &Sentinels,
) {
    let ci = comm_of(comm, s);
    let mut r = base(call, times.0, times.1, &ci, rc);
    r.tag = tag;
    if peer == s.proc_null {
        r.peer = PROC_NULL;
    } else if rc != 0 {
        r.peer = ci.world_rank(peer, s);
    } else {
        r.peer = ci.world_rank(status_source(st), s);
        r.tag = status_tag(st);
    }
    record::push(r);
    if rc == 0 && !message.is_null() {
        let p = Pending {
            call,
            thread: 0,
            is_recv: true,
            t_start: 0,
            t_posted: 0,
            bytes: 0,
            bytes_recv: 0,
            root: NO_RANK,
            flags: 0,
            peer: r.peer,
            tag: r.tag,
            comm: ci.id,
            comm_size: ci.size,
            world: ci.world,
        };
        // SAFETY: MPI wrote the message handle through the caller's pointer (rc == 0).
        handles::set_message(key(unsafe { *message }), p);
    }
}

/// MPI_Mprobe.
#[inline]
pub fn mprobe(
    call: u16,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    message: *mut ffi::MPI_Message,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| matched_probe(call, (t0, t1), rc, peer, tag, comm, message, st, s));
    rc
}

/// MPI_Improbe: recorded when a message was matched, counted otherwise.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn improbe(
    call: u16,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    flag: *mut c_int,
    message: *mut ffi::MPI_Message,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        // SAFETY: MPI wrote the flag through the caller's pointer.
        if rc == 0 && !flag.is_null() && unsafe { *flag } != 0 {
            matched_probe(call, (t0, t1), rc, peer, tag, comm, message, st, s);
        } else {
            poll_miss(call, t0, t1);
        }
    });
    rc
}

/// The communicator of a matched message, as its probe saw it.
fn message_comm(p: &Option<Pending>) -> CommInfo {
    match p {
        Some(p) => CommInfo {
            id: p.comm,
            size: p.comm_size,
            my_rank: -1,
            world: p.world,
            indeg: 0,
            outdeg: 0,
        },
        None => NO_COMM,
    }
}

/// MPI_Mrecv: the receive of the message its probe matched (source and tag from it).
#[inline]
pub fn mrecv(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    message: *mut ffi::MPI_Message,
    status: *mut ffi::MPI_Status,
    f: impl FnOnce(*mut ffi::MPI_Status) -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else {
        return f(status);
    };
    let Some(scr) = with_scratch(|x| x.status.as_mut_ptr()) else {
        return f(status);
    };
    let msg = if message.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid message pointer; read the handle before MPI resets it.
        key(unsafe { *message })
    };
    let st = status_ptr(status, s, scr);
    let t0 = now_ns();
    let rc = f(st);
    let t1 = now_ns();
    guarded(|| {
        let found = handles::take_message(msg);
        let ci = message_comm(&found);
        let mut r = base(call, t0, t1, &ci, rc);
        r.peer = found.map_or(UNKNOWN_RANK, |p| p.peer);
        r.tag = found.map_or(0, |p| p.tag);
        if r.peer != PROC_NULL && rc == 0 {
            r.bytes_recv = status_bytes(st).unwrap_or_else(|| handles::bytes(count, dtype));
        }
        record::push(r);
    });
    rc
}

/// MPI_Imrecv: a nonblocking receive of the message its probe matched.
#[inline]
pub fn imrecv(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    message: *mut ffi::MPI_Message,
    request: *mut ffi::MPI_Request,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, _)) = enter() else { return f() };
    let msg = if message.is_null() {
        0
    } else {
        // SAFETY: MPI requires a valid message pointer; read the handle before MPI resets it.
        key(unsafe { *message })
    };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        let found = handles::take_message(msg);
        if rc != 0 || request.is_null() {
            return;
        }
        let ci = message_comm(&found);
        let peer = found.map_or(UNKNOWN_RANK, |p| p.peer);
        let p = Pending {
            call,
            thread: thread_no(),
            is_recv: true,
            t_start: t0,
            t_posted: t1,
            bytes: if peer == PROC_NULL {
                0
            } else {
                handles::bytes(count, dtype)
            },
            bytes_recv: 0,
            root: NO_RANK,
            flags: 0,
            peer,
            tag: found.map_or(0, |p| p.tag),
            comm: ci.id,
            comm_size: ci.size,
            world: ci.world,
        };
        track_posted(request, p, t1);
    });
    rc
}

// ---- one-sided communication ----

#[inline]
fn win_of(win: ffi::MPI_Win) -> CommInfo {
    handles::win_info(win).unwrap_or(NO_COMM)
}

/// One-sided transfer: `put` bytes to and `get` bytes from the target (a rank of the
/// window's group), recorded with the target as a WORLD rank.
#[inline]
fn rma(
    call: u16,
    put: (c_int, ffi::MPI_Datatype),
    get: (c_int, ffi::MPI_Datatype),
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        let ci = win_of(win);
        let mut r = base(call, t0, t1, &ci, rc);
        r.peer = ci.world_rank(peer, s);
        if r.peer != PROC_NULL {
            r.bytes_send = handles::bytes(put.0, put.1);
            r.bytes_recv = handles::bytes(get.0, get.1);
            let _ = RMA_BYTES.try_with(|b| {
                let (p, g) = b.get();
                b.set((p + r.bytes_send, g + r.bytes_recv));
            });
        }
        record::push(r);
    });
    rc
}

/// MPI_Put, MPI_Accumulate: data to the target.
#[inline]
pub fn rma_put(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: a constant defined by our C shim (a type that is never asked about).
    let none = unsafe { pmpi_predict_DATATYPE_NULL };
    rma(call, (count, dtype), (0, none), peer, win, f)
}

/// MPI_Get: data from the target.
#[inline]
pub fn rma_get(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: a constant defined by our C shim.
    let none = unsafe { pmpi_predict_DATATYPE_NULL };
    rma(call, (0, none), (count, dtype), peer, win, f)
}

/// MPI_Get_accumulate: the origin buffer to the target, the result back.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn rma_get_acc(
    call: u16,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    rma(call, (count, dtype), (rcount, rtype), peer, win, f)
}

/// Window synchronisation: recorded on the window's communicator, with the target as a
/// WORLD rank when there is one; `done`: it completes the thread's one-sided transfers,
/// whose bytes its row carries.
#[inline]
fn win_sync(
    call: u16,
    peer: Option<c_int>,
    done: bool,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let t0 = now_ns();
    let rc = f();
    let t1 = now_ns();
    guarded(|| {
        let ci = win_of(win);
        let mut r = base(call, t0, t1, &ci, rc);
        if let Some(p) = peer {
            r.peer = ci.world_rank(p, s);
        }
        if done {
            let (p, g) = RMA_BYTES.try_with(|b| b.replace((0, 0))).unwrap_or((0, 0));
            r.bytes_send = p;
            r.bytes_recv = g;
        }
        record::push(r);
    });
    rc
}

/// MPI_Win_fence: collective over the window's group; completes the epoch's transfers.
#[inline]
pub fn win_fence(call: u16, win: ffi::MPI_Win, f: impl FnOnce() -> c_int) -> c_int {
    win_sync(call, None, true, win, f)
}

/// Synchronisation that opens access (MPI_Win_lock_all, MPI_Win_post, MPI_Win_start).
#[inline]
pub fn win_open(call: u16, win: ffi::MPI_Win, f: impl FnOnce() -> c_int) -> c_int {
    win_sync(call, None, false, win, f)
}

/// MPI_Win_lock: opens access to one target.
#[inline]
pub fn win_open_rank(
    call: u16,
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    win_sync(call, Some(peer), false, win, f)
}

/// Synchronisation that completes transfers (MPI_Win_unlock_all, MPI_Win_flush_all,
/// MPI_Win_complete, MPI_Win_wait, ...).
#[inline]
pub fn win_done(call: u16, win: ffi::MPI_Win, f: impl FnOnce() -> c_int) -> c_int {
    win_sync(call, None, true, win, f)
}

/// MPI_Win_unlock, MPI_Win_flush(_local): completes transfers to one target.
#[inline]
pub fn win_done_rank(
    call: u16,
    peer: c_int,
    win: ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    win_sync(call, Some(peer), true, win, f)
}

/// Window creation: remembers the window's communicator. Not recorded.
#[inline]
pub fn win_new(
    _call: u16,
    comm: ffi::MPI_Comm,
    newwin: *mut ffi::MPI_Win,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let rc = f();
    guarded(|| {
        if rc == 0 && !newwin.is_null() {
            let ci = comm_of(comm, s);
            // SAFETY: MPI wrote the new window handle through the caller's pointer (rc == 0).
            handles::register_win(unsafe { *newwin }, ci);
        }
    });
    rc
}

/// MPI_Win_free: forgets the window before MPI frees (and may reuse) its handle. Not
/// recorded; what MPI does inside it is not recorded either.
#[inline]
pub fn win_free(_call: u16, winp: *mut ffi::MPI_Win, f: impl FnOnce() -> c_int) -> c_int {
    let Some((_g, _)) = enter() else { return f() };
    if !winp.is_null() {
        // SAFETY: MPI requires a valid window pointer.
        let w = unsafe { *winp };
        guarded(|| handles::forget_win(w));
    }
    f()
}

// ---- communicators ----

/// Communicator creation: registers the new communicator's WORLD ranks. Not recorded.
#[inline]
pub fn comm_new(
    _call: u16,
    _comm: ffi::MPI_Comm,
    newcomm: *mut ffi::MPI_Comm,
    f: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_g, s)) = enter() else { return f() };
    let rc = f();
    guarded(|| {
        if rc == 0 && !newcomm.is_null() {
            // SAFETY: MPI wrote the new handle through the caller's pointer (rc == 0).
            let _ = handles::register_comm(unsafe { *newcomm }, s);
        }
    });
    rc
}

/// MPI_Comm_free: forgets the communicator before MPI frees (and may reuse) its handle.
#[inline]
pub fn comm_free(_call: u16, commp: *mut ffi::MPI_Comm, f: impl FnOnce() -> c_int) -> c_int {
    if STATE.load(Ordering::Relaxed) == ON && !commp.is_null() {
        // SAFETY: MPI requires a valid communicator pointer.
        let c = unsafe { *commp };
        guarded(|| handles::forget_comm(c));
    }
    f()
}
