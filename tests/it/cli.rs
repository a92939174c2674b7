//! `sudokud solve` end to end: the real binary, files and standard input.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{FAMOUS, PUZZLE, Run, SOLUTION, UNSOLVABLE, command, run_to_end};

fn run_with_stdin(args: &[&str], input: &str) -> Run {
    let mut sudokud = command(None, &[]);
    sudokud.args(args);
    run_to_end(sudokud, input)
}

#[test]
fn solves_standard_input_in_order_with_a_summary() {
    let input = format!(
        "# comment\n{PUZZLE}\n\n{}\n{UNSOLVABLE}\n{}x\n",
        &PUZZLE[..80],
        &PUZZLE[..80]
    );
    let run = run_with_stdin(&["solve", "--threads", "2"], &input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "{SOLUTION}\ninvalid: puzzle has 80 cells, expected 81\nunsolvable\n\
             invalid: invalid character 'x' at row 9, column 9\n"
        )
    );
    assert!(
        run.stderr.contains("4 puzzles")
            && run
                .stderr
                .contains("1 solved, 1 unsolvable, 0 timeout, 2 invalid"),
        "{}",
        run.stderr
    );
}

#[test]
fn reads_a_file_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("sudokud-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("puzzles.txt");
    std::fs::write(&path, format!("{PUZZLE}\n{}\n", ".".repeat(81))).expect("temp file");
    let path = path.to_str().expect("a UTF-8 temp path");
    let out = run_with_stdin(
        &["solve", "--mode", "count", "--limit", "3", "--json", path],
        "",
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.code, 0);
    let lines = out.lines();
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
    let run = run_with_stdin(
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
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "timeout\n");
}

#[test]
fn a_missing_file_is_an_error() {
    let run = run_with_stdin(&["solve", "/nonexistent/puzzles.txt"], "");
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("cannot open /nonexistent/puzzles.txt"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_options_are_refused() {
    for args in [
        &["solve", "--threads", "0"][..],
        &["solve", "--mode", "fast"][..],
        &["solve", "--limit", "0"][..],
    ] {
        let out = run_with_stdin(args, "");
        assert_eq!(out.code, 2, "{args:?}");
    }
}

#[test]
fn earlier_flag_spellings_still_work_and_stay_out_of_the_help() {
    // No broker on port 1: each run gets past the argument parser (exit 2
    // would be a usage error) and fails on the connection or the input.
    let no_broker = [("SUDOKUD__AMQP__URL", "amqp://guest:guest@127.0.0.1:1/%2f")];
    let run = |args: &[&str], input: &str| {
        let mut sudokud = command(None, &no_broker);
        sudokud.args(args);
        run_to_end(sudokud, input)
    };
    let out = run(&["submit", "--timeout", "1", "-"], "# nothing\n");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("input has no puzzles"),
        "{}",
        out.stderr
    );
    let out = run(&["health", "--wait", "0", "--timeout-secs", "1"], "");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("unhealthy: cannot connect"),
        "{}",
        out.stderr
    );
    for (subcommand, old, new) in [
        ("submit", "--timeout", "--wait-secs"),
        ("health", "--wait", "--wait-secs"),
    ] {
        let help = run(&[subcommand, "--help"], "").stdout;
        let words = help.split(|c: char| c.is_whitespace() || "[],:".contains(c));
        assert!(help.contains(new), "{help}");
        assert!(words.into_iter().all(|w| w != old), "{help}");
    }
}

/// What `sudokud solve --rate --threads 2` on `input` answered when, two
/// seconds in, the shell ran `signal(pid)`: its exit code, standard output
/// and standard error.
fn interrupted_rating(
    input: &str,
    name: &str,
    signal: impl Fn(u32) -> String,
) -> (Option<i32>, String, String) {
    let file = std::env::temp_dir().join(format!("sudokud-{name}-{}.txt", std::process::id()));
    std::fs::write(&file, input).unwrap();
    let mut sudokud = command(None, &[]);
    sudokud
        .args(["solve", "--rate", "--threads", "2"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = sudokud.spawn().expect("the binary starts");
    std::thread::sleep(Duration::from_secs(2));
    let status = Command::new("sh")
        .args(["-c", &signal(child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&file);
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// A first SIGINT stops `sudokud solve` early: it exits 130 and writes the
/// answers to the first puzzles of its input, every one it made (none is
/// left in its output buffer), in order.
#[test]
fn an_interrupted_solve_writes_the_answers_to_the_start_of_its_input() {
    // Quick answers first, then ratings that take a while each.
    let (_, hard) = FAMOUS[0];
    let input = format!("{PUZZLE}\n").repeat(300) + &format!("{hard}\n").repeat(2000);
    let (code, stdout, stderr) =
        interrupted_rating(&input, "slow", |pid| format!("kill -INT {pid}"));
    assert_eq!(code, Some(130), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() < 2300, "{} answers", lines.len());
    assert!(
        stderr.contains(&format!("interrupted, the first {} puzzles", lines.len())),
        "{} answers; {stderr}",
        lines.len()
    );
    for (i, line) in lines.iter().enumerate() {
        let expected = if i < 300 { SOLUTION } else { "" };
        assert!(line.starts_with(expected), "answer {i}: {line}");
    }
}

/// One request delivered twice in quick succession stops a run as one
/// signal does: coreutils `timeout` sends SIGTERM to the command and then
/// to its process group. The ratings in flight take a while to finish, so
/// the second signal comes while the run is still stopping; it exits 143
/// with every answer it made and its summary, not at once as on a second
/// request.
#[test]
fn a_signal_delivered_twice_stops_a_run_as_one_does() {
    let (_, hard) = FAMOUS[0];
    let input = format!("{hard}\n").repeat(2000);
    // The second after the first is taken, well within the window.
    let (code, stdout, stderr) = interrupted_rating(&input, "twice", |pid| {
        format!("kill -TERM {pid}; sleep 0.02; kill -TERM {pid}")
    });
    assert_eq!(code, Some(143), "{stderr}");
    let answers = stdout.lines().count();
    assert!(answers < 2000, "{answers} answers");
    assert!(
        stderr.contains(&format!("interrupted, the first {answers} puzzles")),
        "{answers} answers; {stderr}"
    );
}
