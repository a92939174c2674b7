//! The analyses on puzzles of known character: ratings rise from puzzles
//! with many givens through the generator's minimal puzzles to the famous
//! hardest ones, and canonical forms tell puzzles apart.

use crate::common::{FAMOUS, SEED};
use sudokud::solver::{Generator, Spec};
use sudokud::{Grid, Technique, canonical, rate};

/// The generator's first `n` puzzles with `spec` (seed [`SEED`]).
fn generated(spec: Spec, n: u64) -> Vec<Grid> {
    let generator = Generator::new(Spec { seed: SEED, ..spec }).expect("valid parameters");
    (0..n)
        .map(|i| generator.puzzle(i, || false).expect("never stopped").puzzle)
        .collect()
}

/// Puzzles with 45 to 50 givens: easy, as puzzles with that many are.
fn easy() -> Vec<Grid> {
    generated(
        Spec {
            minimal: false,
            givens: Some((45, 50)),
            ..Spec::default()
        },
        50,
    )
}

/// Minimal puzzles.
fn minimal() -> Vec<Grid> {
    generated(Spec::default(), 95)
}

/// The famous hardest puzzles.
fn hardest() -> Vec<Grid> {
    FAMOUS
        .iter()
        .map(|(_, p)| Grid::parse(p).expect("famous puzzles are valid"))
        .collect()
}

fn scores(grids: &[Grid]) -> Vec<f64> {
    grids
        .iter()
        .map(|g| rate(g).expect("the puzzles have one solution").score())
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
fn ratings_rise_from_many_givens_through_minimal_to_the_famous_hardest() {
    let easy = scores(&easy());
    let minimal = scores(&minimal());
    let hardest = scores(&hardest());
    assert_eq!(easy.len(), 50);
    assert_eq!(hardest.len(), FAMOUS.len());
    assert!(
        mean(&easy) < mean(&minimal) && mean(&minimal) < mean(&hardest),
        "means: many givens {}, minimal {}, famous {}",
        mean(&easy),
        mean(&minimal),
        mean(&hardest)
    );
    assert!(
        min(&hardest) > max(&easy),
        "hardest with many givens {} against easiest famous {}",
        max(&easy),
        min(&hardest)
    );
}

#[test]
fn easy_puzzles_need_no_chains_and_the_hardest_need_nested_ones() {
    for grid in easy() {
        let d = rate(&grid).unwrap();
        assert!(
            d.technique < Technique::DynamicForcingChainPlus,
            "{grid}: {d:?}"
        );
        assert!(
            d.score() < Technique::DynamicForcingChainPlus.score(),
            "{grid}: {d:?}"
        );
    }
    // Past every technique up to SE's dynamic forcing chains, the famous
    // hardest need its nested levels, and no search.
    for grid in hardest() {
        let d = rate(&grid).unwrap();
        assert!(
            d.technique >= Technique::DynamicForcingChainPlus,
            "{grid}: {d:?}"
        );
        assert!(d.technique < Technique::Search, "{grid}: {d:?}");
        assert!(
            d.score() >= Technique::DynamicForcingChainPlus.score(),
            "{grid}: {d:?}"
        );
        assert!(!d.is_lower_bound(), "{grid}");
    }
}

/// Whether `b` is `a` with its bands rotated (by one or two bands).
fn bands_rotated(a: &Grid, b: &Grid) -> bool {
    [27, 54].into_iter().any(|shift| {
        let rotated: [u8; 81] = std::array::from_fn(|i| a.cells()[(i + shift) % 81]);
        &rotated == b.cells()
    })
}

/// `grid` with its bands rotated: each cell moved back `shift` cells (27
/// or 54), so that [`bands_rotated`] holds.
fn rotate_bands(grid: &Grid, shift: usize) -> Grid {
    Grid::from_cells(std::array::from_fn(|i| grid.cells()[(i + shift) % 81]))
        .expect("a symmetric copy is valid")
}

#[test]
fn canonical_forms_tell_the_puzzles_apart() {
    // Each set gets symmetric copies of two of its puzzles (the first and
    // the middle one) with their bands rotated, and its last puzzle once
    // more unchanged: exactly the copies share a form with another
    // puzzle.
    for set in [easy(), minimal(), hardest()] {
        let n = set.len();
        let copies = [(1, n + 1), (n / 2, n + 2)];
        let mut grids = set;
        grids.push(rotate_bands(&grids[0], 27));
        grids.push(rotate_bands(&grids[n / 2 - 1], 54));
        grids.push(grids[n - 1]);
        let forms: Vec<Grid> = grids.iter().map(canonical).collect();
        for (grid, form) in grids.iter().zip(&forms) {
            assert_eq!(form.givens(), grid.givens());
            assert_eq!(&canonical(form), form, "{grid}");
            assert!(form.to_text_with_zeros() <= grid.to_text_with_zeros());
        }
        let mut pairs = Vec::new();
        for i in 0..forms.len() {
            for j in i + 1..forms.len() {
                // (The last puzzle is there twice.)
                if forms[i] == forms[j] && grids[i] != grids[j] {
                    pairs.push((i + 1, j + 1));
                }
            }
        }
        assert_eq!(pairs, copies, "puzzles with the same form");
        for (i, j) in copies {
            assert!(bands_rotated(&grids[i - 1], &grids[j - 1]), "#{i} and #{j}");
        }
    }
}
