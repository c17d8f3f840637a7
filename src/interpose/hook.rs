//! The hot path. Every generated interposer hands its arguments, sorted by role into the
//! struct of its kind (`super::args`, generated from `wrapspec::KINDS`), to [`call`]: the
//! one prologue and epilogue of every wrapped call. It checks the layer's state, enters the
//! per-thread guard, takes two timestamps around the real `PMPI_*` call and runs the
//! recording step inside `catch_unwind`, so that no panic can reach C. What differs from
//! one kind to another (what is read before the call, which bytes, peer or root the record
//! gets) is the kind's [`Kind`] impl below. No allocation, lock, system call or formatting
//! happens here; a record goes into the calling thread's preallocated ring.

use super::args;
use super::handles::{self, CommInfo, Pending, Sentinels, key};
use crate::record;
use crate::topo::clock::now_ns;
use crate::trace::arcs::{ARC_PAIRS, MAX_ARCS, continuation};
use crate::trace::{
    FLAG_ARCS, FLAG_ARCS_CAPPED, FLAG_ERROR, FLAG_GAP_POLLS, FLAG_IN_PLACE, FLAG_INCOMPLETE,
    FLAG_NONBLOCKING, FLAG_POLLED, NO_RANK, POLL_TIGHT_NS, PROC_NULL, Record, UNKNOWN_RANK,
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
}

thread_local! {
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    static SCRATCH: UnsafeCell<Scratch> = const { UnsafeCell::new(Scratch::new()) };
    /// Bytes this thread put and got by one-sided calls since its last synchronisation
    /// that completes them (recorded in that call's row).
    static RMA_BYTES: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// The polling loop in progress: entry of its first unsuccessful Test*/Iprobe, how
    /// many there were since this thread's last recorded call, what they polled, and the
    /// ns spent inside them.
    static POLL: Cell<Poll> = const { Cell::new(Poll::NONE) };
    /// What the current poll call waits on (see [`poll_on`]).
    static POLL_KEY: Cell<u64> = const { Cell::new(0) };
}

/// A polling loop in progress (see `POLL`).
#[derive(Clone, Copy)]
struct Poll {
    first: u64,
    misses: u32,
    on: u64,
    inside_ns: u64,
}

impl Poll {
    const NONE: Poll = Poll {
        first: 0,
        misses: 0,
        on: 0,
        inside_ns: 0,
    };
}

/// Sets what the current poll call waits on: its request, the first of its requests and
/// their number, or a probe's source, tag and communicator. Only unsuccessful polls on the
/// same thing make the loop that a successful one ends: a loop that alternates between
/// several (a Testany on receives and a Test on a send) is charged to none of them.
#[inline]
fn poll_on(k: u64) {
    let _ = POLL_KEY.try_with(|c| c.set(k));
}

/// [`poll_on`] for a call on the `m` requests saved in the thread's scratch.
#[inline]
fn poll_on_requests(m: usize) {
    poll_on(saved_request(0) as u64 ^ ((m as u64) << 56));
}

/// [`poll_on`] for a probe.
#[inline]
fn poll_on_probe<C: Copy>(peer: c_int, tag: c_int, comm: C) {
    poll_on(key(comm) as u64 ^ (u64::from(peer as u32) << 32) ^ u64::from(tag as u32));
}

/// Takes a loop's unsuccessful polls out of the rank's poll counts: the successful call
/// that ends it is recorded from the loop's start, so its time is in that record (counted
/// in both, waits.c's rank 0 had 1.00 s of MPI time in a 0.83-s span).
#[inline]
fn unfold_polls(call: u16, p: &Poll) {
    if let (Some(c), Some(n)) = (POLL_COUNT.get(call as usize), POLL_NS.get(call as usize)) {
        let misses = u64::from(p.misses);
        let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_sub(misses))
        });
        let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_sub(p.inside_ns))
        });
    }
}

/// Forgets the thread's polling loop (a call was made that is not a poll); true if it
/// had unsuccessful polls.
#[inline]
fn end_poll() -> bool {
    POLL.try_with(|p| p.replace(Poll::NONE).misses > 0)
        .unwrap_or(false)
}

/// True for the calls whose unsuccessful form is counted as a poll and whose successful
/// form may end a polling loop.
#[inline]
fn polls(call: u16) -> bool {
    use crate::trace::CallKind as K;
    matches!(
        crate::trace::call_kind(call),
        K::Test | K::Testall | K::Testany | K::Testsome | K::Iprobe | K::Improbe
    )
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

/// Runs a step of the layer's own; a panic in it disables the layer instead of unwinding
/// into C (None then).
#[inline]
fn guarded<R>(f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(_) => {
            super::fail("internal error while recording a call");
            None
        }
    }
}

// ---- the skeleton ----

/// What a kind's recording step knows once the real call returned.
pub(crate) struct Done {
    pub call: u16,
    /// Timestamps just before and just after the real call.
    pub t0: u64,
    pub t1: u64,
    /// The real call's result.
    pub rc: c_int,
    pub s: &'static Sentinels,
}

impl Done {
    /// The row of a call on `ci` that completed here, before the kind fills in peers and
    /// bytes.
    #[inline]
    fn row(&self, ci: &CommInfo) -> Record {
        // A recorded call ends the thread's polling loop, if one ran; a successful poll
        // carries where the loop started and how many polls failed (Record::settle).
        let p = POLL
            .try_with(|p| p.replace(Poll::NONE))
            .unwrap_or(Poll::NONE);
        // A tight loop: between its polls, on average, at most POLL_TIGHT_NS outside MPI
        // (the polls' own time does not count: on a loaded host they are slow).
        let outside = self.t0.saturating_sub(p.first).saturating_sub(p.inside_ns);
        let polled = (p.misses > 0
            && polls(self.call)
            && POLL_KEY.try_with(Cell::get).is_ok_and(|k| k == p.on)
            && outside / u64::from(p.misses) <= POLL_TIGHT_NS)
            .then_some(p);
        if let Some(p) = polled {
            unfold_polls(self.call, &p);
        }
        Record {
            t_start: self.t0,
            t_end: self.t1,
            t_posted: polled.map_or(self.t1, |p| p.first),
            peer: NO_RANK,
            root: NO_RANK,
            peer2: NO_RANK,
            comm: ci.id,
            comm_size: ci.size,
            call: self.call,
            flags: if self.rc != 0 { FLAG_ERROR } else { 0 }
                | if polled.is_some() { FLAG_POLLED } else { 0 }
                | if p.misses > 0 && polled.is_none() {
                    FLAG_GAP_POLLS
                } else {
                    0
                },
            reserved: polled.map_or(0, |p| p.misses.min(u32::from(u16::MAX)) as u16),
            ..Default::default()
        }
    }

    /// The call's communicator and its row on it.
    #[inline]
    fn row_on(&self, comm: ffi::MPI_Comm) -> (CommInfo, Record) {
        let ci = comm_of(comm, self.s);
        let r = self.row(&ci);
        (ci, r)
    }

    /// A nonblocking operation on `ci` posted by this call, to be recorded at its completion.
    #[inline]
    fn pending(&self, ci: &CommInfo, is_recv: bool, peer: i32, tag: c_int) -> Pending {
        // A post ends the polling loop too: a successful poll after it must not start
        // before the operation it may complete. Polls before it ran in its gap.
        let flags = if end_poll() { FLAG_GAP_POLLS } else { 0 };
        Pending {
            call: self.call,
            thread: thread_no(),
            is_recv,
            t_start: self.t0,
            t_posted: self.t1,
            bytes: 0,
            bytes_recv: 0,
            root: NO_RANK,
            flags,
            peer,
            tag,
            comm: ci.id,
            comm_size: ci.size,
            world: ci.world,
        }
    }
}

/// The steps of one kind of call (`wrapspec::KINDS`) around the real call that [`call`]
/// runs. `Self` is the generated struct of the kind's arguments.
pub(crate) trait Kind: Copy {
    /// What `before` reads for `after`: handles that the real call may overwrite.
    type Saved: Default;

    /// True for a call that must not hold the guard, and so is seen even when nested in
    /// another: MPI_Comm_free, whose attribute callbacks make the program's own calls.
    /// Only `before` runs, and nothing is recorded.
    const UNGUARDED: bool = false;

    /// Runs before the first timestamp: may point an ignored status at the thread's own,
    /// and reads what the call will overwrite. None passes the call through unrecorded,
    /// with the caller's arguments.
    ///
    /// # Safety
    /// The fields are the arguments of an MPI call of this kind, valid as MPI requires.
    #[inline]
    unsafe fn before(&mut self, _s: &Sentinels) -> Option<Self::Saved> {
        Some(Self::Saved::default())
    }

    /// Records the call, after the real call returned with `d.rc`.
    ///
    /// # Safety
    /// As for `before`, with the fields `before` left; what MPI wrote through them is in
    /// place.
    unsafe fn after(&self, d: &Done, saved: Self::Saved);
}

/// The one prologue and epilogue of every generated interposer: passes the call through
/// unless the layer records and the thread is not already inside a hook; else runs the
/// kind's `before`, the real call `real` between two timestamps, then the kind's `after`.
/// The real call runs exactly once, outside both `catch_unwind`s.
///
/// # Safety
/// `args` are the arguments of an MPI call of kind `K`, valid as MPI requires, and `real`
/// makes that call with the arguments it is given.
#[inline(always)]
pub(crate) unsafe fn call<K: Kind>(call: u16, args: K, real: impl FnOnce(&K) -> c_int) -> c_int {
    if K::UNGUARDED {
        if STATE.load(Ordering::Relaxed) == ON
            && let Some(s) = handles::sentinels()
        {
            let mut a = args;
            // SAFETY: the caller's contract is `before`'s.
            let _ = guarded(|| unsafe { a.before(s) });
        }
        return real(&args);
    }
    let Some((_g, s)) = enter() else {
        return real(&args);
    };
    let mut a = args;
    // SAFETY: the caller's contract is `before`'s.
    let Some(saved) = guarded(|| unsafe { a.before(s) }).flatten() else {
        return real(&args);
    };
    let t0 = now_ns();
    let rc = real(&a);
    let t1 = now_ns();
    let d = Done {
        call,
        t0,
        t1,
        rc,
        s,
    };
    // SAFETY: the caller's contract, and the real call returned with the arguments
    // `before` left.
    let _ = guarded(|| unsafe { a.after(&d, saved) });
    rc
}

/// Implements [`Kind`] for each kind listed as
///
/// ```text
/// /// What the kind records.
/// Name before |a, s| -> Saved { ... } after |a, d, saved| { ... }
/// ```
///
/// `Name` is the kind's argument struct in `args` (its name in CamelCase), `a` its
/// arguments (mutable in `before`, which may replace an ignored status), `s` the MPI
/// sentinels, `d` what the real call returned ([`Done`]) and `saved` what `before`
/// returned. Without `before`, nothing is read before the call and `saved` is `()`.
macro_rules! kinds {
    (@saved) => { () };
    (@saved $t:ty) => { $t };
    ($($(#[$doc:meta])* $kind:ident
        $(before |$b:ident, $bs:ident| -> $saved:ty $before:block)?
        after |$a:ident, $d:ident, $sv:pat_param| $after:block)*) => {$(
        $(#[$doc])*
        impl Kind for args::$kind {
            type Saved = kinds!(@saved $($saved)?);
            $(
                #[inline]
                unsafe fn before(&mut self, $bs: &Sentinels) -> Option<$saved> {
                    let $b = self;
                    $before
                }
            )?
            #[inline]
            unsafe fn after(&self, $d: &Done, $sv: Self::Saved) {
                let $a = self;
                $after
            }
        }
    )*};
}

// ---- helpers of the kinds ----

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
    sources: &[],
    dests: &[],
};

#[inline]
fn comm_of(comm: ffi::MPI_Comm, s: &Sentinels) -> CommInfo {
    handles::comm_info(comm, s).unwrap_or(NO_COMM)
}

fn thread_no() -> u16 {
    record::thread_ring().map_or(0, |r| r.thread)
}

/// Points an ignored (or null) status at the thread's scratch status, so that the record
/// can read the matched source and size; None (pass through) when the thread's storage is
/// gone, as while it exits.
#[inline]
fn own_status(status: &mut *mut ffi::MPI_Status, s: &Sentinels) -> Option<()> {
    let scratch = with_scratch(|x| x.status.as_mut_ptr())?;
    if *status as usize == s.status_ignore || status.is_null() {
        *status = scratch;
    }
    Some(())
}

/// Points MPI_STATUSES_IGNORE at the thread's scratch statuses when `n` of them fit.
#[inline]
fn own_statuses(statuses: &mut *mut ffi::MPI_Status, n: c_int, s: &Sentinels) {
    if *statuses as usize == s.statuses_ignore
        && n > 0
        && n as usize <= MAX_STATUSES
        && let Some(p) = with_scratch(|x| x.statuses.as_mut_ptr() as *mut ffi::MPI_Status)
    {
        *statuses = p;
    }
}

/// Key of the handle `p` points to, 0 for a null pointer: read before the real call,
/// which resets a completed request or a received message.
///
/// # Safety
/// `p` is null or points to a readable handle.
#[inline]
unsafe fn handle_at<T: Copy>(p: *const T) -> usize {
    if p.is_null() {
        0
    } else {
        // SAFETY: not null, so readable by the caller's contract.
        key(unsafe { *p })
    }
}

/// True if `flag` is set.
///
/// # Safety
/// `flag` is null or points to an int that MPI wrote.
#[inline]
unsafe fn flag_set(flag: *const c_int) -> bool {
    // SAFETY: not null, so written by MPI by the caller's contract.
    !flag.is_null() && unsafe { *flag } != 0
}

/// Bytes received according to a status (MPI_Get_count in MPI_BYTE).
///
/// # Safety
/// `st` points to a status MPI just filled.
#[inline]
unsafe fn status_bytes(st: *const ffi::MPI_Status) -> Option<u64> {
    let mut n: c_int = 0;
    // SAFETY: `st` is a filled status (the caller's contract); PMPI_Get_count only reads it.
    let rc = unsafe { ffi::PMPI_Get_count(st, pmpi_predict_BYTE, &mut n) };
    (rc == 0 && n >= 0).then_some(n as u64)
}

/// The matched source and tag in a status (the real ones of an MPI_ANY_SOURCE or
/// MPI_ANY_TAG receive).
///
/// # Safety
/// `st` points to a status MPI just filled.
#[inline]
unsafe fn status_match(st: *const ffi::MPI_Status) -> (c_int, c_int) {
    // SAFETY: `st` is a filled status (the caller's contract).
    unsafe { ((*st).MPI_SOURCE, (*st).MPI_TAG) }
}

/// Entry `i` of a status array; null for MPI_STATUSES_IGNORE (or a null array).
#[inline]
fn status_at(st: *mut ffi::MPI_Status, i: usize, s: &Sentinels) -> *const ffi::MPI_Status {
    if st as usize == s.statuses_ignore || st.is_null() {
        std::ptr::null()
    } else {
        st.wrapping_add(i)
    }
}

fn poll_miss(d: &Done) {
    let on = POLL_KEY.try_with(Cell::get).unwrap_or(0);
    let inside = d.t1.saturating_sub(d.t0);
    let _ = POLL.try_with(|p| {
        let cur = p.get();
        p.set(if cur.misses > 0 && cur.on == on {
            Poll {
                misses: cur.misses.saturating_add(1),
                inside_ns: cur.inside_ns.saturating_add(inside),
                ..cur
            }
        } else {
            Poll {
                first: d.t0,
                misses: 1,
                on,
                inside_ns: inside,
            }
        });
    });
    if let (Some(c), Some(n)) = (
        POLL_COUNT.get(d.call as usize),
        POLL_NS.get(d.call as usize),
    ) {
        c.fetch_add(1, Ordering::Relaxed);
        n.fetch_add(d.t1.saturating_sub(d.t0), Ordering::Relaxed);
    }
}

/// Emits the record of a tracked nonblocking operation that just completed.
///
/// # Safety
/// `st` is null or points to the operation's status, which MPI just filled.
#[inline]
unsafe fn complete(req: usize, st: *const ffi::MPI_Status, t_end: u64, s: &Sentinels) {
    let Some(mut p) = handles::take(req) else {
        return;
    };
    if p.is_recv && !st.is_null() {
        if p.peer != PROC_NULL {
            // SAFETY: a filled status (the caller's contract).
            let (src, tag) = unsafe { status_match(st) };
            let ci = CommInfo {
                id: 0,
                size: p.comm_size,
                my_rank: 0,
                world: p.world,
                indeg: 0,
                outdeg: 0,
                sources: &[],
                dests: &[],
            };
            p.peer = ci.world_rank(src, s);
            p.tag = tag;
        }
        // SAFETY: as above.
        if let Some(b) = unsafe { status_bytes(st) } {
            p.bytes = b;
        }
    }
    emit(p, t_end, 0);
}

/// Tracks an operation MPI just posted under the handle it wrote through `request`.
///
/// # Safety
/// The post succeeded, so `request` points to the handle MPI wrote.
unsafe fn track_posted(request: *mut ffi::MPI_Request, p: Pending, t1: u64) {
    // SAFETY: MPI wrote a request handle through the caller's pointer (the contract).
    let handle = unsafe { *request };
    let req = key(handle);
    if handles::is_shared_request(req) {
        emit(p, t1, 0);
        return;
    }
    if handles::track(req, p) == Err(handles::TrackError::Duplicate) {
        if request_complete(handle) {
            // A handle shared by operations that completed at post: the earlier one
            // completed at its post too.
            handles::learn_shared_request(req);
            if let Some(old) = handles::take(req) {
                let end = old.t_posted;
                emit(old, end, 0);
            }
            emit(p, t1, 0);
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

/// Records, as incomplete at `t_end`, every operation still pending: posted and never
/// completed through a call the layer saw (Ray leaves a few `MPI_Isend`s untested at the
/// end; their messages were received, and without their records the receives matched
/// nothing). Returns how many. Call at MPI_Finalize, while recording is on.
pub(crate) fn record_unfinished(t_end: u64) -> usize {
    let ops = handles::drain_pending();
    let n = ops.len();
    for p in ops {
        emit(p, t_end, FLAG_INCOMPLETE);
    }
    n
}

/// Records a nonblocking operation that completed (or was given up) at `t_end`.
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

// ---- point-to-point ----

kinds! {
    /// Blocking sends.
    Send after |a, d, ()| {
        let (ci, mut r) = d.row_on(a.comm);
        r.peer = ci.world_rank(a.peer, d.s);
        r.tag = a.tag;
        if r.peer != PROC_NULL {
            r.bytes_send = handles::bytes(a.count, a.dtype);
            r.flags |= handles::packed_flag(a.count, a.dtype, r.bytes_send);
        }
        record::push(r);
    }

    /// Blocking receive: the actual source, tag and size come from the status.
    Recv before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        let s = d.s;
        let (ci, mut r) = d.row_on(a.comm);
        r.tag = a.tag;
        if a.peer == s.proc_null {
            r.peer = PROC_NULL;
        } else if d.rc == 0 {
            // SAFETY: MPI filled the status of the successful receive (the caller's, or
            // the scratch one `before` put in place of MPI_STATUS_IGNORE).
            let (src, tag, bytes) = unsafe {
                let (src, tag) = status_match(a.status);
                (src, tag, status_bytes(a.status))
            };
            r.peer = ci.world_rank(src, s);
            r.tag = tag;
            r.bytes_recv = bytes.unwrap_or_else(|| handles::bytes(a.count, a.dtype));
        } else {
            r.peer = ci.world_rank(a.peer, s);
        }
        record::push(r);
    }
}

/// The operation a point-to-point call set up under its request (a nonblocking post, or
/// a persistent request's template), if the call succeeded.
#[allow(clippy::too_many_arguments)]
fn p2p_op(
    d: &Done,
    is_recv: bool,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
) -> Option<Pending> {
    if d.rc != 0 || request.is_null() {
        return None;
    }
    let ci = comm_of(comm, d.s);
    let wp = ci.world_rank(peer, d.s);
    let mut p = d.pending(&ci, is_recv, wp, tag);
    if wp != PROC_NULL {
        p.bytes = handles::bytes(count, dtype);
        if !is_recv {
            p.flags |= handles::packed_flag(count, dtype, p.bytes);
        }
    }
    Some(p)
}

kinds! {
    /// Nonblocking sends: one record from post to completion.
    Isend after |a, d, ()| {
        if let Some(p) = p2p_op(d, false, a.count, a.dtype, a.peer, a.tag, a.comm, a.request) {
            // SAFETY: the post succeeded, so MPI wrote the handle through `request`.
            unsafe { track_posted(a.request, p, d.t1) };
        }
    }

    /// Nonblocking receives: one record from post to completion.
    Irecv after |a, d, ()| {
        if let Some(p) = p2p_op(d, true, a.count, a.dtype, a.peer, a.tag, a.comm, a.request) {
            // SAFETY: the post succeeded, so MPI wrote the handle through `request`.
            unsafe { track_posted(a.request, p, d.t1) };
        }
    }

    /// MPI_Sendrecv(_replace): `peer` is the destination and `tag` the send's tag, `peer2`
    /// the actual source and `root` the actual receive tag ([`Record::recv_tag`]: FFTW's
    /// transposes send and receive under different tags).
    Sendrecv before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        let s = d.s;
        let (ci, mut r) = d.row_on(a.comm);
        r.tag = a.tag;
        r.peer = ci.world_rank(a.peer, s);
        if r.peer != PROC_NULL {
            r.bytes_send = handles::bytes(a.scount, a.stype);
            r.flags |= handles::packed_flag(a.scount, a.stype, r.bytes_send);
        }
        if a.source == s.proc_null {
            r.peer2 = PROC_NULL;
        } else if d.rc == 0 {
            // SAFETY: MPI filled the status of the successful receive.
            let ((src, tag), bytes) = unsafe { (status_match(a.status), status_bytes(a.status)) };
            r.peer2 = ci.world_rank(src, s);
            r.root = tag;
            r.bytes_recv = bytes.unwrap_or_else(|| handles::bytes(a.rcount, a.rtype));
        } else if a.rtag >= 0 {
            r.root = a.rtag;
        }
        record::push(r);
    }
}

/// A probe that matched a message: the record names its source and tag.
///
/// # Safety
/// When `d.rc` is 0, `st` points to the status MPI filled.
unsafe fn probed(
    d: &Done,
    ci: &CommInfo,
    peer: c_int,
    tag: c_int,
    st: *const ffi::MPI_Status,
) -> Record {
    let s = d.s;
    let mut r = d.row(ci);
    r.tag = tag;
    if peer == s.proc_null {
        r.peer = PROC_NULL;
    } else if d.rc != 0 {
        r.peer = ci.world_rank(peer, s);
    } else {
        // SAFETY: the probe succeeded, so MPI filled the status.
        let (src, tag) = unsafe { status_match(st) };
        r.peer = ci.world_rank(src, s);
        r.tag = tag;
    }
    r
}

kinds! {
    /// MPI_Probe: records the matched source; moves no data.
    Probe before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        let ci = comm_of(a.comm, d.s);
        // SAFETY: the probe's status, filled when it succeeded.
        record::push(unsafe { probed(d, &ci, a.peer, a.tag, a.status) });
    }

    /// MPI_Iprobe: recorded when a message was found, counted otherwise.
    Iprobe before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        poll_on_probe(a.peer, a.tag, a.comm);
        // SAFETY: the call's flag, written by MPI when it succeeded.
        if d.rc != 0 || !unsafe { flag_set(a.flag) } {
            poll_miss(d);
            return;
        }
        let s = d.s;
        let (ci, mut r) = d.row_on(a.comm);
        // The tag as asked for, unlike MPI_Probe's row.
        r.tag = a.tag;
        r.peer = if a.peer == s.proc_null {
            PROC_NULL
        } else {
            // SAFETY: a message was found, so MPI filled the status.
            ci.world_rank(unsafe { status_match(a.status) }.0, s)
        };
        record::push(r);
    }
}

// ---- completions ----

/// The row of a completion call itself (on no communicator).
fn completion_row(d: &Done) {
    record::push(d.row(&NO_COMM));
}

kinds! {
    /// MPI_Wait.
    Wait before |a, s| -> usize {
        own_status(&mut a.status, s)?;
        // SAFETY: the call's request pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.request) })
    } after |a, d, req| {
        if d.rc == 0 {
            // SAFETY: the wait succeeded, so MPI filled the status.
            unsafe { complete(req, a.status, d.t1, d.s) };
        }
        completion_row(d);
    }

    /// MPI_Test: a completion is recorded; an unsuccessful test is counted.
    Test before |a, s| -> usize {
        own_status(&mut a.status, s)?;
        // SAFETY: the call's request pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.request) })
    } after |a, d, req| {
        poll_on(req as u64);
        // SAFETY: the call's flag, written by MPI when it succeeded.
        if d.rc == 0 && unsafe { flag_set(a.flag) } {
            // SAFETY: the request completed, so MPI filled the status.
            unsafe { complete(req, a.status, d.t1, d.s) };
            completion_row(d);
        } else {
            poll_miss(d);
        }
    }
}

/// Copies up to MAX_REQS request handles into the thread scratch; returns how many.
///
/// # Safety
/// `reqs` is null or holds `n` handles.
unsafe fn save_requests(n: c_int, reqs: *const ffi::MPI_Request) -> usize {
    if reqs.is_null() || n <= 0 {
        return 0;
    }
    let m = (n as usize).min(MAX_REQS);
    with_scratch(|x| {
        for i in 0..m {
            // SAFETY: `reqs` holds n handles (the caller's contract); i < m <= n.
            x.reqs[i] = key(unsafe { *reqs.add(i) });
        }
        m
    })
    .unwrap_or(0)
}

/// `before` of the calls on an array of requests with an array of statuses: saves the
/// request handles (see [`save_requests`]) and points MPI_STATUSES_IGNORE at the thread's
/// own statuses.
///
/// # Safety
/// As for [`save_requests`].
unsafe fn own_requests(
    n: c_int,
    reqs: *const ffi::MPI_Request,
    statuses: &mut *mut ffi::MPI_Status,
    s: &Sentinels,
) -> Option<usize> {
    own_statuses(statuses, n, s);
    // SAFETY: the caller's contract.
    Some(unsafe { save_requests(n, reqs) })
}

fn saved_request(i: usize) -> usize {
    with_scratch(|x| x.reqs.get(i).copied().unwrap_or(0)).unwrap_or(0)
}

/// Completes the saved requests `0..m` whose handle MPI reset to MPI_REQUEST_NULL, or all
/// of them when `all` completed (a persistent request keeps its handle).
///
/// # Safety
/// `reqs` holds at least `m` handles, and `st` is a status array MPI filled for them (or
/// MPI_STATUSES_IGNORE).
unsafe fn complete_nulled(
    m: usize,
    reqs: *const ffi::MPI_Request,
    st: *mut ffi::MPI_Status,
    d: &Done,
    all: bool,
) {
    let s = d.s;
    for i in 0..m {
        let before = saved_request(i);
        // SAFETY: i < m <= the caller's array length.
        let now = key(unsafe { *reqs.add(i) });
        if before != s.request_null && (all || now == s.request_null) {
            // SAFETY: entry i of the statuses MPI filled.
            unsafe { complete(before, status_at(st, i, s), d.t1, s) };
        }
    }
}

kinds! {
    /// MPI_Waitall.
    Waitall before |a, s| -> usize {
        // SAFETY: the call's request array of `incount` handles.
        unsafe { own_requests(a.incount, a.requests, &mut a.statuses, s) }
    } after |a, d, m| {
        // SAFETY: the call's arrays, which MPI updated.
        unsafe { complete_nulled(m, a.requests, a.statuses, d, d.rc == 0) };
        completion_row(d);
    }

    /// MPI_Testall: completes all or none.
    Testall before |a, s| -> usize {
        // SAFETY: the call's request array of `incount` handles.
        unsafe { own_requests(a.incount, a.requests, &mut a.statuses, s) }
    } after |a, d, m| {
        poll_on_requests(m);
        // SAFETY: the call's flag, written by MPI when it succeeded.
        if d.rc == 0 && unsafe { flag_set(a.flag) } {
            // SAFETY: the call's arrays, which MPI updated.
            unsafe { complete_nulled(m, a.requests, a.statuses, d, true) };
            completion_row(d);
        } else {
            poll_miss(d);
        }
    }
}

/// Completes the request at `index` among the `m` saved, then records the call.
///
/// # Safety
/// `index` is null or points to the index MPI wrote, and `st` to the status it filled.
unsafe fn any_done(d: &Done, m: usize, index: *const c_int, st: *const ffi::MPI_Status) {
    let i = if index.is_null() {
        -1
    } else {
        // SAFETY: MPI wrote the index through the caller's pointer.
        unsafe { *index }
    };
    if i >= 0 && (i as usize) < m {
        // SAFETY: the status of the completed request.
        unsafe { complete(saved_request(i as usize), st, d.t1, d.s) };
    }
    completion_row(d);
}

kinds! {
    /// MPI_Waitany.
    Waitany before |a, s| -> usize {
        own_status(&mut a.status, s)?;
        // SAFETY: the call's request array of `incount` handles.
        Some(unsafe { save_requests(a.incount, a.requests) })
    } after |a, d, m| {
        // SAFETY: the index and status MPI wrote.
        unsafe { any_done(d, m, a.index, a.status) };
    }

    /// MPI_Testany.
    Testany before |a, s| -> usize {
        own_status(&mut a.status, s)?;
        // SAFETY: the call's request array of `incount` handles.
        Some(unsafe { save_requests(a.incount, a.requests) })
    } after |a, d, m| {
        poll_on_requests(m);
        // SAFETY: the flag and index MPI wrote through the caller's pointers.
        let done = d.rc == 0
            && unsafe { flag_set(a.flag) }
            && !a.index.is_null()
            && unsafe { *a.index } >= 0;
        if done {
            // SAFETY: as above, and the status MPI filled.
            unsafe { any_done(d, m, a.index, a.status) };
        } else {
            poll_miss(d);
        }
    }
}

/// Completes the requests whose indices MPI wrote, then records the call (or counts an
/// unsuccessful `poll`).
///
/// # Safety
/// `outcount` is null or points to the count MPI wrote, `indices` holds that many
/// indices, and `st` is the status array MPI filled (or MPI_STATUSES_IGNORE).
unsafe fn some_done(
    d: &Done,
    m: usize,
    outcount: *const c_int,
    indices: *const c_int,
    st: *mut ffi::MPI_Status,
    poll: bool,
) {
    let k = if outcount.is_null() {
        0
    } else {
        // SAFETY: MPI wrote outcount through the caller's pointer.
        unsafe { *outcount }
    };
    if k <= 0 || indices.is_null() {
        if poll {
            poll_miss(d);
        } else {
            completion_row(d);
        }
        return;
    }
    for j in 0..k as usize {
        // SAFETY: MPI wrote `outcount` indices.
        let i = unsafe { *indices.add(j) };
        if i >= 0 && (i as usize) < m {
            // Statuses of *some calls are indexed by position in `indices`.
            // SAFETY: entry j of the statuses MPI filled.
            unsafe { complete(saved_request(i as usize), status_at(st, j, d.s), d.t1, d.s) };
        }
    }
    completion_row(d);
}

kinds! {
    /// MPI_Waitsome.
    Waitsome before |a, s| -> usize {
        // SAFETY: the call's request array of `incount` handles.
        unsafe { own_requests(a.incount, a.requests, &mut a.statuses, s) }
    } after |a, d, m| {
        // SAFETY: the count, indices and statuses MPI wrote.
        unsafe { some_done(d, m, a.outcount, a.indices, a.statuses, false) };
    }

    /// MPI_Testsome.
    Testsome before |a, s| -> usize {
        // SAFETY: the call's request array of `incount` handles.
        unsafe { own_requests(a.incount, a.requests, &mut a.statuses, s) }
    } after |a, d, m| {
        poll_on_requests(m);
        // SAFETY: the count, indices and statuses MPI wrote.
        unsafe { some_done(d, m, a.outcount, a.indices, a.statuses, true) };
    }

    /// MPI_Request_free: a tracked operation is recorded as incomplete at the free.
    RequestFree before |a, _s| -> usize {
        // SAFETY: the call's request pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.request) })
    } after |_a, d, req| {
        if let Some(p) = handles::take(req) {
            emit(p, d.t1, FLAG_INCOMPLETE);
        }
        handles::forget_persistent(req);
    }
}

// ---- collectives ----

/// What a collective moves at this rank: bytes sent, bytes received, the root as a WORLD
/// rank (or NO_RANK), and whether it ran in place.
type Flow = (u64, u64, i32, bool);

/// The per-peer bytes of a v/w or neighbourhood collective, written as continuation
/// records (`trace::arcs`) that name the call by its thread, entry time and number, at
/// once: a nonblocking call's own record waits for its completion, by when the caller may
/// have freed its count arrays.
pub(crate) struct Arcs {
    owner: Record,
    /// What the call's record says of them: `FLAG_ARCS`, `FLAG_ARCS_CAPPED`.
    flags: u16,
}

impl Arcs {
    /// Writes the pairs (`peer(i)`, `bytes(i)`), i in 0..n, that move bytes to or from a
    /// rank (not MPI_PROC_NULL), as sent (`recv` false) or received. Each is called twice
    /// per index: once to count the pairs (a continuation says how many there are, so that a
    /// lost one is noticed), once to write them.
    fn put(&mut self, recv: bool, n: u32, peer: impl Fn(u32) -> i32, bytes: impl Fn(u32) -> u64) {
        let pair = |i| (peer(i), bytes(i));
        let moves = |(peer, bytes): (i32, u64)| bytes > 0 && peer >= 0;
        // Counting stops past the cap: a large communicator costs no more than the cap.
        let total = (0..n)
            .filter(|&i| moves(pair(i)))
            .take(MAX_ARCS + 1)
            .count();
        if total == 0 {
            return;
        }
        if total > MAX_ARCS {
            self.flags |= FLAG_ARCS_CAPPED;
            return;
        }
        let mut buf = [(NO_RANK, 0u64); ARC_PAIRS];
        let (mut k, mut first) = (0, 0u32);
        for p in (0..n).map(&pair).filter(|&p| moves(p)) {
            buf[k] = p;
            k += 1;
            if k == ARC_PAIRS {
                record::push(continuation(&self.owner, recv, first, total as u32, &buf));
                first += k as u32;
                k = 0;
            }
        }
        if k > 0 {
            record::push(continuation(
                &self.owner,
                recv,
                first,
                total as u32,
                &buf[..k],
            ));
        }
        self.flags |= FLAG_ARCS;
    }
}

/// Entry `i` of a count array of `n` entries, in bytes of `dt` (a v variant's per-peer
/// bytes).
///
/// # Safety
/// `counts` is null or holds `n` ints while the closure is used.
unsafe fn v_bytes(counts: *const c_int, n: u32, dt: ffi::MPI_Datatype) -> impl Fn(u32) -> u64 {
    // One size query, not one per peer.
    let size = handles::type_size(dt);
    move |i| {
        if counts.is_null() || i >= n {
            return 0;
        }
        // SAFETY: `counts` holds n ints (the function's contract); i < n.
        let c = unsafe { *counts.add(i as usize) };
        c.max(0) as u64 * size
    }
}

/// Entry `i` of count and datatype arrays of `n` entries, in bytes (a w variant's).
///
/// # Safety
/// Each array is null or holds `n` entries while the closure is used.
unsafe fn w_bytes(
    counts: *const c_int,
    types: *const ffi::MPI_Datatype,
    n: u32,
) -> impl Fn(u32) -> u64 {
    // SAFETY: the function's contract.
    move |i| unsafe { handles::count_w_at(counts, types, i, n) }
}

/// `count` elements of `dt` for every peer, in bytes (a uniform kind's per-peer bytes,
/// where a v variant has [`v_bytes`]).
fn same_bytes(count: c_int, dt: ffi::MPI_Datatype) -> impl Fn(u32) -> u64 {
    let b = handles::bytes(count, dt);
    move |_| b
}

/// A neighbourhood collective's per-neighbour bytes: `send(i)` to out-neighbour `i` and
/// `recv(i)` from in-neighbour `i`, in the order of the count arrays, as WORLD ranks; a
/// direction whose neighbours MPI did not list is left to the totals, and MPI_PROC_NULL
/// neighbours (a non-periodic Cartesian edge) to nobody ([`Arcs::put`]).
fn neighbor_arcs(
    ci: &CommInfo,
    k: &mut Arcs,
    send: impl Fn(u32) -> u64,
    recv: impl Fn(u32) -> u64,
) {
    if ci.dests.len() == ci.outdeg as usize {
        k.put(false, ci.outdeg, |i| ci.dests[i as usize], send);
    }
    if ci.sources.len() == ci.indeg as usize {
        k.put(true, ci.indeg, |i| ci.sources[i as usize], recv);
    }
}

/// Records a collective from its flow at this rank, and its per-peer bytes when the kind
/// has `arcs` (the v/w variants, the neighbourhood ones). A nonblocking collective
/// (`request` not null) is tracked like a nonblocking send and recorded at the completion
/// call that finishes it.
///
/// # Safety
/// `request` is null or the call's request pointer, valid as MPI requires.
#[inline]
unsafe fn collective(
    d: &Done,
    comm: ffi::MPI_Comm,
    request: *mut ffi::MPI_Request,
    flow: impl FnOnce(&CommInfo, &Sentinels) -> Flow,
    arcs: Option<impl FnOnce(&CommInfo, &Sentinels, &mut Arcs)>,
) {
    let ci = comm_of(comm, d.s);
    let (snd, rcv, root, in_place) = flow(&ci, d.s);
    let mut flags = if in_place { FLAG_IN_PLACE } else { 0 };
    if !request.is_null() && d.rc != 0 {
        return;
    }
    if let Some(arcs) = arcs {
        let mut out = Arcs {
            owner: Record {
                t_start: d.t0,
                call: d.call,
                ..Default::default()
            },
            flags: 0,
        };
        arcs(&ci, d.s, &mut out);
        flags |= out.flags;
    }
    if !request.is_null() {
        let base = d.pending(&ci, false, NO_RANK, 0);
        let p = Pending {
            bytes: snd,
            bytes_recv: rcv,
            root,
            flags: flags | base.flags,
            ..base
        };
        // SAFETY: the post succeeded, so MPI wrote the handle through `request`.
        unsafe { track_posted(request, p, d.t1) };
        return;
    }
    let mut r = d.row(&ci);
    r.bytes_send = snd;
    r.bytes_recv = rcv;
    r.root = root;
    r.flags |= flags;
    record::push(r);
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

/// Implements [`Kind`] for collective kinds from their flow at this rank:
/// `Kind |a, ci, s| flow`, where `a` holds the call's arguments, `ci` describes its
/// communicator and `s` the MPI sentinels; a v/w or neighbourhood kind adds
/// `, arcs |ci, s, k| { ... }`, which gives its per-peer bytes to `k` ([`Arcs::put`]). A
/// flow or arcs block that reads a count or type array says why it may in a `// SAFETY:`
/// line.
macro_rules! collectives {
    (@arcs) => { None::<fn(&CommInfo, &Sentinels, &mut Arcs)> };
    (@arcs $ci:ident $s:ident $k:ident $arcs:block) => {
        Some(|$ci: &CommInfo, $s: &Sentinels, $k: &mut Arcs| $arcs)
    };
    ($($(#[$doc:meta])* $kind:ident |$a:ident, $ci:ident, $s:ident| $flow:block
        $(, arcs |$aci:ident, $as:ident, $k:ident| $arcs:block)?)*) => {$(
        $(#[$doc])*
        impl Kind for args::$kind {
            type Saved = ();
            #[inline]
            unsafe fn after(&self, d: &Done, (): ()) {
                let $a = self;
                let flow = |$ci: &CommInfo, $s: &Sentinels| -> Flow { $flow };
                let arcs = collectives!(@arcs $($aci $as $k $arcs)?);
                // SAFETY: the call's request pointer.
                unsafe { collective(d, $a.comm, $a.request, flow, arcs) };
            }
        }
    )*};
}

collectives! {
    /// MPI_(I)alltoall: a block to and from every rank.
    Alltoall |a, ci, s| {
        let n = ci.size as u64;
        let rb = handles::bytes(a.rcount, a.rtype) * n;
        let ip = is_in_place(a.sbuf, s);
        let sb = if ip { rb } else { handles::bytes(a.scount, a.stype) * n };
        (sb, rb, NO_RANK, ip)
    }

    /// MPI_(I)alltoallv.
    Alltoallv |a, ci, s| {
        // SAFETY: both count arrays hold comm-size entries (MPI requires it).
        let rb = unsafe { handles::bytes_v(a.rcounts, ci.size, a.rtype) };
        let ip = is_in_place(a.sbuf, s);
        // SAFETY: as above.
        let sb = if ip { rb } else { unsafe { handles::bytes_v(a.scounts, ci.size, a.stype) } };
        (sb, rb, NO_RANK, ip)
    }, arcs |ci, s, k| {
        // In place, the receive counts say what goes both ways.
        let ip = is_in_place(a.sbuf, s);
        let (sc, st) = if ip { (a.rcounts, a.rtype) } else { (a.scounts, a.stype) };
        let (n, rank) = (ci.size, |i: u32| ci.world_rank(i as c_int, s));
        // SAFETY: both count arrays hold comm-size entries (MPI requires it).
        k.put(false, n, rank, unsafe { v_bytes(sc, n, st) });
        // SAFETY: as above.
        k.put(true, n, rank, unsafe { v_bytes(a.rcounts, n, a.rtype) });
    }

    /// MPI_(I)alltoallw: per-peer counts and datatypes.
    Alltoallw |a, ci, s| {
        // SAFETY: all four arrays hold comm-size entries (MPI requires it).
        let rb = unsafe { handles::bytes_w(a.rcounts, a.rtypes, ci.size) };
        let ip = is_in_place(a.sbuf, s);
        // SAFETY: as above.
        let sb = if ip { rb } else { unsafe { handles::bytes_w(a.scounts, a.stypes, ci.size) } };
        (sb, rb, NO_RANK, ip)
    }, arcs |ci, s, k| {
        let ip = is_in_place(a.sbuf, s);
        let (sc, st) = if ip { (a.rcounts, a.rtypes) } else { (a.scounts, a.stypes) };
        let (n, rank) = (ci.size, |i: u32| ci.world_rank(i as c_int, s));
        // SAFETY: all four arrays hold comm-size entries (MPI requires it).
        k.put(false, n, rank, unsafe { w_bytes(sc, st, n) });
        // SAFETY: as above.
        k.put(true, n, rank, unsafe { w_bytes(a.rcounts, a.rtypes, n) });
    }

    /// MPI_(I)allgather.
    Allgather |a, ci, s| {
        let one = handles::bytes(a.rcount, a.rtype);
        let ip = is_in_place(a.sbuf, s);
        let sb = if ip { one } else { handles::bytes(a.scount, a.stype) };
        (sb, one * ci.size as u64, NO_RANK, ip)
    }

    /// MPI_(I)allgatherv.
    Allgatherv |a, ci, s| {
        let ip = is_in_place(a.sbuf, s);
        // SAFETY: the receive counts hold comm-size entries (MPI requires it).
        let rb = unsafe { handles::bytes_v(a.rcounts, ci.size, a.rtype) };
        let sb = if ip {
            // SAFETY: as above.
            unsafe { handles::count_at(a.rcounts, ci.my_rank, ci.size, a.rtype) }
        } else {
            handles::bytes(a.scount, a.stype)
        };
        (sb, rb, NO_RANK, ip)
    }, arcs |ci, s, k| {
        // Its own block goes to every other rank alike: only the receive side varies.
        let (n, rank) = (ci.size, |i: u32| ci.world_rank(i as c_int, s));
        // SAFETY: the receive counts hold comm-size entries (MPI requires it).
        k.put(true, n, rank, unsafe { v_bytes(a.rcounts, n, a.rtype) });
    }

    /// MPI_(I)gather: every rank sends its block, the root receives all (receive counts
    /// are significant only there).
    Gather |a, ci, s| {
        let all = || handles::bytes(a.rcount, a.rtype) * ci.size as u64;
        let root_share = || handles::bytes(a.rcount, a.rtype);
        let own = || handles::bytes(a.scount, a.stype);
        let (rb, sb, wr, ip) = rooted(ci, s, a.root, a.sbuf, all, root_share, own);
        (sb, rb, wr, ip)
    }

    /// MPI_(I)gatherv.
    Gatherv |a, ci, s| {
        // SAFETY: at the root (the only rank that asks) the receive counts hold comm-size
        // entries, as MPI requires.
        let all = || unsafe { handles::bytes_v(a.rcounts, ci.size, a.rtype) };
        // SAFETY: as above.
        let root_share = || unsafe { handles::count_at(a.rcounts, ci.my_rank, ci.size, a.rtype) };
        let own = || handles::bytes(a.scount, a.stype);
        let (rb, sb, wr, ip) = rooted(ci, s, a.root, a.sbuf, all, root_share, own);
        (sb, rb, wr, ip)
    }, arcs |ci, s, k| {
        // The root receives a block of its own size from each rank; the others send one
        // block, to the root (the record says so already).
        if root_of(ci, a.root, s).1 {
            let (n, rank) = (ci.size, |i: u32| ci.world_rank(i as c_int, s));
            // SAFETY: at the root the receive counts hold comm-size entries, as MPI requires.
            k.put(true, n, rank, unsafe { v_bytes(a.rcounts, n, a.rtype) });
        }
    }

    /// MPI_(I)scatter: the root sends every rank its block (send counts are significant
    /// only there), every rank receives its own.
    Scatter |a, ci, s| {
        let all = || handles::bytes(a.scount, a.stype) * ci.size as u64;
        let root_share = || handles::bytes(a.scount, a.stype);
        let own = || handles::bytes(a.rcount, a.rtype);
        rooted(ci, s, a.root, a.rbuf, all, root_share, own)
    }

    /// MPI_(I)scatterv.
    Scatterv |a, ci, s| {
        // SAFETY: at the root (the only rank that asks) the send counts hold comm-size
        // entries, as MPI requires.
        let all = || unsafe { handles::bytes_v(a.scounts, ci.size, a.stype) };
        // SAFETY: as above.
        let root_share = || unsafe { handles::count_at(a.scounts, ci.my_rank, ci.size, a.stype) };
        let own = || handles::bytes(a.rcount, a.rtype);
        rooted(ci, s, a.root, a.rbuf, all, root_share, own)
    }, arcs |ci, s, k| {
        if root_of(ci, a.root, s).1 {
            let (n, rank) = (ci.size, |i: u32| ci.world_rank(i as c_int, s));
            // SAFETY: at the root the send counts hold comm-size entries, as MPI requires.
            k.put(false, n, rank, unsafe { v_bytes(a.scounts, n, a.stype) });
        }
    }

    /// MPI_(I)bcast: the root sends, the others receive.
    Bcast |a, ci, s| {
        let (wr, me) = root_of(ci, a.root, s);
        let b = handles::bytes(a.count, a.dtype);
        if me { (b, 0, wr, false) } else { (0, b, wr, false) }
    }

    /// MPI_(I)reduce.
    Reduce |a, ci, s| {
        let (wr, me) = root_of(ci, a.root, s);
        let b = handles::bytes(a.count, a.dtype);
        let ip = me && is_in_place(a.sbuf, s);
        (b, if me { b } else { 0 }, wr, ip)
    }

    /// MPI_(I)allreduce.
    Allreduce |a, _ci, s| {
        let b = handles::bytes(a.count, a.dtype);
        (b, b, NO_RANK, is_in_place(a.sbuf, s))
    }

    /// MPI_(I)reduce_scatter: sends every block, receives its own.
    ReduceScatter |a, ci, s| {
        // SAFETY: the receive counts hold comm-size entries (MPI requires it).
        let (sb, rb) = unsafe {
            (
                handles::bytes_v(a.rcounts, ci.size, a.dtype),
                handles::count_at(a.rcounts, ci.my_rank, ci.size, a.dtype),
            )
        };
        (sb, rb, NO_RANK, is_in_place(a.sbuf, s))
    }

    /// MPI_(I)reduce_scatter_block: sends n blocks, receives one.
    ReduceScatterBlock |a, ci, s| {
        let rb = handles::bytes(a.rcount, a.dtype);
        (rb * ci.size as u64, rb, NO_RANK, is_in_place(a.sbuf, s))
    }

    /// MPI_(I)scan, MPI_(I)exscan: the contribution sent, the prefix received.
    Scan |a, _ci, s| {
        let b = handles::bytes(a.count, a.dtype);
        (b, b, NO_RANK, is_in_place(a.sbuf, s))
    }

    /// MPI_(I)barrier.
    Barrier |a, _ci, _s| { (0, 0, NO_RANK, false) }

    // Neighbourhood collectives: a rank sends to its out-neighbours and receives from
    // its in-neighbours in the communicator's topology; the bytes are the sums over them,
    // and each neighbour's share is written too ([`neighbor_arcs`]).

    /// MPI_(I)neighbor_allgather: its block to every out-neighbour, one from every
    /// in-neighbour.
    NeighborAllgather |a, ci, _s| {
        neighbor_blocks(ci, a.scount, a.stype, a.rcount, a.rtype)
    }, arcs |ci, _s, k| {
        let (send, recv) = (same_bytes(a.scount, a.stype), same_bytes(a.rcount, a.rtype));
        neighbor_arcs(ci, k, send, recv);
    }

    /// MPI_(I)neighbor_allgatherv.
    NeighborAllgatherv |a, ci, _s| {
        let sb = handles::bytes(a.scount, a.stype) * ci.outdeg as u64;
        // SAFETY: the receive counts hold in-degree entries (MPI requires it).
        let rb = unsafe { handles::bytes_v(a.rcounts, ci.indeg, a.rtype) };
        (sb, rb, NO_RANK, false)
    }, arcs |ci, _s, k| {
        // SAFETY: the receive counts hold in-degree entries (MPI requires it).
        let recv = unsafe { v_bytes(a.rcounts, ci.indeg, a.rtype) };
        neighbor_arcs(ci, k, same_bytes(a.scount, a.stype), recv);
    }

    /// MPI_(I)neighbor_alltoall: one block per out-neighbour, one per in-neighbour.
    NeighborAlltoall |a, ci, _s| {
        neighbor_blocks(ci, a.scount, a.stype, a.rcount, a.rtype)
    }, arcs |ci, _s, k| {
        let (send, recv) = (same_bytes(a.scount, a.stype), same_bytes(a.rcount, a.rtype));
        neighbor_arcs(ci, k, send, recv);
    }

    /// MPI_(I)neighbor_alltoallv.
    NeighborAlltoallv |a, ci, _s| {
        // SAFETY: the count arrays hold out- and in-degree entries (MPI requires it).
        let (sb, rb) = unsafe {
            (
                handles::bytes_v(a.scounts, ci.outdeg, a.stype),
                handles::bytes_v(a.rcounts, ci.indeg, a.rtype),
            )
        };
        (sb, rb, NO_RANK, false)
    }, arcs |ci, _s, k| {
        // SAFETY: the count arrays hold out- and in-degree entries (MPI requires it).
        let (send, recv) = unsafe {
            (
                v_bytes(a.scounts, ci.outdeg, a.stype),
                v_bytes(a.rcounts, ci.indeg, a.rtype),
            )
        };
        neighbor_arcs(ci, k, send, recv);
    }

    /// MPI_(I)neighbor_alltoallw: per-neighbour counts and datatypes.
    NeighborAlltoallw |a, ci, _s| {
        // SAFETY: the arrays hold out- and in-degree entries (MPI requires it).
        let (sb, rb) = unsafe {
            (
                handles::bytes_w(a.scounts, a.stypes, ci.outdeg),
                handles::bytes_w(a.rcounts, a.rtypes, ci.indeg),
            )
        };
        (sb, rb, NO_RANK, false)
    }, arcs |ci, _s, k| {
        // SAFETY: the send and receive arrays hold out- and in-degree entries (MPI
        // requires it).
        let (send, recv) = unsafe {
            (
                w_bytes(a.scounts, a.stypes, ci.outdeg),
                w_bytes(a.rcounts, a.rtypes, ci.indeg),
            )
        };
        neighbor_arcs(ci, k, send, recv);
    }
}

/// A gather or scatter at this rank: (bytes on the root's side: `all` at the root, else
/// 0; bytes on every rank's own side: `own`, or in place the root's share of the root's
/// side; the root as a WORLD rank; in place). MPI_IN_PLACE (`buf`, the root's own-side
/// buffer) counts only at the root, where MPI ignores the own-side count and type; the
/// root's share then counts as moved, as in the out-of-place call.
#[inline]
fn rooted(
    ci: &CommInfo,
    s: &Sentinels,
    root: c_int,
    buf: *const std::ffi::c_void,
    all: impl FnOnce() -> u64,
    root_share: impl FnOnce() -> u64,
    own: impl FnOnce() -> u64,
) -> Flow {
    let (wr, me) = root_of(ci, root, s);
    let ip = me && is_in_place(buf, s);
    let root_side = if me { all() } else { 0 };
    let own_side = if ip { root_share() } else { own() };
    (root_side, own_side, wr, ip)
}

/// One block to every out-neighbour, one from every in-neighbour.
#[inline]
fn neighbor_blocks(
    ci: &CommInfo,
    scount: c_int,
    stype: ffi::MPI_Datatype,
    rcount: c_int,
    rtype: ffi::MPI_Datatype,
) -> Flow {
    let sb = handles::bytes(scount, stype) * ci.outdeg as u64;
    let rb = handles::bytes(rcount, rtype) * ci.indeg as u64;
    (sb, rb, NO_RANK, false)
}

// ---- persistent requests ----

kinds! {
    /// MPI_Send_init, MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init: remembers what each
    /// start will send. Not recorded itself.
    SendInit after |a, d, ()| {
        if let Some(p) = p2p_op(d, false, a.count, a.dtype, a.peer, a.tag, a.comm, a.request) {
            // SAFETY: the call succeeded, so MPI wrote the new handle through `request`.
            handles::set_persistent(key(unsafe { *a.request }), p);
        }
    }

    /// MPI_Recv_init: remembers what each start will receive. Not recorded itself.
    RecvInit after |a, d, ()| {
        if let Some(p) = p2p_op(d, true, a.count, a.dtype, a.peer, a.tag, a.comm, a.request) {
            // SAFETY: the call succeeded, so MPI wrote the new handle through `request`.
            handles::set_persistent(key(unsafe { *a.request }), p);
        }
    }
}

/// A persistent request started in `d`: one operation from now to its completion,
/// recorded under the name of the call that created the request.
fn started(req: usize, d: &Done, thread: u16) {
    let Some(mut p) = handles::persistent(req) else {
        return;
    };
    // The request's flags are its creation's; the polls before this start are its own.
    p.flags &= !FLAG_GAP_POLLS;
    if end_poll() {
        p.flags |= FLAG_GAP_POLLS;
    }
    p.t_start = d.t0;
    p.t_posted = d.t1;
    p.thread = thread;
    if handles::track(req, p) == Err(handles::TrackError::Duplicate) {
        // The previous start's completion was not seen: this start replaces it.
        let _ = handles::take(req);
        let _ = handles::track(req, p);
    }
}

kinds! {
    /// MPI_Start.
    Start before |a, _s| -> usize {
        // SAFETY: the call's request pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.request) })
    } after |_a, d, req| {
        if d.rc == 0 {
            started(req, d, thread_no());
        }
    }

    /// MPI_Startall.
    Startall after |a, d, ()| {
        if d.rc != 0 || a.requests.is_null() {
            return;
        }
        let th = thread_no();
        for i in 0..a.incount.max(0) as usize {
            // SAFETY: MPI requires `requests` to hold `incount` handles (unchanged by a start).
            started(key(unsafe { *a.requests.add(i) }), d, th);
        }
    }
}

// ---- matched probes ----

/// Records a matched probe and, when it matched, remembers what under the message handle,
/// for the MPI_Mrecv/MPI_Imrecv that receives it (they name no communicator).
///
/// # Safety
/// `message` and `status` are the probe's pointers, valid as MPI requires, and MPI
/// filled them when `d.rc` is 0.
unsafe fn matched_probe(
    d: &Done,
    peer: c_int,
    tag: c_int,
    comm: ffi::MPI_Comm,
    message: *mut ffi::MPI_Message,
    status: *const ffi::MPI_Status,
) {
    let ci = comm_of(comm, d.s);
    // SAFETY: the probe's status (the caller's contract).
    let r = unsafe { probed(d, &ci, peer, tag, status) };
    record::push(r);
    if d.rc == 0 && !message.is_null() {
        let p = d.pending(&ci, true, r.peer, r.tag);
        // SAFETY: MPI wrote the message handle through the caller's pointer (rc == 0).
        handles::set_message(key(unsafe { *message }), p);
    }
}

kinds! {
    /// MPI_Mprobe.
    Mprobe before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        // SAFETY: the probe's own pointers.
        unsafe { matched_probe(d, a.peer, a.tag, a.comm, a.message, a.status) };
    }

    /// MPI_Improbe: recorded when a message was matched, counted otherwise.
    Improbe before |a, s| -> () {
        own_status(&mut a.status, s)
    } after |a, d, ()| {
        poll_on_probe(a.peer, a.tag, a.comm);
        // SAFETY: the call's flag, written by MPI when it succeeded.
        if d.rc == 0 && unsafe { flag_set(a.flag) } {
            // SAFETY: the probe's own pointers.
            unsafe { matched_probe(d, a.peer, a.tag, a.comm, a.message, a.status) };
        } else {
            poll_miss(d);
        }
    }
}

/// What the probe that matched message `msg` found, and its communicator. The message
/// of a probe of MPI_PROC_NULL (MPI_MESSAGE_NO_PROC) was found by none: its receive is
/// from MPI_PROC_NULL.
fn take_message(msg: usize) -> (Option<Pending>, CommInfo) {
    if handles::sentinels().is_some_and(|s| msg == s.message_no_proc) {
        return (
            Some(Pending {
                peer: PROC_NULL,
                tag: 0,
                ..Pending::default()
            }),
            NO_COMM,
        );
    }
    let found = handles::take_message(msg);
    let ci = match found {
        Some(p) => CommInfo {
            id: p.comm,
            size: p.comm_size,
            my_rank: -1,
            world: p.world,
            indeg: 0,
            outdeg: 0,
            sources: &[],
            dests: &[],
        },
        None => NO_COMM,
    };
    (found, ci)
}

kinds! {
    /// MPI_Mrecv: the receive of the message its probe matched (source and tag from it).
    Mrecv before |a, s| -> usize {
        own_status(&mut a.status, s)?;
        // SAFETY: the call's message pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.message) })
    } after |a, d, msg| {
        let (found, ci) = take_message(msg);
        let mut r = d.row(&ci);
        r.peer = found.map_or(UNKNOWN_RANK, |p| p.peer);
        r.tag = found.map_or(0, |p| p.tag);
        if r.peer != PROC_NULL && d.rc == 0 {
            // SAFETY: the receive succeeded, so MPI filled the status.
            let bytes = unsafe { status_bytes(a.status) };
            r.bytes_recv = bytes.unwrap_or_else(|| handles::bytes(a.count, a.dtype));
        }
        record::push(r);
    }

    /// MPI_Imrecv: a nonblocking receive of the message its probe matched.
    Imrecv before |a, _s| -> usize {
        // SAFETY: the call's message pointer, readable as MPI requires.
        Some(unsafe { handle_at(a.message) })
    } after |a, d, msg| {
        let (found, ci) = take_message(msg);
        if d.rc != 0 || a.request.is_null() {
            return;
        }
        let peer = found.map_or(UNKNOWN_RANK, |p| p.peer);
        let mut p = d.pending(&ci, true, peer, found.map_or(0, |p| p.tag));
        if peer != PROC_NULL {
            p.bytes = handles::bytes(a.count, a.dtype);
        }
        // SAFETY: the post succeeded, so MPI wrote the handle through `request`.
        unsafe { track_posted(a.request, p, d.t1) };
    }
}

// ---- one-sided communication ----

#[inline]
fn win_of(win: ffi::MPI_Win) -> CommInfo {
    handles::win_info(win).unwrap_or(NO_COMM)
}

/// A one-sided transfer: `put` bytes to and `get` bytes from the target (a rank of the
/// window's group), recorded with the target as a WORLD rank.
fn rma(d: &Done, put: u64, get: u64, peer: c_int, win: ffi::MPI_Win) {
    let ci = win_of(win);
    let mut r = d.row(&ci);
    r.peer = ci.world_rank(peer, d.s);
    if r.peer != PROC_NULL {
        r.bytes_send = put;
        r.bytes_recv = get;
        let _ = RMA_BYTES.try_with(|b| {
            let (p, g) = b.get();
            b.set((p + r.bytes_send, g + r.bytes_recv));
        });
    }
    record::push(r);
}

kinds! {
    /// MPI_Put, MPI_Accumulate, MPI_Rput, MPI_Raccumulate: data to the target.
    RmaPut after |a, d, ()| {
        rma(
            d,
            handles::bytes(a.count, a.dtype),
            0,
            a.peer,
            a.win,
        );
    }

    /// MPI_Get, MPI_Rget: data from the target.
    RmaGet after |a, d, ()| {
        rma(
            d,
            0,
            handles::bytes(a.count, a.dtype),
            a.peer,
            a.win,
        );
    }

    /// MPI_(R)get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap: the origin buffer
    /// to the target, the result back.
    RmaGetAcc after |a, d, ()| {
        rma(
            d,
            handles::bytes(a.count, a.dtype),
            handles::bytes(a.rcount, a.rtype),
            a.peer,
            a.win,
        );
    }
}

/// Window synchronisation: recorded on the window's communicator, with the target as a
/// WORLD rank when there is one; `done`: it completes the thread's one-sided transfers,
/// whose bytes its row carries.
fn win_sync(d: &Done, peer: Option<c_int>, done: bool, win: ffi::MPI_Win) {
    let ci = win_of(win);
    let mut r = d.row(&ci);
    if let Some(p) = peer {
        r.peer = ci.world_rank(p, d.s);
    }
    if done {
        let (p, g) = RMA_BYTES.try_with(|b| b.replace((0, 0))).unwrap_or((0, 0));
        r.bytes_send = p;
        r.bytes_recv = g;
    }
    record::push(r);
}

kinds! {
    /// MPI_Win_fence: collective over the window's group; completes the epoch's transfers.
    WinFence after |a, d, ()| {
        win_sync(d, None, true, a.win);
    }

    /// Synchronisation that opens access (MPI_Win_lock_all, MPI_Win_post, MPI_Win_start).
    WinOpen after |a, d, ()| {
        win_sync(d, None, false, a.win);
    }

    /// MPI_Win_lock: opens access to one target.
    WinOpenRank after |a, d, ()| {
        win_sync(d, Some(a.peer), false, a.win);
    }

    /// Synchronisation that completes transfers (MPI_Win_unlock_all, MPI_Win_flush_all,
    /// MPI_Win_complete, MPI_Win_wait, ...).
    WinDone after |a, d, ()| {
        win_sync(d, None, true, a.win);
    }

    /// MPI_Win_unlock, MPI_Win_flush(_local): completes transfers to one target.
    WinDoneRank after |a, d, ()| {
        win_sync(d, Some(a.peer), true, a.win);
    }

    /// Window creation: remembers the window's communicator. Not recorded.
    WinNew after |a, d, ()| {
        if d.rc == 0 && !a.newwin.is_null() {
            let ci = comm_of(a.comm, d.s);
            // SAFETY: MPI wrote the new window handle through the caller's pointer (rc == 0).
            handles::register_win(unsafe { *a.newwin }, ci);
        }
    }

    /// MPI_Win_free: forgets the window before MPI frees (and may reuse) its handle. Not
    /// recorded; what MPI does inside it is not recorded either.
    WinFree before |a, _s| -> () {
        if !a.winp.is_null() {
            // SAFETY: not null, so a valid window pointer as MPI requires.
            handles::forget_win(unsafe { *a.winp });
        }
        Some(())
    } after |_a, _d, ()| {}
}

// ---- communicators ----

kinds! {
    /// Communicator creation: registers the new communicator's WORLD ranks. Not recorded.
    CommNew after |a, d, ()| {
        if d.rc == 0 && !a.newcomm.is_null() {
            // SAFETY: MPI wrote the new handle through the caller's pointer (rc == 0).
            let _ = handles::register_comm(unsafe { *a.newcomm }, d.s);
        }
    }
}

/// MPI_Comm_free: forgets the communicator before MPI frees (and may reuse) its handle.
/// Not recorded, and without the guard: the attribute callbacks MPI runs inside it make
/// the program's own calls.
impl Kind for args::CommFree {
    type Saved = ();
    const UNGUARDED: bool = true;
    unsafe fn before(&mut self, _s: &Sentinels) -> Option<()> {
        if !self.commp.is_null() {
            // SAFETY: not null, so a valid communicator pointer as MPI requires.
            handles::forget_comm(unsafe { *self.commp });
        }
        Some(())
    }
    unsafe fn after(&self, _d: &Done, (): ()) {}
}
