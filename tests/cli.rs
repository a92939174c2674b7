//! `sudokud solve` end to end: the real binary, files and standard input.

use std::io::Write;
use std::process::{Command, Stdio};

const PUZZLE: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
const SOLUTION: &str =
    "534678912672195348198342567859761423426853791713924856961537284287419635345286179";

fn sudokud() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sudokud"))
}

fn run_with_stdin(args: &[&str], input: &str) -> (String, String, i32) {
    let mut child = sudokud()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("the binary reads its input");
    let out = child.wait_with_output().expect("the binary finishes");
    (
        String::from_utf8(out.stdout).expect("output is UTF-8"),
        String::from_utf8(out.stderr).expect("errors are UTF-8"),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn solves_standard_input_in_order_with_a_summary() {
    let unsolvable = format!("12345678.{}9{}", ".".repeat(8), ".".repeat(63));
    let input = format!(
        "# comment\n{PUZZLE}\n\n{}\n{unsolvable}\n{}x\n",
        &PUZZLE[..80],
        &PUZZLE[..80]
    );
    let (out, err, code) = run_with_stdin(&["solve", "--threads", "2"], &input);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{SOLUTION}\ninvalid: puzzle has 80 cells, expected 81\nunsolvable\n\
             invalid: invalid character 'x' at row 9, column 9\n"
        )
    );
    assert!(
        err.contains("4 puzzles") && err.contains("1 solved, 1 unsolvable, 0 timeout, 2 invalid"),
        "{err}"
    );
}

#[test]
fn reads_a_file_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("sudokud-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("puzzles.txt");
    std::fs::write(&path, format!("{PUZZLE}\n{}\n", ".".repeat(81))).expect("temp file");
    let out = sudokud()
        .args(["solve", "--mode", "count", "--limit", "3", "--json"])
        .arg(&path)
        .output()
        .expect("the binary runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "solved");
    assert_eq!(lines[0]["solution"], SOLUTION);
    assert_eq!(lines[0]["count"], 1);
    assert_eq!(lines[0]["unique"], true);
    assert_eq!(lines[1]["status"], "solved");
    assert_eq!(lines[1]["count"], 3);
    assert_eq!(lines[1]["unique"], false);
}

#[test]
fn a_deadline_answers_timeout() {
    let (out, _, code) = run_with_stdin(
        &[
            "solve",
            "--mode",
            "count",
            "--limit",
            "1000000",
            "--timeout-ms",
            "20",
        ],
        &format!("{}\n", ".".repeat(81)),
    );
    assert_eq!(code, 0);
    assert_eq!(out, "timeout\n");
}

#[test]
fn a_missing_file_is_an_error() {
    let out = sudokud()
        .args(["solve", "/nonexistent/puzzles.txt"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot open /nonexistent/puzzles.txt"),
        "{err}"
    );
}

#[test]
fn bad_options_are_refused() {
    for args in [
        &["solve", "--threads", "0"][..],
        &["solve", "--mode", "fast"][..],
        &["solve", "--limit", "0"][..],
    ] {
        let out = sudokud().args(args).output().expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn earlier_flag_spellings_still_work_and_stay_out_of_the_help() {
    // No broker on port 1: each run gets past the argument parser (exit 2
    // would be a usage error) and fails on the connection or the input.
    let run = |args: &[&str], input: &str| {
        let mut child = sudokud()
            .args(args)
            .env("SUDOKUD__AMQP__URL", "amqp://guest:guest@127.0.0.1:1/%2f")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(input.as_bytes())
            .expect("the binary reads its input");
        let out = child.wait_with_output().expect("the binary finishes");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["submit", "--timeout", "1", "-"], "# nothing\n");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("input has no puzzles"), "{err}");
    let (code, err) = run(&["health", "--wait", "0", "--timeout-secs", "1"], "");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unhealthy: cannot connect"), "{err}");
    for (command, old, new) in [
        ("submit", "--timeout", "--wait-secs"),
        ("health", "--wait", "--wait-secs"),
    ] {
        let help = sudokud()
            .args([command, "--help"])
            .output()
            .expect("the binary runs");
        let help = String::from_utf8_lossy(&help.stdout);
        let words = help.split(|c: char| c.is_whitespace() || "[],:".contains(c));
        assert!(help.contains(new), "{help}");
        assert!(words.into_iter().all(|w| w != old), "{help}");
    }
}
