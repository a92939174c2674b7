//! Solver throughput per puzzle set and mode, single thread (criterion).
//!
//! `cargo bench --bench solver` ; one group per set, throughput in puzzles.
//! Large sets are cut to their first 5,000 puzzles to keep a run short; the
//! side-by-side table against the `sudoku` crate (benches/compare) runs the
//! full sets.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sudokud::{Grid, Mode, solve};

const SETS: [(&str, &str); 6] = [
    (
        "17_clue",
        include_str!("../tests/data/puzzles2_17_clue.txt"),
    ),
    (
        "top1465",
        include_str!("../tests/data/puzzles3_magictour_top1465.txt"),
    ),
    (
        "hardest_11plus",
        include_str!("../tests/data/puzzles5_forum_hardest_1905_11+.txt"),
    ),
    (
        "hardest_1106",
        include_str!("../tests/data/puzzles6_forum_hardest_1106.txt"),
    ),
    (
        "serg",
        include_str!("../tests/data/puzzles7_serg_benchmark.txt"),
    ),
    ("mixed_hard", include_str!("../tests/data/mixed_hard.txt")),
];

const MAX_PUZZLES: usize = 5_000;

fn bench_sets(c: &mut Criterion) {
    for (name, text) in SETS {
        let lines: Vec<&str> = text.lines().take(MAX_PUZZLES).collect();
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(lines.len() as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(4));
        for (mode_name, mode) in [("first", Mode::First), ("unique", Mode::Unique)] {
            group.bench_function(mode_name, |b| {
                b.iter(|| {
                    for line in &lines {
                        let grid = Grid::parse(line).expect("benchmark puzzles are valid");
                        black_box(solve(&grid, mode, None));
                    }
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_sets);
criterion_main!(benches);
