//! MPI handles on the hot path: communicators → (id, size, WORLD ranks), requests →
//! pending nonblocking operations, datatype sizes, and the MPI sentinels.
//!
//! Both tables are fixed-size open-addressing maps with atomic keys, allocated once at
//! init: lookups and inserts take no lock, and nothing on the hot path allocates. They are
//! safe under MPI_THREAD_MULTIPLE: a communicator's description is immutable once
//! published (a slot holds a pointer to it, swapped whole), and a pending operation is
//! read or written only by the thread that moved its slot's key to BUSY.

use mpi_sys as ffi;
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::trace::{NO_RANK, PROC_NULL, UNKNOWN_RANK};

/// A handle (pointer in Open MPI, integer in MPICH) as a table key.
pub fn key<T: Copy>(h: T) -> usize {
    let mut k = 0usize;
    let n = std::mem::size_of::<T>().min(std::mem::size_of::<usize>());
    // SAFETY: copies at most size_of::<usize>() bytes from a live Copy value into a usize.
    unsafe {
        std::ptr::copy_nonoverlapping(
            &h as *const T as *const u8,
            &mut k as *mut usize as *mut u8,
            n,
        )
    };
    k
}

unsafe extern "C" {
    static pmpi_predict_IN_PLACE: *mut c_void;
    static pmpi_predict_DATATYPE_NULL: ffi::MPI_Datatype;
}

/// MPI constants read once at init (they are link-time symbols or macros).
#[derive(Debug)]
pub struct Sentinels {
    pub comm_world: usize,
    pub comm_self: usize,
    pub comm_null: usize,
    pub request_null: usize,
    /// The message of a matched probe of MPI_PROC_NULL.
    pub message_no_proc: usize,
    pub in_place: usize,
    pub proc_null: c_int,
    pub any_source: c_int,
    pub status_ignore: usize,
    pub statuses_ignore: usize,
    pub world_size: c_int,
}

static SENTINELS: OnceLock<Sentinels> = OnceLock::new();

/// Reads the sentinels; call after PMPI_Init succeeded.
pub fn init_sentinels(world_size: c_int) -> &'static Sentinels {
    SENTINELS.get_or_init(|| {
        // SAFETY: these extern statics are constants defined by mpi-sys's C shim and ours.
        unsafe {
            Sentinels {
                comm_world: key(ffi::RSMPI_COMM_WORLD),
                comm_self: key(ffi::RSMPI_COMM_SELF),
                comm_null: key(ffi::RSMPI_COMM_NULL),
                request_null: key(ffi::RSMPI_REQUEST_NULL),
                message_no_proc: key(ffi::RSMPI_MESSAGE_NO_PROC),
                in_place: pmpi_predict_IN_PLACE as usize,
                proc_null: ffi::RSMPI_PROC_NULL,
                any_source: ffi::RSMPI_ANY_SOURCE,
                status_ignore: ffi::RSMPI_STATUS_IGNORE as usize,
                statuses_ignore: ffi::RSMPI_STATUSES_IGNORE as usize,
                world_size,
            }
        }
    })
}

/// The sentinels, once init ran.
#[inline]
pub fn sentinels() -> Option<&'static Sentinels> {
    SENTINELS.get()
}

/// Size in bytes of one element of `dt`; 0 when MPI cannot tell. MPI_DATATYPE_NULL
/// (legal where a type is not significant) is answered without asking MPI, whose error
/// handler would otherwise abort the job.
#[inline]
pub fn type_size(dt: ffi::MPI_Datatype) -> u64 {
    // SAFETY: a constant defined by our C shim.
    if key(dt) == key(unsafe { pmpi_predict_DATATYPE_NULL }) {
        return 0;
    }
    let mut s: c_int = 0;
    // SAFETY: PMPI_Type_size only writes the int we pass; an invalid handle yields an error code.
    let rc = unsafe { ffi::PMPI_Type_size(dt, &mut s) };
    if rc == 0 && s > 0 { s as u64 } else { 0 }
}

/// [`crate::trace::FLAG_PACKED`] if a send of `bytes` (`count` elements of `dt`) leaves a
/// buffer that is not one contiguous block: its elements' true extent larger than their
/// size, or, for more than one, the type's extent (the stride between them); else 0.
/// Sends below [`crate::trace::PACKED_MIN_BYTES`] are not asked about (0).
#[inline]
pub fn packed_flag(count: c_int, dt: ffi::MPI_Datatype, bytes: u64) -> u16 {
    if bytes < crate::trace::PACKED_MIN_BYTES || count <= 0 {
        return 0;
    }
    let size = bytes / count as u64;
    let (mut lb, mut extent, mut tlb, mut textent): (
        ffi::MPI_Aint,
        ffi::MPI_Aint,
        ffi::MPI_Aint,
        ffi::MPI_Aint,
    ) = (0, 0, 0, 0);
    // SAFETY: both queries only write the integers we pass; `dt` is a valid type (its
    // size was just read); an error leaves them 0 and the send counts as contiguous.
    let rc = unsafe {
        ffi::PMPI_Type_get_true_extent(dt, &mut tlb, &mut textent)
            | ffi::PMPI_Type_get_extent(dt, &mut lb, &mut extent)
    };
    let packed = rc == 0 && (textent as u64 > size || (count > 1 && extent as u64 != size));
    if packed { crate::trace::FLAG_PACKED } else { 0 }
}

/// `count` elements of `dt`, in bytes.
#[inline]
pub fn bytes(count: c_int, dt: ffi::MPI_Datatype) -> u64 {
    if count <= 0 {
        0
    } else {
        count as u64 * type_size(dt)
    }
}

/// Sum of `n` counts from a C array, times the size of `dt`. A null array counts 0.
///
/// # Safety
/// `counts` is null or holds `n` ints.
#[inline]
pub unsafe fn bytes_v(counts: *const c_int, n: u32, dt: ffi::MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    let mut total: u64 = 0;
    for i in 0..n as usize {
        // SAFETY: `counts` holds n entries (the caller's contract); i < n.
        let c = unsafe { *counts.add(i) };
        if c > 0 {
            total += c as u64;
        }
    }
    total * type_size(dt)
}

/// Sum over `n` peers of count × size of that peer's datatype (MPI_Alltoallw). Null
/// arrays count 0.
///
/// # Safety
/// Each array is null or holds `n` entries.
#[inline]
pub unsafe fn bytes_w(counts: *const c_int, types: *const ffi::MPI_Datatype, n: u32) -> u64 {
    if counts.is_null() || types.is_null() {
        return 0;
    }
    (0..n as usize)
        .map(|i| {
            // SAFETY: both arrays hold n entries (the caller's contract); i < n.
            unsafe { bytes(*counts.add(i), *types.add(i)) }
        })
        .sum()
}

/// Entry `i` of a C count array of `n` entries, in bytes of `dt`; 0 when `i` is out of
/// range or the array is null.
///
/// # Safety
/// `counts` is null or holds `n` ints.
#[inline]
pub unsafe fn count_at(counts: *const c_int, i: c_int, n: u32, dt: ffi::MPI_Datatype) -> u64 {
    if counts.is_null() || i < 0 || i as u32 >= n {
        return 0;
    }
    // SAFETY: `counts` holds n entries (the caller's contract); i < n.
    bytes(unsafe { *counts.add(i as usize) }, dt)
}

/// Entry `i` of MPI_Alltoallw-style count and datatype arrays of `n` entries, in bytes; 0
/// when `i` is out of range or an array is null.
///
/// # Safety
/// Each array is null or holds `n` entries.
#[inline]
pub unsafe fn count_w_at(
    counts: *const c_int,
    types: *const ffi::MPI_Datatype,
    i: u32,
    n: u32,
) -> u64 {
    if counts.is_null() || types.is_null() || i >= n {
        return 0;
    }
    // SAFETY: both arrays hold n entries (the caller's contract); i < n.
    unsafe { bytes(*counts.add(i as usize), *types.add(i as usize)) }
}

const EMPTY: usize = 0;
const BUSY: usize = 1;
const TOMB: usize = 2;
const MAX_PROBE: usize = 256;

#[inline]
fn slot_of(k: usize, mask: usize) -> usize {
    (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16) & mask
}

/// What a communicator means to the recorder.
#[derive(Clone, Copy, Debug)]
pub struct CommInfo {
    pub id: u32,
    pub size: u32,
    /// This process's rank in the communicator (local group for intercommunicators).
    pub my_rank: c_int,
    /// WORLD ranks of the group that peers and roots refer to (remote group for an
    /// intercommunicator); None for MPI_COMM_WORLD itself (identity).
    pub world: Option<&'static [i32]>,
    /// This rank's neighbours in the communicator's virtual topology (Cartesian, graph or
    /// distributed graph), from which it receives and to which it sends; 0 without one.
    pub indeg: u32,
    pub outdeg: u32,
    /// Those neighbours as WORLD ranks (or `PROC_NULL`), in the order of the neighbourhood
    /// collectives' count arrays; empty when MPI would not list them.
    pub sources: &'static [i32],
    pub dests: &'static [i32],
}

impl CommInfo {
    /// Translates a rank of this communicator to a WORLD rank or a sentinel.
    #[inline]
    pub fn world_rank(&self, r: c_int, s: &Sentinels) -> i32 {
        if r == s.proc_null {
            PROC_NULL
        } else if r < 0 || r as u32 >= self.size {
            if r == s.any_source {
                UNKNOWN_RANK
            } else {
                NO_RANK
            }
        } else {
            match self.world {
                None => r,
                Some(w) => w.get(r as usize).copied().unwrap_or(UNKNOWN_RANK),
            }
        }
    }
}

/// A communicator (or window) slot: its handle key and its description. A description is
/// allocated at registration (the cold path) and never freed nor changed, so a reader
/// that loaded the pointer may copy it however slots change meanwhile; registration
/// swaps the pointer whole.
struct CommSlot {
    key: AtomicUsize,
    info: AtomicPtr<CommInfo>,
}

impl CommSlot {
    /// The description under key `k`, if the slot holds `k` before and after its pointer
    /// was read (not a slot being reused for another handle meanwhile).
    #[inline]
    fn info_if(&self, k: usize) -> Option<CommInfo> {
        let p = self.info.load(Ordering::Acquire);
        if p.is_null() || self.key.load(Ordering::Acquire) != k {
            return None;
        }
        // SAFETY: a non-null pointer in a slot comes from Box::leak in `publish` and is
        // never freed or written through again.
        Some(unsafe { *p })
    }

    /// Publishes `info` under key `k` in a slot this thread moved to BUSY.
    fn publish(&self, k: usize, info: CommInfo) {
        self.info.store(
            Box::leak(Box::new(info)) as *mut CommInfo,
            Ordering::Release,
        );
        self.key.store(k, Ordering::Release);
    }
}

/// Communicator table.
pub struct CommTable {
    slots: Box<[CommSlot]>,
    next_id: AtomicU32,
}

static COMMS: OnceLock<CommTable> = OnceLock::new();
static COMM_WORLD_INFO: OnceLock<CommInfo> = OnceLock::new();

/// Creates the communicator table; call once at init.
pub fn init_comms(capacity: usize, world_size: c_int, world_rank: c_int) {
    let cap = capacity.next_power_of_two();
    let _ = COMMS.get_or_init(|| CommTable {
        slots: (0..cap)
            .map(|_| CommSlot {
                key: AtomicUsize::new(EMPTY),
                info: AtomicPtr::new(std::ptr::null_mut()),
            })
            .collect(),
        // 0 is WORLD, 1 is SELF.
        next_id: AtomicU32::new(2),
    });
    let _ = COMM_WORLD_INFO.set(CommInfo {
        id: 0,
        size: world_size as u32,
        my_rank: world_rank,
        world: None,
        indeg: 0,
        outdeg: 0,
        sources: &[],
        dests: &[],
    });
}

/// Looks up a communicator, registering it on first sight (cold path: asks MPI for its
/// group once and keeps the translation for the communicator's lifetime).
pub fn comm_info(comm: ffi::MPI_Comm, s: &Sentinels) -> Option<CommInfo> {
    let k = key(comm);
    if k == s.comm_world {
        return COMM_WORLD_INFO.get().copied();
    }
    let t = COMMS.get()?;
    let mask = t.slots.len() - 1;
    let mut i = slot_of(k, mask);
    for _ in 0..MAX_PROBE.min(t.slots.len()) {
        let sk = t.slots[i].key.load(Ordering::Acquire);
        if sk == k
            && let Some(info) = t.slots[i].info_if(k)
        {
            return Some(info);
        }
        if sk == EMPTY {
            break;
        }
        i = (i + 1) & mask;
    }
    if k == s.comm_null {
        return None;
    }
    register_comm(comm, s)
}

/// Registers a new communicator (after creation calls, or lazily).
pub fn register_comm(comm: ffi::MPI_Comm, s: &Sentinels) -> Option<CommInfo> {
    let k = key(comm);
    if k == s.comm_null || k == s.comm_world || k <= TOMB {
        return None;
    }
    let t = COMMS.get()?;
    let info = describe_comm(
        comm,
        s,
        if k == s.comm_self {
            1
        } else {
            t.next_id.fetch_add(1, Ordering::Relaxed)
        },
    )?;
    let mask = t.slots.len() - 1;
    let mut i = slot_of(k, mask);
    for _ in 0..MAX_PROBE.min(t.slots.len()) {
        let slot = &t.slots[i];
        let sk = slot.key.load(Ordering::Acquire);
        if sk == k {
            // A stale entry for a reused handle whose free we did not see: replace it.
            if slot
                .key
                .compare_exchange(k, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.publish(k, info);
                return Some(info);
            }
        } else if (sk == EMPTY || sk == TOMB)
            && slot
                .key
                .compare_exchange(sk, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            slot.publish(k, info);
            return Some(info);
        }
        i = (i + 1) & mask;
    }
    // Table full: still usable for this call, just not remembered. Each call on it
    // registers it again under a new id, which the other members' ids will not match.
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        super::say(&format!(
            "more communicators and windows alive at once than the table holds ({}, \
             PMPI_PREDICT_MAX_COMMS): calls on the others get a new id each time, and the \
             analysis cannot match them across ranks",
            t.slots.len()
        ));
    }
    Some(info)
}

/// Remembers a window under its handle with the communicator it was created over (its
/// group is the window's): the same table, as handles of both never coincide.
pub fn register_win(win: ffi::MPI_Win, info: CommInfo) {
    let k = key(win);
    let Some(t) = COMMS.get() else { return };
    if k <= TOMB {
        return;
    }
    let mask = t.slots.len() - 1;
    let mut i = slot_of(k, mask);
    for _ in 0..MAX_PROBE.min(t.slots.len()) {
        let slot = &t.slots[i];
        let sk = slot.key.load(Ordering::Acquire);
        if (sk == k || sk == EMPTY || sk == TOMB)
            && slot
                .key
                .compare_exchange(sk, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            slot.publish(k, info);
            return;
        }
        i = (i + 1) & mask;
    }
}

/// The communicator a window was created over, if the layer saw its creation. Never asks
/// MPI (a window handle is not a communicator).
pub fn win_info(win: ffi::MPI_Win) -> Option<CommInfo> {
    let k = key(win);
    let t = COMMS.get()?;
    let mask = t.slots.len() - 1;
    let mut i = slot_of(k, mask);
    for _ in 0..MAX_PROBE.min(t.slots.len()) {
        let sk = t.slots[i].key.load(Ordering::Acquire);
        if sk == k {
            return t.slots[i].info_if(k);
        }
        if sk == EMPTY {
            break;
        }
        i = (i + 1) & mask;
    }
    None
}

/// Forgets a window that is being freed (windows share the communicator table).
pub fn forget_win(win: ffi::MPI_Win) {
    forget_key(key(win));
}

/// Forgets a communicator that is being freed (its handle may be reused).
pub fn forget_comm(comm: ffi::MPI_Comm) {
    forget_key(key(comm));
}

/// Tombstones the communicator-table entry of handle key `k`, if there is one.
fn forget_key(k: usize) {
    let Some(t) = COMMS.get() else { return };
    let mask = t.slots.len() - 1;
    let mut i = slot_of(k, mask);
    for _ in 0..MAX_PROBE.min(t.slots.len()) {
        let sk = t.slots[i].key.load(Ordering::Acquire);
        if sk == k {
            let _ = t.slots[i]
                .key
                .compare_exchange(k, TOMB, Ordering::AcqRel, Ordering::Relaxed);
            return;
        }
        if sk == EMPTY {
            return;
        }
        i = (i + 1) & mask;
    }
}

/// Every communicator registered, in registration order: id, WORLD ranks of its members
/// by local rank (of both groups, sorted, for an intercommunicator) and whether it is an
/// intercommunicator. Written to the rank's metadata at the end.
type CommLogEntry = (u32, Vec<i32>, bool);
static COMM_LOG: std::sync::Mutex<Vec<CommLogEntry>> = std::sync::Mutex::new(Vec::new());

/// The communicators registered so far (id, WORLD ranks, intercommunicator).
pub fn comm_log() -> Vec<(u32, Vec<i32>, bool)> {
    COMM_LOG
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(id, w, inter)| (*id, w.clone(), *inter))
        .collect()
}

/// WORLD ranks of `group`'s members by group rank (`UNKNOWN_RANK` where not in WORLD);
/// None if MPI refuses.
///
/// # Safety
/// `group` must be a valid group handle.
unsafe fn group_world(group: ffi::MPI_Group, s: &Sentinels) -> Option<Vec<i32>> {
    let mut world_group = std::mem::MaybeUninit::<ffi::MPI_Group>::uninit();
    let mut size: c_int = 0;
    // SAFETY: PMPI group queries on the caller's valid group and on WORLD's, writing
    // locals; WORLD's group is freed before returning.
    unsafe {
        ffi::PMPI_Group_size(group, &mut size);
        if ffi::PMPI_Comm_group(ffi::RSMPI_COMM_WORLD, world_group.as_mut_ptr()) != 0 {
            return None;
        }
        let mut world_group = world_group.assume_init();
        let size = size.max(0);
        let local: Vec<c_int> = (0..size).collect();
        let mut world = vec![0 as c_int; size as usize];
        let rc = ffi::PMPI_Group_translate_ranks(
            group,
            size,
            local.as_ptr(),
            world_group,
            world.as_mut_ptr(),
        );
        ffi::PMPI_Group_free(&mut world_group);
        if rc != 0 {
            return None;
        }
        for w in world.iter_mut() {
            if *w < 0 || *w >= s.world_size {
                *w = UNKNOWN_RANK;
            }
        }
        Some(world)
    }
}

/// Both groups of an intercommunicator as sorted WORLD ranks (cold path: registration).
///
/// # Safety
/// `comm` must be a valid intercommunicator.
unsafe fn inter_members(comm: ffi::MPI_Comm, remote: &[i32], s: &Sentinels) -> Option<Vec<i32>> {
    let mut group = std::mem::MaybeUninit::<ffi::MPI_Group>::uninit();
    // SAFETY: the local group of the caller's valid intercommunicator, freed after use.
    let local = unsafe {
        if ffi::PMPI_Comm_group(comm, group.as_mut_ptr()) != 0 {
            return None;
        }
        let mut group = group.assume_init();
        let w = group_world(group, s);
        ffi::PMPI_Group_free(&mut group);
        w?
    };
    let mut all: Vec<i32> = local.into_iter().chain(remote.iter().copied()).collect();
    all.sort_unstable();
    Some(all)
}

fn describe_comm(comm: ffi::MPI_Comm, s: &Sentinels, id: u32) -> Option<CommInfo> {
    let mut inter: c_int = 0;
    let mut my_rank: c_int = 0;
    let mut group = std::mem::MaybeUninit::<ffi::MPI_Group>::uninit();
    // SAFETY: plain PMPI queries on a communicator handle the application passed us; every
    // out-pointer is a local, and the groups are freed before returning.
    unsafe {
        if ffi::PMPI_Comm_test_inter(comm, &mut inter) != 0
            || ffi::PMPI_Comm_rank(comm, &mut my_rank) != 0
        {
            return None;
        }
        let rc = if inter != 0 {
            ffi::PMPI_Comm_remote_group(comm, group.as_mut_ptr())
        } else {
            ffi::PMPI_Comm_group(comm, group.as_mut_ptr())
        };
        if rc != 0 {
            return None;
        }
        let mut group = group.assume_init();
        let world = group_world(group, s);
        ffi::PMPI_Group_free(&mut group);
        let world = world?;
        let size = world.len();
        // Leaked on purpose: records in flight may still point at it after MPI_Comm_free.
        let world: &'static [i32] = Box::leak(world.into_boxed_slice());
        // Cold path (communicator creation or first use): the engine needs the members of
        // every communicator a collective ran on, both groups of an intercommunicator.
        let logged = if inter == 0 {
            Some(world.to_vec())
        } else {
            inter_members(comm, world, s)
        };
        if let Some(members) = logged {
            COMM_LOG
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((id, members, inter != 0));
        }
        let t = if inter == 0 {
            topo_neighbours(comm, my_rank)
        } else {
            Topo::default()
        };
        // WORLD ranks of the neighbours; leaked like `world`, for the same reason.
        let to_world = |l: Vec<c_int>| -> &'static [i32] {
            let w: Vec<i32> = l
                .into_iter()
                .map(|r| {
                    if r == s.proc_null {
                        PROC_NULL
                    } else {
                        usize::try_from(r)
                            .ok()
                            .and_then(|r| world.get(r).copied())
                            .unwrap_or(UNKNOWN_RANK)
                    }
                })
                .collect();
            Box::leak(w.into_boxed_slice())
        };
        Some(CommInfo {
            id,
            size: size as u32,
            my_rank,
            world: Some(world),
            indeg: t.indeg,
            outdeg: t.outdeg,
            sources: to_world(t.sources),
            dests: to_world(t.dests),
        })
    }
}

unsafe extern "C" {
    static pmpi_predict_CART: c_int;
    static pmpi_predict_GRAPH: c_int;
    static pmpi_predict_DIST_GRAPH: c_int;
}

/// This rank's place in a communicator's virtual topology: its in- and out-degree and, when
/// MPI lists them, its neighbours (local ranks, or MPI_PROC_NULL).
#[derive(Default)]
struct Topo {
    indeg: u32,
    outdeg: u32,
    sources: Vec<c_int>,
    dests: Vec<c_int>,
}

/// The neighbours of `rank` in the virtual topology of `comm` (what the neighbourhood
/// collectives exchange with, in their count arrays' order); none without a topology.
/// Cold path: at registration.
fn topo_neighbours(comm: ffi::MPI_Comm, rank: c_int) -> Topo {
    let mut kind: c_int = 0;
    let mut t = Topo::default();
    // SAFETY: PMPI topology queries on a valid intracommunicator, writing locals and
    // vectors of the lengths MPI is told.
    unsafe {
        if ffi::PMPI_Topo_test(comm, &mut kind) != 0 {
            return t;
        }
        if kind == pmpi_predict_CART {
            let mut nd: c_int = 0;
            if ffi::PMPI_Cartdim_get(comm, &mut nd) == 0 && nd > 0 {
                // Two neighbours per dimension, in the order MPI_Cart_shift gives them
                // (the lower one, then the upper one), for sending and receiving alike.
                t.indeg = 2 * nd as u32;
                t.outdeg = t.indeg;
                for d in 0..nd {
                    let (mut lo, mut hi): (c_int, c_int) = (0, 0);
                    if ffi::PMPI_Cart_shift(comm, d, 1, &mut lo, &mut hi) != 0 {
                        t.sources.clear();
                        break;
                    }
                    t.sources.extend([lo, hi]);
                }
                t.dests = t.sources.clone();
            }
        } else if kind == pmpi_predict_GRAPH {
            let mut n: c_int = 0;
            if ffi::PMPI_Graph_neighbors_count(comm, rank, &mut n) == 0 && n > 0 {
                t.indeg = n as u32;
                t.outdeg = n as u32;
                let mut l = vec![0 as c_int; n as usize];
                if ffi::PMPI_Graph_neighbors(comm, rank, n, l.as_mut_ptr()) == 0 {
                    t.dests = l.clone();
                    t.sources = l;
                }
            }
        } else if kind == pmpi_predict_DIST_GRAPH {
            let (mut i, mut o, mut wt): (c_int, c_int, c_int) = (0, 0, 0);
            if ffi::PMPI_Dist_graph_neighbors_count(comm, &mut i, &mut o, &mut wt) == 0 {
                let (i, o) = (i.max(0), o.max(0));
                t.indeg = i as u32;
                t.outdeg = o as u32;
                // Weights are not needed, but MPI may write them: arrays of the same size
                // (at least one entry each, so that none is a null pointer).
                let mut src = vec![0 as c_int; i as usize];
                let mut dst = vec![0 as c_int; o as usize];
                let mut sw = vec![0 as c_int; i.max(1) as usize];
                let mut dw = vec![0 as c_int; o.max(1) as usize];
                if ffi::PMPI_Dist_graph_neighbors(
                    comm,
                    i,
                    src.as_mut_ptr(),
                    sw.as_mut_ptr(),
                    o,
                    dst.as_mut_ptr(),
                    dw.as_mut_ptr(),
                ) == 0
                {
                    t.sources = src;
                    t.dests = dst;
                }
            }
        }
    }
    t
}

/// A posted nonblocking operation (send, receive, collective), waiting for its completion
/// call; also the template of a persistent request and what a matched probe found.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pending {
    pub call: u16,
    pub thread: u16,
    pub is_recv: bool,
    pub t_start: u64,
    pub t_posted: u64,
    /// Bytes received for a receive, else bytes sent.
    pub bytes: u64,
    /// Bytes received by a collective (0 for point-to-point).
    pub bytes_recv: u64,
    /// Root of a collective as a WORLD rank, else NO_RANK.
    pub root: i32,
    /// Record flags to keep (MPI_IN_PLACE, a send of a datatype not contiguous).
    pub flags: u16,
    /// WORLD peer, or UNKNOWN_RANK for MPI_ANY_SOURCE (resolved from the status).
    pub peer: i32,
    pub tag: i32,
    pub comm: u32,
    pub comm_size: u32,
    /// The communicator's translation table, for an ANY_SOURCE status.
    pub world: Option<&'static [i32]>,
}

struct ReqSlot {
    key: AtomicUsize,
    op: UnsafeCell<Pending>,
}

/// Table of pending nonblocking operations, keyed by request handle.
pub struct RequestTable {
    slots: Box<[ReqSlot]>,
    pub dropped: AtomicU64,
}

// SAFETY: a slot's operation is written and read only by the thread that moved its key to
// BUSY (by compare-exchange, AcqRel), and the key leaves BUSY with a Release store after
// that access; no two threads hold one slot's BUSY at once.
unsafe impl Sync for RequestTable {}

static REQUESTS: OnceLock<RequestTable> = OnceLock::new();
/// Persistent requests (MPI_Send_init, ...): what each start communicates.
static PERSISTENT: OnceLock<RequestTable> = OnceLock::new();
/// Messages matched by MPI_Mprobe/MPI_Improbe, until their MPI_Mrecv/MPI_Imrecv.
static MESSAGES: OnceLock<RequestTable> = OnceLock::new();

impl RequestTable {
    fn new(capacity: usize) -> RequestTable {
        let cap = capacity.next_power_of_two();
        RequestTable {
            slots: (0..cap)
                .map(|_| ReqSlot {
                    key: AtomicUsize::new(EMPTY),
                    op: UnsafeCell::new(Pending::default()),
                })
                .collect(),
            dropped: AtomicU64::new(0),
        }
    }

    fn track(&self, req: usize, op: Pending) -> Result<(), TrackError> {
        if req <= TOMB {
            return Err(TrackError::Full);
        }
        let t = self;
        let mask = t.slots.len() - 1;
        let mut i = slot_of(req, mask);
        let mut free = None;
        for _ in 0..MAX_PROBE.min(t.slots.len()) {
            let sk = t.slots[i].key.load(Ordering::Acquire);
            if sk == req {
                return Err(TrackError::Duplicate);
            }
            if sk == TOMB && free.is_none() {
                free = Some(i);
            }
            if sk == EMPTY {
                free.get_or_insert(i);
                break;
            }
            i = (i + 1) & mask;
        }
        // Claim the first free slot seen; if another thread took it, probe on from there.
        let start = free.unwrap_or(i);
        let mut i = start;
        for _ in 0..MAX_PROBE.min(t.slots.len()) {
            let slot = &t.slots[i];
            let sk = slot.key.load(Ordering::Acquire);
            if (sk == EMPTY || sk == TOMB)
                && slot
                    .key
                    .compare_exchange(sk, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                // SAFETY: we own the slot while its key is BUSY.
                unsafe { *slot.op.get() = op };
                slot.key.store(req, Ordering::Release);
                return Ok(());
            }
            i = (i + 1) & mask;
        }
        t.dropped.fetch_add(1, Ordering::Relaxed);
        Err(TrackError::Full)
    }

    /// The entry under `req`; removed when `remove`. The slot is held BUSY while the entry
    /// is copied, so that no other thread can reuse it meanwhile; a thread looking up the
    /// same handle at that moment finds nothing (MPI lets one request be completed, or
    /// started, by one thread at a time).
    fn lookup(&self, req: usize, remove: bool) -> Option<Pending> {
        if req <= TOMB {
            return None;
        }
        let t = self;
        let mask = t.slots.len() - 1;
        let mut i = slot_of(req, mask);
        for _ in 0..MAX_PROBE.min(t.slots.len()) {
            let slot = &t.slots[i];
            let sk = slot.key.load(Ordering::Acquire);
            if sk == req {
                if slot
                    .key
                    .compare_exchange(req, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    return None;
                }
                // SAFETY: we own the slot while its key is BUSY.
                let op = unsafe { *slot.op.get() };
                slot.key
                    .store(if remove { TOMB } else { req }, Ordering::Release);
                return Some(op);
            }
            if sk == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Removes and returns every entry (at MPI_Finalize, when no other thread uses the
    /// table).
    fn drain(&self) -> Vec<Pending> {
        let mut out = Vec::new();
        for slot in self.slots.iter() {
            let sk = slot.key.load(Ordering::Acquire);
            if sk > TOMB
                && slot
                    .key
                    .compare_exchange(sk, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                // SAFETY: we own the slot while its key is BUSY.
                out.push(unsafe { *slot.op.get() });
                slot.key.store(TOMB, Ordering::Release);
            }
        }
        out
    }

    /// Sets the entry under `req`, replacing any (a handle MPI reused after a free the
    /// layer did not see).
    fn set(&self, req: usize, op: Pending) {
        if self.track(req, op) == Err(TrackError::Duplicate) {
            let _ = self.lookup(req, true);
            let _ = self.track(req, op);
        }
    }
}

/// Creates the request tables; call once at init.
pub fn init_requests(capacity: usize) {
    let _ = REQUESTS.get_or_init(|| RequestTable::new(capacity));
    let _ = PERSISTENT.get_or_init(|| RequestTable::new(capacity / 8));
    let _ = MESSAGES.get_or_init(|| RequestTable::new(capacity / 8));
}

/// Requests that could not be tracked (table full).
pub fn dropped_requests() -> u64 {
    [&REQUESTS, &PERSISTENT, &MESSAGES]
        .iter()
        .filter_map(|t| t.get())
        .map(|t| t.dropped.load(Ordering::Relaxed))
        .sum()
}

/// Why a request could not be tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackError {
    /// The handle is already live in the table: MPI handed the same handle to two
    /// operations (a shared, already-complete request), or the entry is stale.
    Duplicate,
    /// No free slot within the probe limit.
    Full,
}

/// Remembers a posted operation under its request handle.
#[inline]
pub fn track(req: usize, op: Pending) -> Result<(), TrackError> {
    match REQUESTS.get() {
        Some(t) => t.track(req, op),
        None => Err(TrackError::Full),
    }
}

/// Handles MPI gives to many operations at once because they completed at post
/// (Open MPI returns one static request for such sends). Learned when seen twice and
/// confirmed complete; operations posted with them complete at their post.
static SHARED_REQUESTS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// True if `req` is a learned shared, always-complete handle.
#[inline]
pub fn is_shared_request(req: usize) -> bool {
    SHARED_REQUESTS
        .iter()
        .any(|k| k.load(Ordering::Relaxed) == req)
}

/// Learns a shared, always-complete handle.
pub fn learn_shared_request(req: usize) {
    for k in SHARED_REQUESTS.iter() {
        if k.compare_exchange(0, req, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            || k.load(Ordering::Relaxed) == req
        {
            return;
        }
    }
}

/// Removes and returns the operation posted under `req`, if tracked.
#[inline]
pub fn take(req: usize) -> Option<Pending> {
    REQUESTS.get()?.lookup(req, true)
}

/// Removes and returns every operation still pending (posted, never completed through a
/// call the layer saw), at MPI_Finalize.
pub fn drain_pending() -> Vec<Pending> {
    REQUESTS.get().map_or_else(Vec::new, |t| t.drain())
}

/// Remembers what each start of persistent request `req` communicates.
pub fn set_persistent(req: usize, op: Pending) {
    if let Some(t) = PERSISTENT.get() {
        t.set(req, op);
    }
}

/// What a start of persistent request `req` communicates, if it is one.
#[inline]
pub fn persistent(req: usize) -> Option<Pending> {
    PERSISTENT.get()?.lookup(req, false)
}

/// Forgets persistent request `req` (MPI_Request_free).
pub fn forget_persistent(req: usize) {
    if let Some(t) = PERSISTENT.get() {
        let _ = t.lookup(req, true);
    }
}

/// Remembers what a matched probe found under its message handle.
pub fn set_message(msg: usize, op: Pending) {
    if let Some(t) = MESSAGES.get() {
        t.set(msg, op);
    }
}

/// Removes and returns what the probe that matched message `msg` found.
#[inline]
pub fn take_message(msg: usize) -> Option<Pending> {
    MESSAGES.get()?.lookup(msg, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readers of a slot that another thread keeps republishing see whole descriptions:
    /// each is one of the two published, never a mix of both.
    #[test]
    fn a_republished_comm_slot_is_read_whole() {
        static A: [i32; 2] = [0, 1];
        static B: [i32; 3] = [2, 3, 4];
        let info = |w: &'static [i32]| CommInfo {
            id: w.len() as u32,
            size: w.len() as u32,
            my_rank: 0,
            world: Some(w),
            indeg: 0,
            outdeg: 0,
            sources: &[],
            dests: &[],
        };
        let slot = CommSlot {
            key: AtomicUsize::new(EMPTY),
            info: AtomicPtr::new(std::ptr::null_mut()),
        };
        let k = 0x1000;
        slot.publish(k, info(&A));
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for i in 0..20_000 {
                    if slot
                        .key
                        .compare_exchange(k, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        slot.publish(k, info(if i % 2 == 0 { &B } else { &A }));
                    }
                }
            });
            for _ in 0..2 {
                sc.spawn(|| {
                    for _ in 0..20_000 {
                        if let Some(c) = slot.info_if(k) {
                            let w = c.world.unwrap();
                            assert_eq!((c.id, c.size), (w.len() as u32, w.len() as u32));
                        }
                    }
                });
            }
        });
    }

    /// Threads tracking and taking their own requests in one table each get back exactly
    /// what they tracked.
    #[test]
    fn requests_tracked_and_taken_by_many_threads() {
        let t = RequestTable::new(256);
        std::thread::scope(|sc| {
            for th in 0..4usize {
                let t = &t;
                sc.spawn(move || {
                    for i in 0..5_000usize {
                        let req = 0x10_0000 * (th + 1) + (i % 16) * 8;
                        let op = Pending {
                            bytes: (th * 100_000 + i) as u64,
                            ..Default::default()
                        };
                        t.track(req, op).unwrap();
                        assert_eq!(t.lookup(req, false).unwrap().bytes, op.bytes);
                        assert_eq!(t.lookup(req, true).unwrap().bytes, op.bytes);
                        assert!(t.lookup(req, true).is_none());
                    }
                });
            }
        });
        assert_eq!(t.dropped.load(Ordering::Relaxed), 0);
    }
}
