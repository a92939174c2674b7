//! Prints, per puzzle set, the average number of guesses the solver makes.
//! Usage: cargo run --release -p sudokud-profile --bin stats -- FILE...
fn main() {
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).expect("readable file");
        for mode in [sudokud::Mode::First, sudokud::Mode::Unique] {
            let (mut n, mut guesses, mut zero) = (0u64, 0u64, 0u64);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let Ok(grid) = sudokud::Grid::parse(line) else {
                    continue;
                };
                let outcome = sudokud::solve(&grid, mode, None);
                n += 1;
                guesses += outcome.guesses;
                zero += u64::from(outcome.guesses == 0);
            }
            println!(
                "{path} {mode:?}: {n} puzzles, {:.2} guesses/puzzle, {:.1}% without guessing",
                guesses as f64 / n as f64,
                100.0 * zero as f64 / n as f64
            );
        }
    }
}
