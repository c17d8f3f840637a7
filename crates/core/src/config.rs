//! The PMPI_PREDICT_* environment variables, read once at MPI_Init through an injected
//! getter so that parsing is tested without touching the process environment.
//! Every variable here is documented in LD_PRELOAD.md.

use std::path::PathBuf;

/// Layer configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `PMPI_PREDICT_OUT`: output directory (default: `pmpi-predict.<date>-<time>.<pid of rank 0>`).
    pub out_dir: Option<PathBuf>,
    /// `PMPI_PREDICT_NODE`: node name (default: the host name).
    pub node: Option<String>,
    /// `PMPI_PREDICT_BUFFER`: records per thread buffer.
    pub buffer_records: usize,
    /// `PMPI_PREDICT_FLUSH_MS`: drain interval in milliseconds (at most 1000).
    pub flush_ms: u64,
    /// `PMPI_PREDICT_DISABLE`: 1 turns the layer into a pure pass-through.
    pub disabled: bool,
    /// `PMPI_PREDICT_REPORT`: 0 skips the report at MPI_Finalize (spools are still written).
    pub report: bool,
    /// `PMPI_PREDICT_REPORT_MAX_MB`: above this many MB of spooled records, rank 0 skips the
    /// report at MPI_Finalize (so that a huge trace never holds the job: about 3 s per
    /// 100 MB of spools) and says how to run it. Memory is bounded either way: above
    /// `report::BATCH_MAX_BYTES` the report is written as the run is read.
    pub report_max_mb: u64,
    /// `PMPI_PREDICT_BATCH_MAX_MB`: up to this many MB of spooled records the report is
    /// written from the run loaded whole (with trace.json); above, as the run is read, in
    /// memory bounded by what is in flight (without trace.json).
    pub batch_max_mb: u64,
    /// `PMPI_PREDICT_QUIET`: 1 silences the one-line notice rank 0 prints at finalize.
    pub quiet: bool,
    /// `PMPI_PREDICT_MAX_THREADS`: threads per rank that get a buffer.
    pub max_threads: usize,
    /// `PMPI_PREDICT_MAX_COMMS`: communicators (and windows) a rank can have alive at
    /// once with a stable id; the table is sized to it at init.
    pub max_comms: usize,
    /// `PMPI_PREDICT_CLOCK_ROUNDS`: ping-pongs per rank for clock offsets.
    pub clock_rounds: u32,
    /// `PMPI_PREDICT_TSC`: 1 (default) reads the CPU's time-stamp counter where it is
    /// invariant; 0 always calls clock_gettime.
    pub tsc: bool,
    /// `PMPI_PREDICT_SIGNALS`: 1 (default) catches SIGTERM and SIGINT to flush the spool
    /// before the process dies; 0 leaves signal dispositions alone.
    pub catch_signals: bool,
    /// `PMPI_PREDICT_PROFILE`: calibration profile for the predictions at MPI_Finalize
    /// (default: the built-in profile).
    pub profile: Option<PathBuf>,
    /// `PMPI_PREDICT_MODEL`: penalty model overriding the profile's (gige, myrinet,
    /// infiniband, maxmin, none); checked when the report is written.
    pub model: Option<String>,
    /// `PMPI_PREDICT_BCAST`: broadcast strategy assumed for every MPI_Bcast (Table 1 name)
    /// instead of the library's decision (Open MPI's or MPICH's).
    pub bcast: Option<String>,
    /// `PMPI_PREDICT_SCATTER`: scatter strategy assumed (flat, chain, binomial).
    pub scatter: Option<String>,
    /// `PMPI_PREDICT_TRACE_MAX_MB`: size cap of trace.json; above it the trace keeps whole
    /// time windows at a stride and says so (0: no trace.json).
    pub trace_max_mb: u64,
    /// `OMPI_MCA_btl_tcp_progress_thread` (Open MPI's, which `mpirun --mca` sets) is a
    /// non-zero number: Open MPI's TCP transport progresses on a thread of its own, so
    /// the replay does not wait for a rank's calls to move a rendezvous message.
    pub progress_thread: bool,
    /// `PMPI_PREDICT_NET_MS`: the lowest rank of each node reads the node's TCP and
    /// interface counters this often (ms, at least 10) into `net-RANK.csv`; every rank
    /// reads them at init and at the end. 0: never.
    pub net_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            out_dir: None,
            node: None,
            buffer_records: 1 << 17,
            flush_ms: 200,
            disabled: false,
            report: true,
            report_max_mb: 1024,
            batch_max_mb: crate::report::BATCH_MAX_BYTES >> 20,
            quiet: false,
            max_threads: 1024,
            max_comms: 16384,
            clock_rounds: 10,
            tsc: true,
            catch_signals: true,
            profile: None,
            model: None,
            bcast: None,
            scatter: None,
            trace_max_mb: crate::report::chrome_trace::DEFAULT_MAX_MB,
            progress_thread: false,
            net_ms: 200,
        }
    }
}

/// The output directory of one rank: `%h` in `dir` becomes its node name, `%r` its
/// rank, so that PMPI_PREDICT_OUT can point at node-local disks (`/scratch/%h/run1`).
pub fn expand_out(dir: &std::path::Path, node: &str, rank: i32) -> PathBuf {
    let s = dir.to_string_lossy();
    if !s.contains('%') {
        return dir.to_path_buf();
    }
    PathBuf::from(s.replace("%h", node).replace("%r", &rank.to_string()))
}

/// Every variable the layer reads, for documentation and checks.
pub const VARIABLES: &[&str] = &[
    "PMPI_PREDICT_OUT",
    "PMPI_PREDICT_NODE",
    "PMPI_PREDICT_BUFFER",
    "PMPI_PREDICT_FLUSH_MS",
    "PMPI_PREDICT_DISABLE",
    "PMPI_PREDICT_REPORT",
    "PMPI_PREDICT_REPORT_MAX_MB",
    "PMPI_PREDICT_BATCH_MAX_MB",
    "PMPI_PREDICT_QUIET",
    "PMPI_PREDICT_MAX_THREADS",
    "PMPI_PREDICT_MAX_COMMS",
    "PMPI_PREDICT_CLOCK_ROUNDS",
    "PMPI_PREDICT_TSC",
    "PMPI_PREDICT_SIGNALS",
    "PMPI_PREDICT_PROFILE",
    "PMPI_PREDICT_MODEL",
    "PMPI_PREDICT_BCAST",
    "PMPI_PREDICT_SCATTER",
    "PMPI_PREDICT_TRACE_MAX_MB",
    "PMPI_PREDICT_NET_MS",
];

fn int_var(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    lo: u64,
    hi: u64,
    default: u64,
    warn: &mut Vec<String>,
) -> u64 {
    match get(name) {
        None => default,
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => n,
            Ok(n) => {
                warn.push(format!(
                    "{name}={n} is out of range {lo}..={hi}; using {default}"
                ));
                default
            }
            Err(_) => {
                warn.push(format!("{name}={v:?} is not a number; using {default}"));
                default
            }
        },
    }
}

fn bool_var(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: bool,
    warn: &mut Vec<String>,
) -> bool {
    match get(name).as_deref().map(str::trim) {
        None => default,
        Some("1" | "yes" | "true" | "on") => true,
        Some("0" | "no" | "false" | "off" | "") => false,
        Some(v) => {
            warn.push(format!(
                "{name}={v:?} is not a boolean (use 1 or 0); using {}",
                default as u8
            ));
            default
        }
    }
}

impl Config {
    /// Reads the configuration; problems become warnings and defaults, never errors,
    /// because a profiler must not stop the program it is loaded into.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (Config, Vec<String>) {
        let d = Config::default();
        let mut w = Vec::new();
        let non_empty = |n: &str| get(n).filter(|s| !s.trim().is_empty());
        let c = Config {
            out_dir: non_empty("PMPI_PREDICT_OUT").map(PathBuf::from),
            node: non_empty("PMPI_PREDICT_NODE"),
            buffer_records: int_var(
                get,
                "PMPI_PREDICT_BUFFER",
                64,
                1 << 26,
                d.buffer_records as u64,
                &mut w,
            ) as usize,
            flush_ms: int_var(get, "PMPI_PREDICT_FLUSH_MS", 10, 1000, d.flush_ms, &mut w),
            disabled: bool_var(get, "PMPI_PREDICT_DISABLE", false, &mut w),
            report: bool_var(get, "PMPI_PREDICT_REPORT", true, &mut w),
            report_max_mb: int_var(
                get,
                "PMPI_PREDICT_REPORT_MAX_MB",
                0,
                1 << 30,
                d.report_max_mb,
                &mut w,
            ),
            batch_max_mb: int_var(
                get,
                "PMPI_PREDICT_BATCH_MAX_MB",
                0,
                1 << 30,
                d.batch_max_mb,
                &mut w,
            ),
            quiet: bool_var(get, "PMPI_PREDICT_QUIET", false, &mut w),
            max_threads: int_var(
                get,
                "PMPI_PREDICT_MAX_THREADS",
                1,
                65535,
                d.max_threads as u64,
                &mut w,
            ) as usize,
            max_comms: int_var(
                get,
                "PMPI_PREDICT_MAX_COMMS",
                16,
                1 << 24,
                d.max_comms as u64,
                &mut w,
            ) as usize,
            clock_rounds: int_var(
                get,
                "PMPI_PREDICT_CLOCK_ROUNDS",
                1,
                1000,
                d.clock_rounds as u64,
                &mut w,
            ) as u32,
            tsc: bool_var(get, "PMPI_PREDICT_TSC", true, &mut w),
            catch_signals: bool_var(get, "PMPI_PREDICT_SIGNALS", true, &mut w),
            profile: non_empty("PMPI_PREDICT_PROFILE").map(PathBuf::from),
            model: non_empty("PMPI_PREDICT_MODEL").map(|m| m.trim().to_string()),
            bcast: non_empty("PMPI_PREDICT_BCAST").map(|m| m.trim().to_string()),
            scatter: non_empty("PMPI_PREDICT_SCATTER").map(|m| m.trim().to_string()),
            trace_max_mb: int_var(
                get,
                "PMPI_PREDICT_TRACE_MAX_MB",
                0,
                1 << 20,
                d.trace_max_mb,
                &mut w,
            ),
            // Open MPI's own variable: read, never warned about (Open MPI checks it).
            progress_thread: get("OMPI_MCA_btl_tcp_progress_thread")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .is_some_and(|v| v != 0),
            // 1-9 ms would read /proc more often than it is worth: at least 10.
            net_ms: match int_var(get, "PMPI_PREDICT_NET_MS", 0, 3_600_000, d.net_ms, &mut w) {
                0 => 0,
                n => n.max(10),
            },
        };
        (c, w)
    }

    /// Reads the process environment.
    pub fn from_env() -> (Config, Vec<String>) {
        Config::from_lookup(&|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_directory_per_node_or_rank() {
        use std::path::Path;
        assert_eq!(
            expand_out(Path::new("/s/%h/run"), "n3", 7),
            Path::new("/s/n3/run")
        );
        assert_eq!(expand_out(Path::new("/s/r%r"), "n3", 7), Path::new("/s/r7"));
        assert_eq!(
            expand_out(Path::new("/s/plain"), "n3", 7),
            Path::new("/s/plain")
        );
    }
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> (Config, Vec<String>) {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(&move |k| m.get(k).cloned())
    }

    #[test]
    fn defaults_without_variables() {
        let (c, w) = cfg(&[]);
        assert_eq!(c, Config::default());
        assert!(w.is_empty());
    }

    #[test]
    fn open_mpi_s_progress_thread_is_read_from_its_mca_variable() {
        for (v, on) in [("1", true), ("0", false), (" 2 ", true), ("yes", false)] {
            let (c, w) = cfg(&[("OMPI_MCA_btl_tcp_progress_thread", v)]);
            assert_eq!(c.progress_thread, on, "{v:?}");
            assert!(w.is_empty());
        }
        assert!(!cfg(&[]).0.progress_thread);
    }

    #[test]
    fn the_network_counters_period_is_read_with_a_floor_and_an_off() {
        assert_eq!(cfg(&[]).0.net_ms, 200);
        for (v, ms) in [("0", 0), ("3", 10), ("1000", 1000)] {
            let (c, w) = cfg(&[("PMPI_PREDICT_NET_MS", v)]);
            assert_eq!(c.net_ms, ms, "{v}");
            assert!(w.is_empty());
        }
        let (c, w) = cfg(&[("PMPI_PREDICT_NET_MS", "often")]);
        assert_eq!(c.net_ms, 200);
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn values_are_read() {
        let (c, w) = cfg(&[
            ("PMPI_PREDICT_OUT", "/tmp/x"),
            ("PMPI_PREDICT_BUFFER", "1024"),
            ("PMPI_PREDICT_DISABLE", "1"),
        ]);
        assert!(w.is_empty());
        assert_eq!(c.out_dir, Some(PathBuf::from("/tmp/x")));
        assert_eq!(c.buffer_records, 1024);
        assert!(c.disabled);
    }

    #[test]
    fn bad_values_warn_naming_the_variable_and_keep_defaults() {
        let (c, w) = cfg(&[
            ("PMPI_PREDICT_BUFFER", "lots"),
            ("PMPI_PREDICT_FLUSH_MS", "5000"),
            ("PMPI_PREDICT_QUIET", "maybe"),
        ]);
        assert_eq!(c.buffer_records, Config::default().buffer_records);
        assert_eq!(c.flush_ms, 200);
        assert!(!c.quiet);
        assert_eq!(w.len(), 3);
        assert!(
            w[0].starts_with("PMPI_PREDICT_BUFFER=\"lots\" is not a number"),
            "{}",
            w[0]
        );
        assert!(
            w[1].contains("PMPI_PREDICT_FLUSH_MS=5000 is out of range"),
            "{}",
            w[1]
        );
        assert!(w[2].contains("PMPI_PREDICT_QUIET"), "{}", w[2]);
    }
}
