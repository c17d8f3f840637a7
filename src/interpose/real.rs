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
static ADDR: [AtomicPtr<c_void>; 256] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 256];

const _: () = assert!(
    PMPI_NAMES.len() <= 256,
    "more wrapped calls than ADDR slots"
);

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

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The library's own calls to a wrapped function must not use `mpi_sys`'s
    /// declaration, which links to this library's own `PMPI_*` export.
    #[test]
    fn no_direct_calls_to_wrapped_pmpi_functions() {
        let mut files = Vec::new();
        rust_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 5);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for n in crate::trace::CALL_NAMES {
                let direct = format!("ffi::P{n}(");
                assert!(
                    !text.contains(&direct),
                    "{} calls {direct}...): use interpose::real::P{n}",
                    f.display()
                );
            }
        }
    }
}
