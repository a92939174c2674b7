//! sudokud: a Sudoku solving service.
//!
//! - [`solver`]: the core. Parses every puzzle format of the wire protocol
//!   into a validated [`Grid`] and solves it by constraint propagation and
//!   fewest-candidates backtracking over bitmasks, in modes first, unique
//!   and count, with a deadline.
//! - [`protocol`]: job and result messages, exactly as `PROTOCOL.md` says.
//! - [`offline`]: `sudokud solve`, files of puzzles on a pool of threads.

#![forbid(unsafe_code)]

pub mod offline;
pub mod protocol;
pub mod solver;

pub use solver::{Grid, GridError, Mode, Outcome, Status, solve};
