//! Fortran programs under the layer, through the three bindings (`mpif.h`, `use mpi`,
//! `use mpi_f08`), with real launches: every call recorded exactly once, with its peers
//! and bytes. Open MPI's bindings call `PMPI_*`; MPICH's `mpif.h`/`use mpi` call `MPI_*`
//! and its `mpi_f08` calls `PMPI_*` for some routines (docs/interpose.md). Both MPI
//! libraries of Debian ship `mpi_f08.mod`, so all three bindings are tested under both
//! (`scripts/test-mpich` runs this file under MPICH with `mpifort.mpich`).

mod common;
use common::*;
use pmpi_core::trace::{self, FLAG_IN_PLACE, call};
use std::collections::HashMap;

/// Calls per rank of every census program (tests/programs/f_*.f90).
const CENSUS: [(&str, usize); 9] = [
    ("MPI_Send", 3),
    ("MPI_Recv", 3),
    ("MPI_Isend", 2),
    ("MPI_Irecv", 2),
    ("MPI_Waitall", 1),
    ("MPI_Bcast", 1),
    ("MPI_Allreduce", 2),
    ("MPI_Alltoall", 1),
    ("MPI_Barrier", 1),
];

fn census(prog: &str) {
    let dir = scratch(prog);
    let exe = build_fortran(prog, &dir);
    let plain = mpirun(4, &exe, &[], None, &dir);
    assert!(
        plain.status.success(),
        "{prog} without the layer: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let (out, with) = mpirun_recorded(4, &exe, &[], &dir);
    let err = String::from_utf8_lossy(&with.stderr);
    assert!(with.status.success(), "{prog} with the layer: {err}");
    // Same results with and without the layer (ranks print in any order).
    let lines = sorted_lines(&with.stdout);
    assert_eq!(lines, sorted_lines(&plain.stdout));
    assert_eq!(
        lines,
        [
            "rank 0 total 938680",
            "rank 1 total 38886",
            "rank 2 total 339192",
            "rank 3 total 639398"
        ]
    );
    assert!(!err.contains("never saw MPI_Init"), "{err}");

    let rows = read_calls(&out);
    let mut want = HashMap::new();
    for rank in 0..4u32 {
        for (c, n) in CENSUS {
            want.insert((rank, c.to_string()), n);
        }
    }
    assert_eq!(counts(&rows), want, "{prog}: records per (rank, call)");

    let of = |rank: u32, c: &str| -> Vec<&HashMap<String, String>> {
        rows.iter()
            .filter(|r| r["rank"] == rank.to_string() && r["call"] == c)
            .collect()
    };
    let pair = |r: &HashMap<String, String>| {
        (
            r["bytes_sent"].parse::<u64>().unwrap(),
            r["bytes_received"].parse::<u64>().unwrap(),
        )
    };
    for rank in 0..4u32 {
        let (right, left) = ((rank + 1) % 4, (rank + 3) % 4);
        for s in of(rank, "MPI_Send") {
            assert_eq!(
                (s["peer"].as_str(), s["tag"].as_str(), pair(s)),
                (right.to_string().as_str(), "7", (400, 0))
            );
        }
        for r in of(rank, "MPI_Recv") {
            assert_eq!(
                (r["peer"].as_str(), r["tag"].as_str(), pair(r)),
                (left.to_string().as_str(), "7", (0, 400))
            );
        }
        let mut neighbours = vec![left.to_string(), right.to_string()];
        neighbours.sort();
        for (c, bytes) in [("MPI_Isend", (200, 0)), ("MPI_Irecv", (0, 200))] {
            let ops = of(rank, c);
            let mut peers: Vec<String> = ops.iter().map(|r| r["peer"].clone()).collect();
            peers.sort();
            assert_eq!(peers, neighbours, "rank {rank} {c}");
            assert!(
                ops.iter()
                    .all(|r| pair(r) == bytes && r["nonblocking"] == "1" && r["tag"] == "21"),
                "rank {rank} {c}: {ops:?}"
            );
        }
        let bc = of(rank, "MPI_Bcast");
        assert_eq!(bc[0]["root"], "0");
        assert_eq!(pair(bc[0]), if rank == 0 { (2048, 0) } else { (0, 2048) });
        for a in of(rank, "MPI_Allreduce") {
            assert_eq!(pair(a), (40, 40));
        }
        for a in of(rank, "MPI_Alltoall") {
            assert_eq!((pair(a), a["comm_size"].as_str()), ((128, 128), "4"));
        }
    }

    // MPI_IN_PLACE from Fortran reaches the layer as C's MPI_IN_PLACE (the bindings
    // convert it): exactly one of each rank's two MPI_Allreduce records is in place.
    let run = trace::load_run(&out).unwrap();
    assert!(run.complete());
    for r in &run.ranks {
        let ar: Vec<_> = r
            .records
            .iter()
            .filter(|x| x.call == call::MPI_Allreduce)
            .collect();
        let in_place: Vec<bool> = ar.iter().map(|x| x.flags & FLAG_IN_PLACE != 0).collect();
        assert_eq!(in_place, [false, true], "rank {}", r.meta.rank);
        // The library named in the metadata is the one the Fortran compiler linked.
        let lib = r.meta.mpi_library.to_lowercase();
        match wrapper_family(&mpifort()).as_str() {
            "mpich" => assert!(lib.contains("mpich"), "{lib}"),
            _ => assert!(lib.contains("open mpi"), "{lib}"),
        }
    }
}

#[test]
fn fortran_mpif_h_each_call_recorded_once() {
    census("f_mpif");
}

#[test]
fn fortran_use_mpi_each_call_recorded_once() {
    census("f_usempi");
}

/// Also starts with MPI_Init_thread, which MPICH's mpi_f08 sends to PMPI_Init_thread.
#[test]
fn fortran_use_mpi_f08_each_call_recorded_once() {
    census("f_f08");
}

/// The `PMPI_*` exports record only calls from a Fortran binding: ROMIO's communication
/// inside collective MPI-IO and a C program's direct `PMPI_*` calls reach them too, and
/// are not the program's MPI calls.
#[test]
fn pmpi_calls_from_the_mpi_library_or_the_program_are_not_recorded() {
    let dir = scratch("pmpi-internal");
    let exe = build_program("pmpi_internal", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let file = dir.join("data").display().to_string();
    let with = mpirun(
        2,
        &exe,
        &[&file],
        Some(&[
            ("PMPI_PREDICT_OUT", &out_s),
            ("PMPI_PREDICT_QUIET", "1"),
            // Open MPI's default MPI-IO (ompio) calls no PMPI function; ROMIO does.
            ("OMPI_MCA_io", "romio321"),
        ]),
        &dir,
    );
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_eq!(sorted_lines(&with.stdout), ["rank 0 sum 2", "rank 1 sum 2"]);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 2 * 4096);
    let rows = read_calls(&out);
    let want: HashMap<(u32, String), usize> = (0..2)
        .map(|r| ((r, "MPI_Barrier".to_string()), 1))
        .collect();
    assert_eq!(counts(&rows), want);
}
