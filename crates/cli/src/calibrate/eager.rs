//! Which of the MPI library's control variables hold the eager limits the engine uses, and
//! what their values say (pure; `mpi::Mpi::read_cvars` reads them through MPI_T).
//!
//! Open MPI (ob1 over the TCP and shared-memory BTLs): `btl_tcp_eager_limit` between nodes,
//! `btl_vader_eager_limit` within a node (`btl_sm_eager_limit` in Open MPI 5; a BTL's
//! variables are listed only where it was loaded: vader needs two ranks on a node). MPICH
//! by its device (the `MPICH Device:` line of the version string): ch3 takes
//! `MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE` on the network and, with nemesis,
//! `MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ` within a node; ch4:ofi
//! `MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE` on the network; ch4:ucx none (UCX decides). A
//! negative value (MPICH's -1) means the library chooses: not exposed.
#![forbid(unsafe_code)]

use std::ffi::c_int;

use pmpi_core::profile::LibraryFamily;

/// `MPI_T_BIND_NO_OBJECT` in Open MPI's mpi.h.
const OMPI_BIND_NO_OBJECT: c_int = 0;
/// `MPI_T_BIND_NO_OBJECT` in MPICH's mpi.h.
const MPICH_BIND_NO_OBJECT: c_int = 9700;

/// The control variables that hold a library's eager limits, first choice first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cvars {
    pub inter: Vec<&'static str>,
    pub intra: Vec<&'static str>,
    /// The library's `MPI_T_BIND_NO_OBJECT`.
    pub no_object: c_int,
}

impl Cvars {
    /// Every name, for the read.
    pub fn names(&self) -> Vec<&'static str> {
        self.inter.iter().chain(&self.intra).copied().collect()
    }
}

/// The device of an MPICH version string (`MPICH Device:\tch4:ofi`), if it names one.
fn mpich_device(library: &str) -> Option<&str> {
    library
        .lines()
        .find_map(|l| l.trim().strip_prefix("MPICH Device:"))
        .map(str::trim)
}

/// The control variables of the library named by `library` (its `MPI_Get_library_version`
/// string), or why there are none to read.
pub fn cvars_for(library: &str) -> Result<Cvars, String> {
    match LibraryFamily::of(library) {
        Some(LibraryFamily::OpenMpi) => Ok(Cvars {
            inter: vec!["btl_tcp_eager_limit"],
            intra: vec!["btl_vader_eager_limit", "btl_sm_eager_limit"],
            no_object: OMPI_BIND_NO_OBJECT,
        }),
        Some(LibraryFamily::Mpich) => {
            let device = mpich_device(library).unwrap_or("");
            let (inter, intra) = if device.starts_with("ch3:nemesis") {
                (
                    vec!["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"],
                    vec!["MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ"],
                )
            } else if device.starts_with("ch3") {
                // ch3:sock: one transport for every peer.
                (
                    vec!["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"],
                    vec!["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"],
                )
            } else if device.starts_with("ch4:ofi") {
                (vec!["MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE"], vec![])
            } else {
                let d = if device.is_empty() { "unnamed" } else { device };
                return Err(format!(
                    "MPICH's {d} device exposes no eager limit through MPI_T"
                ));
            };
            Ok(Cvars {
                inter,
                intra,
                no_object: MPICH_BIND_NO_OBJECT,
            })
        }
        None => Err("not Open MPI or MPICH: its control variables are not known".into()),
    }
}

/// The first of `names` with a non-negative value in `read`.
fn first(names: &[&str], read: &[(String, i64)]) -> Option<u64> {
    names.iter().find_map(|n| {
        read.iter()
            .find(|(m, v)| m == n && *v >= 0)
            .map(|(_, v)| *v as u64)
    })
}

/// The limits (between nodes, within a node) that `read` gives under `cvars`; None where
/// the library does not expose one.
pub fn limits(cvars: &Cvars, read: &[(String, i64)]) -> (Option<u64>, Option<u64>) {
    (first(&cvars.inter, read), first(&cvars.intra, read))
}

/// A limit as an `f64` for the ranks' maximum (-1: not exposed), and back.
pub fn encode(v: Option<u64>) -> f64 {
    v.map_or(-1.0, |x| x as f64)
}

pub fn decode(x: f64) -> Option<u64> {
    (x >= 0.0).then_some(x as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI: &str =
        "Open MPI v4.1.2, package: Debian OpenMPI, ident: 4.1.2, repo rev: v4.1.2, Nov 24, 2021";
    const MPICH_UCX: &str = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\nMPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx";

    fn read(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    #[test]
    fn open_mpi_reads_the_tcp_and_vader_limits() {
        let c = cvars_for(OMPI).unwrap();
        assert_eq!(c.no_object, 0);
        // Observed with `mpirun -np 2`: both BTLs loaded.
        let r = read(&[
            ("btl_tcp_eager_limit", 65536),
            ("btl_vader_eager_limit", 4096),
        ]);
        assert_eq!(limits(&c, &r), (Some(65536), Some(4096)));
        // With -np 1 vader is not loaded: its limit is not listed.
        let r = read(&[("btl_tcp_eager_limit", 32768)]);
        assert_eq!(limits(&c, &r), (Some(32768), None));
        // Open MPI 5's shared-memory BTL.
        let r = read(&[("btl_sm_eager_limit", 4096)]);
        assert_eq!(limits(&c, &r), (None, Some(4096)));
    }

    #[test]
    fn mpich_by_device_and_minus_one_is_not_exposed() {
        let e = cvars_for(MPICH_UCX).unwrap_err();
        assert!(e.contains("ch4:ucx"), "{e}");
        let ch3 = MPICH_UCX.replace("ch4:ucx", "ch3:nemesis");
        let c = cvars_for(&ch3).unwrap();
        assert_eq!(c.no_object, 9700);
        // Observed under Debian's MPICH 4.0.2 (every device's variables are listed).
        let r = read(&[
            ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", 131072),
            ("MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE", -1),
            ("MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ", -1),
        ]);
        assert_eq!(limits(&c, &r), (Some(131072), None));
        let ofi = cvars_for(&MPICH_UCX.replace("ch4:ucx", "ch4:ofi")).unwrap();
        assert_eq!(limits(&ofi, &r), (None, None));
        let sock = cvars_for(&MPICH_UCX.replace("ch4:ucx", "ch3:sock")).unwrap();
        assert_eq!(limits(&sock, &r), (Some(131072), Some(131072)));
        assert!(cvars_for("MPICH Version:\t3.3").is_err());
        assert!(cvars_for("Intel(R) MPI Library 2021").is_err());
    }

    #[test]
    fn encoding_keeps_absent_and_exact_values() {
        for v in [None, Some(0), Some(4096), Some(1 << 40)] {
            assert_eq!(decode(encode(v)), v);
        }
        // The ranks' maximum: a rank that has the limit wins over one that has not.
        assert_eq!(decode(encode(None).max(encode(Some(4096)))), Some(4096));
    }
}
