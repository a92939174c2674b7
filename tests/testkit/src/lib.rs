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
