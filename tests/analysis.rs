//! The analyses on the public puzzle sets: ratings rise with the sets'
//! reputed difficulty, and canonical forms tell puzzles apart.
//!
//! The forum's 48,766 hardest puzzles take too long to rate in a debug
//! build, so the test rates an evenly spread sample of them.

use sudokud::{Grid, Technique, canonical, rate};

const EASY50: &str = include_str!("data/norvig_easy50.txt");
const TOP95: &str = include_str!("data/norvig_top95.txt");
const HARDEST_11PLUS: &str = include_str!("data/puzzles5_forum_hardest_1905_11+.txt");
const TOP1465: &str = include_str!("data/puzzles3_magictour_top1465.txt");

/// How many of the 11+ puzzles the test rates.
const SAMPLE: usize = 48;

fn puzzles(text: &str) -> Vec<Grid> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Grid::parse(l).expect("set puzzles are valid"))
        .collect()
}

fn sample(all: Vec<Grid>, n: usize) -> Vec<Grid> {
    let step = all.len() / n;
    all.into_iter().step_by(step).take(n).collect()
}

fn scores(grids: &[Grid]) -> Vec<f64> {
    grids
        .iter()
        .map(|g| rate(g).expect("set puzzles have one solution").score())
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::MIN, f64::max)
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::MAX, f64::min)
}

#[test]
fn ratings_rise_from_easy50_through_top95_to_the_forums_hardest() {
    let easy = scores(&puzzles(EASY50));
    let top95 = scores(&puzzles(TOP95));
    let hardest = scores(&sample(puzzles(HARDEST_11PLUS), SAMPLE));
    assert_eq!(easy.len(), 50);
    assert_eq!(hardest.len(), SAMPLE);
    assert!(
        mean(&easy) < mean(&top95) && mean(&top95) < mean(&hardest),
        "means: easy50 {}, top95 {}, 11+ {}",
        mean(&easy),
        mean(&top95),
        mean(&hardest)
    );
    assert!(
        min(&hardest) > max(&easy),
        "hardest easy50 {} against easiest 11+ {}",
        max(&easy),
        min(&hardest)
    );
}

#[test]
fn easy_puzzles_need_no_search_and_the_hardest_do() {
    for grid in puzzles(EASY50) {
        let d = rate(&grid).unwrap();
        assert!(d.technique < Technique::Search, "{grid}: {d:?}");
        assert!(d.score() < Technique::Search.score(), "{grid}: {d:?}");
    }
    for grid in sample(puzzles(HARDEST_11PLUS), 4) {
        let d = rate(&grid).unwrap();
        assert_eq!(d.technique, Technique::Search, "{grid}");
        assert!(d.score() >= Technique::Search.score(), "{grid}: {d:?}");
    }
}

/// Whether `b` is `a` with its bands rotated (by one or two bands).
fn bands_rotated(a: &Grid, b: &Grid) -> bool {
    [27, 54].into_iter().any(|shift| {
        let rotated: [u8; 81] = std::array::from_fn(|i| a.cells()[(i + shift) % 81]);
        &rotated == b.cells()
    })
}

#[test]
fn canonical_forms_tell_the_sets_puzzles_apart() {
    // Each set with the pairs of its distinct puzzles (numbered from 1)
    // that are symmetric copies: top95 and top1465 both hold one puzzle
    // twice, the second time with its last band on top.
    let sets: [(&str, &[(usize, usize)]); 3] = [
        (EASY50, &[]),
        (TOP95, &[(74, 76)]),
        (TOP1465, &[(300, 307)]),
    ];
    for (text, copies) in sets {
        let grids = puzzles(text);
        let forms: Vec<Grid> = grids.iter().map(canonical).collect();
        for (grid, form) in grids.iter().zip(&forms) {
            assert_eq!(form.givens(), grid.givens());
            assert_eq!(&canonical(form), form, "{grid}");
            assert!(form.to_text_with_zeros() <= grid.to_text_with_zeros());
        }
        let mut pairs = Vec::new();
        for i in 0..forms.len() {
            for j in i + 1..forms.len() {
                // (easy50 holds one line twice, #9 and #41.)
                if forms[i] == forms[j] && grids[i] != grids[j] {
                    pairs.push((i + 1, j + 1));
                }
            }
        }
        assert_eq!(pairs, copies, "puzzles with the same form");
        for &(i, j) in copies {
            assert!(bands_rotated(&grids[i - 1], &grids[j - 1]), "#{i} and #{j}");
        }
    }
}
