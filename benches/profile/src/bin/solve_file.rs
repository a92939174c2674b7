//! Parses and solves every puzzle of a file on one thread, nothing else, for
//! an instruction count of the solver core's work per puzzle under callgrind
//! (repeatable on a noisy machine). Prints the puzzles solved and the
//! guesses made, which must not change when only the speed should.
//!
//! ```text
//! cargo build --release -p sudokud-profile --bin solve_file
//! valgrind --tool=callgrind target/release/solve_file FILE [first|unique] [--read-only]
//! ```
//!
//! `--read-only` stops after reading the file, for the part to subtract.
use sudokud::{Grid, Mode, Status, solve};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: solve_file FILE [first|unique] [--read-only]");
        std::process::exit(2);
    };
    let mode = match args.get(1).map(String::as_str) {
        Some("unique") => Mode::Unique,
        _ => Mode::First,
    };
    let text = std::fs::read_to_string(path)?;
    if args.iter().any(|a| a == "--read-only") {
        println!("{} bytes", text.len());
        return Ok(());
    }
    let (mut solved, mut guesses) = (0u64, 0u64);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Ok(grid) = Grid::parse(line) else {
            continue;
        };
        let outcome = solve(&grid, mode, None);
        solved += u64::from(outcome.status == Status::Solved);
        guesses += outcome.guesses;
        std::hint::black_box(&outcome);
    }
    println!("{solved} solved, {guesses} guesses");
    Ok(())
}
