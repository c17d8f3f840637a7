//! The MPI library's own `PMPI_*` entry points of the wrapped calls.
//!
//! The layer exports `PMPI_*` as well as `MPI_*` (Open MPI's Fortran bindings call
//! `PMPI_*`), so a direct call to `mpi_sys::PMPI_Send` from this library would come back
//! to its own export. Every call the layer makes to a wrapped function goes through
//! this table instead: `dlsym(RTLD_NEXT, "PMPI_x")` finds the definition after this
//! library in the search order, resolved once on first use; afterwards a call costs one
//! relaxed load of the pointer.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use mpi_sys as ffi;

include!(concat!(env!("OUT_DIR"), "/real.rs"));

/// Resolved addresses, indexed by call number; null until first use.
static ADDR: [AtomicPtr<c_void>; 64] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 64];

const _: () = assert!(PMPI_NAMES.len() <= 64, "more wrapped calls than ADDR slots");

unsafe extern "C" {
    static pmpi_predict_ERR_INTERN: c_int;
}

/// Address of the MPI library's `PMPI_` function for `call`; null if there is none.
#[inline]
pub(crate) fn addr(call: u16) -> *mut c_void {
    let p = ADDR[call as usize].load(Ordering::Relaxed);
    if p.is_null() { resolve(call) } else { p }
}

#[cold]
#[inline(never)]
fn resolve(call: u16) -> *mut c_void {
    let name = PMPI_NAMES[call as usize];
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT searches the objects loaded
    // after the one holding this code (the MPI library, for the preloaded layer or a
    // program linked with it). Racing threads store the same address.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    ADDR[call as usize].store(p, Ordering::Relaxed);
    p
}

/// True if an MPI library is loaded after this one: `PMPI_Init` resolves.
pub(crate) fn have_mpi() -> bool {
    !addr(crate::trace::call::MPI_Init).is_null()
}

/// A wrapped call whose real entry point cannot be found: said once, answered with
/// MPI_ERR_INTERN (nothing else can be done with a call that has nowhere to go).
#[cold]
fn missing(call: u16) -> c_int {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        super::say(&format!(
            "P{} not found in any library loaded after the layer; is the program linked with MPI?",
            crate::trace::call_name(call)
        ));
    }
    // SAFETY: a constant defined by our C shim.
    unsafe { pmpi_predict_ERR_INTERN }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_call_table() {
        assert_eq!(PMPI_NAMES.len(), crate::trace::CALL_NAMES.len());
        for (p, n) in PMPI_NAMES.iter().zip(crate::trace::CALL_NAMES) {
            assert_eq!(*p, format!("P{n}\0").as_bytes());
        }
    }
}
