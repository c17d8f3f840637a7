//! report.html: a real MPI run under the layer (four ranks posing as two nodes) rendered by
//! headless Chromium; the DOM after the page's script ran must show every section for that
//! run, and the page must have made no network request. Also: the page's size does not
//! grow with the number of records, and a report.html that cannot be written costs one
//! stderr line, not the report.

mod common;

use pmpi_core::trace::{self, ClockSample, NO_RANK, RankMeta, Record, call};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Headless Chromium: `PMPI_PREDICT_TEST_CHROMIUM`, else `chromium` on the PATH. Missing
/// is a failure: scripts/setup installs it (and CI runs scripts/setup).
fn chromium() -> String {
    let name = std::env::var("PMPI_PREDICT_TEST_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let found = Command::new(&name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{name} not found: report.html is checked in headless Chromium; run scripts/setup (it installs the Debian package chromium), or set PMPI_PREDICT_TEST_CHROMIUM"
    );
    name
}

/// Runs headless Chromium on `page` with `args` (its own profile directory under `work`).
fn headless(page: &Path, work: &Path, args: &[&str]) -> Output {
    let profile = work.join("chromium-profile");
    let out = Command::new("timeout")
        .arg("120")
        .arg(chromium())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM without its script elements (their source would match the markup searched).
fn without_scripts(dom: &str) -> String {
    let mut out = String::with_capacity(dom.len());
    let mut rest = dom;
    while let Some(i) = rest.find("<script") {
        out.push_str(&rest[..i]);
        match rest[i..].find("</script>") {
            Some(j) => rest = &rest[i + j + "</script>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// `data-v` values of the cells of the heat map with id `id`.
fn cells(dom: &str, id: &str) -> Vec<f64> {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no {id}"));
    let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
    table
        .split("data-v=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
        .collect()
}

#[test]
fn real_run_renders_every_section_without_network() {
    let work = common::scratch("report_html_real");
    let exe = common::build_program("report_demo", &work);
    let wrap = work.join("as-node.sh");
    std::fs::write(
        &wrap,
        "#!/bin/sh\nr=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}\nexport PMPI_PREDICT_NODE=node$((r / 2))\nexec \"$@\"\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&wrap).status().unwrap();
    let out_dir = work.join("out");
    let out = common::mpirun(
        4,
        &wrap,
        &[exe.to_str().unwrap(), "20"],
        Some(&[
            ("PMPI_PREDICT_OUT", out_dir.to_str().unwrap()),
            ("PMPI_PREDICT_QUIET", "1"),
        ]),
        &work,
    );
    assert!(
        out.status.success(),
        "mpirun: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = out_dir.join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html written at MPI_Finalize");

    // Self-contained: a CSP that forbids fetching, nothing referenced by URL.
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    for bad in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "url(http",
        "@import",
        "http://",
        "https://",
    ] {
        assert!(!html.contains(bad), "report.html contains {bad}");
    }

    let dom = String::from_utf8(headless(&page, &work, &["--dump-dom"]).stdout).unwrap();
    let dom = without_scripts(&dom);
    assert!(dom.contains("data-rendered=\"1\""), "the script ran: {dom}");
    assert!(!dom.contains("class=\"error\""), "a section failed: {dom}");
    assert!(dom.contains("<span id=\"net-requests\">0</span>"), "{dom}");
    // The run.
    assert!(dom.contains("<span id=\"rank-count\">4</span>"));
    assert!(dom.contains("<span id=\"node-count\">2</span>"));
    assert_eq!(count(&dom, "class=\"node-row\""), 2, "placement rows");
    assert!(dom.contains("<span id=\"model\">gige</span>"));
    let records: usize = {
        let s = dom.split("<span id=\"record-count\">").nth(1).unwrap();
        s[..s.find('<').unwrap()].replace(',', "").parse().unwrap()
    };
    let csv_rows = common::read_calls(&out_dir).len();
    assert_eq!(records, csv_rows, "records shown = rows of calls.csv");
    // One bar per rank, each with compute and MPI segments.
    assert_eq!(count(&dom, "class=\"rank-bar\""), 4);
    assert_eq!(count(&dom, "class=\"seg compute\""), 4, "measured bars");
    assert_eq!(count(&dom, "class=\"pseg compute\""), 4, "predicted bars");
    assert!(count(&dom, "class=\"seg wait\"") >= 1);
    // The 2 × 2 traffic matrices; bytes cross between the nodes.
    let bytes = cells(&dom, "matrix-bytes");
    assert_eq!(bytes.len(), 4);
    assert!(bytes[1] > 1e6 && bytes[2] > 1e6, "{bytes:?}");
    assert_eq!(cells(&dom, "matrix-contention").len(), 4);
    // Call families in the scatter plot and its table, error by size.
    for c in [
        "MPI_Isend",
        "MPI_Irecv",
        "MPI_Waitall",
        "MPI_Sendrecv",
        "MPI_Allreduce",
        "MPI_Alltoall",
    ] {
        assert!(
            dom.contains(&format!("class=\"family\" data-call=\"{c}\"")),
            "{c} row"
        );
        assert!(
            dom.contains(&format!("class=\"point\" data-call=\"{c}\"")),
            "{c} point"
        );
        assert!(
            dom.contains(&format!("class=\"erel-row\" data-call=\"{c}\"")),
            "{c} E_rel"
        );
    }
    // The scatter plot's axes are labelled at exact powers of ten ("1.00e+3 µs" was a
    // product of tens that drifted below 1 ms).
    let axis = dom
        .split("id=\"scatter\"")
        .nth(1)
        .and_then(|a| a.split("<g class=\"axis\">").nth(1))
        .and_then(|a| a.split("</g>").next())
        .expect("scatter axis");
    let labels: Vec<&str> = axis
        .split("text-anchor=\"middle\">")
        .skip(1)
        .map(|t| &t[..t.find('<').unwrap()])
        .collect();
    assert!(labels.len() >= 2, "{axis}");
    for l in &labels {
        let (n, unit) = l.split_once(' ').unwrap_or(("", ""));
        assert!(
            ["1", "10", "100"].contains(&n) && ["ns", "µs", "ms", "s"].contains(&unit),
            "axis label {l:?}"
        );
    }
    // Hotspots: somebody always waits in this program (which rank most depends on the
    // machine's load, so it is not checked).
    let waited: Vec<i32> = dom
        .split("class=\"waited\"><td>")
        .skip(1)
        .map(|s| s[..s.find('<').unwrap()].parse().unwrap())
        .collect();
    assert!(
        !waited.is_empty() && waited.iter().all(|r| (0..4).contains(r)),
        "{waited:?}"
    );
    assert!(dom.contains("id=\"hot-intervals\"") || dom.contains("id=\"no-contention\""));

    // A picture for people (not checked).
    let png = work.join("report.png");
    headless(
        &page,
        &work,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,2600",
        ],
    );
    assert!(std::fs::metadata(&png).is_ok_and(|m| m.len() > 10_000));
    eprintln!("screenshot: {}", png.display());

    // trace.json of the same run: valid, one track per rank, a slice per record, slices of
    // a track in sequence even after clock correction, flows in pairs.
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("trace.json")).unwrap())
            .unwrap();
    let ev = t["traceEvents"].as_array().unwrap();
    let tracks = ev.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(tracks, 4);
    let mut slices: std::collections::BTreeMap<i64, Vec<(f64, f64)>> = Default::default();
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let ts = e["ts"].as_f64().unwrap();
        slices
            .entry(e["tid"].as_i64().unwrap())
            .or_default()
            .push((ts, ts + e["dur"].as_f64().unwrap()));
    }
    assert_eq!(slices.values().map(Vec::len).sum::<usize>(), csv_rows);
    for (tid, v) in &mut slices {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            v.windows(2).all(|w| w[1].0 >= w[0].1),
            "rank {tid}: overlapping slices"
        );
    }
    let starts = ev.iter().filter(|e| e["ph"] == "s").count();
    let ends = ev.iter().filter(|e| e["ph"] == "f").count();
    // Per step each rank sends two halo messages and one Sendrecv message.
    assert_eq!((starts, ends), (20 * 4 * 3, 20 * 4 * 3));
}

/// Ring of blocking sends on four ranks on two nodes, `steps` steps.
fn make_run(name: &str, steps: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for rank in 0..4 {
        let base = Record {
            root: NO_RANK,
            peer2: NO_RANK,
            comm_size: 4,
            tag: 1,
            ..Default::default()
        };
        let mut recs = Vec::new();
        let mut t = 1_000_000u64;
        for step in 0..steps {
            t += 500_000;
            let bytes = if step % 2 == 0 { 2_000 } else { 200_000 };
            // Even ranks send first, odd ranks receive first: no deadlock in the ring.
            let (ts, tr) = if rank % 2 == 0 {
                (t, t + 150_000)
            } else {
                (t + 150_000, t)
            };
            recs.push(Record {
                t_start: ts,
                t_end: ts + 100_000,
                t_posted: ts + 100_000,
                peer: (rank + 1) % 4,
                bytes_send: bytes,
                call: call::MPI_Send,
                ..base
            });
            recs.push(Record {
                t_start: tr,
                t_end: tr + 100_000,
                t_posted: tr + 100_000,
                peer: (rank + 3) % 4,
                bytes_recv: bytes,
                call: call::MPI_Recv,
                ..base
            });
            recs.sort_by_key(|r| r.t_start);
            t += 300_000;
        }
        let meta = RankMeta {
            rank,
            world_size: 4,
            node: format!("n{}", rank / 2),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: true,
            init_ns: 1_000_000,
            ..Default::default()
        };
        trace::write_meta(&dir, &meta).unwrap();
        trace::write_spool(&dir, rank, &recs).unwrap();
    }
    dir
}

fn analyze(dir: &Path) -> Output {
    let out = Command::new(common::cli_path())
        .arg("analyze")
        .arg(dir)
        .arg("--quiet")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn page_size_does_not_grow_with_the_records() {
    let small = make_run("report-html-size-1x", 500);
    let large = make_run("report-html-size-10x", 5000);
    analyze(&small);
    analyze(&large);
    let size = |d: &Path| std::fs::metadata(d.join("report.html")).unwrap().len() as f64;
    let (a, b) = (size(&small), size(&large));
    assert!(
        (b - a).abs() / a < 0.05,
        "report.html: {a} bytes for 4,000 records, {b} for 40,000"
    );
    assert!(a < 100_000.0, "{a}");
}

#[test]
fn an_unwritable_page_is_one_line_and_the_rest_is_written() {
    let dir = make_run("report-html-unwritable", 10);
    std::fs::create_dir_all(dir.join("report.html")).unwrap();
    let out = analyze(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("report.html"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("not written"), "{stderr}");
    for f in ["calls.csv", "summary.json", "hotspots.json", "trace.json"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
}
