//! `pmpi-predict watch --json` on a job in progress: snapshots arrive while the job runs,
//! each interval's graph holds its messages, and every message is in exactly one interval.
//! The job runs as two emulated nodes (PMPI_PREDICT_NODE per application context).

mod common;

use pmpi_core::report::live;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn watch_follows_a_running_job() {
    let dir = common::scratch("watch");
    let exe = common::build_program("steady", &dir);
    let out = dir.join("out");
    let lib = common::layer();
    // 4 ranks, two per emulated node; 200 rounds of 20 ms: about 4 s or more.
    let (l, prefix, ompi) = common::launch_prefix(2);
    let global: Vec<String> = prefix[..prefix.len() - 2].to_vec();
    let mut job = Command::new(&l);
    job.args(&global);
    for (i, node) in ["a", "b"].iter().enumerate() {
        if i > 0 {
            job.arg(":");
        }
        job.args(&prefix[prefix.len() - 2..]);
        let vars = [
            ("LD_PRELOAD", lib.display().to_string()),
            ("PMPI_PREDICT_OUT", out.display().to_string()),
            ("PMPI_PREDICT_NODE", node.to_string()),
            ("PMPI_PREDICT_QUIET", "1".to_string()),
        ];
        for (k, v) in &vars {
            if ompi {
                job.arg("-x").arg(format!("{k}={v}"));
            } else {
                job.arg("-env").arg(k).arg(v);
            }
        }
        job.arg(&exe).args(["200", "65536", "20"]);
    }
    job.current_dir(&dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut watch = Command::new(common::cli_path())
        .arg("watch")
        .arg(&out)
        .args(["--json", "--interval", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .map(|l| (Instant::now(), l))
            .collect::<Vec<_>>()
    });
    let job_out = job.output().unwrap();
    let job_end = Instant::now();
    assert!(
        job_out.status.success(),
        "{}",
        String::from_utf8_lossy(&job_out.stderr)
    );
    // The watch ends by itself once every rank has finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = watch.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = watch.kill();
            panic!("watch did not end after the job");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    let lines = reader.join().unwrap();
    let snaps: Vec<Value> = lines
        .iter()
        .map(|(_, l)| serde_json::from_str(l).unwrap())
        .collect();
    assert!(snaps.len() >= 4, "{} snapshots", snaps.len());
    let live_count = lines.iter().filter(|(t, _)| *t < job_end).count();
    assert!(
        live_count >= 1,
        "no snapshot arrived while the job ran ({} after)",
        lines.len()
    );
    // Consecutive intervals of 0.5 s.
    for w in snaps.windows(2) {
        let (a, b) = (
            w[0]["end_s"].as_f64().unwrap(),
            w[1]["start_s"].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 1e-6, "{a} then {b}");
    }
    // Each interval's graph: ring messages of 64 KiB, a→a, a→b, b→b, b→a.
    let mut seen: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for s in &snaps {
        for l in s["graph"].as_array().unwrap() {
            let (b, m) = (
                l["bytes"].as_u64().unwrap(),
                l["messages"].as_u64().unwrap(),
            );
            assert_eq!(b, m * 65536, "{l}");
            let e = seen
                .entry((
                    l["src"].as_str().unwrap().to_string(),
                    l["dst"].as_str().unwrap().to_string(),
                ))
                .or_default();
            e.0 += b;
            e.1 += m;
        }
    }
    // Every message of the finished run in exactly one interval.
    let run = pmpi_core::trace::load_run(&out).unwrap();
    let whole = live::snapshot(&run, 0.0, f64::INFINITY, None, None);
    let total: BTreeMap<(String, String), (u64, u64)> = whole
        .graph
        .iter()
        .map(|l| ((l.src.clone(), l.dst.clone()), (l.bytes, l.messages)))
        .collect();
    assert_eq!(seen, total);
    assert_eq!(total.len(), 4, "{total:?}");
    assert!(total.values().all(|&(_, m)| m == 200), "{total:?}");
}
