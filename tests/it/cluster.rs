//! Failover on a three-node RabbitMQ cluster of its own
//! (`scripts/cluster.sh`: nodes on ports 5681, 5682 and 5683), started on
//! first use and left running (`scripts/cluster.sh stop` stops it and
//! deletes its data).
//!
//! Two workers, each given all three addresses, drain a backlog from the
//! quorum jobs queue. The Erlang VM of the node one of them is connected
//! to, which also leads the jobs queue, is killed with SIGKILL. That worker
//! must connect to a surviving node and consume again; every job must be
//! answered, correctly (duplicates are allowed: delivery is at least
//! once, and they are counted); the queue must drain; and both workers
//! must be consuming at the end. The test prints how long the failover
//! took.
//!
//! A second test kills two of the three nodes: the jobs queue has no
//! majority, so no leader, until they are back, and the node left pauses
//! (the nodes run with deploy/rabbitmq/sudokud.conf, whose
//! `cluster_partition_handling` is `pause_minority`). The worker must stay
//! up through it, and once the nodes are back answer every job, none
//! dead-lettered.
//!
//! With `amqp.results_queue_type = "quorum"` (every queue replicated on
//! the three nodes, as a cluster deployment has them): a rolling restart,
//! each node stopped and started again in turn under two workers draining
//! 40,000 jobs, the next one only once every quorum queue has its three
//! members online again; and the kill (SIGKILL) of the node that leads
//! the results queue under load. Either way every job is answered,
//! correctly, none dead-lettered, with no gap of 15 s or more between two
//! answers (the tests print the longest), and both workers consume at the
//! end.
//!
//! A partition: the node a worker is connected to is cut from the other
//! two for 60 s (`scripts/cluster.sh partition`: their Erlang distribution
//! traffic dropped), while the worker still reaches it. It confirms
//! nothing, so the worker must leave it within `amqp.confirm_timeout_secs`:
//! every job answered, correctly, none dead-lettered, answers during the
//! cut and no gap of 30 s or more.
//!
//! The tests take turns on the cluster. Set `TEST_LOG=1` to see the
//! workers' logs.

use std::collections::HashSet;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::http::{free_port, get_ok};
use crate::common::*;
use lapin::options::QueueDeleteOptions;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::{Value, json};
use sudokud::Settings;
use sudokud::config::QueueType;
use sudokud_testkit::{Collector, Seen};

/// A failure guard for the whole backlog, never a speed requirement.
const STREAM_PATIENCE: Duration = Duration::from_secs(300);

/// How long a stream of answers may stand still before a test calls it
/// stuck: a hang guard, never a speed requirement (a loaded machine
/// answers slowly, but it answers).
const STALL_PATIENCE: Duration = Duration::from_secs(180);

/// The cap on waiting for a stream that keeps moving: a trickle that
/// would outlast the test run is a failure too.
const STREAM_CAP: Duration = Duration::from_secs(1200);

/// `scripts/cluster.sh ARGS`: its standard output, trimmed.
fn run_cluster(args: &[&str]) -> String {
    run_script("cluster.sh", args)
}

/// [`run_cluster`] for polls: a node may refuse for a moment (around a
/// partition's heal, `pause_minority` can pause a node of the majority
/// too, until it sees the others again).
fn try_run_cluster(args: &[&str]) -> Result<String, String> {
    try_run_script("cluster.sh", args)
}

/// The cluster, for one test at a time (each kills nodes): starts the
/// nodes that are down (a previous test's victims), and returns the guard
/// with the URLs of nodes 1, 2 and 3.
async fn cluster() -> (tokio::sync::MutexGuard<'static, ()>, &'static [String]) {
    // Each test runs on a runtime of its own: an async mutex, since the
    // guard is held across the whole test.
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    static URLS: OnceLock<Vec<String>> = OnceLock::new();
    let guard = LOCK.lock().await;
    tokio::task::spawn_blocking(|| run_cluster(&["start"]))
        .await
        .expect("scripts/cluster.sh start");
    let urls = URLS.get_or_init(|| {
        run_cluster(&["urls"])
            .split(',')
            .map(str::to_string)
            .collect()
    });
    (guard, urls)
}

/// Declares the results and dead-letter queues from node 1. They are
/// classic queues, which live on the node that declares them first: so
/// they survive the nodes the tests kill (the jobs queue is a quorum
/// queue, replicated on all three). Returns node 1's connection.
async fn queues_on_node_1(settings: &Settings, urls: &[String]) -> Connection {
    let setup = Connection::connect(&urls[0], ConnectionProperties::default())
        .await
        .expect("the cluster's node 1");
    declare_plain_queues(
        &setup,
        &[
            &settings.amqp.results_queue,
            &settings.amqp.dead_letter_queue,
        ],
    )
    .await;
    setup
}

/// Declares the topology of `settings` from node 3, which then holds its
/// classic queues and leads its quorum queues. Returns node 3's connection.
async fn topology_from_node_3(settings: &Settings, urls: &[String]) -> Connection {
    let setup = Connection::connect(&urls[2], ConnectionProperties::default())
        .await
        .expect("the cluster's node 3");
    sudokud::broker::declare_topology(&setup.create_channel().await.unwrap(), &settings.amqp)
        .await
        .unwrap();
    setup
}

/// The process id of node `n`'s Erlang VM.
fn node_pid(n: usize) -> String {
    run_cluster(&["pid", &n.to_string()])
}

/// Kills the Erlang VM of `pid` with SIGKILL.
fn kill(pid: &str) {
    let status = Command::new("kill").args(["-9", pid]).status().unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

/// The node (1 to 3) of a `connected` log line.
fn node_of(line: &Value, urls: &[String]) -> usize {
    let url = line["url"].as_str().expect("a url field");
    let masked: Vec<String> = urls
        .iter()
        .map(|u| sudokud::config::mask_password(u))
        .collect();
    masked
        .iter()
        .position(|u| u == url)
        .unwrap_or_else(|| panic!("{url} is none of {masked:?}"))
        + 1
}

/// The node a worker connected to, once it consumes.
async fn connected_node(worker: &WorkerProcess, urls: &[String]) -> usize {
    worker.wait_for_line(|l| l.contains("\"consuming\"")).await;
    let lines = worker.json_lines();
    let connected = lines
        .iter()
        .find(|l| l["message"] == "connected")
        .expect("a connected line");
    node_of(connected, urls)
}

/// Messages in `queue`, ready and unacknowledged, as node 1 counts them.
fn messages(queue: &str) -> u64 {
    let listed = run_cluster(&["ctl", "1", "list_queues", "name", "messages"]);
    listed
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(name, _)| *name == queue)
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no queue {queue} in:\n{listed}"))
}

/// The answers read so far, each checked against its puzzle (ids index
/// `puzzles`).
struct Answers<'a> {
    puzzles: &'a [String],
    answered: HashSet<u64>,
    /// Answers to jobs already answered (delivery is at least once).
    again: u64,
}

impl<'a> Answers<'a> {
    fn new(puzzles: &'a [String]) -> Answers<'a> {
        Answers {
            puzzles,
            answered: HashSet::new(),
            again: 0,
        }
    }

    fn len(&self) -> usize {
        self.answered.len()
    }

    /// Panics unless `result` solves its job's puzzle.
    fn check(&mut self, result: Received) {
        let id = result.body["id"].as_u64().expect("a numeric id");
        let solution = result.body["solution"].as_str().unwrap_or_default();
        assert!(
            is_solution_of(solution, &self.puzzles[id as usize]),
            "{}",
            result.body
        );
        if !self.answered.insert(id) {
            self.again += 1;
        }
    }

    /// Reads answers until `n` jobs are answered.
    async fn until(&mut self, results: &mut Reader, n: usize) {
        while self.len() < n {
            self.check(results.next().await);
        }
    }

    /// Once every job is answered: waits for the jobs queue to drain
    /// (nothing ready or unacknowledged left), reads the answers to
    /// redelivered jobs that still come, and checks that nothing was
    /// dead-lettered.
    async fn drained(&mut self, results: &mut Reader, settings: &Settings) {
        let start = Instant::now();
        while messages(&settings.amqp.jobs_queue) > 0 {
            assert!(start.elapsed() < PATIENCE, "the jobs queue does not drain");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        while let Some(result) = results.try_next(Duration::from_secs(1)).await {
            self.check(result);
        }
        assert_eq!(messages(&settings.amqp.dead_letter_queue), 0);
    }
}

/// Settings for a test on the cluster: its own queues, the test's client
/// on node 1 (never killed); and the worker's environment: every node,
/// JSON logs, and `extra`.
fn cluster_settings(
    test: &str,
    urls: &[String],
    extra: &[(&str, &str)],
) -> (Settings, Vec<(String, String)>) {
    let mut settings = settings(test);
    settings.amqp.url = urls[0].clone();
    settings.log.throughput_secs = 1;
    let mut env = vec![
        ("SUDOKUD__AMQP__URLS".to_string(), urls.join(",")),
        ("SUDOKUD__LOG__FORMAT".to_string(), "json".to_string()),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    (settings, env)
}

/// A worker connected to node 2 or 3: it starts from a random node, so it
/// is started again (its jobs queue deleted in between, through
/// `channel`) until it is there. Declaring the jobs queue first, from
/// there, makes its node the queue's leader too. Returns it and its node.
async fn worker_off_node_1(
    settings: &Settings,
    env: &[(String, String)],
    urls: &[String],
    channel: &lapin::Channel,
) -> (WorkerProcess, usize) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    loop {
        let mut worker = WorkerProcess::start(settings, &env);
        let node = connected_node(&worker, urls).await;
        if node != 1 {
            return (worker, node);
        }
        worker.terminate();
        assert!(worker.exit_status().await.success());
        channel
            .queue_delete(
                settings.amqp.jobs_queue.as_str().into(),
                QueueDeleteOptions::default(),
            )
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_fails_over_when_its_node_dies() {
    let (_cluster, urls) = cluster().await;
    let (settings, env) = cluster_settings("cluster_failover", urls, &[]);
    let jobs_queue = settings.amqp.jobs_queue.clone();
    let setup = queues_on_node_1(&settings, urls).await;
    let channel = setup.create_channel().await.unwrap();
    let (mut a, victim) = worker_off_node_1(&settings, &env, urls, &channel).await;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut b = WorkerProcess::start(&settings, &env);
    let node_b = connected_node(&b, urls).await;
    let client = Client::connect(&settings).await;
    client.wait_for_consumers(&jobs_queue, 2).await;
    let mut results = client.results().await;

    // A backlog, and a second one once worker A is back: then it has jobs
    // to take whatever the first backlog's pace.
    let (first, second) = (6000, 4000);
    let n = first + second;
    let puzzles = puzzles(n);
    let all_jobs = jobs(&puzzles);
    client.publish_all(all_jobs[..first].to_vec()).await;
    let mut answers = Answers::new(&puzzles);
    answers.until(&mut results, 500).await;

    // Kill the Erlang VM of the node worker A is connected to, which also
    // leads the jobs queue (replicated on all three).
    let listed = run_cluster(&["ctl", "1", "list_queues", "name", "leader", "members"]);
    let row = listed
        .lines()
        .find(|l| l.starts_with(&format!("{jobs_queue}\t")))
        .unwrap_or_else(|| panic!("no {jobs_queue} in:\n{listed}"));
    let fields: Vec<&str> = row.split('\t').collect();
    assert_eq!(fields[1], format!("sudokud-c{victim}@localhost"), "{row}");
    assert_eq!(fields[2].matches("sudokud-c").count(), 3, "{row}");
    let pid = node_pid(victim);
    let killed_at = Instant::now();
    kill(&pid);
    let reconnected = a.wait_for_line(|l| l.contains("\"reconnected\"")).await;
    let failover = killed_at.elapsed();
    let reconnected: Value = serde_json::from_str(&reconnected).unwrap();
    let lines = a.json_lines();
    let now_on = node_of(
        lines
            .iter()
            .rev()
            .find(|l| l["message"] == "connected")
            .unwrap(),
        urls,
    );
    assert_ne!(now_on, victim, "worker A reconnected to the dead node");
    client.publish_all(all_jobs[first..].to_vec()).await;

    tokio::time::timeout(STREAM_PATIENCE, answers.until(&mut results, n))
        .await
        .unwrap_or_else(|_| panic!("{} of {n} jobs answered", answers.len()));
    answers.drained(&mut results, &settings).await;
    // Both workers are consuming at the end. The queue still lists the
    // consumer of the dead node (`suspected_down`) until that node is back:
    // count the active ones.
    let listed = run_cluster(&["ctl", "1", "list_consumers", "queue_name", "active"]);
    let active = listed
        .lines()
        .filter(|l| *l == format!("{jobs_queue}\ttrue"))
        .count();
    assert_eq!(active, 2, "{listed}");
    a.assert_running();
    b.assert_running();
    // Worker A consumed again after its reconnection.
    let lines = a.json_lines();
    let after = lines
        .iter()
        .position(|l| l["message"] == "reconnected")
        .unwrap();
    let jobs_after: u64 = lines[after..]
        .iter()
        .filter(|l| l["message"] == "throughput")
        .map(|l| l["jobs"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        jobs_after > 0,
        "worker A answered nothing after failing over"
    );

    eprintln!(
        "cluster failover: {n} jobs; node {victim} (worker A's, the queue leader) killed; \
         worker A reconnected to node {now_on} {:.2} s after the kill (its own outage: {} s) \
         and answered {jobs_after} jobs after; worker B on node {node_b}; 0 lost, 0 wrong, \
         {} answered twice",
        failover.as_secs_f64(),
        reconnected["outage_secs"],
        answers.again
    );

    for worker in [&mut a, &mut b] {
        worker.terminate();
        assert!(worker.exit_status().await.success());
    }
    let _ = setup.close(200, "OK".into()).await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waits_out_the_loss_of_the_majority_and_loses_nothing() {
    let (_cluster, urls) = cluster().await;
    let (settings, env) = cluster_settings(
        "cluster_majority",
        urls,
        &[
            ("SUDOKUD__AMQP__CONNECT_TIMEOUT_SECS", "3"),
            ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "200"),
            ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "2000"),
        ],
    );
    let setup = queues_on_node_1(&settings, urls).await;
    let channel = setup.create_channel().await.unwrap();
    // On node 2 or 3, the worker loses its connection with them and must
    // reconnect to node 1 while the queue has no leader.
    let (mut worker, first_node) = worker_off_node_1(&settings, &env, urls, &channel).await;
    let client = Client::connect(&settings).await;
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;

    // Long enough that the nodes die mid-stream: the worker answers easy
    // jobs at several thousand a second.
    let n = 40_000;
    let puzzles = puzzles(n);
    let pids = [node_pid(2), node_pid(3)];
    client.publish_all(jobs(&puzzles)).await;
    // Read through the outage: node 1, alone, pauses (the nodes'
    // `cluster_partition_handling` is `pause_minority`) and closes every
    // connection until the others are back.
    let results = collector(urls, &settings, &puzzles);
    eventually_within(STREAM_PATIENCE, POLL, async || match results.answered() {
        answered if answered >= 300 => Ok(()),
        answered => Err(format!("{answered} answered before the loss")),
    })
    .await;

    // Nodes 2 and 3 die: the jobs queue, replicated on all three, has no
    // majority left, so no leader. Node 1 (the results queue's) stays.
    for pid in &pids {
        kill(pid);
    }
    let lost_at = Instant::now();
    let answered_at_loss = results.answered();
    // The worker stays up through the outage.
    tokio::time::sleep(Duration::from_secs(8)).await;
    worker.assert_running();
    let answered_in_outage = results.answered() - answered_at_loss;

    // The two nodes come back: every job is answered, none dead-lettered.
    tokio::task::spawn_blocking(|| run_cluster(&["start"]))
        .await
        .expect("scripts/cluster.sh start");
    let back_at = Instant::now();
    let outage = lost_at.elapsed();
    all_answered(&results, n, &settings, &[&worker], 1).await;
    drained_on(1, &settings).await;
    worker.assert_running();
    let (first_after, duplicates) = {
        let seen = results.seen();
        (seen.resumed_after(back_at), seen.duplicated_ids())
    };
    let reconnections = worker
        .json_lines()
        .iter()
        .filter(|l| l["message"] == "reconnected")
        .count();
    eprintln!(
        "cluster majority loss: {n} jobs, the worker on node {first_node}; nodes 2 and 3 \
         killed after {answered_at_loss} answered, {answered_in_outage} more answered in the \
         {:.1} s without a majority; answers again {first_after:?} after the nodes were back; \
         the worker reconnected {reconnections} times; 0 lost, 0 wrong, {duplicates} answered \
         twice",
        outage.as_secs_f64(),
    );
    let mut results = results;
    results.stop().await;
    worker.terminate();
    assert!(worker.exit_status().await.success());
    let _ = setup.close(200, "OK".into()).await;
    // Its connection went with node 1's pause: dropped, it deletes the
    // queues from a new one.
    drop(client);
}

/// The quorum queues of `settings` on the cluster: the jobs queue, and the
/// results and dead-letter queues when `amqp.results_queue_type` is
/// `quorum`.
fn quorum_queues(settings: &Settings) -> Vec<String> {
    let mut queues = vec![settings.amqp.jobs_queue.clone()];
    if settings.amqp.results_queue_type == QueueType::Quorum {
        queues.push(settings.amqp.results_queue.clone());
        queues.push(settings.amqp.dead_letter_queue.clone());
    }
    queues
}

/// `list_queues name FIELD` on node `n`: each of `queues` with its FIELD.
fn queue_field(n: usize, field: &str, queues: &[String]) -> Vec<(String, String)> {
    try_queue_field(n, field, queues).unwrap_or_else(|e| panic!("{e}"))
}

/// [`queue_field`] for polls: the error when node `n` cannot list its
/// queues just now, or lists without one of `queues`.
fn try_queue_field(
    n: usize,
    field: &str,
    queues: &[String],
) -> Result<Vec<(String, String)>, String> {
    let listed = try_run_cluster(&["ctl", &n.to_string(), "list_queues", "name", field])?;
    queues
        .iter()
        .map(|queue| {
            let value = listed
                .lines()
                .filter_map(|l| l.split_once('\t'))
                .find(|(name, _)| name == queue)
                .map(|(_, value)| value.to_string())
                .ok_or_else(|| format!("no queue {queue} in:\n{listed}"))?;
            Ok((queue.clone(), value))
        })
        .collect()
}

/// Waits until every one of `queues` has its three members online, as
/// node `n` sees it.
async fn three_members_online(n: usize, queues: &[String]) {
    let queues = queues.to_vec();
    eventually_within(STREAM_PATIENCE, Duration::from_millis(250), async || {
        let queues = queues.clone();
        let online = tokio::task::spawn_blocking(move || try_queue_field(n, "online", &queues))
            .await
            .expect("rabbitmqctl list_queues")?;
        match online
            .iter()
            .find(|(_, members)| members.matches("sudokud-c").count() != 3)
        {
            None => Ok(()),
            Some((queue, members)) => Err(format!("{queue} has these members online: {members}")),
        }
    })
    .await;
}

/// The results of `puzzles`' jobs, read through the loss of any node.
fn collector(urls: &[String], settings: &Settings, puzzles: &[String]) -> Collector {
    Collector::start_on(
        urls,
        &settings.amqp.results_queue,
        solves_its_puzzle(puzzles),
    )
}

/// Waits until the collector has seen every one of `n` jobs answered,
/// each correctly; fails as soon as a job is dead-lettered (as node
/// `node` sees the dead-letter queue), when no job has been answered for
/// [`STALL_PATIENCE`], or past [`STREAM_CAP`], with what the queues and
/// the workers say. How fast the answers come is not judged: the
/// machine may be loaded.
async fn all_answered(
    results: &Collector,
    n: usize,
    settings: &Settings,
    workers: &[&WorkerProcess],
    node: usize,
) {
    let start = Instant::now();
    let mut dead = 0;
    let mut looked = Instant::now();
    let moving = || {
        let last = results.seen().last_first().unwrap_or(start).max(start);
        last.elapsed() < STALL_PATIENCE && start.elapsed() < STREAM_CAP
    };
    while results.answered() < n && dead == 0 && moving() {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if looked.elapsed() > Duration::from_secs(2) {
            let queue = settings.amqp.dead_letter_queue.clone();
            // A node that cannot answer just now is asked again at the
            // next look.
            dead = tokio::task::spawn_blocking(move || try_messages_on(node, &queue))
                .await
                .expect("rabbitmqctl list_queues")
                .unwrap_or(0);
            looked = Instant::now();
        }
    }
    if results.answered() < n {
        let logs: Vec<String> = workers.iter().map(|w| w.lines().join("\n")).collect();
        let queues = try_run_cluster(&[
            "ctl",
            &node.to_string(),
            "list_queues",
            "name",
            "messages_ready",
            "messages_unacknowledged",
            "consumers",
            "leader",
            "online",
        ])
        .unwrap_or_else(|e| e);
        let (connections, last) = {
            let seen = results.seen();
            (seen.connections, seen.last_first())
        };
        let still = last.map_or(start.elapsed(), |t| t.elapsed());
        panic!(
            "{} of {n} jobs answered after {:.0} s, the last new one {:.0} s ago, {dead} \
             dead-lettered (the test's reader connected {connections} times); the \
             queues:\n{queues}\nthe workers logged:\n{}",
            results.answered(),
            start.elapsed().as_secs_f64(),
            still.as_secs_f64(),
            logs.join("\n--\n")
        );
    }
    assert_none_wrong(results);
}

/// The longest time without a new answer from `from` to the last answer.
fn longest_gap(seen: &Seen, from: Instant) -> Duration {
    let last = seen.last_first().expect("answers");
    // Up to the first answer after the instant before the last: the last.
    seen.longest_pause(from, last - Duration::from_nanos(1))
        .unwrap_or_default()
}

/// Consumers of `queue` the cluster counts as active (a dead node's stay
/// listed, `suspected_down`, until it is back).
fn active_consumers(n: usize, queue: &str) -> usize {
    let listed = run_cluster(&[
        "ctl",
        &n.to_string(),
        "list_consumers",
        "queue_name",
        "active",
    ]);
    listed
        .lines()
        .filter(|l| *l == format!("{queue}\ttrue"))
        .count()
}

/// Messages in `queue`, ready and unacknowledged, as node `n` counts
/// them; the error when node `n` cannot list its queues just now.
fn try_messages_on(n: usize, queue: &str) -> Result<u64, String> {
    let listed = try_queue_field(n, "messages", &[queue.to_string()])?;
    Ok(listed[0].1.trim().parse().expect("a message count"))
}

/// Once every job is answered: the jobs queue drains, nothing is
/// dead-lettered (as node `n` sees them).
async fn drained_on(n: usize, settings: &Settings) {
    let jobs_queue = settings.amqp.jobs_queue.clone();
    eventually(async || match try_messages_on(n, &jobs_queue)? {
        0 => Ok(()),
        left => Err(format!("{left} messages left in the jobs queue")),
    })
    .await;
    let dead_letter_queue = settings.amqp.dead_letter_queue.clone();
    let dead = eventually(async || try_messages_on(n, &dead_letter_queue)).await;
    assert_eq!(dead, 0);
}

/// [`cluster_settings`] for workers that each hold few jobs (one thread,
/// a prefetch of 4), so that answering waits on the broker's confirms and
/// a backlog lasts, with every queue a quorum queue.
fn confirm_bound_settings(test: &str, urls: &[String]) -> (Settings, Vec<(String, String)>) {
    let (mut settings, env) = cluster_settings(
        test,
        urls,
        &[
            ("SUDOKUD__WORKER__THREADS", "1"),
            ("SUDOKUD__WORKER__PREFETCH", "4"),
        ],
    );
    settings.amqp.results_queue_type = QueueType::Quorum;
    (settings, env)
}

/// Unanswered jobs the rolling restart keeps queued before each restart:
/// about twice what two workers answer while one node restarts, on an
/// idle machine (some 13,000).
const ROLLING_AHEAD: usize = 30_000;

/// The most jobs the rolling restart may publish in all.
const ROLLING_MOST: usize = 4 * ROLLING_AHEAD;

/// Publishes the next of `bodies`, from `published` on, through
/// `client`, until `ahead` are unanswered (of `answered`) or all are
/// published; returns how many are published now.
async fn publish_ahead(
    client: &Client,
    bodies: &[(Vec<u8>, BasicProperties)],
    published: usize,
    answered: usize,
    ahead: usize,
) -> usize {
    let want = (answered + ahead).min(bodies.len());
    if want <= published {
        return published;
    }
    client
        .publish_all(bodies[published..want].iter().cloned())
        .await;
    want
}

/// [`publish_ahead`] to [`ROLLING_AHEAD`], through a client of its own on
/// the node of `url`.
async fn top_up(
    settings: &Settings,
    url: &str,
    bodies: &[(Vec<u8>, BasicProperties)],
    published: usize,
    answered: usize,
) -> usize {
    if (answered + ROLLING_AHEAD).min(bodies.len()) <= published {
        return published;
    }
    let mut on = settings.clone();
    on.amqp.url = url.to_string();
    let publisher = Client::publisher(&on).await;
    publish_ahead(&publisher, bodies, published, answered, ROLLING_AHEAD).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_of_every_node_loses_nothing() {
    let (_cluster, urls) = cluster().await;
    // The backlog lasts through the three restarts: before each, it is
    // topped up to ROLLING_AHEAD unanswered jobs, so a fast machine does
    // not answer it all before the last restart is over.
    let (settings, env) = confirm_bound_settings("cluster_rolling", urls);
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(ROLLING_MOST);
    let bodies = jobs(&puzzles);
    client
        .publish_all(bodies[..ROLLING_AHEAD].iter().cloned())
        .await;
    let mut n = ROLLING_AHEAD;
    let results = collector(urls, &settings, &puzzles);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let began = Instant::now();
    let mut a = WorkerProcess::start(&settings, &env);
    let mut b = WorkerProcess::start(&settings, &env);
    eventually_within(STREAM_PATIENCE, POLL, async || match results.answered() {
        answered if answered >= 1000 => Ok(()),
        answered => Err(format!("{answered} answered before the first restart")),
    })
    .await;
    let queues = quorum_queues(&settings);

    // Each node in turn, as an operator upgrades RabbitMQ: stopped
    // (its connections closed, its queue leaders handed over), started
    // again, and the next one only once every quorum queue has its three
    // members back online.
    let mut restarts = Vec::new();
    for node in 1..=3 {
        // Through a node that stays up meanwhile.
        let through = &urls[node % 3];
        n = top_up(&settings, through, &bodies, n, results.answered()).await;
        let at = Instant::now();
        tokio::task::spawn_blocking(move || run_cluster(&["restart", &node.to_string()]))
            .await
            .expect("scripts/cluster.sh restart");
        let back = at.elapsed();
        three_members_online(node, &queues).await;
        restarts.push((node, back, at.elapsed(), results.answered()));
    }
    let restarted = Instant::now();
    let answered_at_end = results.answered();
    assert!(
        answered_at_end < n,
        "the backlog of {n} jobs was answered before the last restart was over: the test saw \
         nothing (node, back after, members online after, answered by then: {restarts:?})"
    );
    all_answered(&results, n, &settings, &[&a, &b], 1).await;
    drained_on(1, &settings).await;
    // Both workers consume at the end.
    assert_eq!(
        active_consumers(1, &settings.amqp.jobs_queue),
        2,
        "two active consumers of the jobs queue"
    );
    a.assert_running();
    b.assert_running();
    let (longest, duplicates) = {
        let seen = results.seen();
        let first = seen.next_first_after(began).expect("a first answer");
        assert!(
            seen.next_first_after(restarted).is_some(),
            "answers after the restarts"
        );
        (longest_gap(&seen, first), seen.duplicated_ids())
    };
    let reconnections: Vec<usize> = [&a, &b]
        .iter()
        .map(|w| {
            w.json_lines()
                .iter()
                .filter(|l| l["message"] == "reconnected")
                .count()
        })
        .collect();
    let each: Vec<String> = restarts
        .iter()
        .map(|(node, back, members, answered)| {
            format!(
                "node {node} back {:.1} s, three members online {:.1} s after its stop \
                 ({answered} answered by then)",
                back.as_secs_f64(),
                members.as_secs_f64()
            )
        })
        .collect();
    eprintln!(
        "cluster rolling restart: {n} jobs, two workers (reconnected {reconnections:?} times); \
         {}; longest gap between two answers {:.2} s; 0 lost, 0 wrong, {duplicates} answered \
         twice",
        each.join("; "),
        longest.as_secs_f64()
    );
    assert!(
        longest < Duration::from_secs(15),
        "no answer for {longest:?} during the rolling restart"
    );
    let mut results = results;
    results.stop().await;
    for worker in [&mut a, &mut b] {
        worker.terminate();
        assert!(worker.exit_status().await.success());
    }
    // Its connection went with node 1's restart: dropped, it deletes the
    // queues from a new one.
    drop(client);
}

// A worker that was connected to the killed node reconnects elsewhere
// within 0.3 s, before the results queue has a new leader, and the broker
// nacks its results. The worker publishes each again after 2.5 s and 20 s
// (`publish::retry_delay`); at once, it dead-lettered 1,325 and 1,364 jobs
// in two of seven runs. On the channel of the first nack, the nacks can
// go on for more than 22 s after the new leader is elected (one run in
// six dead-lettered a job so), so the worker publishes on a new channel
// after a nack (`Link::renew_results_channel`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_results_queue_leader_loses_nothing() {
    let (_cluster, urls) = cluster().await;
    let (mut settings, env) = cluster_settings("cluster_results_leader", urls, &[]);
    settings.amqp.results_queue_type = QueueType::Quorum;
    // The queues declared from node 3, which then leads them; the test's
    // client stays on node 1, which is not killed.
    let setup = topology_from_node_3(&settings, urls).await;
    let leaders = queue_field(1, "leader", &quorum_queues(&settings));
    let results_leader = &leaders[1];
    assert_eq!(results_leader.1, "sudokud-c3@localhost", "{leaders:?}");
    let client = Client::connect(&settings).await;
    let n = 20_000;
    let puzzles = puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let results = collector(&urls[..1], &settings, &puzzles);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut a = WorkerProcess::start(&settings, &env);
    let mut b = WorkerProcess::start(&settings, &env);
    let nodes = [
        connected_node(&a, urls).await,
        connected_node(&b, urls).await,
    ];
    eventually_within(STREAM_PATIENCE, POLL, async || match results.answered() {
        answered if answered >= 2000 => Ok(()),
        answered => Err(format!("{answered} answered before the kill")),
    })
    .await;

    let pid = node_pid(3);
    let killed_at = Instant::now();
    kill(&pid);
    let answered_at_kill = results.answered();
    all_answered(&results, n, &settings, &[&a, &b], 1).await;
    drained_on(1, &settings).await;
    a.assert_running();
    b.assert_running();
    let new_leader = queue_field(1, "leader", &[settings.amqp.results_queue.clone()])[0]
        .1
        .clone();
    let (resumed, longest, duplicates) = {
        let seen = results.seen();
        (
            seen.resumed_after(killed_at),
            longest_gap(&seen, killed_at),
            seen.duplicated_ids(),
        )
    };
    eprintln!(
        "cluster results queue leader killed: {n} jobs, workers on nodes {nodes:?}; node 3 \
         (leading the jobs, results and dead-letter queues) killed after {answered_at_kill} \
         answered; the results queue is now led by {new_leader}; answers again {resumed:?} after \
         the kill, longest gap {:.2} s; 0 lost, 0 wrong, {duplicates} answered twice",
        longest.as_secs_f64()
    );
    assert!(
        longest < Duration::from_secs(15),
        "no answer for {longest:?} after the results queue's leader died"
    );
    let mut results = results;
    results.stop().await;
    for worker in [&mut a, &mut b] {
        worker.terminate();
        assert!(worker.exit_status().await.success());
    }
    let _ = setup.close(200, "OK".into()).await;
    client.cleanup().await;
}

/// A worker connected to node 1: it starts from a random node, so it is
/// started again until it is there (before any job is published).
async fn worker_on_node_1(
    settings: &Settings,
    env: &[(&str, &str)],
    urls: &[String],
) -> WorkerProcess {
    loop {
        let mut worker = WorkerProcess::start(settings, env);
        if connected_node(&worker, urls).await == 1 {
            return worker;
        }
        worker.terminate();
        assert!(worker.exit_status().await.success());
    }
}

/// A cut made by `scripts/cluster.sh partition`: healed when dropped, so
/// that a failing test leaves a whole cluster behind.
struct Cut;

impl Cut {
    async fn node(n: usize) -> Cut {
        tokio::task::spawn_blocking(move || run_cluster(&["partition", &n.to_string()]))
            .await
            .expect("scripts/cluster.sh partition");
        Cut
    }
}

impl Drop for Cut {
    fn drop(&mut self) {
        // Not run_cluster: it panics on failure, and this may run while
        // the test is unwinding.
        let healed = Command::new(script("cluster.sh")).arg("heal").status();
        if !healed.as_ref().is_ok_and(|status| status.success()) {
            eprintln!("scripts/cluster.sh heal failed: {healed:?}");
        }
    }
}

/// Solutions the partition test's jobs count.
const COUNTED: u64 = 20_000;

/// How long the partition lasts.
const PARTITION: Duration = Duration::from_secs(60);

/// Unanswered jobs the partition test keeps queued until the heal: five
/// seconds of work or more for the worker (at most some 600 a second), so
/// that it is never idle, and little is left to answer after the heal.
const PARTITION_AHEAD: usize = 3_000;

/// The most jobs the partition test may publish in all.
const PARTITION_MOST: usize = 60_000;

// The cut node keeps the worker's connection and its heartbeats alive, but
// confirms nothing: every queue's leader is on the other side. The worker
// leaves it when a result has waited `amqp.confirm_timeout_secs` (15 s) for
// its confirm, for node 2. Node 1 pauses itself later (the nodes'
// `cluster_partition_handling` is `pause_minority`, from
// deploy/rabbitmq/sudokud.conf) once it sees it is in the minority, and
// resumes after the heal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_cutting_the_workers_node_loses_nothing() {
    let (_cluster, urls) = cluster().await;
    let (mut settings, mut env) = confirm_bound_settings("cluster_partition", urls);
    env.push((
        "SUDOKUD__SOLVER__MAX_COUNT_LIMIT".to_string(),
        COUNTED.to_string(),
    ));
    // The test's client, which declares the queues (their leader is then
    // node 2) and publishes, and its reader stay on the majority side.
    settings.amqp.url = urls[1].clone();
    let client = Client::connect(&settings).await;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut worker = worker_on_node_1(&settings, &env, urls).await;
    // Jobs of about 3 ms each (the empty grid's first solutions counted),
    // so that the worker always holds one when the cut comes: a worker
    // holding none has no result whose confirm could time out, and stays
    // on the cut node until it pauses (docs/reliability.md). The backlog
    // is topped up to PARTITION_AHEAD unanswered jobs until the heal, so
    // that it outlasts the partition on any machine.
    let puzzles = vec![".".repeat(81); PARTITION_MOST];
    let bodies: Vec<_> = puzzles
        .iter()
        .enumerate()
        .map(|(i, puzzle)| {
            let body = json!({"id": i, "puzzle": puzzle, "mode": "count", "limit": COUNTED});
            (
                serde_json::to_vec(&body).expect("a job is JSON"),
                BasicProperties::default(),
            )
        })
        .collect();
    let mut n = publish_ahead(&client, &bodies, 0, 0, PARTITION_AHEAD).await;
    let results = collector(&urls[1..], &settings, &puzzles);
    eventually_within(STREAM_PATIENCE, POLL, async || match results.answered() {
        answered if answered >= 1000 => Ok(()),
        answered => Err(format!("{answered} answered before the partition")),
    })
    .await;

    let cut_at = Instant::now();
    let cut = Cut::node(1).await;
    let answered_at_cut = results.answered();
    let heal_at = Instant::now() + PARTITION;
    while let Some(left) = heal_at.checked_duration_since(Instant::now()) {
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        n = publish_ahead(&client, &bodies, n, results.answered(), PARTITION_AHEAD).await;
    }
    tokio::task::block_in_place(|| drop(cut));
    let healed_at = Instant::now();
    let answered_at_heal = results.answered();
    assert!(
        answered_at_heal < n,
        "the backlog was answered before the partition healed: the test saw nothing"
    );
    all_answered(&results, n, &settings, &[&worker], 2).await;
    drained_on(2, &settings).await;
    worker.assert_running();
    let (during, longest, duplicates) = {
        let seen = results.seen();
        // An answer in the second half of the cut: the worker has left.
        let during = seen
            .next_first_after(cut_at + PARTITION / 2)
            .is_some_and(|t| t < healed_at);
        (during, longest_gap(&seen, cut_at), seen.duplicated_ids())
    };
    let moved = worker
        .json_lines()
        .iter()
        .filter(|l| l["message"] == "connected")
        .map(|l| node_of(l, urls))
        .collect::<Vec<_>>();
    eprintln!(
        "cluster partition: {n} counting jobs, one worker on node 1, cut from nodes 2 and 3 for {} s after \
         {answered_at_cut} answered; {answered_at_heal} answered at the heal; the worker \
         connected to nodes {moved:?}; longest gap between two answers {:.2} s; 0 lost, 0 wrong, \
         {duplicates} answered twice",
        PARTITION.as_secs(),
        longest.as_secs_f64()
    );
    assert!(during, "no answer in the second half of the partition");
    assert!(
        longest < Duration::from_secs(30),
        "no answer for {longest:?} around the partition"
    );
    // Node 1 is back in the cluster for the next test.
    three_members_online(2, &quorum_queues(&settings)).await;
    let mut results = results;
    results.stop().await;
    worker.terminate();
    assert!(worker.exit_status().await.success());
    client.cleanup().await;
}

// With `amqp.results_queue_type = "classic"`, the results and dead-letter
// queues live on node 3 alone. While it is down the workers cannot declare
// them (NOT_FOUND "home node ... is down"), and answers for the results
// queue come back unroutable; they serve on with what they can reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_node_of_the_classic_results_queue_stops_nothing_deliverable() {
    let (_cluster, urls) = cluster().await;
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let (settings, env) = cluster_settings(
        "cluster_classic_home",
        urls,
        &[
            ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "2000"),
            ("SUDOKUD__METRICS__LISTEN", listen.as_str()),
        ],
    );
    assert_eq!(settings.amqp.results_queue_type, QueueType::Classic);
    // Declared from node 3 first, the classic queues live there.
    let setup = topology_from_node_3(&settings, urls).await;
    // The test's client, and a reply queue of its own, on node 1.
    let mut client = Client::connect(&settings).await;
    let replies = format!("{}.replies", settings.amqp.jobs_queue);
    client.declare_queue(&replies).await;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut a = WorkerProcess::start(&settings, &env);
    connected_node(&a, urls).await;

    kill(&node_pid(3));
    // A worker that connects now cannot declare the two queues.
    let second_env: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .filter(|(k, _)| *k != "SUDOKUD__METRICS__LISTEN")
        .collect();
    let mut b = WorkerProcess::start(&settings, &second_env);
    b.wait_for_line(|l| l.contains("\"consuming\"")).await;
    assert!(
        b.lines()
            .iter()
            .any(|l| l.contains("this queue's node is down")
                && l.contains(settings.amqp.results_queue.as_str())),
        "worker b does not say the results queue is unreachable:\n{}",
        b.lines().join("\n")
    );

    // Jobs whose answers can be delivered are answered.
    let n = 2000;
    let replied = puzzles(n);
    let with_reply_to = jobs(&replied)
        .into_iter()
        .map(|(body, properties)| (body, properties.with_reply_to(replies.as_str().into())));
    let mut reader = client.reader(&replies).await;
    client.publish_all(with_reply_to).await;
    assert_solved(reader.take(n).await, &replied);
    a.assert_running();
    b.assert_running();
    eventually(
        async || match active_consumers(1, &settings.amqp.jobs_queue) {
            2 => Ok(()),
            seen => Err(format!(
                "{seen} active consumers of the jobs queue, expected 2"
            )),
        },
    )
    .await;
    // Those for the results queue wait, and /readyz and the metric say why.
    let m = 100;
    let waiting = puzzles(m);
    client.publish_all(jobs(&waiting)).await;
    eventually(async || {
        let (status, body) = get_ok(port, "/readyz").await;
        let metrics = get_ok(port, "/metrics").await.1;
        let gauge = format!(
            "sudokud_queue_unreachable{{queue=\"{}\"}} 1",
            settings.amqp.results_queue
        );
        if status == 200
            && body.contains(settings.amqp.results_queue.as_str())
            && metrics.lines().any(|l| l == gauge)
        {
            Ok(())
        } else {
            Err(format!("/readyz {status} {body}; no {gauge} in /metrics"))
        }
    })
    .await;

    // Node 3 comes back: the answers that waited are delivered.
    tokio::task::spawn_blocking(|| run_cluster(&["start"]))
        .await
        .expect("scripts/cluster.sh start");
    let mut results = client.results().await;
    assert_solved(results.take(m).await, &waiting);
    drained_on(1, &settings).await;
    for worker in [&mut a, &mut b] {
        worker.assert_running();
        worker.terminate();
        assert!(worker.exit_status().await.success());
    }
    let _ = setup.close(200, "OK".into()).await;
    client.cleanup().await;
}

/// Checks that `results` answer each of `puzzles` (ids their index) once,
/// correctly.
fn assert_solved(results: Vec<Received>, puzzles: &[String]) {
    let mut ids = HashSet::new();
    for result in results {
        let id = result.body["id"].as_u64().expect("a numeric id");
        let solution = result.body["solution"].as_str().unwrap_or_default();
        assert!(
            is_solution_of(solution, &puzzles[id as usize]),
            "{}",
            result.body
        );
        assert!(ids.insert(id), "job {id} answered twice");
    }
    assert_eq!(ids.len(), puzzles.len());
}

/// A local port nothing listens on: connections to it are refused.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_address_costs_one_try_not_a_wait() {
    init_logs();
    // The shared node on 5672 and an address where nothing listens: every
    // connection succeeds within one walk of the list, wherever it starts.
    let mut settings = settings("dead_address");
    let dead = format!("amqp://guest:secretpw@127.0.0.1:{}/%2f", closed_port());
    settings.amqp.urls = vec![dead.clone(), amqp_url()];
    let broker = sudokud::broker::Broker::new(&settings.amqp).unwrap();
    let alive = sudokud::config::mask_password(&amqp_url());
    for _ in 0..4 {
        let opened = broker
            .open("sudokud test", |_, _| Box::pin(std::future::ready(Ok(()))))
            .await
            .unwrap();
        assert_eq!(opened.node, alive);
        opened.connection.close(200, "OK".into()).await.unwrap();
    }
    // The same for a producer command.
    let report = sudokud::producer::health::check(&settings.amqp, 0, PATIENCE).await;
    assert!(format!("{report:?}").contains(&alive), "{report:?}");

    // With no node left, one error names each, passwords masked.
    settings.amqp.urls = vec![
        dead.clone(),
        format!("amqp://guest:secretpw@127.0.0.1:{}/%2f", closed_port()),
    ];
    let broker = sudokud::broker::Broker::new(&settings.amqp).unwrap();
    let error = broker
        .open("sudokud test", |_, _| Box::pin(std::future::ready(Ok(()))))
        .await
        .err()
        .expect("no node to connect to");
    let error = format!("{error:#}");
    assert!(
        error.starts_with("no node of amqp.urls could be used"),
        "{error}"
    );
    for url in &settings.amqp.urls {
        assert!(
            error.contains(&sudokud::config::mask_password(url)),
            "{error}"
        );
    }
    assert!(!error.contains("secretpw"), "{error}");
}

trait Running {
    fn assert_running(&mut self);
}

impl Running for WorkerProcess {
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "the worker exited ({status:?}):\n{}",
                self.lines().join("\n")
            );
        }
    }
}
