//! `pmpi-predict profile show PROFILE.json | --default`: a calibration profile as readable
//! tables (parameters, fit quality, measured penalties). `profile refit IN -o OUT`: the
//! inter-node token bucket and its bytes' cost (`burst`, `burst_gamma`) fitted again from
//! the ping-pong the profile keeps, by this build's rule, without measuring again. A missing or invalid file exits with status 2
//! and the loader's message (file, field, line).
#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::{CliError, exit_status};
use crate::profile::Profile;

#[derive(Subcommand, Debug)]
pub enum ProfileCmd {
    /// Print a profile's parameters and fit quality as tables.
    Show(ShowArgs),
    /// Fit the inter-node token bucket (`hockney.inter.burst`, and `burst_gamma`, what its
    /// bytes cost) again from the profile's recorded ping-pong (`raw.pingpong_inter`), by
    /// this build's rule; write the profile with it to OUT.
    Refit(RefitArgs),
}

#[derive(Args, Debug)]
pub struct RefitArgs {
    /// The profile (JSON) written by `calibrate`.
    file: PathBuf,
    /// Where to write the re-fitted profile (may be FILE itself).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["file", "default"])))]
pub struct ShowArgs {
    /// The profile (JSON) to show.
    file: Option<PathBuf>,
    /// Show the built-in default profile instead of a file.
    #[arg(long)]
    default: bool,
}

/// Runs a `profile` subcommand; returns the exit status.
pub fn run(c: ProfileCmd) -> i32 {
    match c {
        ProfileCmd::Show(a) => exit_status(show(&a)),
        ProfileCmd::Refit(a) => exit_status(refit(&a)),
    }
}

fn refit(a: &RefitArgs) -> Result<(), CliError> {
    let mut p = Profile::load(&a.file)?;
    let name = a.file.display();
    let pp = p
        .raw
        .as_ref()
        .and_then(|r| r.get("pingpong_inter"))
        .ok_or_else(|| {
            CliError::input(format!(
                "profile {name}: no raw.pingpong_inter (a profile that calibrate measured between two nodes keeps it)"
            ))
        })?;
    let (Some(bytes), Some(secs)) = (numbers(pp, "bytes"), numbers(pp, "one_way_s")) else {
        return Err(CliError::input(format!(
            "profile {name}: raw.pingpong_inter needs arrays \"bytes\" and \"one_way_s\" of numbers"
        )));
    };
    if bytes.len() != secs.len() {
        return Err(CliError::input(format!(
            "profile {name}: raw.pingpong_inter has {} sizes and {} times",
            bytes.len(),
            secs.len()
        )));
    }
    let samples: Vec<(f64, f64)> = bytes.into_iter().zip(secs).collect();
    let f = crate::calibrate::fit::fit_hockney(&samples)
        .map_err(|e| CliError::input(format!("profile {name}: ping-pong: {e}")))?;
    // Measured with full buckets where calibrate probed them (since the twenty-seventh
    // session), else from the ping-pong alone.
    let probe = p.raw.as_ref().and_then(|r| r.get("bucket_probe"));
    let (burst, gamma) = match probe {
        Some(probe) => {
            let b0 = probe.get("ping_pong_burst").and_then(|x| x.as_f64());
            let (Some(bytes), Some(secs), Some(b0)) =
                (numbers(probe, "bytes"), numbers(probe, "one_way_s"), b0)
            else {
                return Err(CliError::input(format!(
                    "profile {name}: raw.bucket_probe needs arrays \"bytes\" and \"one_way_s\" and a number \"ping_pong_burst\""
                )));
            };
            let samples: Vec<(f64, f64)> = bytes.into_iter().zip(secs).collect();
            crate::calibrate::fit::probed_bucket(&samples, p.hockney.inter.beta, b0)
        }
        None => (f.hockney.burst, f.hockney.burst_gamma),
    };
    let (old, old_gamma) = (p.hockney.inter.burst, p.hockney.inter.burst_gamma);
    p.hockney.inter = p
        .hockney
        .inter
        .with_burst(burst)
        .and_then(|h| h.with_burst_gamma(gamma))
        .map_err(|e| CliError::internal(e.to_string()))?;
    // The socket buffer per size, from the sends calibrate timed (older profiles kept
    // them but not this table).
    if let Some(sr) = p.raw.as_ref().and_then(|r| r.get("send_return"))
        && let (Some(bytes), Some(send), Some(recv)) = (
            numbers(sr, "bytes"),
            numbers(sr, "send_s"),
            numbers(sr, "recv_s"),
        )
        && bytes.len() == send.len()
        && bytes.len() == recv.len()
    {
        let sizes: Vec<usize> = bytes.iter().map(|&b| b as usize).collect();
        let times: Vec<(f64, f64)> = send.into_iter().zip(recv).collect();
        p.socket_buffer_by_size =
            crate::calibrate::fit::socket_buffer_by_size(&sizes, &times, p.hockney.inter.beta);
    }
    std::fs::write(&a.output, p.to_json() + "\n")
        .map_err(|e| CliError::io(format!("write {}: {e}", a.output.display())))?;
    println!(
        "{}: hockney.inter.burst {old:.0} -> {:.0} B, burst_gamma {:.2} -> {:.2} ns/B",
        a.output.display(),
        p.hockney.inter.burst,
        old_gamma * 1e9,
        p.hockney.inter.burst_gamma * 1e9
    );
    Ok(())
}

/// The array of numbers at key `k` of a kept measurement (`raw.*`); None where it is
/// missing or holds anything else.
fn numbers(v: &Value, k: &str) -> Option<Vec<f64>> {
    v.get(k)?.as_array()?.iter().map(|x| x.as_f64()).collect()
}

fn show(a: &ShowArgs) -> Result<(), CliError> {
    let (p, title) = match &a.file {
        Some(f) if !a.default => (Profile::load(f)?, f.display().to_string()),
        _ => (Profile::builtin_default(), "built-in default".to_string()),
    };
    print!("{}", render(&p, &title));
    Ok(())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn mbit(beta: f64) -> String {
    if beta <= 0.0 {
        return "inf".into();
    }
    let bps = 8.0 / beta;
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else {
        format!("{:.1} Mbit/s", bps / 1e6)
    }
}

/// The profile as text tables. `title` names where it came from.
pub fn render(p: &Profile, title: &str) -> String {
    let mut o = String::new();
    let res = p.residuals.as_ref();
    let rget = |path: &[&str]| -> Option<&Value> {
        let mut v = res?;
        for k in path {
            v = v.get(k)?;
        }
        Some(v)
    };
    let _ = writeln!(o, "Profile: {title} (version {})", p.version);
    if let Some(d) = &p.date {
        let _ = writeln!(o, "  date:        {d}");
    }
    if let Some(m) = &p.mpi_library {
        let first = m.lines().next().unwrap_or("");
        let _ = writeln!(o, "  MPI library: {first}");
    }
    if !p.nodes.is_empty() {
        let _ = writeln!(o, "  nodes:       {}", p.nodes.join(" "));
    }
    if let Some(e) = &p.eager {
        let b = |v: Option<u64>| {
            v.map_or("library default".to_string(), |x| {
                format!("rendezvous from {x} B")
            })
        };
        let src = match e.source {
            crate::profile::EagerSource::MpiT => "read through MPI_T".to_string(),
            crate::profile::EagerSource::User => "given".to_string(),
            crate::profile::EagerSource::Measured => {
                // What MPI_T said, beside the measurement.
                let t = p
                    .raw
                    .as_ref()
                    .map(|r| &r["eager_knee"]["mpi_t"])
                    .filter(|t| t.is_object());
                let v = |k: &str| {
                    t.and_then(|t| t[k].as_u64())
                        .map_or("not exposed".to_string(), |x| format!("{x} B"))
                };
                format!(
                    "measured by a late-receiver probe; MPI_T: {} between nodes, {} within a node",
                    v("inter"),
                    v("intra")
                )
            }
        };
        let _ = writeln!(
            o,
            "  eager limit: {} between nodes, {} within a node ({src})",
            b(e.inter),
            b(e.intra)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Point-to-point (Hockney T = alpha + beta*m)\n  {:<12} {:>12} {:>14} {:>14} {:>10}",
        "", "alpha", "beta (s/B)", "bandwidth", "fit rms"
    );
    for (name, h, key) in [
        ("inter-node", p.hockney.inter, "hockney_inter"),
        ("intra-node", p.hockney.intra, "hockney_intra"),
    ] {
        let fit = rget(&[key, "rms_rel"]).and_then(Value::as_f64);
        let _ = writeln!(
            o,
            "  {:<12} {:>9.2} us {:>14.4e} {:>14} {:>10}",
            name,
            h.alpha * 1e6,
            h.beta,
            mbit(h.beta),
            if res.is_some() && fit.is_none() {
                "default".into()
            } else {
                pct(fit)
            }
        );
    }
    // Only between nodes: the replay keeps token buckets on the nodes' network ports, and
    // a burst in `hockney.intra` would be ignored.
    if p.hockney.inter.burst > 0.0 {
        let _ = writeln!(
            o,
            "  inter-node burst allowance {:.0} B: a message up to it crosses in alpha alone (a shaper's token bucket); a larger one takes its bytes at {:.2} ns/B, the rest at beta",
            p.hockney.inter.burst,
            p.hockney.inter.burst_gamma * 1e9
        );
    }
    if let Some(x) = p.exchange {
        let _ = writeln!(
            o,
            "  inter-node exchange: a small message that crosses the reverse one takes {:.2} us more (alpha is the median one-way time)",
            x * 1e6
        );
    }
    if !p.cold_call.is_empty() {
        let steps: Vec<String> = p
            .cold_call
            .iter()
            .map(|e| format!("{} ms +{:.1} us", e[0] * 1e3, e[1] * 1e6))
            .collect();
        let _ = writeln!(
            o,
            "  a blocking call between nodes after time outside MPI takes more: {}",
            steps.join(", ")
        );
    }
    for l in &p.latency_placed {
        let _ = writeln!(
            o,
            "  inter-node alpha with all {} ranks ping-ponging at once, {} per node: {:.2} us (runs launched so take it)",
            l.procs,
            l.per_node,
            l.alpha * 1e6
        );
        if let Some(step) = l.step {
            let _ = writeln!(
                o,
                "    a collective's step there (an 8-byte MPI_Allreduce of all {} ranks): {:.2} us",
                l.procs,
                step * 1e6
            );
        }
    }
    if let Some(h) = p.host {
        let _ = writeln!(
            o,
            "  the hosts' interrupts: {:.2} ns of CPU per byte sent between nodes (replay --compute auto)",
            h.irq_s_per_byte * 1e9
        );
    }
    let _ = writeln!(o);
    let errs = rget(&["penalty", "mean_abs_rel_error_pct"]);
    let _ = writeln!(
        o,
        "Bandwidth-sharing penalty: model {}\n  {:<11} {:<44} {:>12}",
        p.penalty.model, "model", "parameters", "mean |Erel|"
    );
    let params = |m: &str| -> String {
        let v = p.penalty.params_of(m);
        if v.is_empty() {
            "(none)".into()
        } else {
            v.iter()
                .map(|(k, x)| {
                    if x.fract() == 0.0 && x.abs() < 1e15 {
                        format!("{k}={x:.0}")
                    } else {
                        format!("{k}={x:.4}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    for m in crate::model::ModelName::ALL.map(crate::model::ModelName::as_str) {
        let e = errs
            .and_then(|e| e.get(m))
            .and_then(Value::as_f64)
            .map_or("-".into(), |x| format!("{x:.1}%"));
        let mark = if m == p.penalty.model { "*" } else { " " };
        let _ = writeln!(o, "{mark} {:<11} {:<44} {:>12}", m, params(m), e);
    }
    let _ = writeln!(
        o,
        "  under every model: reverse-flow factor {:.2}, through-flow factor {:.2}; a port carries {}",
        p.penalty.reverse,
        p.penalty.through,
        p.penalty
            .port_capacity
            .map_or("what the model says (not measured)".into(), |c| format!(
                "{c:.2} lone message(s)' worth each way"
            ))
    );
    let _ = writeln!(
        o,
        "  contended rendezvous flows' time over the model's: {}",
        p.penalty.dispersion.as_ref().map_or_else(
            || "the model's (no dispersion measured)".to_string(),
            |q| {
                let all: Vec<String> = q.iter().map(|x| format!("{x:.2}")).collect();
                format!("quantiles 0, 10 %, ..., 100 %: {}", all.join(" "))
            }
        )
    );
    if let Some(pen) = p.raw.as_ref().and_then(|r| r.get("penalty")) {
        let bytes = pen.get("bytes").and_then(Value::as_u64).unwrap_or(0);
        let tref = pen.get("t_ref_s").and_then(Value::as_f64).unwrap_or(0.0);
        let _ = writeln!(
            o,
            "  measured penalties ({} KiB messages, T_ref = {:.4} s): scheme (last arrival), per arc",
            bytes / 1024,
            tref
        );
        for s in pen
            .get("schemes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = s.get("name").and_then(Value::as_str).unwrap_or("?");
            let arcs: Vec<String> = s
                .get("arcs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| format!("{}->{}", a[0], a[1]))
                .collect();
            let ps: Vec<String> = s
                .get("penalties")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|x| format!("{:.2}", x.as_f64().unwrap_or(0.0)))
                .collect();
            let whole = s
                .get("scheme_penalty")
                .and_then(Value::as_f64)
                .map_or("-".into(), |w| format!("{w:.2}"));
            let _ = writeln!(
                o,
                "    {:<14} {:<28} {:>6}   {}",
                name,
                arcs.join(" "),
                whole,
                ps.join(" ")
            );
        }
    }
    let _ = writeln!(o);
    let s = p.alltoall;
    let _ = writeln!(
        o,
        "All-to-all signature: gamma = {:.4}, delta = {:.3} ms for m >= {} B (fit rms {})",
        s.gamma,
        s.delta * 1e3,
        s.threshold,
        pct(rget(&["alltoall", "rms_rel"]).and_then(Value::as_f64))
    );
    if !p.alltoall_gamma.is_empty() {
        let _ = writeln!(o, "  gamma per size: {}", p.alltoall_gamma.per_size());
    }
    for pl in &p.alltoall_placed {
        let _ = writeln!(
            o,
            "  {} ranks, {} per node (measured as launched, mean of the slowest rank): {}",
            pl.procs,
            pl.per_node,
            pl.gamma.per_size()
        );
    }
    if let Some(g) = p.upper_lower_gamma {
        let _ = writeln!(o, "Upper/Lower ratio gamma (Table 3): {g:.4}");
    }
    if let Some(pl) = &p.plogp {
        let _ = writeln!(
            o,
            "\npLogP: L = {:.2} us\n  {:>10} {:>12} {:>12} {:>12}",
            pl.l * 1e6,
            "bytes",
            "g (us)",
            "os (us)",
            "or (us)"
        );
        for &(m, g) in &pl.g.points {
            let _ = writeln!(
                o,
                "  {:>10} {:>12.2} {:>12.2} {:>12.2}",
                m,
                g * 1e6,
                pl.send_overhead(m) * 1e6,
                pl.recv_overhead(m) * 1e6
            );
        }
    }
    if let Some(l) = &p.lom {
        let _ = writeln!(
            o,
            "\nLOM (T_ij = C_i + t_i*M + C_j + t_j*M + M/rate_ij)\n  {:<10} {:>10} {:>12}   rate to node j (MB/s)",
            "node", "C (us)", "t (ns/B)"
        );
        for i in 0..l.c.len() {
            let rates: Vec<String> = (0..l.c.len())
                .map(|j| {
                    if i == j {
                        "-".into()
                    } else {
                        format!("{:.2}", l.rate[i][j] / 1e6)
                    }
                })
                .collect();
            let name = p.nodes.get(i).cloned().unwrap_or_else(|| i.to_string());
            let _ = writeln!(
                o,
                "  {:<10} {:>10.2} {:>12.4}   {}",
                name,
                l.c[i] * 1e6,
                l.t[i] * 1e9,
                rates.join(" ")
            );
        }
        let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x} B"));
        let _ = writeln!(
            o,
            "  scatter S = {}, gather M1 = {}, M2 = {}, kappa1 = {:.3e}, kappa2 = {:.3e} s/B",
            f(l.scatter_threshold),
            f(l.gather_m1),
            f(l.gather_m2),
            l.kappa1,
            l.kappa2
        );
    }
    for (key, head) in [("skipped", "Not measured:"), ("notes", "Notes:")] {
        if let Some(list) = p
            .raw
            .as_ref()
            .and_then(|r| r.get(key))
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let _ = writeln!(o, "\n{head}");
            for s in list {
                let _ = writeln!(o, "  {}", s.as_str().unwrap_or(""));
            }
        }
    }
    if let Some(w) = p
        .raw
        .as_ref()
        .and_then(|r| r.get("wall_s"))
        .and_then(Value::as_f64)
    {
        let _ = writeln!(o, "\nCalibration wall time: {w:.1} s");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_renders() {
        let t = render(&Profile::builtin_default(), "built-in default");
        assert!(t.contains("gamma = 1.0195"), "{t}");
        assert!(t.contains("* gige"), "{t}");
        assert!(t.contains("100.0 Mbit/s"), "{t}");
    }

    #[test]
    fn the_latency_as_launched_and_the_interrupt_cost_are_shown() {
        let mut p = Profile::builtin_default();
        p.latency_placed = vec![crate::profile::PlacedLatency {
            procs: 8,
            per_node: 2,
            alpha: 3.625e-5,
            step: Some(5.7e-5),
        }];
        p.host = Some(crate::profile::HostCost {
            irq_s_per_byte: 1.267e-8,
            bytes: 166_133_760,
        });
        let text = render(&p, "x");
        assert!(
            text.contains("with all 8 ranks ping-ponging at once, 2 per node: 36.25 us"),
            "{text}"
        );
        assert!(
            text.contains("8-byte MPI_Allreduce of all 8 ranks): 57.00 us"),
            "{text}"
        );
        assert!(text.contains("12.67 ns of CPU per byte"), "{text}");
    }

    #[test]
    fn measured_eager_limits_render_beside_mpi_t() {
        // MPICH ch4:ucx on one node: only the limit within a node, measured; MPI_T had none.
        let mut p = Profile::builtin_default();
        p.eager = Some(crate::profile::Eager {
            inter: None,
            intra: Some(8256),
            source: crate::profile::EagerSource::Measured,
        });
        p.raw = Some(serde_json::json!({
            "eager_knee": {"inter": null, "intra": "Found { eager: 8255, rendezvous: 8256 }",
                           "mpi_t": {"inter": null, "intra": null}}
        }));
        let t = render(&p, "x");
        assert!(
            t.contains(
                "eager limit: library default between nodes, rendezvous from 8256 B within a node \
                 (measured by a late-receiver probe; MPI_T: not exposed between nodes, not exposed within a node)"
            ),
            "{t}"
        );
    }
}
