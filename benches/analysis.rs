//! Throughput of the analyses, single thread (criterion): the canonical
//! form and the rating, per puzzle set, in puzzles per second.
//!
//! `cargo bench --bench analysis`. The forum's hardest puzzles are cut to
//! their first 200 for the rating (each needs deep search) and to 5,000
//! for the canonical form, like the solver bench.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sudokud::{Grid, canonical, rate};

const SETS: [(&str, &str, usize); 4] = [
    (
        "top1465",
        include_str!("../tests/data/puzzles3_magictour_top1465.txt"),
        5_000,
    ),
    (
        "17_clue",
        include_str!("../tests/data/puzzles2_17_clue.txt"),
        5_000,
    ),
    (
        "hardest_11plus",
        include_str!("../tests/data/puzzles5_forum_hardest_1905_11+.txt"),
        200,
    ),
    (
        "top95",
        include_str!("../tests/data/norvig_top95.txt"),
        5_000,
    ),
];

fn grids(text: &str, max: usize) -> Vec<Grid> {
    text.lines()
        .take(max)
        .map(|l| Grid::parse(l).expect("benchmark puzzles are valid"))
        .collect()
}

fn bench_canonical(c: &mut Criterion) {
    let mut group = c.benchmark_group("canonical");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    for (name, text, _) in SETS {
        let grids = grids(text, 5_000);
        group.throughput(Throughput::Elements(grids.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                for grid in &grids {
                    black_box(canonical(grid));
                }
            })
        });
    }
    group.finish();
}

fn bench_rate(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    for (name, text, max) in SETS {
        if name == "17_clue" {
            continue;
        }
        let grids = grids(text, max);
        group.throughput(Throughput::Elements(grids.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                for grid in &grids {
                    black_box(rate(grid).expect("benchmark puzzles have one solution"));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_canonical, bench_rate);
criterion_main!(benches);
