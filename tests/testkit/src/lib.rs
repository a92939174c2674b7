//! What sudokud's tests and the pipeline bench's soak share. Independent
//! of the `sudokud` crate, so that the library's own unit tests can use it
//! too (as a dev-dependency) without a second copy of the library.
//!
//! - The sample puzzle of every test, its solution, and a puzzle with no
//!   solution: one definition each.
//! - [`Collector`]: reads a results queue through any broker fault,
//!   checks every result as it comes, and records what it saw.
//! - [`inspect_queue`]: a queue's counts, without declaring it.

mod collector;

pub use collector::{Check, Collector, Seen};

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;

/// `queue` as the broker has it (ready messages, consumers), by a passive
/// declare: fails if it does not exist, and never creates it. A failure
/// closes `channel`.
pub async fn inspect_queue(channel: &lapin::Channel, queue: &str) -> lapin::Result<lapin::Queue> {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
}

/// The sample puzzle (30 givens, solved by propagation alone), as 81
/// cells, `.` for a blank.
pub const PUZZLE: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

/// The one solution of [`PUZZLE`].
pub const SOLUTION: &str =
    "534678912672195348198342567859761423426853791713924856961537284287419635345286179";

/// Givens that do not contradict each other but leave no solution: 1 to 8
/// in row 1 and a 9 in column 9 leave no digit for row 1, column 9.
pub const UNSOLVABLE: &str = concat!(
    "12345678.",
    "........9",
    ".........",
    ".........",
    ".........",
    ".........",
    ".........",
    ".........",
    ".........",
);

/// Famous hard puzzles, quoted by name: each has exactly one solution (the
/// suite checks it with the solver) and needs search to be rated. Tests
/// that need puzzles hard for the solver use these or copies of them.
pub const FAMOUS: [(&str, &str); 5] = [
    (
        "Arto Inkala's 2010 puzzle",
        "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
    ),
    (
        "AI Escargot",
        "1....7.9..3..2...8..96..5....53..9...1..8...26....4...3......1..4......7..7...3..",
    ),
    (
        "Golden Nugget",
        ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
    ),
    (
        "Platinum Blonde",
        ".......12........3..23..4....18....5.6..7.8.......9.....85.....9...4.5..47...6...",
    ),
    (
        "Easter Monster",
        "1.......2.9.4...5...6...7...5.9.3.......7.......85..4.7.....6...3...9.8...2.....1",
    ),
];
