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

/// True if the program, or a library it loaded, is linked with an MPI library: some
/// loaded object other than this layer names a `libmpi*` (Open MPI's libmpi and its
/// Fortran and C++ libraries, MPICH's libmpich and libmpichfort, Intel MPI's) among the
/// libraries it needs. `have_mpi` alone cannot tell: the layer itself needs libmpi, so
/// PMPI_Init resolves in every process it is preloaded into (a shell, `time`, `env`, a
/// program a rank starts with `system()`). Walks the loaded objects once; called at exit.
pub(crate) fn program_links_mpi() -> bool {
    let mut state = LinkScan {
        own_base: own_base(),
        found: false,
    };
    // SAFETY: dl_iterate_phdr calls `scan_object` with the loader's own descriptions of
    // the loaded objects, valid during each call; `state` outlives the iteration.
    unsafe { libc::dl_iterate_phdr(Some(scan_object), (&raw mut state).cast()) };
    state.found
}

struct LinkScan {
    own_base: usize,
    found: bool,
}

/// The load address of the object holding this code (the layer).
fn own_base() -> usize {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr with the address of a function of this object and a place for
    // the answer; on failure it writes nothing we read.
    let ok = unsafe { libc::dladdr(own_base as *const c_void, info.as_mut_ptr()) };
    if ok == 0 {
        return 0;
    }
    // SAFETY: dladdr returned non-zero, so it filled `info`.
    unsafe { info.assume_init() }.dli_fbase as usize
}

/// An entry of an ELF object's dynamic section (`Elf64_Dyn`).
#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_STRTAB: i64 = 5;

unsafe extern "C" fn scan_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the `LinkScan` handed to dl_iterate_phdr, and `info` the loader's
    // description of one loaded object, both valid for this call.
    let (state, info) = unsafe { (&mut *data.cast::<LinkScan>(), &*info) };
    let base = info.dlpi_addr as usize;
    if base == state.own_base || info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: dlpi_phdr points at the object's dlpi_phnum program headers.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
    let Some(dynamic) = phdrs.iter().find(|p| p.p_type == libc::PT_DYNAMIC) else {
        return 0;
    };
    let dyns = (base + dynamic.p_vaddr as usize) as *const Dyn;
    // SAFETY: the dynamic section is mapped and ends with DT_NULL.
    let entries = (0..)
        .map(|i| unsafe { &*dyns.add(i) })
        .take_while(|d| d.tag != DT_NULL);
    let Some(mut strtab) = entries
        .clone()
        .find(|d| d.tag == DT_STRTAB)
        .map(|d| d.val as usize)
    else {
        return 0;
    };
    // glibc relocates the dynamic section of the objects it loads in place; one it did
    // not (the vDSO) still holds an offset from its base.
    if strtab < base {
        strtab += base;
    }
    for d in entries.filter(|d| d.tag == DT_NEEDED) {
        // SAFETY: DT_NEEDED values are offsets of NUL-terminated names in the string
        // table, which is mapped.
        let name = unsafe { std::ffi::CStr::from_ptr((strtab + d.val as usize) as *const _) };
        if name.to_bytes().starts_with(b"libmpi") {
            state.found = true;
            return 1;
        }
    }
    0
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
