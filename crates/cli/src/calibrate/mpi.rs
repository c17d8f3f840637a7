//! The few MPI operations calibration needs, as safe wrappers over the MPI library's
//! `PMPI_*` functions.
//!
//! Calibration calls the MPI library's `PMPI_*` functions: were the layer preloaded into
//! this tool as well (`LD_PRELOAD` exported for the whole job), the `MPI_*` names would
//! reach its interposers and record calibrate's own traffic (docs/design.md, section 3).
//! Every buffer is a Rust slice whose length is the MPI count (bytes as `MPI_UINT8_T`,
//! `f64` as `MPI_DOUBLE`), so no call can read or write out of bounds. Errors abort: MPI's
//! default error handler (`MPI_ERRORS_ARE_FATAL`) stays in place.

use std::ffi::{CStr, c_int, c_void};
use std::mem::MaybeUninit;

use mpi_sys as ffi;

/// A communicator handle (WORLD or one made by [`Mpi::split`]).
#[derive(Clone, Copy)]
pub struct Comm(ffi::MPI_Comm);

/// A pending nonblocking operation.
pub struct Request(ffi::MPI_Request);

/// Tag of the barrier's messages: no measurement uses it.
const BARRIER_TAG: c_int = 999;

/// The barrier's first poll interval ([`Mpi::barrier`]): a partner a few latencies late
/// is seen at once.
const BARRIER_FIRST_SLEEP: std::time::Duration = std::time::Duration::from_micros(20);

/// The barrier's longest poll interval: a rank waits at most this long after its partner
/// arrives (calibrate's measurements take tens of milliseconds each).
const BARRIER_MAX_SLEEP: std::time::Duration = std::time::Duration::from_micros(1000);

fn count(n: usize) -> c_int {
    c_int::try_from(n).expect("message larger than INT_MAX bytes")
}

fn byte() -> ffi::MPI_Datatype {
    // SAFETY: a constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_UINT8_T }
}

fn double() -> ffi::MPI_Datatype {
    // SAFETY: a constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_DOUBLE }
}

/// MPI, initialised by [`Mpi::init`] and finalised on drop.
pub struct Mpi {
    pub rank: i32,
    pub size: i32,
    pub world: Comm,
}

impl Mpi {
    /// `PMPI_Init`, then rank and size in WORLD.
    pub fn init() -> Result<Mpi, String> {
        // SAFETY: PMPI_Init accepts null argc/argv; called once per process.
        let rc = unsafe { ffi::PMPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
        if rc != 0 {
            return Err(format!("PMPI_Init failed (error {rc})"));
        }
        // SAFETY: a constant defined by mpi-sys's C shim.
        let world = Comm(unsafe { ffi::RSMPI_COMM_WORLD });
        let (mut rank, mut size) = (0, 0);
        // SAFETY: queries on WORLD after a successful init, into local integers.
        unsafe {
            ffi::PMPI_Comm_rank(world.0, &mut rank);
            ffi::PMPI_Comm_size(world.0, &mut size);
        }
        Ok(Mpi { rank, size, world })
    }

    /// `PMPI_Get_library_version`, trimmed.
    pub fn library_version(&self) -> String {
        let mut buf = vec![0u8; 8192];
        let mut len: c_int = 0;
        // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING in every
        // implementation (Open MPI 256, MPICH 8192).
        unsafe { ffi::PMPI_Get_library_version(buf.as_mut_ptr().cast(), &mut len) };
        let n = (len.max(0) as usize).min(buf.len());
        let s = String::from_utf8_lossy(&buf[..n]);
        s.trim_matches(char::from(0)).trim().to_string()
    }

    /// The integer control variables named in `names`, read through the MPI tool
    /// information interface in this process: `MPI_T_init_thread`, the variables listed by
    /// `MPI_T_cvar_get_num`/`MPI_T_cvar_get_info`, `MPI_T_finalize`. Only variables bound to
    /// no object (`bind == no_object`: the library's `MPI_T_BIND_NO_OBJECT`, whose value
    /// differs between libraries) holding one 4- or 8-byte integer are read, as signed
    /// integers; the others (and names the library does not list) are left out. An error
    /// when MPI_T cannot be initialised.
    pub fn read_cvars(
        &self,
        names: &[&str],
        no_object: c_int,
    ) -> Result<Vec<(String, i64)>, String> {
        let mut provided: c_int = 0;
        // SAFETY: a constant defined by mpi-sys's C shim; MPI_T_init_thread writes one int
        // and may be called at any time, also after MPI_Init.
        let rc = unsafe { ffi::PMPI_T_init_thread(ffi::RSMPI_THREAD_SINGLE, &mut provided) };
        if rc != 0 {
            return Err(format!("MPI_T_init_thread failed (error {rc})"));
        }
        let mut num: c_int = 0;
        // SAFETY: MPI_T is initialised; writes one int.
        let rc = unsafe { ffi::PMPI_T_cvar_get_num(&mut num) };
        let mut out = Vec::new();
        if rc == 0 {
            for i in 0..num {
                if let Some((name, v)) = cvar(i, names, no_object) {
                    out.push((name, v));
                }
            }
        }
        // SAFETY: paired with the successful MPI_T_init_thread above; no handle is left.
        unsafe { ffi::PMPI_T_finalize() };
        if rc != 0 {
            return Err(format!("MPI_T_cvar_get_num failed (error {rc})"));
        }
        Ok(out)
    }

    /// A barrier whose waiting ranks sleep instead of spinning: a dissemination barrier
    /// over nonblocking messages, polled after 20 µs, then at doubling intervals up to
    /// [`BARRIER_MAX_SLEEP`]. While two ranks measure, the others wait here; spinning, they
    /// would take the cores the measurement needs wherever ranks share cores (emulated
    /// clusters, oversubscribed nodes), and a ping-pong would measure the scheduler's time
    /// slice (milliseconds) instead of the network. Polled every 20 µs throughout, two
    /// waiting ranks still woke 100,000 times a second: on the emulated cluster's 2 cores
    /// the two measuring ranks' 8-byte ping-pong took 10.0-17.8 µs at the median (7.4-7.9
    /// with the others asleep) and calibrate's small-message figures moved from run to run
    /// (pLogP's o_s(0) 4.7-9.9 µs in three calibrations).
    pub fn barrier(&self, c: Comm) {
        let n = self.comm_size(c) as i32;
        let me = self.comm_rank(c);
        let (mut tok_out, mut tok_in) = ([0u8; 1], [0u8; 1]);
        let mut step = 1;
        while step < n {
            let mut reqs = [
                self.irecv(&mut tok_in, (me - step).rem_euclid(n), BARRIER_TAG, c),
                self.isend(&tok_out, (me + step) % n, BARRIER_TAG, c),
            ];
            let mut nap = BARRIER_FIRST_SLEEP;
            while !self.test_all(&mut reqs) {
                std::thread::sleep(nap);
                nap = (nap * 2).min(BARRIER_MAX_SLEEP);
            }
            tok_out[0] = tok_out[0].wrapping_add(tok_in[0]);
            step *= 2;
        }
    }

    /// Whether every request has completed (completing those that have).
    fn test_all(&self, reqs: &mut [Request]) -> bool {
        let mut raw: Vec<ffi::MPI_Request> = reqs.iter().map(|r| r.0).collect();
        let mut flag: c_int = 0;
        // SAFETY: raw holds reqs.len() request handles; statuses ignored.
        unsafe {
            ffi::PMPI_Testall(
                count(raw.len()),
                raw.as_mut_ptr(),
                &mut flag,
                ffi::RSMPI_STATUSES_IGNORE,
            )
        };
        for (r, h) in reqs.iter_mut().zip(raw) {
            r.0 = h;
        }
        flag != 0
    }

    pub fn send(&self, buf: &[u8], dst: i32, tag: i32, c: Comm) {
        // SAFETY: buf is valid for buf.len() bytes for the whole (blocking) call.
        unsafe { ffi::PMPI_Send(buf.as_ptr().cast(), count(buf.len()), byte(), dst, tag, c.0) };
    }

    pub fn recv(&self, buf: &mut [u8], src: i32, tag: i32, c: Comm) {
        // SAFETY: buf is writable for buf.len() bytes for the whole (blocking) call; the
        // status is ignored.
        unsafe {
            ffi::PMPI_Recv(
                buf.as_mut_ptr().cast(),
                count(buf.len()),
                byte(),
                src,
                tag,
                c.0,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
    }

    /// Starts a send. The caller keeps `buf` alive and unmodified until the request
    /// completes ([`Mpi::wait_any`] / [`Mpi::wait_all`] before the buffer is dropped).
    pub fn isend(&self, buf: &[u8], dst: i32, tag: i32, c: Comm) -> Request {
        let mut r = MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: buf is valid for buf.len() bytes; callers complete the request before
        // releasing it (every use in bench.rs waits on all requests in the same scope).
        unsafe {
            ffi::PMPI_Isend(
                buf.as_ptr().cast(),
                count(buf.len()),
                byte(),
                dst,
                tag,
                c.0,
                r.as_mut_ptr(),
            );
            Request(r.assume_init())
        }
    }

    /// Starts a receive; the same rule as [`Mpi::isend`] holds for `buf`.
    pub fn irecv(&self, buf: &mut [u8], src: i32, tag: i32, c: Comm) -> Request {
        let mut r = MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: buf is writable for buf.len() bytes; callers complete the request before
        // releasing or reading it.
        unsafe {
            ffi::PMPI_Irecv(
                buf.as_mut_ptr().cast(),
                count(buf.len()),
                byte(),
                src,
                tag,
                c.0,
                r.as_mut_ptr(),
            );
            Request(r.assume_init())
        }
    }

    /// Waits for any active request; returns its index (None when all are complete).
    pub fn wait_any(&self, reqs: &mut [Request]) -> Option<usize> {
        let mut raw: Vec<ffi::MPI_Request> = reqs.iter().map(|r| r.0).collect();
        let mut idx: c_int = -1;
        // SAFETY: raw holds reqs.len() request handles; status ignored.
        unsafe {
            ffi::PMPI_Waitany(
                count(raw.len()),
                raw.as_mut_ptr(),
                &mut idx,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        for (r, h) in reqs.iter_mut().zip(raw) {
            r.0 = h;
        }
        (idx >= 0).then_some(idx as usize)
    }

    /// Waits for every request.
    pub fn wait_all(&self, reqs: &mut [Request]) {
        let mut raw: Vec<ffi::MPI_Request> = reqs.iter().map(|r| r.0).collect();
        // SAFETY: raw holds reqs.len() handles; statuses ignored.
        unsafe {
            ffi::PMPI_Waitall(
                count(raw.len()),
                raw.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            )
        };
        for (r, h) in reqs.iter_mut().zip(raw) {
            r.0 = h;
        }
    }

    /// Element-wise maximum of `v` over all ranks of `c`, in place on every rank.
    pub fn allreduce_max(&self, v: &mut [f64], c: Comm) {
        let src = v.to_vec();
        // SAFETY: both buffers hold v.len() doubles.
        unsafe {
            ffi::PMPI_Allreduce(
                src.as_ptr().cast(),
                v.as_mut_ptr().cast(),
                count(v.len()),
                double(),
                ffi::RSMPI_MAX,
                c.0,
            )
        };
    }

    /// Broadcasts `v` from `root` of `c`.
    pub fn bcast_f64(&self, v: &mut [f64], root: i32, c: Comm) {
        // SAFETY: v holds v.len() doubles on every rank.
        unsafe { ffi::PMPI_Bcast(v.as_mut_ptr().cast(), count(v.len()), double(), root, c.0) };
    }

    /// Gathers `mine` (same length on every rank) from all ranks, in rank order.
    pub fn allgather_bytes(&self, mine: &[u8], c: Comm, size: usize) -> Vec<u8> {
        let mut out = vec![0u8; mine.len() * size];
        // SAFETY: out holds size × mine.len() bytes, the receive count per rank.
        unsafe {
            ffi::PMPI_Allgather(
                mine.as_ptr().cast(),
                count(mine.len()),
                byte(),
                out.as_mut_ptr().cast(),
                count(mine.len()),
                byte(),
                c.0,
            )
        };
        out
    }

    /// `MPI_Alltoall` of `per` bytes per destination; both buffers hold `per × size` bytes.
    pub fn alltoall(&self, send: &[u8], recv: &mut [u8], per: usize, c: Comm) {
        assert!(send.len() >= per * self.comm_size(c) && recv.len() >= send.len());
        // SAFETY: both buffers hold at least per × (size of c) bytes (asserted above).
        unsafe {
            ffi::PMPI_Alltoall(
                send.as_ptr().cast(),
                count(per),
                byte(),
                recv.as_mut_ptr().cast(),
                count(per),
                byte(),
                c.0,
            )
        };
    }

    /// `MPI_Scatter` of `per` bytes to each rank from `root`; `send` is read on the root
    /// only and holds `per × size` bytes there.
    pub fn scatter(&self, send: &[u8], recv: &mut [u8], per: usize, root: i32, c: Comm) {
        assert!(recv.len() >= per && send.len() >= per * self.comm_size(c));
        // SAFETY: sizes asserted above.
        unsafe {
            ffi::PMPI_Scatter(
                send.as_ptr().cast(),
                count(per),
                byte(),
                recv.as_mut_ptr().cast(),
                count(per),
                byte(),
                root,
                c.0,
            )
        };
    }

    /// `MPI_Gather` of `per` bytes from each rank to `root`.
    pub fn gather(&self, send: &[u8], recv: &mut [u8], per: usize, root: i32, c: Comm) {
        assert!(send.len() >= per && recv.len() >= per * self.comm_size(c));
        // SAFETY: sizes asserted above.
        unsafe {
            ffi::PMPI_Gather(
                send.as_ptr().cast(),
                count(per),
                byte(),
                recv.as_mut_ptr().cast(),
                count(per),
                byte(),
                root,
                c.0,
            )
        };
    }

    /// `MPI_Comm_split`; None for ranks passing `color = None` (MPI_UNDEFINED).
    pub fn split(&self, c: Comm, color: Option<i32>, key: i32) -> Option<Comm> {
        let mut out = MaybeUninit::<ffi::MPI_Comm>::uninit();
        // SAFETY: a collective on a valid communicator writing one handle.
        let comm = unsafe {
            let col = color.unwrap_or(ffi::RSMPI_UNDEFINED);
            ffi::PMPI_Comm_split(c.0, col, key, out.as_mut_ptr());
            out.assume_init()
        };
        color.map(|_| Comm(comm))
    }

    /// Rank in `c`.
    pub fn comm_rank(&self, c: Comm) -> i32 {
        let mut r = 0;
        // SAFETY: a query on a valid communicator.
        unsafe { ffi::PMPI_Comm_rank(c.0, &mut r) };
        r
    }

    /// Size of `c`.
    pub fn comm_size(&self, c: Comm) -> usize {
        let mut s = 0;
        // SAFETY: a query on a valid communicator.
        unsafe { ffi::PMPI_Comm_size(c.0, &mut s) };
        s.max(0) as usize
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        // Every rank enters MPI_Finalize together: MPICH 4.0 over UCX's TCP transport hung
        // there whenever rank 0 came late (it fits and writes the profile while the others
        // wait), one rank spinning in its endpoints' flush while the other sat in PMI's
        // barrier.
        self.barrier(self.world);
        // SAFETY: called once, after every request of this process has completed.
        unsafe { ffi::PMPI_Finalize() };
    }
}

/// Control variable `index` if its name is one of `names`, it is bound to no object and it
/// holds one 4- or 8-byte integer: its name and value (signed). MPI_T must be initialised.
fn cvar(index: c_int, names: &[&str], no_object: c_int) -> Option<(String, i64)> {
    let mut name = [0u8; 256];
    let mut desc = [0u8; 1024];
    let (mut name_len, mut desc_len) = (name.len() as c_int, desc.len() as c_int);
    let (mut verbosity, mut bind, mut scope) = (0, 0, 0);
    let mut datatype = MaybeUninit::<ffi::MPI_Datatype>::uninit();
    let mut enumtype = MaybeUninit::<ffi::MPI_T_enum>::uninit();
    // SAFETY: the name and description buffers hold the lengths passed in (the library
    // writes at most that many bytes, the terminating NUL included); every other output
    // is one local value of the type the prototype names.
    let rc = unsafe {
        ffi::PMPI_T_cvar_get_info(
            index,
            name.as_mut_ptr().cast(),
            &mut name_len,
            &mut verbosity,
            datatype.as_mut_ptr(),
            enumtype.as_mut_ptr(),
            desc.as_mut_ptr().cast(),
            &mut desc_len,
            &mut bind,
            &mut scope,
        )
    };
    if rc != 0 || bind != no_object {
        return None;
    }
    let name = CStr::from_bytes_until_nul(&name).ok()?.to_str().ok()?;
    if !names.contains(&name) {
        return None;
    }
    // SAFETY: written by the successful MPI_T_cvar_get_info above.
    let datatype = unsafe { datatype.assume_init() };
    let mut size: c_int = 0;
    // SAFETY: a datatype handle the library returned; writes one int.
    if unsafe { ffi::PMPI_Type_size(datatype, &mut size) } != 0 || !(size == 4 || size == 8) {
        return None;
    }
    let mut handle = MaybeUninit::<ffi::MPI_T_cvar_handle>::uninit();
    let mut count: c_int = 0;
    // SAFETY: a variable bound to no object takes a null object handle; writes one handle
    // and one int.
    let rc = unsafe {
        ffi::PMPI_T_cvar_handle_alloc(index, std::ptr::null_mut(), handle.as_mut_ptr(), &mut count)
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: written by the successful MPI_T_cvar_handle_alloc above.
    let mut handle = unsafe { handle.assume_init() };
    // Room for 4 values of 8 bytes; only a count of 1 is read.
    let mut buf = [0u64; 4];
    let rc = if count == 1 {
        // SAFETY: one element of `size` <= 8 bytes fits the 32-byte, 8-aligned buffer.
        unsafe { ffi::PMPI_T_cvar_read(handle, buf.as_mut_ptr().cast()) }
    } else {
        -1
    };
    // SAFETY: the handle allocated above, freed once.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    if rc != 0 {
        return None;
    }
    let bytes = buf[0].to_ne_bytes();
    let value = if size == 4 {
        i64::from(i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    } else {
        i64::from_ne_bytes(bytes)
    };
    Some((name.to_string(), value))
}

/// Keeps the compiler from proving a buffer unused (benchmarks write into receive buffers
/// nobody reads).
pub fn touch(b: &[u8]) {
    std::hint::black_box(b.as_ptr() as *const c_void);
}
