//! `pmpi-predict model ...`: evaluate models from the command line (penalties on a graph,
//! collective times from a profile). Bad input exits with status 2 and a message naming the
//! problem and where it is.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::{CliError, exit_status};
use crate::model::bcast::{self, BcastStrategy, Prediction};
use crate::model::scatter::{self, ScatterStrategy};
use crate::model::{CommGraph, Edge, alltoall, penalty_model_by_name};
use crate::profile::Profile;

/// Model subcommands.
#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Penalty of every arc of a graph of concurrent inter-node messages.
    Penalties(PenaltiesArgs),
    /// Predicted time of a collective operation.
    Collective(CollectiveArgs),
}

/// Arguments of `model penalties`.
#[derive(Args, Debug)]
pub struct PenaltiesArgs {
    /// Penalty model: gige, myrinet, infiniband or maxmin.
    #[arg(long)]
    pub model: String,
    /// A model parameter, NAME=VALUE (repeatable), e.g. --param beta=0.8.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Graph file: {"edges":[{"id":"a","src":0,"dst":1,"bytes":20000000}, ...]}.
    pub graph: PathBuf,
}

/// Collective operations `model collective` predicts.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Alltoall,
    Bcast,
    Scatter,
}

/// Arguments of `model collective`.
#[derive(Args, Debug)]
pub struct CollectiveArgs {
    /// The operation.
    #[arg(long)]
    pub op: Op,
    /// Strategy (default: alltoall signature, bcast binomial, scatter flat).
    #[arg(long, conflicts_with = "all_strategies")]
    pub strategy: Option<String>,
    /// Predict every strategy and print them fastest first.
    #[arg(long)]
    pub all_strategies: bool,
    /// Number of processes P (≥ 2).
    #[arg(long, allow_hyphen_values = true)]
    pub procs: i64,
    /// Message size M in bytes (per destination).
    #[arg(long, allow_hyphen_values = true)]
    pub bytes: i64,
    /// Profile JSON (default: the built-in 100 Mbit/s Ethernet profile).
    #[arg(long)]
    pub profile: Option<PathBuf>,
}

/// Runs a model subcommand.
pub fn run(cmd: ModelCmd) -> i32 {
    let out = match cmd {
        ModelCmd::Penalties(a) => penalties(&a),
        ModelCmd::Collective(a) => collective(&a),
    };
    exit_status(out.map(|v| println!("{v}")))
}

fn penalties(a: &PenaltiesArgs) -> Result<Value, CliError> {
    let mut params = Vec::new();
    for p in &a.params {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| CliError::input(format!("--param {p}: expected NAME=VALUE")))?;
        let v: f64 = value.trim().parse().map_err(|_| {
            CliError::input(format!("--param {p}: value '{value}' is not a number"))
        })?;
        params.push((name.trim().to_string(), v));
    }
    let model = penalty_model_by_name(&a.model, &params).map_err(CliError::input)?;
    let (ids, graph) = read_graph(&a.graph)?;
    let p = model.penalties(&graph);
    let edges: Vec<Value> = ids
        .into_iter()
        .zip(p)
        .map(|(id, penalty)| json!({"id": id, "penalty": penalty}))
        .collect();
    Ok(json!({ "edges": edges }))
}

/// Reads a graph file, checking every arc; errors name the file and the arc.
fn read_graph(path: &Path) -> Result<(Vec<Value>, CommGraph), CliError> {
    let name = path.display();
    let text = crate::error::Error::read_text(path, "read graph")?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::input(format!("{name}: malformed JSON: {e}")))?;
    let edges = v.get("edges").and_then(Value::as_array).ok_or_else(|| {
        CliError::input(format!(
            "{name}: expected an object with an \"edges\" array"
        ))
    })?;
    let mut ids = Vec::with_capacity(edges.len());
    let mut graph = CommGraph::default();
    for (i, e) in edges.iter().enumerate() {
        let id = e.get("id").cloned().unwrap_or_else(|| json!(i));
        let place = format!("{name}: edge #{i} (id {id})");
        let field = |f: &str, max: u64| -> Result<u64, CliError> {
            let x = e
                .get(f)
                .ok_or_else(|| CliError::input(format!("{place}: missing \"{f}\"")))?;
            match x.as_u64() {
                Some(n) if n <= max => Ok(n),
                _ if x.as_f64().is_some_and(|f| f < 0.0) => Err(CliError::input(format!(
                    "{place}: \"{f}\" = {x} is negative"
                ))),
                _ => Err(CliError::input(format!(
                    "{place}: \"{f}\" = {x} is not an integer in 0..={max}"
                ))),
            }
        };
        let src = field("src", u32::MAX as u64)? as u32;
        let dst = field("dst", u32::MAX as u64)? as u32;
        let bytes = field("bytes", u64::MAX)?;
        if src == dst {
            return Err(CliError::input(format!(
                "{place}: self-loop from node {src} to itself (intra-node traffic is not a network arc)"
            )));
        }
        ids.push(id);
        graph.edges.push(Edge { src, dst, bytes });
    }
    Ok((ids, graph))
}

fn collective(a: &CollectiveArgs) -> Result<Value, CliError> {
    if a.procs < 2 {
        return Err(CliError::input(format!(
            "--procs {}: a collective needs at least 2 processes",
            a.procs
        )));
    }
    if a.bytes < 0 {
        return Err(CliError::input(format!(
            "--bytes {}: message size must be >= 0",
            a.bytes
        )));
    }
    let (p, m) = (a.procs as u64, a.bytes as u64);
    let profile = match &a.profile {
        Some(path) => Profile::load(path)?,
        None => Profile::builtin_default(),
    };
    let bad = |e: crate::model::ModelError| CliError::input(e.to_string());
    let pl = profile.plogp_or_hockney();
    let all: Vec<Prediction> = match a.op {
        Op::Bcast => match &a.strategy {
            _ if a.all_strategies => bcast::rank(&pl, p, m).map_err(bad)?,
            s => {
                let s =
                    BcastStrategy::from_name(s.as_deref().unwrap_or("binomial")).map_err(bad)?;
                vec![bcast::predict(&pl, s, p, m).map_err(bad)?]
            }
        },
        Op::Scatter => match &a.strategy {
            _ if a.all_strategies => scatter::rank(&pl, p, m).map_err(bad)?,
            s => {
                let s = ScatterStrategy::from_name(s.as_deref().unwrap_or("flat")).map_err(bad)?;
                vec![scatter::predict(&pl, s, p, m).map_err(bad)?]
            }
        },
        Op::Alltoall => alltoall_predictions(&profile, a, p, m)?,
    };
    let base = json!({"op": op_name(a.op), "procs": p, "bytes": m});
    let mut out = base.as_object().cloned().unwrap_or_default();
    if a.all_strategies {
        out.insert("ranking".into(), json!(all));
    } else if let Some(one) = all.into_iter().next()
        && let Ok(Value::Object(o)) = serde_json::to_value(one)
    {
        out.extend(o);
    }
    Ok(Value::Object(out))
}

const ALLTOALL_STRATEGIES: &str = "signature, lower-bound, upper-lower";

fn alltoall_predictions(
    profile: &Profile,
    a: &CollectiveArgs,
    p: u64,
    m: u64,
) -> Result<Vec<Prediction>, CliError> {
    let bad = |e: crate::model::ModelError| CliError::input(e.to_string());
    let h = &profile.hockney.inter;
    let one = |name: &str| -> Result<Option<Prediction>, CliError> {
        let (strategy, seconds) = match name {
            "signature" => (
                "signature",
                profile.alltoall_at(m).predict(h, p, m).map_err(bad)?,
            ),
            "lower-bound" => ("lower-bound", alltoall::lower_bound(h, p, m).map_err(bad)?),
            "upper-lower" => match profile.upper_lower_gamma {
                Some(g) => (
                    "upper-lower",
                    alltoall::upper_lower_ratio(&profile.plogp_or_hockney(), p, m, g)
                        .map_err(bad)?,
                ),
                None => return Ok(None),
            },
            other => {
                return Err(CliError::input(format!(
                    "unknown alltoall strategy '{other}' (known: {ALLTOALL_STRATEGIES})"
                )));
            }
        };
        Ok(Some(Prediction {
            strategy,
            seconds,
            segment_bytes: None,
        }))
    };
    if a.all_strategies {
        let mut v = Vec::new();
        for s in ["signature", "lower-bound", "upper-lower"] {
            v.extend(one(s)?);
        }
        v.sort_by(|x, y| x.seconds.total_cmp(&y.seconds));
        return Ok(v);
    }
    let name = a.strategy.as_deref().unwrap_or("signature");
    match one(name)? {
        Some(p) => Ok(vec![p]),
        None => Err(CliError::input(
            "alltoall strategy upper-lower needs \"upper_lower_gamma\" in the profile",
        )),
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Alltoall => "alltoall",
        Op::Bcast => "bcast",
        Op::Scatter => "scatter",
    }
}
