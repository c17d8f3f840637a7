//! A job script that runs `mpirun` twice with the same PMPI_PREDICT_OUT: the second run
//! sets the first one's files aside (`earlier-K` in the directory) before it records, so
//! that neither run's ranks are mixed with the other's and nothing is lost.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Rows of calls.csv by rank.
fn rows_by_rank(dir: &Path) -> BTreeMap<u32, usize> {
    let mut by = BTreeMap::new();
    for ((rank, _), n) in counts(&read_calls(dir)) {
        *by.entry(rank).or_default() += n;
    }
    by
}

fn rank_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rank-"))
        .collect();
    v.sort();
    v
}

fn files_of(ranks: u32) -> Vec<String> {
    (0..ranks)
        .flat_map(|r| [format!("rank-{r:05}.json"), format!("rank-{r:05}.spool")])
        .collect()
}

#[test]
fn a_second_run_into_the_same_directory_sets_the_first_aside() {
    let dir = scratch("rerun");
    let exe = build_program("ring_sendrecv", &dir);
    let out = dir.join("out");
    // A file of the user's in the same directory stays where it is.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("input.dat"), "mine").unwrap();
    let out_s = out.display().to_string();
    let env = [("PMPI_PREDICT_OUT", out_s.as_str())];
    let mut first = None;
    for (k, np) in [4, 2, 3].into_iter().enumerate() {
        let run = mpirun(np, &exe, &[], Some(&env), &dir);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let moved = String::from_utf8_lossy(&run.stderr)
            .lines()
            .filter(|l| l.contains("held the files of an earlier run"))
            .count();
        assert_eq!(moved, usize::from(k > 0), "run {k}");
        // This run's ranks only, each with rows.
        assert_eq!(rank_files(&out), files_of(np), "run {k}");
        let rows = rows_by_rank(&out);
        assert_eq!(
            rows.keys().copied().collect::<Vec<_>>(),
            (0..np).collect::<Vec<_>>()
        );
        if k == 0 {
            first = Some(rows);
        }
    }
    // The first run, whole, in earlier-1 (its report too); the second in earlier-2.
    let e1 = out.join("earlier-1");
    assert_eq!(rank_files(&e1), files_of(4));
    assert_eq!(Some(rows_by_rank(&e1)), first);
    assert_eq!(rank_files(&out.join("earlier-2")), files_of(2));
    assert!(!out.join("earlier-3").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("input.dat")).unwrap(),
        "mine"
    );
    // A set-aside run is a run: analyze reads it again.
    let a = std::process::Command::new(cli_path())
        .args(["analyze", "--quiet"])
        .arg(&e1)
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(Some(rows_by_rank(&e1)), first);
}

/// Two runs at once with the same directory on one machine (a job array's tasks that
/// share PMPI_PREDICT_OUT): the second finds the first recording there and records in
/// `concurrent-1` instead; neither run's files move or mix.
#[test]
fn a_run_started_while_another_records_there_records_beside_it() {
    let dir = scratch("rerun-concurrent");
    let exe = build_program("steady", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let env = [("PMPI_PREDICT_OUT", out_s.as_str())];
    // About 3 s of 20 ms steps.
    let launch = launch_prefix(2);
    let prefix = launch.1.clone();
    let first = mpirun_command(launch, &exe, &["150", "1024", "20"], Some(&env), &dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("launcher runs");
    let meta = out.join("rank-00000.json");
    let t0 = std::time::Instant::now();
    while !meta.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(meta.exists(), "the first run never started recording");
    let second = mpirun(2, &exe, &["5", "1024", "1"], Some(&env), &dir);
    let first = first.wait_with_output().unwrap();
    remove_session_base(&prefix);
    for run in [&first, &second] {
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(!String::from_utf8_lossy(&run.stderr).contains("earlier run"));
    }
    let sendrecvs = |d: &Path| {
        let mut c: Vec<((u32, String), usize)> = counts(&read_calls(d))
            .into_iter()
            .filter(|((_, call), _)| call == "MPI_Sendrecv")
            .collect();
        c.sort();
        c
    };
    let want = |n| {
        vec![
            ((0, "MPI_Sendrecv".to_string()), n),
            ((1, "MPI_Sendrecv".to_string()), n),
        ]
    };
    assert_eq!(sendrecvs(&out), want(150));
    assert_eq!(rank_files(&out), files_of(2));
    let beside = out.join("concurrent-1");
    assert_eq!(sendrecvs(&beside), want(5));
    assert_eq!(rank_files(&beside), files_of(2));
    assert!(!out.join("earlier-1").exists());
}

/// With a directory per rank (`%r` in PMPI_PREDICT_OUT, node-local disks), each rank sets
/// the earlier run's files in its own directory aside.
#[test]
fn per_rank_directories_each_set_their_earlier_run_aside() {
    let dir = scratch("rerun-per-rank");
    let exe = build_program("ring_sendrecv", &dir);
    let template = dir.join("out").join("%r");
    let template_s = template.display().to_string();
    let env = [("PMPI_PREDICT_OUT", template_s.as_str())];
    for _ in 0..2 {
        let run = mpirun(2, &exe, &[], Some(&env), &dir);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    for r in 0..2 {
        let own = dir.join("out").join(r.to_string());
        let name = format!("rank-{r:05}.json");
        assert!(own.join(&name).is_file(), "{}", own.display());
        assert!(
            own.join("earlier-1").join(&name).is_file(),
            "{}",
            own.display()
        );
        assert!(!own.join("earlier-2").exists());
    }
}
