//! `amqp.results_queue_type` against the default RabbitMQ node: the
//! results and dead-letter queues are declared as the type it names (and a
//! results queue deleted under the worker comes back as that type); one
//! declared without arguments, as workers before the setting did, is a
//! classic queue the default accepts; and a worker set to `quorum` over
//! classic queues stops at start with an error naming the setting and the
//! migration.

use crate::common::*;
use lapin::options::QueueDeleteOptions;
use lapin::{Connection, ConnectionProperties};
use sudokud::Settings;
use sudokud::config::QueueType;

/// `rabbitmqctl list_queues name type` on the default node: the type of
/// `queue`, if it exists.
fn queue_type(queue: &str) -> Option<String> {
    let output = std::process::Command::new("rabbitmqctl")
        .args(["-q", "list_queues", "name", "type"])
        .output()
        .expect("cannot run rabbitmqctl");
    assert!(
        output.status.success(),
        "rabbitmqctl list_queues: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(name, _)| *name == queue)
        .map(|(_, kind)| kind.trim().to_string())
}

fn quorum_results(mut settings: Settings) -> Settings {
    settings.amqp.results_queue_type = QueueType::Quorum;
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_results_and_dead_letter_queues_are_declared_and_redeclared_as_quorum() {
    let settings = quorum_results(settings("results_quorum"));
    let amqp = &settings.amqp;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    client.wait_for_consumers(&amqp.jobs_queue, 1).await;
    for queue in [&amqp.results_queue, &amqp.dead_letter_queue] {
        assert_eq!(queue_type(queue).as_deref(), Some("quorum"), "{queue}");
    }
    assert_eq!(
        queue_type(&amqp.jobs_queue).as_deref(),
        Some("quorum"),
        "the jobs queue"
    );
    let mut results = client.results().await;
    client.publish_all(jobs(&[PUZZLE.to_string()])).await;
    assert_eq!(results.next().await.body["solution"], SOLUTION);
    results.channel.close(200, "OK".into()).await.unwrap();

    // Deleted under the worker: declared again as a quorum queue, and the
    // answers are in it.
    client
        .channel
        .queue_delete(
            amqp.results_queue.as_str().into(),
            QueueDeleteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(queue_type(&amqp.results_queue), None);
    let n = 20;
    client.publish_all(jobs(&vec![PUZZLE.to_string(); n])).await;
    let declared = eventually(async || match queue_type(&amqp.results_queue) {
        Some(kind) => Ok(kind),
        None => Err("the worker did not declare the results queue again".to_string()),
    })
    .await;
    assert_eq!(declared, "quorum");
    let mut reader = client.results().await;
    for result in reader.take(n).await {
        assert_eq!(result.body["solution"], SOLUTION);
    }
    assert_eq!(client.ready(&amqp.dead_letter_queue).await, 0);
    worker.stop().await.expect("the worker stops cleanly");
    client.cleanup().await;
}

/// Declares `queues` durable with no arguments, as a worker before
/// `amqp.results_queue_type` did, on a connection of its own.
async fn declare_without_arguments(queues: &[&String]) {
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("the tests need RabbitMQ on localhost (see .ci/run)");
    declare_plain_queues(&connection, queues).await;
    let _ = connection.close(200, "OK".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_declared_without_a_type_are_the_classic_default() {
    let settings = settings("results_untyped");
    let amqp = &settings.amqp;
    assert_eq!(amqp.results_queue_type, QueueType::Classic);
    declare_without_arguments(&[&amqp.results_queue, &amqp.dead_letter_queue]).await;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    client.wait_for_consumers(&amqp.jobs_queue, 1).await;
    let mut results = client.results().await;
    client.publish_all(jobs(&[PUZZLE.to_string()])).await;
    assert_eq!(results.next().await.body["solution"], SOLUTION);
    for queue in [&amqp.results_queue, &amqp.dead_letter_queue] {
        assert_eq!(queue_type(queue).as_deref(), Some("classic"), "{queue}");
    }
    // And a producer that declares them without arguments after the
    // worker still can.
    declare_without_arguments(&[&amqp.results_queue, &amqp.dead_letter_queue]).await;
    worker.stop().await.expect("the worker stops cleanly");
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_classic_queues_to_quorum_stops_the_worker_naming_the_setting() {
    // The queues as a classic worker declared them.
    let classic = settings("results_switch");
    let client = Client::connect(&classic).await;
    let settings = quorum_results(classic.clone());
    let mut worker = WorkerProcess::start(&settings, &[]);
    let status = worker.exit_status().await;
    let log = worker.lines().join("\n");
    assert_eq!(status.code(), Some(1), "{log}");
    for needed in [
        "amqp.results_queue_type",
        "as a quorum queue",
        "docs/deploy.md",
        "PRECONDITION_FAILED",
        classic.amqp.dead_letter_queue.as_str(),
    ] {
        assert!(log.contains(needed), "no {needed:?} in:\n{log}");
    }
    // Nothing was changed: the queues are still classic, and no consumer
    // was left on the jobs queue.
    for queue in [&classic.amqp.results_queue, &classic.amqp.dead_letter_queue] {
        assert_eq!(queue_type(queue).as_deref(), Some("classic"), "{queue}");
    }
    client.wait_for_consumers(&classic.amqp.jobs_queue, 0).await;
    client.cleanup().await;
}
