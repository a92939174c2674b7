//! `sudokud-compare rate FILE`: rates every puzzle of FILE on one thread
//! and compares with the reference ratings it carries.
//!
//! FILE is a TSV with a header naming its columns (`puzzle`, and the
//! reference `er_se121` or `er`, optionally `ep_se121`/`ep` and
//! `ed_se121`/`ed`), or plain lines of one puzzle each (no reference: the
//! table then shows our ratings alone). The table has one row per integer
//! bucket of the reference ER (of ours without one): puzzles, ER equal,
//! ER within 0.1, our mean ER, and the bucket's share of the rating time;
//! then EP/ED agreement, throughput and the per-puzzle median and maximum
//! time (`--slowest N` lists the slowest puzzles first). With `--ceiling T`, ratings stop above T tenths, as the
//! generator's bands rate: the puzzles above it get a row of their own.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sudokud::solver::rate_at_most;
use sudokud::{DEFAULT_MAX_RATE_WORK, Grid, rate_with_budget};

/// Rates a file of puzzles and compares with its reference ratings.
#[derive(clap::Parser)]
#[command(name = "sudokud-compare rate")]
struct RateArgs {
    /// Rating budget, in units of work.
    #[arg(long, default_value_t = DEFAULT_MAX_RATE_WORK)]
    max_work: u64,
    /// Rate only the first N puzzles.
    #[arg(long)]
    limit: Option<usize>,
    /// Rate as a difficulty band with this top (tenths) does: no step
    /// above it is looked for.
    #[arg(long)]
    ceiling: Option<u16>,
    /// Print up to N puzzles whose ER differs from the reference.
    #[arg(long, default_value_t = 0)]
    misses: usize,
    /// Print the N slowest puzzles: time, our rating and hardest
    /// technique.
    #[arg(long, default_value_t = 0)]
    slowest: usize,
    /// The TSV or plain file.
    path: PathBuf,
}

/// One puzzle and its reference ratings, in tenths.
struct Row {
    puzzle: String,
    er: Option<i64>,
    ep: Option<i64>,
    ed: Option<i64>,
}

fn tenths(text: &str) -> Option<i64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .map(|v| (v * 10.0).round() as i64)
}

fn read(path: &PathBuf) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    let header: Option<Vec<String>> = match lines.peek() {
        Some(first) if first.split('\t').next().is_some_and(|c| c.len() != 81) => lines
            .next()
            .map(|h| h.split('\t').map(String::from).collect()),
        _ => None,
    };
    let column = |names: &[&str]| -> Option<usize> {
        let header = header.as_ref()?;
        names
            .iter()
            .find_map(|name| header.iter().position(|h| h == name))
    };
    let (p, er, ep, ed) = (
        column(&["puzzle"]).unwrap_or(0),
        column(&["er_se121", "er"]),
        column(&["ep_se121", "ep"]),
        column(&["ed_se121", "ed"]),
    );
    lines
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let get = |i: Option<usize>| i.and_then(|i| cols.get(i)).and_then(|c| tenths(c));
            Row {
                puzzle: cols.get(p).copied().unwrap_or_default().trim().to_string(),
                er: get(er),
                ep: get(ep),
                ed: get(ed),
            }
        })
        .collect()
}

#[derive(Default)]
struct Bucket {
    n: usize,
    equal: usize,
    near: usize,
    ours: i64,
    time: Duration,
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

pub fn main(args: impl Iterator<Item = String>) {
    let args: RateArgs = clap::Parser::parse_from(args);
    let mut rows = read(&args.path);
    if let Some(limit) = args.limit {
        rows.truncate(limit);
    }
    let mut buckets: Vec<Bucket> = (0..21).map(|_| Bucket::default()).collect();
    let mut above = Bucket::default();
    let (mut ep_n, mut ep_eq, mut ed_n, mut ed_eq) = (0, 0, 0, 0);
    let (mut abs_err, mut bounded, mut refused, mut shown) = (0i64, 0, 0, 0);
    let mut times = Vec::with_capacity(rows.len());
    let mut slow: Vec<(Duration, String)> = Vec::new();
    let started = Instant::now();
    for row in &rows {
        let Ok(grid) = Grid::parse(&row.puzzle) else {
            refused += 1;
            continue;
        };
        let t0 = Instant::now();
        let rated = match args.ceiling {
            Some(ceiling) => rate_at_most(&grid, args.max_work, ceiling),
            None => rate_with_budget(&grid, args.max_work).map(Some),
        };
        let took = t0.elapsed();
        times.push(took);
        let d = match rated {
            Ok(Some(d)) => d,
            Ok(None) => {
                above.n += 1;
                above.time += took;
                continue;
            }
            Err(_) => {
                refused += 1;
                continue;
            }
        };
        if args.slowest > 0 {
            slow.push((
                took,
                format!(
                    "{} {:.1}/{:.1}/{:.1} {}",
                    row.puzzle,
                    d.score(),
                    d.pearl(),
                    d.diamond(),
                    d.technique.name()
                ),
            ));
        }
        let er = (d.score() * 10.0).round() as i64;
        let ep = (d.pearl() * 10.0).round() as i64;
        let ed = (d.diamond() * 10.0).round() as i64;
        bounded += usize::from(d.is_lower_bound());
        let reference = row.er.unwrap_or(er);
        let b = &mut buckets[(reference / 10).clamp(0, 20) as usize];
        b.n += 1;
        b.equal += usize::from(er == reference);
        b.near += usize::from((er - reference).abs() <= 1);
        b.ours += er;
        b.time += took;
        abs_err += (er - reference).abs();
        if row.er.is_some() && er != reference && shown < args.misses {
            shown += 1;
            println!(
                "miss {} ref {:.1}/{}/{} ours {:.1}/{:.1}/{:.1} {}",
                row.puzzle,
                reference as f64 / 10.0,
                row.ep
                    .map_or("-".into(), |v| format!("{:.1}", v as f64 / 10.0)),
                row.ed
                    .map_or("-".into(), |v| format!("{:.1}", v as f64 / 10.0)),
                d.score(),
                d.pearl(),
                d.diamond(),
                d.technique.name()
            );
        }
        if let Some(r) = row.ep {
            ep_n += 1;
            ep_eq += usize::from(r == ep);
        }
        if let Some(r) = row.ed {
            ed_n += 1;
            ed_eq += usize::from(r == ed);
        }
    }
    let wall = started.elapsed();
    let what = if rows.iter().any(|r| r.er.is_some()) {
        "reference ER"
    } else {
        "our ER"
    };
    let rating_time: Duration = times.iter().sum();
    slow.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (took, what) in slow.iter().take(args.slowest) {
        println!(
            "slow {} {:.1}% {what}",
            shown_time(*took),
            100.0 * took.as_secs_f64() / rating_time.as_secs_f64().max(1e-12)
        );
    }
    let share = |t: Duration| {
        format!(
            "{:.1}%",
            100.0 * t.as_secs_f64() / rating_time.as_secs_f64().max(1e-12)
        )
    };
    println!("| {what} | puzzles | ER equal | ER within 0.1 | our mean | time |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut total = Bucket::default();
    for (i, b) in buckets.iter().enumerate().filter(|(_, b)| b.n > 0) {
        println!(
            "| {i}.x | {} | {} | {} | {:.2} | {} |",
            b.n,
            percent(b.equal, b.n),
            percent(b.near, b.n),
            b.ours as f64 / 10.0 / b.n as f64,
            share(b.time)
        );
        total.n += b.n;
        total.equal += b.equal;
        total.near += b.near;
        total.ours += b.ours;
    }
    if let Some(ceiling) = args.ceiling {
        println!(
            "| above {:.1} | {} | - | - | - | {} |",
            f64::from(ceiling) / 10.0,
            above.n,
            share(above.time)
        );
    }
    println!(
        "| all | {} | {} | {} | {:.2} | 100% |",
        total.n,
        percent(total.equal, total.n),
        percent(total.near, total.n),
        total.ours as f64 / 10.0 / total.n.max(1) as f64
    );
    println!();
    println!(
        "mean |ER error| {:.3}; EP equal {} of {}; ED equal {} of {}",
        abs_err as f64 / 10.0 / total.n.max(1) as f64,
        percent(ep_eq, ep_n),
        ep_n,
        percent(ed_eq, ed_n),
        ed_n
    );
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let max = times.last().copied().unwrap_or_default();
    println!(
        "{} puzzles in {:.2} s on one thread: {:.0} puzzles/s; per puzzle median {}, max {}; {} bounded (budget {}), {} refused",
        times.len(),
        wall.as_secs_f64(),
        times.len() as f64 / wall.as_secs_f64().max(1e-9),
        shown_time(median),
        shown_time(max),
        bounded,
        args.max_work,
        refused
    );
}

fn shown_time(t: Duration) -> String {
    if t >= Duration::from_secs(1) {
        format!("{:.2} s", t.as_secs_f64())
    } else {
        format!("{:.3} ms", t.as_secs_f64() * 1e3)
    }
}
