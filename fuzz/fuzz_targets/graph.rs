//! The GRAPH.json input of `pmpi-predict model penalties`.
//!
//! 1. `CommGraph` from JSON, capped at 64 arcs and node ids < 1000 so a run stays fast,
//!    then `validate()` and every penalty model with default parameters. The penalty
//!    contract (model/penalty.rs) holds for any graph, self-loops included: one finite,
//!    positive penalty per arc, in order.
//! 2. The real CLI path (`cli::model::run` with `model penalties`, which reads the file with
//!    the private `read_graph`): the input is written to a temporary file and the command
//!    must exit 0 or 2 (bad input), never panic. Skipped for graphs of more than 64 arcs.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pmpi_predict_cli::cli::model::{ModelCmd, PenaltiesArgs, run};
use pmpi_core::model::{CommGraph, penalty_model_by_name};

const MODELS: [&str; 4] = ["gige", "infiniband", "maxmin", "myrinet"];
const MAX_ARCS: usize = 64;
const MAX_NODE: u32 = 1000;

fn check_models(g: &CommGraph) {
    for name in MODELS {
        let m = penalty_model_by_name(name, &[]).expect("default parameters build");
        let p = m.penalties(g);
        assert_eq!(p.len(), g.edges.len(), "{name}: one penalty per arc");
        for (i, x) in p.iter().enumerate() {
            assert!(x.is_finite() && *x > 0.0, "{name}: arc #{i} penalty {x} on {g:?}");
        }
    }
}

/// `model penalties` prints its JSON answer on stdout: send it to /dev/null once, so the
/// fuzzer's own output (stderr) stays readable.
fn quiet_stdout() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 on two valid descriptors; fd 1 is replaced atomically.
            unsafe { libc::dup2(null.as_raw_fd(), 1) };
        }
    });
}

fn graph_file() -> &'static std::path::PathBuf {
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("pmpi-fuzz-graph-{}.json", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut g) = serde_json::from_slice::<CommGraph>(data) {
        g.edges.truncate(MAX_ARCS);
        for e in &mut g.edges {
            e.src %= MAX_NODE;
            e.dst %= MAX_NODE;
        }
        let _ = g.validate();
        check_models(&g);
    }

    // The CLI path, on graphs small enough to stay fast.
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let arcs = v.get("edges").and_then(|e| e.as_array()).map_or(0, |a| a.len());
    if arcs > MAX_ARCS {
        return;
    }
    quiet_stdout();
    let path = graph_file();
    if std::fs::write(path, data).is_err() {
        return;
    }
    let model = MODELS[data.len() % MODELS.len()];
    let status = run(ModelCmd::Penalties(PenaltiesArgs {
        model: model.to_string(),
        params: Vec::new(),
        graph: path.clone(),
    }));
    assert!(status == 0 || status == 2, "model penalties exited {status}");
});
