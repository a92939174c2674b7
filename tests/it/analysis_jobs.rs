//! The optional analyses through the worker and a real RabbitMQ: jobs with
//! `"rate": true` and `"canonical": true` get `difficulty` and `canonical`,
//! equal to what the library computes for the same puzzle, on single jobs
//! and on each entry of a batch; jobs without them get neither.

use crate::common::*;
use lapin::BasicProperties;
use serde_json::{Value, json};
use sudokud::{Grid, canonical};

fn job(body: Value) -> Vec<u8> {
    serde_json::to_vec(&body).unwrap()
}

fn expected_canonical(puzzle: &str) -> String {
    canonical(&Grid::parse(puzzle).unwrap()).to_text_with_zeros()
}

/// A symmetric copy of `puzzle`: transposed, the first and last bands
/// swapped, and every digit `d` renamed `10 - d`.
fn symmetric_copy(puzzle: &str) -> String {
    let cells: Vec<char> = puzzle.chars().collect();
    (0..81)
        .map(|i| {
            let (r, c) = (i / 9, i % 9);
            let r = match r / 3 {
                0 => r + 6,
                2 => r - 6,
                _ => r,
            };
            match cells[c * 9 + r].to_digit(10) {
                Some(d) if d > 0 => char::from_digit(10 - d, 10).unwrap(),
                _ => '.',
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_jobs_get_the_analyses_they_ask_for() {
    let mut rig = Rig::start(&classic(settings("analyses"))).await;

    let hard = FAMOUS[0].1.to_string();
    let copy = symmetric_copy(&hard);
    assert_ne!(copy, hard);
    let several = several_solutions(0);
    let jobs = [
        json!({"id": "easy", "puzzle": PUZZLE, "rate": true, "canonical": true}),
        json!({"id": "hard", "puzzle": hard, "rate": true, "canonical": true, "mode": "unique"}),
        json!({"id": "copy", "puzzle": copy, "rate": true, "canonical": true}),
        json!({"id": "rate-only", "puzzle": PUZZLE, "rate": true, "canonical": false}),
        json!({"id": "canonical-only", "puzzle": PUZZLE, "canonical": true, "rate": null}),
        json!({"id": "several", "puzzle": several, "rate": true, "canonical": true}),
        json!({"id": "plain", "puzzle": PUZZLE}),
        json!({"id": "off", "puzzle": PUZZLE, "rate": false, "canonical": false}),
        json!({"id": "bad", "puzzle": PUZZLE, "rate": "yes"}),
    ];
    for body in &jobs {
        rig.client
            .publish(job(body.clone()), BasicProperties::default())
            .await;
    }
    let answered = by_id(rig.results.take(jobs.len()).await);
    let get = |id: &str| &answered[&format!("\"{id}\"")].body;

    for (id, puzzle) in [("easy", PUZZLE), ("hard", &hard), ("copy", &copy)] {
        let body = get(id);
        assert_eq!(body["status"], "solved", "{id}: {body}");
        assert!(is_solution_of(body["solution"].as_str().unwrap(), puzzle));
        assert_eq!(body["difficulty"], expected_difficulty(puzzle), "{id}");
        assert_eq!(body["canonical"], expected_canonical(puzzle), "{id}");
    }
    assert_eq!(get("hard")["unique"], true);
    assert!(
        get("easy").get("unique").is_none(),
        "mode first stays first"
    );
    // Symmetric copies: one form, one rating.
    assert_eq!(get("hard")["canonical"], get("copy")["canonical"]);
    assert_eq!(get("hard")["difficulty"], get("copy")["difficulty"]);
    assert_ne!(get("hard")["canonical"], get("easy")["canonical"]);
    // Inkala's puzzle is past every technique up to SE's dynamic forcing
    // chains: it needs SE's nested levels, at 9.0 or more.
    let technique = get("hard")["difficulty"]["technique"]
        .as_str()
        .map(String::from);
    assert!(
        technique
            .as_deref()
            .is_some_and(|t| t.starts_with("dynamic forcing chain (+")),
        "{technique:?}"
    );
    assert!(get("hard")["difficulty"]["score"].as_f64() >= Some(9.0));

    assert_eq!(get("rate-only")["difficulty"], expected_difficulty(PUZZLE));
    assert!(get("rate-only").get("canonical").is_none());
    assert_eq!(
        get("canonical-only")["canonical"],
        expected_canonical(PUZZLE)
    );
    assert!(get("canonical-only").get("difficulty").is_none());

    // More than one solution: a form, but no rating.
    assert_eq!(get("several")["status"], "solved");
    assert_eq!(get("several")["canonical"], expected_canonical(&several));
    assert!(get("several").get("difficulty").is_none());

    for id in ["plain", "off"] {
        assert_eq!(get(id)["solution"], SOLUTION, "{id}");
        assert!(get(id).get("difficulty").is_none(), "{id}");
        assert!(get(id).get("canonical").is_none(), "{id}");
    }
    assert_eq!(get("bad")["status"], "invalid");
    assert_eq!(
        get("bad")["error"],
        "rate must be true or false, got \"yes\""
    );

    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_batch_entry_gets_the_analyses() {
    let mut rig = Rig::start(&classic(settings("analyses_batch"))).await;

    // Enough puzzles to be cut into several chunks on the pool.
    let mut puzzles = crate::common::puzzles(40);
    puzzles.push(symmetric_copy(&puzzles[0]));
    let several = several_solutions(0);
    // Givens consistent, no completion: 1-8 in row 1 and 9 in column 9.
    let unsolvable = format!("12345678.........9{}", ".".repeat(63));
    let mut entries: Vec<Value> = puzzles.iter().map(|p| json!(p)).collect();
    entries.extend([json!(several), json!(unsolvable), json!("xx")]);
    rig.client
        .publish(
            job(json!({"id": "rated", "puzzles": entries, "rate": true, "canonical": true})),
            BasicProperties::default(),
        )
        .await;
    rig.client
        .publish(
            job(json!({"id": "plain", "puzzles": [PUZZLE, &puzzles[0]]})),
            BasicProperties::default(),
        )
        .await;
    let answered = by_id(rig.results.take(2).await);

    let rated = answered["\"rated\""].body["results"].as_array().unwrap();
    assert_eq!(rated.len(), puzzles.len() + 3);
    for (entry, puzzle) in rated.iter().zip(&puzzles) {
        assert_eq!(entry["status"], "solved", "{puzzle}");
        assert_eq!(entry["difficulty"], expected_difficulty(puzzle), "{puzzle}");
        assert_eq!(entry["canonical"], expected_canonical(puzzle), "{puzzle}");
    }
    let n = puzzles.len();
    assert_eq!(rated[0]["canonical"], rated[n - 1]["canonical"]);
    assert_eq!(rated[0]["difficulty"], rated[n - 1]["difficulty"]);
    let (several_entry, unsolvable_entry, invalid) = (&rated[n], &rated[n + 1], &rated[n + 2]);
    assert_eq!(several_entry["status"], "solved");
    assert_eq!(several_entry["canonical"], expected_canonical(&several));
    assert!(several_entry.get("difficulty").is_none());
    assert_eq!(unsolvable_entry["status"], "unsolvable");
    assert_eq!(
        unsolvable_entry["canonical"],
        expected_canonical(&unsolvable)
    );
    assert!(unsolvable_entry.get("difficulty").is_none());
    assert_eq!(invalid["status"], "invalid");
    assert!(invalid.get("canonical").is_none() && invalid.get("difficulty").is_none());

    let plain = answered["\"plain\""].body["results"].as_array().unwrap();
    assert_eq!(plain.len(), 2);
    for entry in plain {
        assert_eq!(entry["status"], "solved");
        assert!(entry.get("difficulty").is_none() && entry.get("canonical").is_none());
    }

    rig.stop().await;
}
