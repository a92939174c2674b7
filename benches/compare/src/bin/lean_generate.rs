//! The lean generating command: a single-threaded loop around the `sudoku`
//! crate's strict-minimal generator (no symmetry) that writes each puzzle
//! as `sudokud generate --threads 1` does, and nothing else. Whole process
//! against whole process, it is the yardstick for `sudokud generate`
//! (BENCHMARKS.md).
//!
//! Usage: `sudokud-lean-generate COUNT`

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let Some(count) = std::env::args().nth(1).and_then(|n| n.parse::<u64>().ok()) else {
        eprintln!("usage: sudokud-lean-generate COUNT");
        std::process::exit(2);
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    for _ in 0..count {
        let puzzle = sudoku::Sudoku::generate_with_symmetry(sudoku::Symmetry::None);
        writeln!(out, "{}", puzzle.to_str_line())?;
    }
    out.flush()
}
