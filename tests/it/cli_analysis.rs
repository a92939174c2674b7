//! `sudokud solve --rate --canonical` end to end: the real binary, its JSON
//! and its plain columns, against the library's rating and canonical form.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use sudokud::{Grid, canonical, rate};
use sudokud_testkit::{FAMOUS, PUZZLE, SOLUTION};

use crate::common::{expected_difficulty, several_solutions};

/// Consistent givens, no completion: 1-8 in row 1 and 9 in column 9.
const UNSOLVABLE: &str =
    "12345678.........9...............................................................";

fn solve(args: &[&str], input: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sudokud"))
        .arg("solve")
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

fn hard() -> String {
    FAMOUS[0].1.to_string()
}

fn grid(puzzle: &str) -> Grid {
    Grid::parse(puzzle).expect("test puzzles are valid")
}

fn form(puzzle: &str) -> String {
    canonical(&grid(puzzle)).to_text_with_zeros()
}

#[test]
fn json_carries_difficulty_and_canonical() {
    let hard = hard();
    let several = several_solutions(0);
    let input = format!("{PUZZLE}\n{hard}\n{several}\n{UNSOLVABLE}\nxx\n");
    for threads in ["1", "2"] {
        let out = solve(
            &["--rate", "--canonical", "--json", "--threads", threads],
            &input,
        );
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 5);
        for (line, puzzle) in lines.iter().zip([PUZZLE, &hard]) {
            assert_eq!(line["status"], "solved");
            assert_eq!(line["difficulty"], expected_difficulty(puzzle));
            assert_eq!(line["canonical"], form(puzzle));
        }
        assert_eq!(lines[0]["solution"], SOLUTION);
        for (line, puzzle) in lines[2..4].iter().zip([several.as_str(), UNSOLVABLE]) {
            assert_eq!(line["canonical"], form(puzzle));
            assert!(line.get("difficulty").is_none(), "{line}");
        }
        assert_eq!(lines[3]["status"], "unsolvable");
        assert_eq!(lines[4]["status"], "invalid");
        assert!(lines[4].get("canonical").is_none() && lines[4].get("difficulty").is_none());
    }
}

#[test]
fn plain_output_adds_columns_in_a_documented_order() {
    let several_puzzle = several_solutions(0);
    let input = format!("{PUZZLE}\n{several_puzzle}\n{UNSOLVABLE}\nxx\n");
    let d = rate(&grid(PUZZLE)).expect("one solution");
    let rated = format!("{:.1} {}", d.score(), d.technique.name());
    let out = solve(&["--rate", "--canonical"], &input);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], format!("{SOLUTION} {} {rated}", form(PUZZLE)));
    let several: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(several.len(), 3, "{}", lines[1]);
    assert_eq!(&several[1..], [form(&several_puzzle).as_str(), "-"]);
    assert_eq!(lines[2], format!("unsolvable {} -", form(UNSOLVABLE)));
    assert_eq!(
        lines[3],
        "invalid: invalid character 'x' at row 1, column 1"
    );

    // One analysis alone: only its columns.
    let out = solve(&["--rate"], &format!("{PUZZLE}\n"));
    assert_eq!(out, format!("{SOLUTION} {rated}\n"));
    let out = solve(&["--canonical"], &format!("{PUZZLE}\n"));
    assert_eq!(out, format!("{SOLUTION} {}\n", form(PUZZLE)));
    // Neither: the answer alone.
    let out = solve(&[], &format!("{PUZZLE}\n"));
    assert_eq!(out, format!("{SOLUTION}\n"));
}
