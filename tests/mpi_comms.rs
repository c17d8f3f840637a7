//! A program that makes thousands of communicators, a thousand of them alive at once:
//! every collective on them is recorded under an id that its members' records share, so
//! that the analysis matches them all; a table too small for them (PMPI_PREDICT_MAX_COMMS)
//! is said once a rank, and the program's results are its own either way.

mod common;
use common::*;

#[test]
fn thousands_of_communicators_are_matched_across_ranks() {
    let dir = scratch("many-comms");
    let exe = build_program("many_comms", &dir);
    let plain = mpirun(2, &exe, &[], None, &dir);
    assert!(plain.status.success(), "{:?}", plain);
    let want = sorted_lines(&plain.stdout);
    assert_eq!(want, ["rank 0 total 8000", "rank 1 total 8000"]);

    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(2, &exe, &[], Some(&[("PMPI_PREDICT_OUT", &out_s)]), &dir);
    let err = String::from_utf8_lossy(&with.stderr);
    assert!(with.status.success(), "{err}");
    assert_eq!(sorted_lines(&with.stdout), want);
    assert!(!err.contains("PMPI_PREDICT_MAX_COMMS"), "{err}");
    let rows = read_calls(&out);
    let c = counts(&rows);
    for rank in 0..2 {
        assert_eq!(c[&(rank, "MPI_Allreduce".to_string())], 4000);
    }
    // Every collective found its partners: none unpredicted.
    assert_eq!(rows.iter().filter(|r| !r["reason"].is_empty()).count(), 0);

    // A table of 64 for 1,000 alive: said once a rank; results unchanged.
    let small = dir.join("small");
    let small_s = small.display().to_string();
    let with = mpirun(
        2,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &small_s),
            ("PMPI_PREDICT_MAX_COMMS", "64"),
        ]),
        &dir,
    );
    let err = String::from_utf8_lossy(&with.stderr);
    assert!(with.status.success(), "{err}");
    assert_eq!(sorted_lines(&with.stdout), want);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("than the table holds (64, PMPI_PREDICT_MAX_COMMS)"))
            .count(),
        2,
        "{err}"
    );
}
