//! The alert rules and the Grafana dashboard of `deploy/` on a live
//! Prometheus server (Debian's `prometheus` package: `/usr/bin/prometheus`,
//! or `PROMETHEUS`), scraping real workers on a RabbitMQ node of their own
//! (the metrics tests' node, `scripts/fault-node.sh` with
//! `FAULT_NODE=sudokud-metrics@localhost`, AMQP port 5674).
//!
//! The server listens on a loopback port of its own, with a temporary
//! configuration: the workers' listeners as the `sudokud` job, scraped and
//! evaluated every second, and `deploy/prometheus/sudokud-rules.yaml` as it
//! is except for its `for:` durations, shortened to a few seconds (their
//! effect is covered by `promtool test rules`, deploy/check.py): the
//! expressions, labels and annotations are the shipped ones.
//!
//! - A memory alarm on the node blocks the worker's connection:
//!   `SudokudBrokerBlocked` fires for that worker.
//! - A crash-looping job (a job that aborts the worker it reaches, through
//!   the test-only fault injection) kills a second worker again and again;
//!   the jobs it held come back to the first one, which quarantines them:
//!   `SudokudJobsRedelivered` fires.
//! - Every PromQL expression of `deploy/grafana/sudokud.json` (its
//!   variables replaced as Grafana would) returns data.
//!
//! Built only with `--features fault-injection` (the crash-looping job
//! needs it): `cargo test --features fault-injection --test it -- alerts::`.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::http::*;
use crate::common::*;
use lapin::BasicProperties;
use serde_json::{Value, json};

/// A failure guard for waiting on the server, never a speed requirement.
const ALERT_PATIENCE: Duration = Duration::from_secs(120);

/// What `SUDOKUD_FAULT_ABORT_ON_ID` names: jobs with this id abort a worker
/// started with it.
const CRASHING_ID: &str = "\"crash-loop\"";

/// The repository's `deploy/` file `path`.
fn deploy_file(path: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The shipped rules with every `for:` duration set to `for_`.
fn rules_with_for(rules: &str, for_: &str) -> String {
    let mut shortened = 0;
    let text: Vec<String> = rules
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("for: ") {
                shortened += 1;
                format!("{}for: {for_}", &line[..line.len() - trimmed.len()])
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(shortened > 0, "no for: in the rules");
    text.join("\n") + "\n"
}

/// A Prometheus server of the test's own, killed when dropped.
struct Prometheus {
    child: std::process::Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Prometheus {
    /// Starts the server scraping `targets` (host:port) as job `sudokud`,
    /// with the shipped rules (`for:` shortened), and waits until it
    /// answers.
    async fn start(targets: &[String]) -> Prometheus {
        let dir = std::env::temp_dir().join(unique("prometheus"));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let rules = rules_with_for(&deploy_file("prometheus/sudokud-rules.yaml"), "3s");
        std::fs::write(dir.join("sudokud-rules.yaml"), rules).unwrap();
        let targets: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - sudokud-rules.yaml\n\
             scrape_configs:\n  - job_name: sudokud\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let binary = std::env::var("PROMETHEUS").unwrap_or_else(|_| "prometheus".into());
        let port = free_port();
        let verbose = std::env::var("TEST_LOG").is_ok_and(|v| v == "1");
        let child = Command::new(&binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if verbose {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {binary} (apt-get install prometheus, see .ci/run): {e}")
            });
        let prometheus = Prometheus { child, port, dir };
        wait_for_status(port, "/-/ready", 200, |_, _| {}).await;
        prometheus
    }

    /// `GET /api/v1/PATH`: its `data`, once the server says `success`.
    async fn api(&self, path: &str) -> Value {
        let (status, body) = get_ok(self.port, &format!("/api/v1/{path}")).await;
        let answer: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/api/v1/{path}: not JSON ({e}): {body}"));
        assert!(
            status == 200 && answer["status"] == "success",
            "/api/v1/{path} answered {status}: {body}"
        );
        answer["data"].clone()
    }

    /// An instant query: its result vector.
    async fn query(&self, promql: &str) -> Vec<Value> {
        let data = self.api(&format!("query?query={}", encode(promql))).await;
        assert_eq!(data["resultType"], "vector", "{promql}: {data}");
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// The alerts in state `firing`, each as its labels.
    async fn firing(&self) -> Vec<Value> {
        self.api("alerts").await["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a["state"] == "firing")
            .map(|a| a["labels"].clone())
            .collect()
    }

    /// Waits until alert `name` fires; returns its labels.
    async fn wait_for_firing(&self, name: &str, mut meanwhile: impl FnMut()) -> Value {
        eventually_within(ALERT_PATIENCE, Duration::from_millis(250), async || {
            meanwhile();
            let firing = self.firing().await;
            firing
                .iter()
                .find(|labels| labels["alertname"] == name)
                .cloned()
                .ok_or_else(|| format!("{name} does not fire; firing: {firing:?}"))
        })
        .await
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Percent-encoding for a query string value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `scripts/fault-node.sh ARGS` for the metrics tests' node; whether it
/// succeeded.
fn node_run(args: &[&str]) -> bool {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fault-node.sh");
    Command::new(script)
        .args(args)
        .env("FAULT_NODE", "sudokud-metrics@localhost")
        .env("FAULT_PORT", "5674")
        .env("FAULT_DIR", "/tmp/sudokud-metrics-node")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("cannot run scripts/fault-node.sh")
        .success()
}

fn node(args: &[&str]) {
    assert!(node_run(args), "scripts/fault-node.sh {args:?} failed");
}

/// Clears the memory alarm when dropped, even if the test fails.
struct Alarm;

impl Alarm {
    fn raise() -> Alarm {
        node(&["ctl", "set_vm_memory_high_watermark", "0.000001"]);
        Alarm
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        node(&["ctl", "set_vm_memory_high_watermark", "0.4"]);
    }
}

/// A worker's own counter `name`, from its listener.
async fn counter(port: u16, name: &str) -> f64 {
    let text = get_ok(port, "/metrics").await.1;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

/// Every query of the dashboard (panel targets and query variables), with
/// Grafana's variables replaced: `$instance` by "all", the intervals by
/// windows that hold several scrapes.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(&deploy_file("grafana/sudokud.json"))
        .expect("deploy/grafana/sudokud.json is JSON");
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                queries.push((panel["title"].to_string(), expr.to_string()));
            }
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if variable["type"] != "query" {
            continue;
        }
        let query = variable["query"]["query"]
            .as_str()
            .or(variable["query"].as_str())
            .expect("a variable's query");
        // label_values(METRIC, LABEL): the series of METRIC.
        let metric = query
            .strip_prefix("label_values(")
            .and_then(|q| q.rsplit_once(','))
            .map(|(metric, _)| metric.trim().to_string())
            .unwrap_or_else(|| panic!("not a label_values query: {query}"));
        queries.push((format!("variable {}", variable["name"]), metric));
    }
    assert!(queries.len() > 10, "{queries:?}");
    queries
        .into_iter()
        .map(|(title, expr)| {
            let expr = expr
                .replace("$__rate_interval", "10s")
                .replace("$__range", "5m")
                .replace("$instance", ".*");
            assert!(!expr.contains('$'), "a variable left in {expr}");
            (title, expr)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_fire_and_the_dashboard_has_data_on_a_live_prometheus() {
    // A node left with its app stopped by a failed metrics test would look
    // down to `start`: start the app first (this fails harmlessly when
    // there is no node yet).
    let _ = node_run(&["ctl", "start_app"]);
    node(&["start"]);
    node(&["ctl", "set_vm_memory_high_watermark", "0.4"]);
    let mut settings = settings("alerts");
    settings.amqp.url = "amqp://guest:guest@127.0.0.1:5674/%2f".into();
    let (settings, steady_port) = with_listener(settings);
    let crasher_port = free_port();
    let targets = [
        format!("127.0.0.1:{steady_port}"),
        format!("127.0.0.1:{crasher_port}"),
    ];
    let client = Client::connect(&settings).await;
    let prometheus = Prometheus::start(&targets).await;
    let rules = prometheus.api("rules").await;
    let loaded: Vec<&str> = rules["groups"][0]["rules"]
        .as_array()
        .expect("the rules are loaded")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for alert in ["SudokudBrokerBlocked", "SudokudJobsRedelivered"] {
        assert!(loaded.contains(&alert), "{alert} not in {loaded:?}");
    }

    // The steady worker, scraped from its first second.
    let steady = WorkerProcess::start(
        &settings,
        &[("SUDOKUD__METRICS__LISTEN", settings.metrics.listen.as_str())],
    );
    eventually_within(ALERT_PATIENCE, POLL, async || {
        let up = prometheus
            .query(&format!("up{{instance=\"{}\"}} == 1", targets[0]))
            .await;
        if up.is_empty() {
            Err("the steady worker is not scraped yet".to_string())
        } else {
            Ok(())
        }
    })
    .await;

    // A memory alarm while the worker answers a backlog: the broker blocks
    // its connection.
    let n = 40_000;
    client.publish_all(jobs(&puzzles(n))).await;
    eventually(
        async || match counter(steady_port, "sudokud_job_duration_seconds_count").await {
            answered if answered >= 1000.0 => Ok(()),
            answered => Err(format!("{answered} jobs answered")),
        },
    )
    .await;
    let alarm = Alarm::raise();
    let alarm_at = Instant::now();
    let blocked = prometheus
        .wait_for_firing("SudokudBrokerBlocked", || {})
        .await;
    let blocked_after = alarm_at.elapsed();
    assert_eq!(blocked["instance"], targets[0], "{blocked}");
    assert_eq!(blocked["job"], "sudokud", "{blocked}");
    drop(alarm);
    eventually(
        async || match counter(steady_port, "sudokud_broker_blocked").await {
            0.0 => Ok(()),
            _ => Err("the worker is still blocked".to_string()),
        },
    )
    .await;

    // A crash-looping job: a second worker, started again whenever it
    // dies, aborts on it; the jobs it held come back, redelivered, to the
    // steady worker. Jobs keep coming meanwhile, a few of them the
    // crashing one.
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU64::new(0));
    let publisher = {
        let client = Client::connect(&settings).await;
        let (stop, published) = (Arc::clone(&stop), Arc::clone(&published));
        let healthy = puzzles(500);
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let mut batch = jobs(&healthy);
                let crashing = json!({"id": "crash-loop", "puzzle": PUZZLE});
                batch.insert(
                    250,
                    (
                        serde_json::to_vec(&crashing).unwrap(),
                        BasicProperties::default(),
                    ),
                );
                client.publish_all(batch).await;
                published.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            client
        })
    };
    let crasher_listen = targets[1].clone();
    let crasher_env = [
        ("SUDOKUD_FAULT_ABORT_ON_ID", CRASHING_ID),
        ("SUDOKUD__METRICS__LISTEN", crasher_listen.as_str()),
    ];
    let mut crasher = WorkerProcess::start(&settings, &crasher_env);
    let mut crashes = 0;
    let crash_loop_at = Instant::now();
    let redelivered = prometheus
        .wait_for_firing("SudokudJobsRedelivered", || {
            if crasher.exited().is_some() {
                crashes += 1;
                crasher = WorkerProcess::start(&settings, &crasher_env);
            }
        })
        .await;
    let redelivered_after = crash_loop_at.elapsed();
    assert!(crashes > 0, "the crashing worker never crashed");
    let steady_quarantines = counter(steady_port, "sudokud_quarantines_total").await;
    let steady_redelivered = counter(steady_port, "sudokud_jobs_redelivered_total").await;
    assert!(steady_quarantines > 0.0, "{redelivered}");

    // Every query of the dashboard, while jobs flow: data, and numbers.
    let mut empty = Vec::new();
    let mut seen = HashMap::new();
    for (title, expr) in dashboard_queries() {
        let result = prometheus.query(&expr).await;
        let values: Vec<f64> = result
            .iter()
            .filter_map(|sample| sample["value"][1].as_str()?.parse().ok())
            .collect();
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            empty.push(format!("{title}: {expr} -> {result:?}"));
        }
        seen.insert(expr, values);
    }
    stop.store(true, Ordering::Relaxed);
    let publisher_client = publisher.await.expect("the publisher");
    assert!(
        empty.is_empty(),
        "dashboard queries without data:\n{}",
        empty.join("\n")
    );

    eprintln!(
        "alerts on a live Prometheus: SudokudBrokerBlocked firing {:.1} s after the memory \
         alarm (for: 3s); SudokudJobsRedelivered firing {:.1} s into the crash loop, after {crashes} \
         crashes ({} batches of 501 jobs published; the steady worker counted {steady_redelivered} \
         redelivered jobs and {steady_quarantines} quarantines); {} dashboard queries returned data",
        blocked_after.as_secs_f64(),
        redelivered_after.as_secs_f64(),
        published.load(Ordering::Relaxed),
        seen.len()
    );
    drop(crasher);
    drop(steady);
    publisher_client.cleanup().await;
    client.cleanup().await;
}
