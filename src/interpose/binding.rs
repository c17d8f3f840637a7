//! Which `PMPI_*` calls are the program's: those made by a Fortran binding.
//!
//! The layer exports `PMPI_*` because Open MPI's Fortran bindings (and MPICH's `mpi_f08`
//! for some routines) call them instead of `MPI_*`. But the MPI library calls its own
//! `PMPI_*` too: ROMIO's collective I/O (MPICH's default MPI-IO, Open MPI's `romio321`)
//! sends, broadcasts and reduces through them, and a program may call `PMPI_*` on purpose
//! to stay unprofiled. Those calls are not the program's MPI calls and were never
//! recorded. So on x86_64 each exported `PMPI_x` is a small trampoline that asks
//! [`from_binding`] about its return address: a call from a Fortran binding goes to the
//! recording body shared with `MPI_x`, any other straight to the MPI library.
//!
//! Bindings are the loaded objects that define the Fortran `MPI_INIT` entry point
//! (`mpi_init_`, ...); their executable segments are found once, at MPI_Init.

use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Executable address ranges [start, end) of the Fortran binding libraries.
const MAX_RANGES: usize = 16;
static RANGES: [(AtomicUsize, AtomicUsize); MAX_RANGES] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_RANGES];
static N_RANGES: AtomicUsize = AtomicUsize::new(0);

/// Fortran names of MPI_INIT under the usual name manglings, and Open MPI's `mpi_f08`.
const FORTRAN_INIT: [&CStr; 5] = [
    c"mpi_init_",
    c"mpi_init__",
    c"MPI_INIT",
    c"mpi_init",
    c"mpi_init_f08_",
];

/// True if `ret` (a return address) lies in a Fortran binding library. Called from the
/// `PMPI_*` trampolines with the caller's argument registers saved: no panic, no
/// allocation, a few relaxed loads.
pub(crate) extern "C" fn from_binding(ret: usize) -> bool {
    let n = N_RANGES.load(Ordering::Acquire).min(MAX_RANGES);
    RANGES[..n]
        .iter()
        .any(|(s, e)| ret >= s.load(Ordering::Relaxed) && ret < e.load(Ordering::Relaxed))
}

/// Finds the binding libraries' executable segments; call once after PMPI_Init.
pub(crate) fn find_bindings() {
    let mut names: Vec<Vec<u8>> = Vec::new();
    for sym in FORTRAN_INIT {
        // SAFETY: dlsym and dladdr with a NUL-terminated name and a local Dl_info; the
        // file name dladdr returns is copied at once.
        unsafe {
            let p = libc::dlsym(libc::RTLD_DEFAULT, sym.as_ptr());
            if p.is_null() {
                continue;
            }
            let mut info: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(p, &mut info) == 0 || info.dli_fname.is_null() {
                continue;
            }
            let name = CStr::from_ptr(info.dli_fname).to_bytes().to_vec();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() {
        return;
    }
    let mut found: Vec<(usize, usize)> = Vec::new();
    let mut ctx = (names, &mut found);
    // SAFETY: the callback only reads the program headers dl_iterate_phdr passes it and
    // writes through the context pointer we pass, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(segments), (&mut ctx as *mut Ctx).cast()) };
    let n = found.len().min(MAX_RANGES);
    for (slot, (s, e)) in RANGES.iter().zip(&found[..n]) {
        slot.0.store(*s, Ordering::Relaxed);
        slot.1.store(*e, Ordering::Relaxed);
    }
    N_RANGES.store(n, Ordering::Release);
}

type Ctx<'a> = (Vec<Vec<u8>>, &'a mut Vec<(usize, usize)>);

unsafe extern "C" fn segments(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: dl_iterate_phdr passes a valid info and our context pointer.
        let (info, ctx) = unsafe { (&*info, &mut *(data as *mut Ctx)) };
        if info.dlpi_name.is_null() {
            return;
        }
        // SAFETY: dlpi_name is a NUL-terminated string owned by the dynamic linker.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
        if !ctx.0.iter().any(|n| n == name) {
            return;
        }
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr holds dlpi_phnum program headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                ctx.1.push((start, start + ph.p_memsz as usize));
            }
        }
    }));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_outside_every_range_are_not_from_a_binding() {
        // No Fortran binding is linked into the unit tests.
        find_bindings();
        assert!(!from_binding(from_binding as *const () as usize));
        assert!(!from_binding(0));
    }
}
