//! `pmpi-predict model ...` run as a process: stdout values and exit codes.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(common::cli_path())
        .args(args)
        .output()
        .expect("run pmpi-predict")
}

/// Writes `text` to a fresh file in the target's temp directory.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("model_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn json(o: &Output) -> Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TWO_OUT: &str = r#"{"edges":[{"id":"a","src":0,"dst":1,"bytes":20000000},
{"id":"b","src":0,"dst":2,"bytes":20000000}]}"#;

#[test]
fn penalties_gige_fig2() {
    let g = file("two.json", TWO_OUT);
    let v = json(&run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        g.to_str().unwrap(),
    ]));
    let e = v["edges"].as_array().unwrap();
    assert_eq!(e[0]["id"], "a");
    assert_eq!(e[1]["id"], "b");
    assert!((e[0]["penalty"].as_f64().unwrap() - 1.5).abs() < 1e-12);
    assert!((e[1]["penalty"].as_f64().unwrap() - 1.5).abs() < 1e-12);
}

#[test]
fn penalties_with_param_and_every_model() {
    let g = file("two2.json", TWO_OUT);
    let gs = g.to_str().unwrap();
    let v = json(&run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        "--param",
        "beta=0.5",
        gs,
    ]));
    assert!((v["edges"][0]["penalty"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    for (m, want) in [("myrinet", 2.0), ("maxmin", 2.0), ("infiniband", 1.85)] {
        let v = json(&run(&["model", "penalties", "--model", m, gs]));
        assert!(
            (v["edges"][1]["penalty"].as_f64().unwrap() - want).abs() < 1e-12,
            "{m}"
        );
    }
}

#[test]
fn penalties_myrinet_fig6() {
    let g = file(
        "fig6.json",
        r#"{"edges":[{"id":"a","src":0,"dst":2,"bytes":1},{"id":"b","src":0,"dst":1,"bytes":1},
        {"id":"c","src":0,"dst":3,"bytes":1},{"id":"d","src":1,"dst":2,"bytes":1},
        {"id":"e","src":4,"dst":2,"bytes":1},{"id":"f","src":1,"dst":0,"bytes":1}]}"#,
    );
    let v = json(&run(&[
        "model",
        "penalties",
        "--model",
        "myrinet",
        g.to_str().unwrap(),
    ]));
    let p: Vec<f64> = v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["penalty"].as_f64().unwrap())
        .collect();
    assert_eq!(p, vec![5.0, 5.0, 5.0, 2.5, 2.5, 2.5]);
}

#[test]
fn penalties_bad_input_exit_2() {
    let good = file("good.json", TWO_OUT);
    let good = good.to_str().unwrap();
    let o = run(&["model", "penalties", "--model", "token-ring", good]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("token-ring"));
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        "--param",
        "gamma=1",
        good,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gamma"));
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        "--param",
        "beta",
        good,
    ]);
    assert_eq!(o.status.code(), Some(2));

    let bad = file("malformed.json", "{\"edges\": [\n  {\"src\": 0,, }\n]}");
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 2 column"), "{}", stderr(&o));

    let lp = file(
        "loop.json",
        r#"{"edges":[{"id":"ok","src":0,"dst":1,"bytes":1},{"id":"zz","src":4,"dst":4,"bytes":1}]}"#,
    );
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "maxmin",
        lp.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("zz") && stderr(&o).contains("self-loop"),
        "{}",
        stderr(&o)
    );

    let neg = file(
        "neg.json",
        r#"{"edges":[{"id":"n","src":0,"dst":1,"bytes":-5}]}"#,
    );
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        neg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("negative"), "{}", stderr(&o));

    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        "/nonexistent/graph.json",
    ]);
    assert_eq!(o.status.code(), Some(2));

    // A graph path that cannot be read as a file is an I/O failure (74), not bad input.
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("model_cli");
    let o = run(&[
        "model",
        "penalties",
        "--model",
        "gige",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(74), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("cannot read graph {}: ", folder.display())),
        "{}",
        stderr(&o)
    );
}

#[test]
fn collective_bcast_binomial_default_profile() {
    // Built-in profile: α = 50 µs, β = 8e-8 s/B → pLogP L = 25 µs, g(m) = 25 µs + β·m.
    // Binomial, P = 8, m = 1000: 3·g + 3·L = 3·(25e-6 + 8e-5) + 3·25e-6 = 3.9e-4.
    let v = json(&run(&[
        "model",
        "collective",
        "--op",
        "bcast",
        "--procs",
        "8",
        "--bytes",
        "1000",
    ]));
    assert_eq!(v["strategy"], "binomial");
    assert!(
        (v["seconds"].as_f64().unwrap() - 3.9e-4).abs() < 1e-12,
        "{v}"
    );
}

#[test]
fn collective_all_strategies_ranked() {
    let v = json(&run(&[
        "model",
        "collective",
        "--op",
        "bcast",
        "--all-strategies",
        "--procs",
        "16",
        "--bytes",
        "1048576",
    ]));
    let r = v["ranking"].as_array().unwrap();
    assert_eq!(r.len(), 10);
    let secs: Vec<f64> = r.iter().map(|x| x["seconds"].as_f64().unwrap()).collect();
    assert!(secs.windows(2).all(|w| w[0] <= w[1]));
    let v = json(&run(&[
        "model",
        "collective",
        "--op",
        "scatter",
        "--all-strategies",
        "--procs",
        "5",
        "--bytes",
        "100",
    ]));
    assert_eq!(v["ranking"].as_array().unwrap().len(), 3);
}

#[test]
fn collective_alltoall_with_profile() {
    // Profile with the Gigabit Ethernet signature: γ = 4.3628, δ = 4.93 ms, M = 8 kB.
    let mut p: Value =
        serde_json::from_str(&pmpi_core::profile::Profile::builtin_default().to_json()).unwrap();
    p["hockney"]["inter"] = serde_json::json!({"alpha": 50e-6, "beta": 8e-9});
    p["alltoall"] = serde_json::json!({"gamma": 4.3628, "delta": 4.93e-3, "threshold": 8192});
    let f = file("gige_profile.json", &p.to_string());
    let v = json(&run(&[
        "model",
        "collective",
        "--op",
        "alltoall",
        "--procs",
        "40",
        "--bytes",
        "16384",
        "--profile",
        f.to_str().unwrap(),
    ]));
    assert_eq!(v["strategy"], "signature");
    assert!(
        (v["seconds"].as_f64().unwrap() - 0.2165217959424).abs() < 1e-12,
        "{v}"
    );
}

#[test]
fn collective_bad_input_exit_2() {
    for args in [
        &[
            "model",
            "collective",
            "--op",
            "bcast",
            "--procs",
            "1",
            "--bytes",
            "10",
        ][..],
        &[
            "model",
            "collective",
            "--op",
            "bcast",
            "--procs",
            "4",
            "--bytes",
            "-10",
        ],
        &[
            "model",
            "collective",
            "--op",
            "bcast",
            "--procs",
            "4",
            "--bytes",
            "10",
            "--strategy",
            "star",
        ],
        &[
            "model",
            "collective",
            "--op",
            "gather",
            "--procs",
            "4",
            "--bytes",
            "10",
        ],
        &[
            "model",
            "collective",
            "--op",
            "alltoall",
            "--procs",
            "4",
            "--bytes",
            "10",
            "--strategy",
            "upper-lower",
        ],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
        assert!(!stderr(&o).contains("panicked"));
    }
    let o = run(&[
        "model",
        "collective",
        "--op",
        "bcast",
        "--procs",
        "1",
        "--bytes",
        "10",
    ]);
    assert!(stderr(&o).contains("--procs 1"), "{}", stderr(&o));

    let v2 = file("v2.json", r#"{"version": 2}"#);
    let o = run(&[
        "model",
        "collective",
        "--op",
        "bcast",
        "--procs",
        "4",
        "--bytes",
        "10",
        "--profile",
        v2.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("v2.json") && stderr(&o).contains("version 2"),
        "{}",
        stderr(&o)
    );
}
