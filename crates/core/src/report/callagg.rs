//! What the reports derive per call, fed one row at a time in `calls.csv`'s order
//! ([`super::Timeline`]: entry on rank 0's clock, rank index, record): summary.json's
//! per-call, per-rank and prediction figures (all but `e_abs_graphs_percent`),
//! hotspots.json's `ranks` and `waited_for`, and the page's per-rank split and call
//! families. The batch report feeds it from the loaded run and the streamed one
//! (`report::stream`) from its rows, so both sum in the same order and give the same
//! figures to the bit.
//!
//! Memory is bounded by ranks, call names and size classes, except the E_rel values,
//! whose median and 90th percentile are exact order statistics: they are held up to a
//! bound, then appended to one temporary file per (call, size class), and selected at the
//! end by a radix select over the file (16 bits of the value's order per pass, the
//! candidates sorted in memory once they fit the bound).

use super::html::FamilyPoint;
use super::{e_rel, entry, size_class};
use crate::error::Error;
use crate::predict::{CallPrediction, Reason};
use crate::trace::{self, FLAG_NONBLOCKING, RankMeta, Record, RunTrace};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// E_rel values held in memory before they are spilled (8 bytes each: 8 MB, up to twice
/// that as the groups' vectors grow), and the most candidates a selection holds.
pub const IN_MEMORY: usize = 1 << 20;

/// Time of MPI a record accounts for on its rank: a nonblocking operation counts only
/// its post (its wait is a record of its own).
pub(crate) fn mpi_time_ns(r: &Record) -> u64 {
    if r.flags & FLAG_NONBLOCKING != 0 {
        r.t_posted.saturating_sub(r.t_start)
    } else {
        r.t_end.saturating_sub(r.t_start)
    }
}

/// The name of record `r`'s call on the rank `meta` describes.
pub(crate) fn call_of<'a>(meta: &'a RankMeta, r: &Record) -> &'a str {
    meta.calls
        .get(r.call as usize)
        .map_or_else(|| trace::call_name(r.call), String::as_str)
}

/// What the reports sum over one rank's calls.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankCalls {
    pub records: u64,
    /// MPI time of its records (unsuccessful polls not included), ns.
    pub mpi_ns: u64,
    /// Its first entry and last exit (the rank's clock), if it has records.
    pub first_start: Option<u64>,
    pub last_end: Option<u64>,
    /// The per-task sums (the seeds' S_m and S_p) over its predicted blocking and
    /// completion calls: measured, predicted and contention-free seconds. A nonblocking
    /// operation's span runs until the application's completion call and holds whatever
    /// the application did meanwhile, so the sums leave it out.
    pub measured_s: f64,
    pub predicted_s: f64,
    pub free_s: f64,
    /// Measured and predicted wait, predicted contention, seconds.
    pub wait_s: f64,
    pub pred_wait_s: f64,
    pub contention_s: f64,
}

impl RankCalls {
    /// Adds record `r`, predicted as `c`.
    pub fn add(&mut self, r: &Record, c: &CallPrediction) {
        self.records += 1;
        self.mpi_ns += mpi_time_ns(r);
        self.first_start = Some(self.first_start.map_or(r.t_start, |f| f.min(r.t_start)));
        self.last_end = Some(self.last_end.map_or(r.t_end, |l| l.max(r.t_end)));
        if let Some(p) = c.predicted.filter(|_| r.flags & FLAG_NONBLOCKING == 0) {
            self.measured_s += r.duration_s();
            self.predicted_s += p;
            self.free_s += c.free.unwrap_or(p);
        }
        // A nonblocking row carries no wait and counts only its post; its completion
        // call carries the rest.
        self.wait_s += c.measured_wait.seconds;
        self.pred_wait_s += c.wait.seconds;
        self.contention_s += c.contention;
    }
}

/// summary.json's figures of one call name.
#[derive(Default)]
struct CallAgg {
    count: u64,
    bytes: u64,
    time_ns: u64,
    hist: Option<Histogram<u64>>,
}

/// Everything [`CallAggregates`] found, once every row was fed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallFigures {
    /// By rank index.
    pub ranks: Vec<RankCalls>,
    /// summary.json's `calls`.
    pub calls: BTreeMap<String, Value>,
    /// summary.json's `prediction.e_rel_percent`.
    pub e_rel: BTreeMap<String, Value>,
    /// Mean measured, predicted and contention-free seconds per (call, size class), over
    /// the predicted calls (the page's plot).
    pub families: Vec<FamilyPoint>,
    /// Contention (seconds) per rank, node and call, of the calls that had some.
    pub lost_rank: BTreeMap<i32, f64>,
    pub lost_node: BTreeMap<String, f64>,
    pub lost_call: BTreeMap<String, f64>,
    /// Seconds of wait by kind, measured and predicted; measured seconds others waited
    /// for each rank (`on`, whatever it is).
    pub wait_measured: BTreeMap<&'static str, f64>,
    pub wait_predicted: BTreeMap<&'static str, f64>,
    pub caused: BTreeMap<i32, f64>,
    /// Measured seconds others waited for each rank (a rank of the run), by wait kind:
    /// hotspots.json's `waited_for`.
    pub waited_on: BTreeMap<i32, BTreeMap<&'static str, f64>>,
    /// Calls not predicted, by reason.
    pub reasons: BTreeMap<&'static str, u64>,
    /// Groups of E_rel values spilled to a file (selected from it).
    pub e_rel_spilled: usize,
}

/// A call family's predicted calls: their count and Σ measured, predicted and
/// contention-free seconds.
type FamilySums = (u64, f64, f64, f64);

/// The per-call figures of a run being read, a row at a time.
pub struct CallAggregates {
    ranks: Vec<RankCalls>,
    calls: BTreeMap<String, CallAgg>,
    e_rel: ErrValues,
    families: BTreeMap<String, BTreeMap<&'static str, FamilySums>>,
    f: CallFigures,
}

impl CallAggregates {
    /// An empty accumulator for a run of `ranks` ranks. With `spill` (a directory and a
    /// bound), E_rel values beyond the bound go to temporary files there, removed when
    /// the accumulator goes; without it they are all held.
    pub fn new(ranks: usize, spill: Option<(PathBuf, usize)>) -> CallAggregates {
        CallAggregates {
            ranks: vec![RankCalls::default(); ranks],
            calls: BTreeMap::new(),
            e_rel: ErrValues {
                groups: BTreeMap::new(),
                held: 0,
                spill,
                files: Vec::new(),
            },
            families: BTreeMap::new(),
            f: CallFigures::default(),
        }
    }

    /// The figures of a loaded run predicted as `calls`, its rows fed in [`super::Timeline`]
    /// order, every value held.
    pub fn of_run(run: &RunTrace, calls: &[Vec<CallPrediction>]) -> CallFigures {
        let mut a = CallAggregates::new(run.ranks.len(), None);
        for (_, ri, i) in super::Timeline::new(run) {
            let rk = &run.ranks[ri];
            a.push(ri, &rk.meta, &rk.records[i], &calls[ri][i]);
        }
        a.finish_held()
    }

    /// Adds the row of record `r` of rank index `ri` (described by `meta`), predicted as
    /// `c`. Rows must come in [`super::Timeline`] order for the sums to be the batch
    /// report's to the bit.
    pub fn add(
        &mut self,
        ri: usize,
        meta: &RankMeta,
        r: &Record,
        c: &CallPrediction,
    ) -> Result<(), Error> {
        self.push(ri, meta, r, c);
        self.e_rel.spill_if_full()
    }

    /// [`CallAggregates::add`] without spilling.
    fn push(&mut self, ri: usize, meta: &RankMeta, r: &Record, c: &CallPrediction) {
        if ri >= self.ranks.len() {
            self.ranks.resize(ri + 1, RankCalls::default());
        }
        self.ranks[ri].add(r, c);
        let name = call_of(meta, r);
        let class = size_class(r.bytes_send + r.bytes_recv);
        let a = entry(&mut self.calls, name);
        let d = r.t_end.saturating_sub(r.t_start);
        a.count += 1;
        a.bytes += r.bytes_send + r.bytes_recv;
        a.time_ns += d;
        // 1 ns to 3 hours at 3 significant digits; longer calls saturate.
        let h = a.hist.get_or_insert_with(|| {
            Histogram::new_with_bounds(1, 3 * 3600 * 1_000_000_000, 3).expect("valid bounds")
        });
        h.saturating_record(d.max(1));
        let f = &mut self.f;
        if c.reason != Reason::None {
            *f.reasons.entry(c.reason.name()).or_default() += 1;
        }
        let w = c.measured_wait;
        if w.seconds > 0.0 {
            *f.wait_measured.entry(w.kind.name()).or_default() += w.seconds;
            *f.caused.entry(w.on).or_default() += w.seconds;
            if w.on >= 0 {
                *f.waited_on
                    .entry(w.on)
                    .or_default()
                    .entry(w.kind.name())
                    .or_default() += w.seconds;
            }
        }
        if c.wait.seconds > 0.0 {
            *f.wait_predicted.entry(c.wait.kind.name()).or_default() += c.wait.seconds;
        }
        if c.contention > 0.0 {
            *f.lost_rank.entry(meta.rank).or_default() += c.contention;
            *entry(&mut f.lost_node, &meta.node) += c.contention;
            *entry(&mut f.lost_call, name) += c.contention;
        }
        if let Some(p) = c.predicted {
            let m = r.duration_s();
            let g = entry(&mut self.families, name).entry(class).or_default();
            g.0 += 1;
            g.1 += m;
            g.2 += p;
            g.3 += c.free.unwrap_or(p);
            if let Some(e) = e_rel(p, m) {
                self.e_rel.push(name, class, e);
            }
        }
    }

    /// The figures, the order statistics selected from the files spilled to.
    pub fn finish(mut self) -> Result<CallFigures, Error> {
        let e_rel = self.e_rel.finish()?;
        Ok(self.figures(e_rel))
    }

    /// [`CallAggregates::finish`] of an accumulator that spills nothing.
    fn finish_held(mut self) -> CallFigures {
        let e_rel = self
            .e_rel
            .finish()
            .expect("values held in memory are selected without I/O");
        self.figures(e_rel)
    }

    fn figures(self, e_rel: BTreeMap<String, Value>) -> CallFigures {
        let e_rel_spilled = self.e_rel.files.len();
        let calls = self
            .calls
            .into_iter()
            .map(|(k, a)| {
                let q = |p: f64| {
                    a.hist
                        .as_ref()
                        .map_or(0.0, |h| h.value_at_quantile(p) as f64 * 1e-9)
                };
                let v = json!({
                    "count": a.count,
                    "bytes": a.bytes,
                    "time_s": a.time_ns as f64 * 1e-9,
                    "mean_s": if a.count > 0 { a.time_ns as f64 * 1e-9 / a.count as f64 } else { 0.0 },
                    "p50_s": q(0.5),
                    "p90_s": q(0.9),
                    "p99_s": q(0.99),
                    "max_s": a.hist.as_ref().map_or(0.0, |h| h.max() as f64 * 1e-9),
                });
                (k, v)
            })
            .collect();
        let families = self
            .families
            .into_iter()
            .flat_map(|(call, classes)| {
                classes
                    .into_iter()
                    .map(move |(size_class, (n, m, p, f))| FamilyPoint {
                        call: call.clone(),
                        size_class,
                        count: n,
                        measured_s: m / n as f64,
                        predicted_s: p / n as f64,
                        free_s: f / n as f64,
                    })
            })
            .collect();
        CallFigures {
            ranks: self.ranks,
            calls,
            e_rel,
            families,
            e_rel_spilled,
            ..self.f
        }
    }
}

/// The E_rel values of one (call, size class).
#[derive(Default)]
struct ErrGroup {
    count: u64,
    /// Σ|E_rel| in row order.
    sum_abs: f64,
    held: Vec<f64>,
    /// Where the values spilled so far are, if any were.
    file: Option<PathBuf>,
}

/// The E_rel values of every group, held up to a bound and spilled beyond it.
struct ErrValues {
    groups: BTreeMap<String, BTreeMap<&'static str, ErrGroup>>,
    /// Values held over all groups.
    held: usize,
    spill: Option<(PathBuf, usize)>,
    files: Vec<PathBuf>,
}

impl Drop for ErrValues {
    fn drop(&mut self) {
        for f in &self.files {
            std::fs::remove_file(f).ok();
        }
    }
}

impl ErrValues {
    fn push(&mut self, call: &str, class: &'static str, e: f64) {
        let g = entry(&mut self.groups, call).entry(class).or_default();
        g.count += 1;
        g.sum_abs += e.abs();
        g.held.push(e);
        self.held += 1;
    }

    /// Appends every group's held values to its file once the bound is passed.
    fn spill_if_full(&mut self) -> Result<(), Error> {
        match &self.spill {
            Some((_, bound)) if self.held > *bound => self.spill_all(),
            _ => Ok(()),
        }
    }

    fn spill_all(&mut self) -> Result<(), Error> {
        let Some((dir, _)) = &self.spill else {
            return Ok(());
        };
        for g in self.groups.values_mut().flat_map(|c| c.values_mut()) {
            if g.held.is_empty() {
                continue;
            }
            let path = match &g.file {
                Some(p) => p.clone(),
                None => {
                    let p = dir.join(format!("summary.json.erel-{:05}", self.files.len()));
                    self.files.push(p.clone());
                    g.file = Some(p.clone());
                    p
                }
            };
            let io = |e: std::io::Error| Error::write(&path, e);
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io)?;
            let mut w = BufWriter::with_capacity(1 << 16, file);
            for x in g.held.drain(..) {
                w.write_all(&x.to_le_bytes()).map_err(io)?;
            }
            w.flush().map_err(io)?;
            g.held = Vec::new();
        }
        self.held = 0;
        Ok(())
    }

    /// summary.json's `e_rel_percent`: per call and size class, the count, the median,
    /// the mean and median of |E_rel| and its 90th percentile.
    fn finish(&mut self) -> Result<BTreeMap<String, Value>, Error> {
        let bound = self.spill.as_ref().map_or(usize::MAX, |s| s.1);
        if self
            .groups
            .values()
            .flat_map(|c| c.values())
            .any(|g| g.file.is_some())
        {
            // What is left joins the files, so that each group is in one place.
            self.spill_all()?;
        }
        let mut out = BTreeMap::new();
        for (call, classes) in &mut self.groups {
            let mut m = serde_json::Map::new();
            for (class, g) in classes {
                let n = g.count;
                // The ranks of the median of E_rel, and of the median and 90th
                // percentile of |E_rel|, in ascending order.
                let mut targets = [
                    Target::new(false, ((n - 1) as f64 * 0.5).round() as u64),
                    Target::new(true, (n - 1) / 2),
                    Target::new(true, ((n - 1) as f64 * 0.9).round() as u64),
                ];
                match &g.file {
                    None => select_held(&mut g.held, &mut targets),
                    Some(path) => select_in_file(path, n, &mut targets, bound)?,
                }
                let [median, median_abs, p90_abs] = targets.map(|t| t.answer.unwrap_or(f64::NAN));
                m.insert(
                    class.to_string(),
                    json!({
                        "count": n,
                        "median": median,
                        "mean_abs": g.sum_abs / n as f64,
                        "median_abs": median_abs,
                        "p90_abs": p90_abs,
                    }),
                );
            }
            out.insert(call.clone(), Value::Object(m));
        }
        Ok(out)
    }
}

/// `x`'s place in [`f64::total_cmp`]'s order, as an unsigned integer.
fn ordered(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value whose [`ordered`] place is `k`.
fn unordered(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// An order statistic being selected: the value of rank `rank` (from 0) of E_rel or of
/// |E_rel|, among the values whose key's top `bits` bits are `prefix`.
#[derive(Debug, Clone, Copy)]
struct Target {
    abs: bool,
    rank: u64,
    prefix: u64,
    bits: u32,
    /// Values with that prefix (the rank is among them); unknown before the first pass.
    count: Option<u64>,
    answer: Option<f64>,
}

impl Target {
    fn new(abs: bool, rank: u64) -> Target {
        Target {
            abs,
            rank,
            prefix: 0,
            bits: 0,
            count: None,
            answer: None,
        }
    }

    fn key(&self, x: f64) -> u64 {
        ordered(if self.abs { x.abs() } else { x })
    }

    fn matches(&self, k: u64) -> bool {
        self.bits == 0 || k >> (64 - self.bits) == self.prefix
    }
}

/// Selects every target among `v` in memory (its rank counts among `v`).
fn select_held(v: &mut [f64], targets: &mut [Target]) {
    for t in targets {
        let Some(i) = usize::try_from(t.rank).ok().filter(|&i| i < v.len()) else {
            continue;
        };
        let (_, &mut x, _) = v.select_nth_unstable_by_key(i, |&x| t.key(x));
        t.answer = Some(if t.abs { x.abs() } else { x });
    }
}

/// Digits of a radix pass: 16 bits of the key.
const DIGIT: u32 = 16;

/// Selects every target among the `n` values in the file at `path`: each pass counts the
/// candidates of each target by the next 16 bits of their key and narrows it to the
/// bucket that holds its rank, until its candidates fit in its share of `bound` values
/// (then selected in memory) or its key is found whole.
fn select_in_file(path: &Path, n: u64, targets: &mut [Target], bound: usize) -> Result<(), Error> {
    for t in targets.iter_mut() {
        t.count = Some(n);
    }
    while targets.iter().any(|t| t.answer.is_none()) {
        // Per target: Some(candidates) when they fit, else a histogram of the next digit.
        // The targets share the bound; each gathers exactly its candidates.
        let share = (bound / targets.len()).max(1) as u64;
        let mut held: Vec<Option<Vec<f64>>> = Vec::new();
        let mut hist: Vec<Option<Vec<u64>>> = Vec::new();
        for t in targets.iter() {
            let fits = t.answer.is_none() && t.count.is_some_and(|c| c <= share);
            let counts = t.answer.is_none() && !fits;
            held.push(fits.then(|| Vec::with_capacity(t.count.unwrap_or(0) as usize)));
            hist.push(counts.then(|| vec![0u64; 1 << DIGIT]));
        }
        let file = std::fs::File::open(path).map_err(|e| Error::read(path, e))?;
        let mut r = BufReader::with_capacity(1 << 16, file);
        let mut buf = vec![0u8; 1 << 16];
        let mut have = 0;
        loop {
            let k = r.read(&mut buf[have..]).map_err(|e| Error::read(path, e))?;
            if k == 0 {
                break;
            }
            have += k;
            let whole = have - have % 8;
            for b in buf[..whole].chunks_exact(8) {
                let x = f64::from_le_bytes(b.try_into().expect("8 bytes"));
                for (ti, t) in targets.iter().enumerate() {
                    let key = t.key(x);
                    if !t.matches(key) {
                        continue;
                    }
                    if let Some(v) = &mut held[ti] {
                        v.push(x);
                    } else if let Some(h) = &mut hist[ti] {
                        h[((key >> (64 - t.bits - DIGIT)) & 0xffff) as usize] += 1;
                    }
                }
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
        }
        for (ti, t) in targets.iter_mut().enumerate() {
            if let Some(v) = &mut held[ti] {
                if t.rank >= v.len() as u64 {
                    return Err(Error::Internal(format!(
                        "{}: {} values where rank {} was due",
                        path.display(),
                        v.len(),
                        t.rank
                    )));
                }
                select_held(v, std::slice::from_mut(t));
            } else if let Some(h) = &hist[ti] {
                let mut below = 0u64;
                let Some(d) = h.iter().position(|&c| {
                    below += c;
                    below > t.rank
                }) else {
                    return Err(Error::Internal(format!(
                        "{}: fewer values than rank {}",
                        path.display(),
                        t.rank
                    )));
                };
                t.rank -= below - h[d];
                t.count = Some(h[d]);
                t.prefix = t.prefix << DIGIT | d as u64;
                t.bits += DIGIT;
                if t.bits == 64 {
                    // Every candidate left has this key: its value.
                    t.answer = Some(unordered(t.prefix));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order statistics, selected from held values and from a file with bounds of 1
    /// to 10,000 candidates, are those of the sorted values: with ties, both zeros,
    /// infinities, values of one sign and groups of one value (whose key is found whole).
    #[test]
    fn selected_order_statistics_are_the_sorted_ones() {
        let mut rnd = crate::testing::xorshift(0x5e1e_c7ed);
        let dir = std::env::temp_dir().join(format!("pmpi-erel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("values");
        for case in 0..300 {
            let n = 1 + rnd([5, 200, 5000][case % 3]) as usize;
            let v: Vec<f64> = (0..n)
                .map(|_| match case % 5 {
                    0 => [0.0, -0.0, 1.5, -1.5, f64::INFINITY, f64::NEG_INFINITY][rnd(6) as usize],
                    1 => 42.0,
                    2 => rnd(1000) as f64 * 0.125,
                    _ => (rnd(2_000_000) as f64 - 1_000_000.0) * 1e-3,
                })
                .collect();
            let mut signed = v.clone();
            signed.sort_by(f64::total_cmp);
            let mut abs: Vec<f64> = v.iter().map(|x| x.abs()).collect();
            abs.sort_by(f64::total_cmp);
            let k = n as u64 - 1;
            let want = [
                signed[(k as f64 * 0.5).round() as usize].to_bits(),
                abs[(k / 2) as usize].to_bits(),
                abs[(k as f64 * 0.9).round() as usize].to_bits(),
            ];
            let targets = || {
                [
                    Target::new(false, (k as f64 * 0.5).round() as u64),
                    Target::new(true, k / 2),
                    Target::new(true, (k as f64 * 0.9).round() as u64),
                ]
            };
            let mut held = targets();
            select_held(&mut v.clone(), &mut held);
            assert_eq!(
                held.map(|t| t.answer.unwrap().to_bits()),
                want,
                "case {case}"
            );
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(&path, bytes).unwrap();
            let bound = [1, 3, 10_000][case % 7 % 3];
            let mut from_file = targets();
            select_in_file(&path, n as u64, &mut from_file, bound).unwrap();
            assert_eq!(
                from_file.map(|t| t.answer.unwrap().to_bits()),
                want,
                "case {case}, bound {bound}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_order_keys_are_total_cmp_s_order() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1e300,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) < ordered(w[1]), "{w:?}");
        }
        for x in xs {
            assert_eq!(unordered(ordered(x)).to_bits(), x.to_bits());
        }
    }
}
