//! Output on node-local disks: with `%r` in PMPI_PREDICT_OUT every rank writes to its own
//! directory, as on nodes without a shared file system; rank 0 gathers the others' spools
//! over MPI at MPI_Finalize and writes the full report. (tests/emucluster.sh does the same
//! with one directory per emulated host.)

mod common;

#[test]
fn rank_0_gathers_spools_it_cannot_see() {
    let dir = common::scratch("nodelocal");
    let exe = common::build_program("basic", &dir);
    let pattern = dir.join("r%r");
    let o = common::mpirun(
        4,
        &exe,
        &[],
        Some(&[("PMPI_PREDICT_OUT", pattern.to_str().unwrap())]),
        &dir,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("gathered the spools of 3 ranks from node-local directories"),
        "{err}"
    );
    let r0 = dir.join("r0");
    for r in 0..4 {
        let own = dir.join(format!("r{r}"));
        let spool = format!("rank-{r:05}.spool");
        assert!(r0.join(format!("rank-{r:05}.json")).is_file(), "rank {r}");
        assert_eq!(
            std::fs::read(own.join(&spool)).unwrap(),
            std::fs::read(r0.join(&spool)).unwrap(),
            "rank {r}'s gathered spool equals its own"
        );
        if r > 0 {
            assert!(!own.join("calls.csv").exists(), "only rank 0 reports");
        }
    }
    // The report covers every rank, as a shared directory's would.
    let shared = dir.join("shared");
    let s = common::mpirun(
        4,
        &exe,
        &[],
        Some(&[("PMPI_PREDICT_OUT", shared.to_str().unwrap())]),
        &dir,
    );
    assert!(s.status.success());
    assert!(!String::from_utf8_lossy(&s.stderr).contains("gathered"));
    assert_eq!(
        common::counts(&common::read_calls(&r0)),
        common::counts(&common::read_calls(&shared))
    );
}
