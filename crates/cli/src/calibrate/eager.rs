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

/// What the search for the eager/rendezvous knee found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knee {
    /// `eager` bytes went eagerly, `rendezvous` (= eager + 1) waited for the receiver.
    Found { eager: u64, rendezvous: u64 },
    /// Every size probed up to the upper bound went eagerly.
    EagerUpTo(u64),
    /// Already the smallest size waited for the receiver.
    RendezvousFrom(u64),
}

impl Knee {
    /// The smallest message the library sends by rendezvous (the engine's limit), if found.
    pub fn limit(self) -> Option<u64> {
        match self {
            Knee::Found { rendezvous, .. } => Some(rendezvous),
            Knee::RendezvousFrom(lo) => Some(lo),
            Knee::EagerUpTo(_) => None,
        }
    }
}

/// Finds the largest eager message size in `lo..=hi`: `probe(bytes)` says whether a send of
/// `bytes` returned before its receive was posted. Doubles from `lo` while the probe says
/// eager, then bisects to the byte between the last eager and the first rendezvous size
/// (about 2·log2(knee / lo) probes). Assumes one knee: eager below it, rendezvous above.
pub fn find_knee(mut probe: impl FnMut(u64) -> bool, lo: u64, hi: u64) -> Knee {
    let lo = lo.max(1);
    let hi = hi.max(lo);
    if !probe(lo) {
        return Knee::RendezvousFrom(lo);
    }
    let mut eager = lo;
    let mut rdv = loop {
        if eager >= hi {
            return Knee::EagerUpTo(hi);
        }
        let next = eager.saturating_mul(2).min(hi);
        if probe(next) {
            eager = next;
        } else {
            break next;
        }
    };
    while rdv - eager > 1 {
        let mid = eager + (rdv - eager) / 2;
        if probe(mid) {
            eager = mid;
        } else {
            rdv = mid;
        }
    }
    Knee::Found {
        eager,
        rendezvous: rdv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search against a library whose largest eager message is `knee`: its result and
    /// how many probes it took.
    fn search(knee: u64, lo: u64, hi: u64) -> (Knee, u32) {
        let mut n = 0;
        let k = find_knee(
            |b| {
                n += 1;
                b <= knee
            },
            lo,
            hi,
        );
        (k, n)
    }

    #[test]
    fn the_knee_is_found_to_the_byte_in_logarithmic_probes() {
        // Open MPI's tcp BTL with btl_tcp_eager_limit 32768 (its header takes 56 bytes).
        let (k, n) = search(32712, 64, 1 << 22);
        assert_eq!(
            k,
            Knee::Found {
                eager: 32712,
                rendezvous: 32713
            }
        );
        assert_eq!(k.limit(), Some(32713));
        // 10 doublings to 65536, 15 bisections of (32768, 65536).
        assert!(n <= 2 * 16 + 1, "{n} probes");
        // A knee just below the first doubling, and exactly at a power of two.
        assert_eq!(
            search(256, 64, 1 << 22).0,
            Knee::Found {
                eager: 256,
                rendezvous: 257
            }
        );
        assert_eq!(
            search(4096, 64, 1 << 22).0,
            Knee::Found {
                eager: 4096,
                rendezvous: 4097
            }
        );
        let (k, n) = search(65536, 64, 1 << 22);
        assert_eq!(k.limit(), Some(65537));
        assert!(n <= 2 * 16 + 1, "{n} probes");
    }

    #[test]
    fn no_knee_in_the_range_says_which_side() {
        // Eager everywhere up to the bound: no limit to write.
        let (k, n) = search(u64::MAX, 64, 1 << 20);
        assert_eq!(k, Knee::EagerUpTo(1 << 20));
        assert_eq!(k.limit(), None);
        assert_eq!(n, 15, "64 .. 1 MiB by doubling");
        // Rendezvous already at the lower bound: one probe.
        let (k, n) = search(10, 64, 1 << 20);
        assert_eq!(k, Knee::RendezvousFrom(64));
        assert_eq!((k.limit(), n), (Some(64), 1));
        // A bound that is not a power of two times lo is probed itself.
        assert_eq!(search(u64::MAX, 64, 1000).0, Knee::EagerUpTo(1000));
        assert_eq!(
            search(999, 64, 1000).0,
            Knee::Found {
                eager: 999,
                rendezvous: 1000
            }
        );
    }

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
