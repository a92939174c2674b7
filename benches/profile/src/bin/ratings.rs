//! The rating distribution of puzzle files, as BENCHMARKS.md tabulates it:
//! for each file, how many puzzles rate in each band of the score scale,
//! the mean score, the hardest technique counts, and the time taken.
//!
//! `cargo run --release -p sudokud-profile --bin ratings -- "$SUDOKUD_DATA"/norvig_easy50.txt ...`
//! (`--limit N` rates only the first N puzzles of each file).

use std::collections::BTreeMap;
use std::time::Instant;

use sudokud::{Grid, Technique, rate};

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut limit = usize::MAX;
    if let Some(i) = args.iter().position(|a| a == "--limit") {
        limit = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX);
        args.drain(i..(i + 2).min(args.len()));
    }
    // Bands of the score: [low, high).
    const BANDS: [(f64, f64, &str); 7] = [
        (0.0, 2.0, "1.0-1.5 hidden singles"),
        (2.0, 2.5, "2.3 naked singles"),
        (2.5, 3.0, "2.6-2.8 locked candidates"),
        (3.0, 7.0, "3.0-6.6 subsets, fish, wings, chains"),
        (7.0, 9.0, "7.0-8.8 search, depth 1"),
        (9.0, 11.0, "9.0-10.8 search, depth 2"),
        (11.0, 99.0, "11.0 deeper"),
    ];
    for path in &args {
        let text = std::fs::read_to_string(path)?;
        let puzzles: Vec<Grid> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(limit)
            .map(Grid::parse)
            .collect::<Result<_, _>>()?;
        let start = Instant::now();
        let mut bands = [0usize; BANDS.len()];
        let mut techniques: BTreeMap<Technique, usize> = BTreeMap::new();
        let (mut sum, mut min, mut max, mut rated, mut refused) = (0.0, f64::MAX, 0.0f64, 0, 0);
        for grid in &puzzles {
            match rate(grid) {
                Ok(d) => {
                    let s = d.score();
                    sum += s;
                    min = min.min(s);
                    max = max.max(s);
                    rated += 1;
                    *techniques.entry(d.technique).or_default() += 1;
                    if let Some(b) = BANDS.iter().position(|&(lo, hi, _)| s >= lo && s < hi) {
                        bands[b] += 1;
                    }
                }
                Err(_) => refused += 1,
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{path}: {} puzzles, {rated} rated, {refused} refused, mean {:.2}, min {min:.1}, max {max:.1}, {:.0} puzzles/s",
            puzzles.len(),
            sum / rated.max(1) as f64,
            puzzles.len() as f64 / secs
        );
        for (b, &(_, _, name)) in BANDS.iter().enumerate() {
            println!("  {name:<40} {:>6}", bands[b]);
        }
        for (t, n) in techniques {
            println!("  hardest {:<24} {n:>6}", t.name());
        }
    }
    Ok(())
}
