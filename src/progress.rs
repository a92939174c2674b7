//! Progress bars of the `sudokud` command (a module of the binary, not of
//! the library): drawn on standard error, and only when it is a terminal,
//! so logs and pipes never see them.

use std::io::{self, IsTerminal};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a bar redraws on its own, so the elapsed time moves even
/// while the count does not.
const TICK: Duration = Duration::from_millis(200);

/// A bar over the bytes of an input of `size` bytes, or a spinner when the
/// size is not known (standard input).
pub fn bytes(size: Option<u64>) -> ProgressBar {
    match size {
        Some(len) => on_stderr(
            Some(len),
            "{bar:40} {percent:>3}% {msg} [{elapsed_precise}, eta {eta}]",
            ProgressStyle::default_bar,
        ),
        None => on_stderr(
            None,
            "{spinner} {msg} [{elapsed_precise}]",
            ProgressStyle::default_spinner,
        ),
    }
}

/// A bar counting up to `total` (things called `unit`).
pub fn count(total: usize, unit: &str) -> ProgressBar {
    on_stderr(
        Some(total as u64),
        &format!("{{bar:40}} {{pos}}/{{len}} {unit} [{{elapsed_precise}}, eta {{eta}}]"),
        ProgressStyle::default_bar,
    )
}

/// [`count`] for a command that writes its answers to standard output: no
/// bar when they share the terminal with it.
pub fn count_beside_stdout(total: usize, unit: &str) -> ProgressBar {
    if io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    count(total, unit)
}

fn on_stderr(len: Option<u64>, template: &str, fallback: fn() -> ProgressStyle) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    // The templates are constants known to parse; the fallback is for form.
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| fallback());
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr()).with_style(style);
    bar.enable_steady_tick(TICK);
    bar
}
