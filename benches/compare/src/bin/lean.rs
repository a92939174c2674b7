//! The lean command: a single-threaded loop around the `sudoku` crate that
//! does the same I/O as `sudokud solve --threads 1` and nothing else. It
//! reads a file of puzzles, one a line (blank lines and `#` comments
//! skipped), and writes one line per puzzle to standard output: the first
//! solution found, `unsolvable`, or `invalid`. Whole process against whole
//! process, it is the yardstick for `sudokud solve` (BENCHMARKS.md).
//!
//! Usage: `sudokud-lean FILE`

use std::io::{BufRead, BufWriter, Write};

fn main() -> std::io::Result<()> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: sudokud-lean FILE");
        std::process::exit(2);
    };
    let input = std::io::BufReader::new(std::fs::File::open(path)?);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    for line in input.lines() {
        let line = line?;
        let puzzle = line.trim();
        if puzzle.is_empty() || puzzle.starts_with('#') {
            continue;
        }
        match sudoku::Sudoku::from_str_line(puzzle) {
            Ok(sudoku) => match sudoku.some_solution() {
                Some(solution) => writeln!(out, "{}", solution.to_str_line())?,
                None => writeln!(out, "unsolvable")?,
            },
            Err(_) => writeln!(out, "invalid")?,
        }
    }
    out.flush()
}
