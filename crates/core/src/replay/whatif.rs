//! The conditions a recorded run is replayed under: another placement of the ranks on
//! nodes, two clusters joined by a wide-area link, the all-to-all algorithm across them.
//! Parsing and validation only; the replay itself is the same engine.
#![forbid(unsafe_code)]

use super::net::Crossing;
use crate::error::Error;
use crate::model::Hockney;
use crate::topo::placement::Placement;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How ranks are put on nodes (`--placement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementSpec {
    /// Round-robin by node: rank r on node r mod N.
    Rrn,
    /// By processor: nodes filled in turn, C ranks each (rank r on node ⌊r/C⌋).
    Rrp,
    /// The N·C slots shuffled with a seeded generator.
    Random(u64),
    /// One `RANK NODE` line per world rank.
    File(PathBuf),
}

impl FromStr for PlacementSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rrn" => Ok(PlacementSpec::Rrn),
            "rrp" => Ok(PlacementSpec::Rrp),
            "random" => Ok(PlacementSpec::Random(1)),
            _ => match s.strip_prefix("random:") {
                Some(seed) => seed
                    .parse()
                    .map(PlacementSpec::Random)
                    .map_err(|_| format!("placement {s:?}: the seed must be an unsigned integer")),
                None if s.is_empty() => {
                    Err("placement: empty (rrn, rrp, random[:SEED] or a file)".into())
                }
                None => Ok(PlacementSpec::File(PathBuf::from(s))),
            },
        }
    }
}

impl fmt::Display for PlacementSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementSpec::Rrn => f.write_str("rrn"),
            PlacementSpec::Rrp => f.write_str("rrp"),
            PlacementSpec::Random(s) => write!(f, "random:{s}"),
            PlacementSpec::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Name of synthetic node `i`.
pub fn node_name(i: usize) -> String {
    format!("node{i}")
}

/// The placement of `world` ranks by `spec` on `nodes` nodes of `cores` slots each.
/// Synthetic nodes are named `node0`…; a file names its own. More ranks than slots, a
/// rank missing from (or twice in) the file, or a node over its slots is an error.
pub fn place(
    spec: &PlacementSpec,
    world: usize,
    nodes: usize,
    cores: usize,
) -> Result<Placement, Error> {
    if nodes == 0 || cores == 0 {
        return Err(Error::Input(
            "--nodes and --cores-per-node must be at least 1".into(),
        ));
    }
    let slots = nodes.saturating_mul(cores);
    if world > slots {
        return Err(Error::Input(format!(
            "{world} ranks do not fit on {nodes} nodes of {cores} cores ({slots} slots)"
        )));
    }
    let names: Vec<String> = match spec {
        PlacementSpec::Rrn => (0..world).map(|r| node_name(r % nodes)).collect(),
        PlacementSpec::Rrp => (0..world).map(|r| node_name(r / cores)).collect(),
        PlacementSpec::Random(_) if slots > 1 << 24 => {
            return Err(Error::Input(format!(
                "random placement: {slots} slots is too many to shuffle"
            )));
        }
        PlacementSpec::Random(seed) => {
            let mut slot: Vec<usize> = (0..slots).map(|s| s / cores).collect();
            fastrand::Rng::with_seed(*seed).shuffle(&mut slot);
            slot[..world].iter().map(|&n| node_name(n)).collect()
        }
        PlacementSpec::File(p) => {
            let text = Error::read_text(p, "read placement")?;
            let names = parse_map(&text, world).map_err(|e| e.in_file(p))?;
            let pl = Placement::from_names(&names);
            let mut load = vec![0usize; pl.nodes()];
            for &n in &pl.node_of_rank {
                load[n as usize] += 1;
            }
            if let Some((n, &k)) = load.iter().enumerate().find(|&(_, &k)| k > cores) {
                return Err(Error::Input(format!(
                    "{}: node {} holds {k} ranks, more than --cores-per-node {cores}",
                    p.display(),
                    pl.names[n]
                )));
            }
            if pl.nodes() > nodes {
                return Err(Error::Input(format!(
                    "{}: {} nodes named, more than --nodes {nodes}",
                    p.display(),
                    pl.nodes()
                )));
            }
            return Ok(pl);
        }
    };
    Ok(Placement::from_names(&names))
}

/// Parses `RANK NODE` lines (blank lines and `#` comments ignored) into one node name per
/// rank `0..world`.
pub fn parse_map(text: &str, world: usize) -> Result<Vec<String>, Error> {
    let mut names: Vec<Option<String>> = vec![None; world];
    let bad = |ln: usize, m: String| Error::Input(format!("line {}: {m}", ln + 1));
    for (ln, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut f = line.split_whitespace();
        let (Some(r), Some(node), None) = (f.next(), f.next(), f.next()) else {
            return Err(bad(ln, "expected `RANK NODE`".into()));
        };
        let r: usize = r
            .parse()
            .map_err(|_| bad(ln, format!("rank {r:?} is not a number")))?;
        let slot = names.get_mut(r).ok_or_else(|| {
            bad(
                ln,
                format!("rank {r} is not in the run (world size {world})"),
            )
        })?;
        if slot.is_some() {
            return Err(bad(ln, format!("rank {r} is placed twice")));
        }
        *slot = Some(node.to_string());
    }
    let missing: Vec<String> = (0..world)
        .filter(|&r| names[r].is_none())
        .map(|r| r.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Input(format!(
            "rank(s) {} missing from the map",
            missing.join(", ")
        )));
    }
    Ok(names.into_iter().flatten().collect())
}

/// All-to-all across two clusters (`--alltoall`): the grid paper's direct exchange (Eq. 6)
/// or its Local Group algorithm (Eq. 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AlltoallAlgo {
    #[default]
    Direct,
    LocalGroup,
}

impl FromStr for AlltoallAlgo {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "direct" => Ok(AlltoallAlgo::Direct),
            "local-group" | "lg" => Ok(AlltoallAlgo::LocalGroup),
            _ => Err(format!(
                "unknown all-to-all algorithm {s:?} (direct, local-group)"
            )),
        }
    }
}

impl fmt::Display for AlltoallAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AlltoallAlgo::Direct => "direct",
            AlltoallAlgo::LocalGroup => "local-group",
        })
    }
}

/// Who runs the MPI library's progress engine (`--progress`): the ranks, inside their MPI
/// calls (`library`: as Open MPI 4.1 over TCP does by default, so an inter-node
/// rendezvous message moves only once both ranks are in a blocking call or a completion;
/// docs/engine.md), or a thread of its own (`async`: the message moves as soon as both
/// sides are posted, overlapping the ranks' computation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    #[default]
    Library,
    Async,
}

impl FromStr for ProgressMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "library" => Ok(ProgressMode::Library),
            "async" => Ok(ProgressMode::Async),
            _ => Err(format!("unknown progress mode {s:?} (library, async)")),
        }
    }
}

impl fmt::Display for ProgressMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgressMode::Library => "library",
            ProgressMode::Async => "async",
        })
    }
}

/// Two (or more) clusters and the wide-area link between them, resolved against a
/// placement: `cluster_of_node[n]` for each node id.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    pub names: Vec<String>,
    pub cluster_of_node: Vec<u32>,
    /// Latency and inverse bandwidth of the wide-area link, for one message alone.
    pub wan: Hockney,
    /// How messages crossing at once slow each other: measured (the file's
    /// `wan.crossing`), else shared equally at the file's `backbone_beta`, the seconds per
    /// byte of the whole backbone in one direction (`wan.beta` for a single link).
    pub crossing: Crossing,
    /// Message size the crossing penalties were measured with (0: not measured).
    pub crossing_bytes: u64,
}

impl Clusters {
    /// Cluster of node `n` (0 for an unknown node).
    pub fn of(&self, n: u32) -> u32 {
        self.cluster_of_node.get(n as usize).copied().unwrap_or(0)
    }
    /// Whether nodes `a` and `b` are in different clusters.
    pub fn crosses(&self, a: u32, b: u32) -> bool {
        self.of(a) != self.of(b)
    }
    /// Time on the backbone of `flows` messages of `bytes` each crossing each way at once
    /// (latency apart): one message's wide-area transfer times the crossing penalty.
    pub fn crossing_s(&self, flows: u64, bytes: f64) -> f64 {
        let k = flows.min(u32::MAX as u64) as u32;
        bytes * self.wan.beta * self.crossing.penalty(k, k)
    }
}

/// The `--clusters` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClustersFile {
    /// Cluster name → its nodes.
    clusters: std::collections::BTreeMap<String, Vec<String>>,
    wan: WanFile,
    /// What `calibrate --clusters` measured (kept for the user, not read).
    #[serde(default, rename = "calibration")]
    _calibration: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WanFile {
    /// Latency, seconds.
    alpha: f64,
    /// Seconds per byte, one message alone.
    beta: f64,
    /// Seconds per byte of the whole backbone (default: `beta`, a single link).
    backbone_beta: Option<f64>,
    /// Measured penalties of messages crossing at once (`calibrate --clusters`).
    crossing: Option<CrossingFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CrossingFile {
    /// Message size of the measurement.
    bytes: u64,
    /// Penalty of k messages crossing one way at once, k = 1, 2, ...
    one_way: Vec<f64>,
    /// Penalty of k messages crossing each way at once, k = 1, 2, ...
    #[serde(default)]
    both_ways: Vec<f64>,
}

/// Reads a clusters file (JSON: `{"clusters": {"A": ["node0", ...], "B": [...]},
/// "wan": {"alpha": S, "beta": S_PER_BYTE, "backbone_beta": S_PER_BYTE, "crossing":
/// {"bytes": B, "one_way": [P1, P2, ...], "both_ways": [...]}}}`, the last two optional)
/// and resolves it against `placement`: every node of the placement in exactly one
/// cluster.
pub fn load_clusters(path: &Path, placement: &Placement) -> Result<Clusters, Error> {
    let text = Error::read_text(path, "read clusters file")?;
    parse_clusters(&text, placement).map_err(|e| e.in_file(path))
}

/// Parses a clusters file's text; see [`load_clusters`].
pub fn parse_clusters(text: &str, placement: &Placement) -> Result<Clusters, Error> {
    let f: ClustersFile = serde_json::from_str(text).map_err(|e| Error::Input(e.to_string()))?;
    let wan =
        Hockney::new(f.wan.alpha, f.wan.beta).map_err(|e| Error::Input(format!("wan: {e}")))?;
    let backbone_beta = f.wan.backbone_beta.unwrap_or(wan.beta);
    if !(backbone_beta.is_finite() && backbone_beta >= 0.0 && backbone_beta <= wan.beta) {
        return Err(Error::Input(format!(
            "wan: backbone_beta {backbone_beta} must be between 0 and beta {} (the backbone is at least as fast as one message on it)",
            wan.beta
        )));
    }
    let (crossing, crossing_bytes) = match &f.wan.crossing {
        None => (
            Crossing::fair(if backbone_beta > 0.0 {
                wan.beta / backbone_beta
            } else {
                f64::INFINITY
            }),
            0,
        ),
        Some(c) => {
            for (name, t) in [("one_way", &c.one_way), ("both_ways", &c.both_ways)] {
                if let Some(p) = t.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
                    return Err(Error::Input(format!(
                        "wan: crossing.{name}: penalty {p} must be a positive number"
                    )));
                }
            }
            if c.one_way.is_empty() {
                return Err(Error::Input(
                    "wan: crossing.one_way: give the penalty of at least one message (k = 1)"
                        .into(),
                ));
            }
            if c.bytes == 0 {
                return Err(Error::Input(
                    "wan: crossing.bytes: the message size measured must be positive".into(),
                ));
            }
            (
                Crossing {
                    lanes: 1.0,
                    one_way: c.one_way.clone(),
                    both_ways: c.both_ways.clone(),
                },
                c.bytes,
            )
        }
    };
    if f.clusters.len() < 2 {
        return Err(Error::Input("name at least two clusters".into()));
    }
    let mut of: Vec<Option<u32>> = vec![None; placement.nodes()];
    let mut names = Vec::new();
    for (ci, (name, nodes)) in f.clusters.iter().enumerate() {
        names.push(name.clone());
        for n in nodes {
            let Some(id) = placement.names.iter().position(|x| x == n) else {
                return Err(Error::Input(format!(
                    "cluster {name}: node {n:?} is not in the placement (nodes: {})",
                    placement.names.join(", ")
                )));
            };
            if of[id].is_some() {
                return Err(Error::Input(format!("node {n:?} is in two clusters")));
            }
            of[id] = Some(ci as u32);
        }
    }
    let missing: Vec<&str> = of
        .iter()
        .zip(&placement.names)
        .filter(|(c, _)| c.is_none())
        .map(|(_, n)| n.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Input(format!(
            "node(s) {} in no cluster",
            missing.join(", ")
        )));
    }
    Ok(Clusters {
        names,
        cluster_of_node: of.into_iter().flatten().collect(),
        wan,
        crossing,
        crossing_bytes,
    })
}

/// Everything a replay can change about the recorded run's conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    pub placement: Placement,
    pub clusters: Option<Clusters>,
    pub alltoall: AlltoallAlgo,
    /// Factor on every recorded compute gap ([`compute_scale`]; 1: as recorded).
    pub compute_scale: f64,
    /// Who runs the progress engine ([`ProgressMode`]; `Library`: as recorded).
    pub progress: ProgressMode,
    /// Each node a machine of this many CPUs, whose ranks wait for one where they
    /// outnumber them ([`crate::replay::cpus`]); None: the machines as recorded.
    pub cpus_per_node: Option<u32>,
}

/// The share of the hosts' CPU time their interrupts took in the recorded run and would
/// take on the replayed network, and the factor on the recorded compute that follows.
/// Interrupts (the network's packets; on an emulated cluster also its shapers' timers)
/// take CPU time from whatever runs, the ranks' compute too: LAMMPS's compute between its
/// MPI calls took 10 % longer recorded at 100 Mbit/s than at 1 Gbit/s on the emulated
/// cluster, where the interrupts took 10.7 % and 1.2 % of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HostShare {
    pub recorded: f64,
    pub predicted: f64,
    pub scale: f64,
}

/// The most of the hosts' time interrupts are taken to use, recorded or predicted: a
/// figure above it is a machine busy with something else (or a profile gone wrong).
const MOST_IRQ: f64 = 0.5;

/// [`HostShare`] of a run whose hosts' interrupts took `recorded` of their time while it
/// sent `bytes_src` bytes between nodes over `t_src` seconds, on the network whose
/// profile measured `cost_src` seconds of interrupts per byte sent between nodes,
/// replayed onto one of `cost_tgt` where it sends `bytes_tgt` bytes over `t_tgt` seconds:
/// the interrupts' share follows the bytes each second and the cost of each byte. None
/// where a figure is missing or out of range (no scaling).
pub fn host_share(
    recorded: f64,
    cost_src: f64,
    cost_tgt: f64,
    bytes_src: f64,
    bytes_tgt: f64,
    t_src: f64,
    t_tgt: f64,
) -> Option<HostShare> {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let at_least_0 = |x: f64| x.is_finite() && x >= 0.0;
    let usable = (0.0..=MOST_IRQ).contains(&recorded)
        && positive(cost_src)
        && at_least_0(cost_tgt)
        && positive(bytes_src)
        && at_least_0(bytes_tgt)
        && positive(t_src)
        && positive(t_tgt);
    if !usable {
        return None;
    }
    let predicted = recorded * (cost_tgt / cost_src) * (bytes_tgt / bytes_src) * (t_src / t_tgt);
    let predicted = predicted.min(MOST_IRQ);
    Some(HostShare {
        recorded,
        predicted,
        scale: (1.0 - recorded) / (1.0 - predicted),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compute_loses_what_the_recorded_interrupts_took_and_pays_the_new_ones() {
        // 100 Mbit/s -> 1 Gbit/s: interrupts 10 % of the machine while 360 MB crossed in
        // 20 s; 1/40 of the cost per byte, the same bytes in 5 s: 1 % predicted.
        let h = host_share(0.10, 13e-9, 13e-9 / 40.0, 360e6, 360e6, 20.0, 5.0).unwrap();
        assert!((h.predicted - 0.01).abs() < 1e-12, "{h:?}");
        assert!((h.scale - 0.9 / 0.99).abs() < 1e-12, "{h:?}");
        // The same network, bytes and time: the recorded compute unchanged.
        let same = host_share(0.10, 13e-9, 13e-9, 360e6, 360e6, 20.0, 20.0).unwrap();
        assert!((same.scale - 1.0).abs() < 1e-12);
        // The other way: the slower network's interrupts come out of the compute.
        let back = host_share(0.01, 13e-9 / 40.0, 13e-9, 360e6, 360e6, 5.0, 20.0).unwrap();
        assert!((back.predicted - 0.1).abs() < 1e-12 && back.scale < 1.0 / 0.9 + 1e-9);
        // Half the bytes cross nodes under the new placement: half the interrupts.
        let placed = host_share(0.10, 1e-8, 1e-8, 360e6, 180e6, 20.0, 20.0).unwrap();
        assert!((placed.predicted - 0.05).abs() < 1e-12);
        // Capped, and nothing where a figure is missing.
        assert_eq!(
            host_share(0.2, 1e-9, 1e-7, 1.0, 1.0, 1.0, 1.0)
                .unwrap()
                .predicted,
            MOST_IRQ
        );
        assert_eq!(host_share(0.1, 0.0, 1e-9, 1.0, 1.0, 1.0, 1.0), None);
        assert_eq!(host_share(0.1, 1e-9, 1e-9, 0.0, 1.0, 1.0, 1.0), None);
        assert_eq!(host_share(0.9, 1e-9, 1e-9, 1.0, 1.0, 1.0, 1.0), None);
        assert_eq!(host_share(f64::NAN, 1e-9, 1e-9, 1.0, 1.0, 1.0, 1.0), None);
    }

    fn nodes(p: &Placement) -> Vec<u32> {
        p.node_of_rank.clone()
    }

    #[test]
    fn rrn_and_rrp() {
        let rrn = place(&PlacementSpec::Rrn, 8, 4, 2).unwrap();
        assert_eq!(nodes(&rrn), vec![0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(rrn.names[3], "node3");
        let rrp = place(&PlacementSpec::Rrp, 8, 4, 2).unwrap();
        assert_eq!(nodes(&rrp), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert!(
            place(&PlacementSpec::Rrp, 9, 4, 2)
                .unwrap_err()
                .to_string()
                .contains("do not fit")
        );
    }

    #[test]
    fn random_is_seeded_and_respects_slots() {
        let a = place(&PlacementSpec::Random(7), 8, 4, 2).unwrap();
        let b = place(&PlacementSpec::Random(7), 8, 4, 2).unwrap();
        assert_eq!(a, b);
        let mut per = std::collections::HashMap::new();
        for (r, &n) in a.node_of_rank.iter().enumerate() {
            *per.entry(a.names[n as usize].clone()).or_insert(0) += 1;
            assert!(r < 8);
        }
        assert!(per.values().all(|&k| k <= 2));
        assert_eq!(per.values().sum::<i32>(), 8);
    }

    #[test]
    fn specs_parse() {
        assert_eq!("rrn".parse::<PlacementSpec>().unwrap(), PlacementSpec::Rrn);
        assert_eq!(
            "random:42".parse::<PlacementSpec>().unwrap(),
            PlacementSpec::Random(42)
        );
        assert!("random:x".parse::<PlacementSpec>().is_err());
        assert_eq!(
            "map.txt".parse::<PlacementSpec>().unwrap(),
            PlacementSpec::File("map.txt".into())
        );
        assert_eq!(
            "lg".parse::<AlltoallAlgo>().unwrap(),
            AlltoallAlgo::LocalGroup
        );
        assert!("ring".parse::<AlltoallAlgo>().is_err());
    }

    #[test]
    fn map_file_errors_name_the_rank() {
        assert_eq!(
            parse_map("0 a\n1 b # comment\n\n2 a\n", 3).unwrap(),
            vec!["a", "b", "a"]
        );
        assert!(
            parse_map("0 a\n2 a\n", 3)
                .unwrap_err()
                .to_string()
                .contains("rank(s) 1 missing")
        );
        assert!(
            parse_map("0 a\n0 b\n1 a\n", 2)
                .unwrap_err()
                .to_string()
                .contains("placed twice")
        );
        assert!(
            parse_map("0 a\n5 b\n", 2)
                .unwrap_err()
                .to_string()
                .contains("not in the run")
        );
        assert!(
            parse_map("0\n", 1)
                .unwrap_err()
                .to_string()
                .contains("line 1: expected `RANK NODE`")
        );
    }

    #[test]
    fn clusters_resolve_against_the_placement() {
        let p = place(&PlacementSpec::Rrp, 4, 4, 1).unwrap();
        let c = parse_clusters(
            r#"{"clusters": {"A": ["node0"], "B": ["node1", "node2", "node3"]},
                "wan": {"alpha": 0.01, "beta": 1e-7}}"#,
            &p,
        )
        .unwrap();
        assert_eq!(c.cluster_of_node, vec![0, 1, 1, 1]);
        assert!(c.crosses(0, 2) && !c.crosses(1, 3));
        let missing = parse_clusters(
            r#"{"clusters": {"A": ["node0"], "B": ["node1"]}, "wan": {"alpha": 0, "beta": 0}}"#,
            &p,
        );
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("node2, node3 in no cluster")
        );
        let unknown = parse_clusters(
            r#"{"clusters": {"A": ["x"], "B": ["node1"]}, "wan": {"alpha": 0, "beta": 0}}"#,
            &p,
        );
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("\"x\" is not in the placement")
        );
    }

    #[test]
    fn measured_crossing_penalties_are_read_and_checked() {
        let p = place(&PlacementSpec::Rrp, 4, 4, 1).unwrap();
        let file = |crossing: &str| {
            parse_clusters(
                &format!(
                    r#"{{"clusters": {{"A": ["node0", "node1"], "B": ["node2", "node3"]}},
                        "wan": {{"alpha": 0.002, "beta": 4e-7{crossing}}}}}"#
                ),
                &p,
            )
        };
        // Without measurements: shared equally at backbone_beta (here beta: one lane).
        let fair = file("").unwrap();
        assert_eq!(fair.crossing.penalty(4, 0), 4.0);
        assert_eq!(fair.crossing_bytes, 0);
        assert!((fair.crossing_s(4, 1000.0) - 4.0 * 1000.0 * 4e-7).abs() < 1e-15);
        let c = file(
            r#", "crossing": {"bytes": 65536, "one_way": [1.0, 2.5], "both_ways": [1.1, 3.0]}"#,
        )
        .unwrap();
        assert_eq!(c.crossing_bytes, 65536);
        assert_eq!(c.crossing.penalty(2, 0), 2.5);
        assert_eq!(c.crossing.penalty(2, 1), 3.0);
        // Past the table: the last penalty per message, times the count.
        assert_eq!(c.crossing.penalty(4, 4), 6.0);
        assert!((c.crossing_s(2, 1000.0) - 3.0 * 1000.0 * 4e-7).abs() < 1e-15);
        for (bad, why) in [
            (
                r#", "crossing": {"bytes": 65536, "one_way": []}"#,
                "at least one",
            ),
            (
                r#", "crossing": {"bytes": 65536, "one_way": [1.0, -2]}"#,
                "one_way: penalty -2",
            ),
            (
                r#", "crossing": {"bytes": 0, "one_way": [1.0]}"#,
                "crossing.bytes",
            ),
            (
                r#", "crossing": {"bytes": 1, "one_way": [1.0], "x": 1}"#,
                "unknown field",
            ),
        ] {
            let e = file(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
