//! Penalty-evaluation time per model on random graphs of 100, 1,000 and 10,000 arcs.
//! Plain `main` (harness = false): `cargo bench --bench penalty` prints a table.

use std::time::Instant;

use pmpi_core::model::{CommGraph, ModelName, PenaltyModel, penalty_model_by_name};

/// Random graph with `arcs` arcs on `arcs / 4` nodes (average degree 4 in and out), no
/// self-loops; xorshift with a fixed seed so runs compare.
fn random_graph(arcs: usize, seed: u64) -> CommGraph {
    let nodes = (arcs / 4).max(2) as u64;
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = Vec::with_capacity(arcs);
    for _ in 0..arcs {
        let s = next() % nodes;
        let d = (s + 1 + next() % (nodes - 1)) % nodes;
        t.push((s as u32, d as u32, 1 << 20));
    }
    CommGraph::from_triples(&t)
}

fn main() {
    let sizes = [100usize, 1_000, 10_000];
    println!(
        "{:<12}{:>14}{:>14}{:>14}",
        "model", "100 arcs", "1000 arcs", "10000 arcs"
    );
    for name in ModelName::ALL.map(ModelName::as_str) {
        let model: Box<dyn PenaltyModel> = match penalty_model_by_name(name, &[]) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{e}");
                return;
            }
        };
        let mut row = format!("{name:<12}");
        for &n in &sizes {
            let g = random_graph(n, 0x5eed ^ n as u64);
            // Repeat small cases so the timing is not dominated by timer resolution.
            let reps = (100_000 / n).clamp(1, 100);
            let t0 = Instant::now();
            let mut sink = 0.0;
            for _ in 0..reps {
                sink += model.penalties(&g).iter().sum::<f64>();
            }
            let per = t0.elapsed().as_secs_f64() / reps as f64;
            std::hint::black_box(sink);
            row.push_str(&format!("{:>11.3} ms", per * 1e3));
        }
        println!("{row}");
    }
}
