//! Throughput of the analyses, single thread (criterion): the canonical
//! form and the rating, per puzzle set, in puzzles per second.
//!
//! `cargo bench --bench analysis`. The public sets are read from the
//! directory named by `SUDOKUD_DATA` (README.md, "Puzzle sets"); without
//! it, generated puzzles stand in. The forum's hardest puzzles are cut to
//! their first 200 for the rating (each needs deep search) and to 5,000
//! for the canonical form, like the solver bench.

mod data;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use data::{Kind, Set};
use sudokud::{Grid, canonical, rate};

/// The public sets (README.md, "Puzzle sets"), read from `SUDOKUD_DATA`;
/// generated stand-ins when it is unset (benches/data.rs).
const SETS: [(&str, &str, usize, Kind); 4] = [
    (
        "top1465",
        "puzzles3_magictour_top1465.txt",
        5_000,
        Kind::Hard,
    ),
    ("17_clue", "puzzles2_17_clue.txt", 5_000, Kind::Easy),
    (
        "hardest_11plus",
        "puzzles5_forum_hardest_1905_11+.txt",
        5_000,
        Kind::Hard,
    ),
    ("top95", "norvig_top95.txt", 5_000, Kind::Hard),
];

/// How many puzzles of each set are rated (the forum's hardest each need
/// deep search).
fn rated(name: &str) -> usize {
    if name == "hardest_11plus" { 200 } else { 5_000 }
}

/// The sets, read or made once for both groups.
fn loaded() -> &'static [Set] {
    static SETS_LOADED: std::sync::OnceLock<Vec<Set>> = std::sync::OnceLock::new();
    SETS_LOADED.get_or_init(|| data::sets(&SETS))
}

fn grids(set: &Set, max: usize) -> Vec<Grid> {
    set.puzzles
        .iter()
        .take(max)
        .map(|l| Grid::parse(l).expect("benchmark puzzles are valid"))
        .collect()
}

fn bench_canonical(c: &mut Criterion) {
    let mut group = c.benchmark_group("canonical");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    for set in loaded() {
        let grids = grids(set, 5_000);
        group.throughput(Throughput::Elements(grids.len() as u64));
        group.bench_function(&set.name, |b| {
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
    for set in loaded() {
        // The 17-clue puzzles need nothing past singles: the rating says
        // little about them.
        if set.name == "17_clue" {
            continue;
        }
        let grids = grids(set, rated(&set.name));
        group.throughput(Throughput::Elements(grids.len() as u64));
        group.bench_function(&set.name, |b| {
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
