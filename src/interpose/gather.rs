//! Output on node-local disks: at MPI_Finalize, the spools and metadata that rank 0 cannot
//! see in its output directory are sent to it over MPI, in chunks, so that it can write
//! the full report. Runs on every rank, after the spools are closed.

use super::real;
use crate::trace;
use mpi_sys as ffi;
use std::ffi::{c_int, c_void};
use std::io::{Read, Write};
use std::path::Path;

const TAG_GATHER: c_int = 31_416;
/// Bytes per message: rank 0 holds one chunk at a time.
const CHUNK: usize = 1 << 20;

/// Whether rank 0 sees rank `r`'s files of this run in `dir` (a shared directory): its
/// metadata exists and names the same process.
fn visible(dir: &Path, r: c_int, pid: u32) -> bool {
    trace::read_meta(&dir.join(format!("rank-{r:05}.json")))
        .is_ok_and(|m| m.pid == pid && m.rank == r)
        && trace::spool_path(dir, r).is_file()
}

/// Gathers to rank 0 the files of every rank whose output rank 0 cannot see. `dir` is
/// this rank's output directory (None: it has no spool, and sends nothing if asked).
/// Collective over `comm`. Returns, on rank 0, the ranks that were gathered and a line
/// for each rank whose files could not be.
pub fn gather_to_root(
    comm: ffi::MPI_Comm,
    rank: c_int,
    size: c_int,
    dir: Option<&Path>,
) -> (Vec<c_int>, Vec<String>) {
    let n = size.max(1) as usize;
    let pid = std::process::id();
    let mut pids = vec![0u32; n];
    // SAFETY: a gather of one u32 per rank into a buffer of `size` u32 on rank 0, on the
    // layer's private communicator, called by every rank at the same point of finalize.
    unsafe {
        real::PMPI_Gather(
            &pid as *const u32 as *const c_void,
            1,
            ffi::RSMPI_UINT32_T,
            pids.as_mut_ptr() as *mut c_void,
            1,
            ffi::RSMPI_UINT32_T,
            0,
            comm,
        );
    }
    let mut need = vec![0u8; n];
    if let (0, Some(dir)) = (rank, dir) {
        for (r, (w, &p)) in need.iter_mut().zip(&pids).enumerate().skip(1) {
            *w = u8::from(!visible(dir, r as c_int, p));
        }
    }
    // SAFETY: broadcast of a local byte buffer of `size` bytes from rank 0.
    unsafe {
        real::PMPI_Bcast(
            need.as_mut_ptr() as *mut c_void,
            n as c_int,
            ffi::RSMPI_UINT8_T,
            0,
            comm,
        );
    }
    let mut gathered = Vec::new();
    let mut problems = Vec::new();
    if let (0, Some(dir)) = (rank, dir) {
        let wanted: Vec<usize> = (1..n).filter(|&r| need[r] != 0).collect();
        for r in wanted {
            match receive(comm, r as c_int, dir) {
                Ok(true) => gathered.push(r as c_int),
                Ok(false) => problems.push(format!(
                    "rank {r}: its spool could not be read on its node; not in the report"
                )),
                Err(e) => problems.push(format!("rank {r}: {e}")),
            }
        }
    } else if need[rank as usize] != 0 {
        send(comm, rank, dir);
    }
    (gathered, problems)
}

fn send_bytes(comm: ffi::MPI_Comm, buf: &[u8]) {
    // SAFETY: a send of a local buffer's `len` bytes (≤ CHUNK, fits c_int) to rank 0.
    unsafe {
        real::PMPI_Send(
            buf.as_ptr() as *const c_void,
            buf.len() as c_int,
            ffi::RSMPI_UINT8_T,
            0,
            TAG_GATHER,
            comm,
        );
    }
}

fn recv_bytes(comm: ffi::MPI_Comm, from: c_int, buf: &mut [u8]) {
    let mut st = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
    // SAFETY: a receive into a local buffer of `len` bytes (≤ CHUNK), matching the
    // sender's message of exactly that size.
    unsafe {
        real::PMPI_Recv(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            ffi::RSMPI_UINT8_T,
            from,
            TAG_GATHER,
            comm,
            st.as_mut_ptr(),
        );
    }
}

/// A non-zero rank: header (metadata and spool lengths), metadata, then the spool in
/// chunks. A file that cannot be read is announced as empty, so rank 0 never waits for
/// bytes that will not come.
fn send(comm: ffi::MPI_Comm, rank: c_int, dir: Option<&Path>) {
    let meta = dir.and_then(|d| std::fs::read(d.join(format!("rank-{rank:05}.json"))).ok());
    let spool = dir.and_then(|d| std::fs::File::open(trace::spool_path(d, rank)).ok());
    let len = spool
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    let (meta, mut spool, len) = match (meta, spool) {
        (Some(m), Some(s)) => (m, Some(s), len),
        _ => (Vec::new(), None, 0),
    };
    let mut header = [0u8; 16];
    header[..8].copy_from_slice(&(meta.len() as u64).to_ne_bytes());
    header[8..].copy_from_slice(&len.to_ne_bytes());
    send_bytes(comm, &header);
    for c in meta.chunks(CHUNK) {
        send_bytes(comm, c);
    }
    let mut buf = vec![0u8; CHUNK];
    let mut left = len;
    while left > 0 {
        let want = (left as usize).min(CHUNK);
        // A spool that shrank under us still sends the announced length (zeros).
        let got = spool.as_mut().map_or(0, |f| read_full(f, &mut buf[..want]));
        buf[got..want].fill(0);
        send_bytes(comm, &buf[..want]);
        left -= want as u64;
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// Rank 0: receives rank `from`'s files into `dir`. Ok(false): the rank had nothing.
fn receive(comm: ffi::MPI_Comm, from: c_int, dir: &Path) -> Result<bool, String> {
    let mut h = [0u8; 16];
    recv_bytes(comm, from, &mut h);
    let meta_len = u64::from_ne_bytes(h[..8].try_into().unwrap_or_default());
    let spool_len = u64::from_ne_bytes(h[8..].try_into().unwrap_or_default());
    let mut buf = vec![0u8; CHUNK];
    // Every announced byte is received, even when writing fails, so that the sender
    // finishes.
    let mut write_err: Option<String> = None;
    let meta_path = dir.join(format!("rank-{from:05}.json"));
    let mut meta = Vec::with_capacity(meta_len as usize);
    let mut left = meta_len;
    while left > 0 {
        let k = (left as usize).min(CHUNK);
        recv_bytes(comm, from, &mut buf[..k]);
        meta.extend_from_slice(&buf[..k]);
        left -= k as u64;
    }
    let spool_path = trace::spool_path(dir, from);
    let mut out = match std::fs::File::create(&spool_path) {
        Ok(f) => Some(std::io::BufWriter::new(f)),
        Err(e) => {
            write_err = Some(format!("cannot write {}: {e}", spool_path.display()));
            None
        }
    };
    let mut left = spool_len;
    while left > 0 {
        let k = (left as usize).min(CHUNK);
        recv_bytes(comm, from, &mut buf[..k]);
        if let Some(o) = out.as_mut()
            && let Err(e) = o.write_all(&buf[..k])
        {
            write_err = Some(format!("cannot write {}: {e}", spool_path.display()));
            out = None;
        }
        left -= k as u64;
    }
    if let Some(mut o) = out
        && let Err(e) = o.flush()
    {
        write_err = Some(format!("cannot write {}: {e}", spool_path.display()));
    }
    if meta_len == 0 {
        let _ = std::fs::remove_file(&spool_path);
        return Ok(false);
    }
    // The metadata last: a rank's files count as present only once both are complete.
    if let Err(e) = std::fs::write(&meta_path, &meta) {
        write_err = Some(format!("cannot write {}: {e}", meta_path.display()));
    }
    match write_err {
        Some(e) => Err(e),
        None => Ok(true),
    }
}
