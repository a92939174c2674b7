//! Does lapin's automatic recovery (`enable_auto_recover`) keep the
//! worker's guarantees through a broker restart? A consume, publish with
//! confirms, ack-after-confirm loop, as the worker runs it, on a recovering
//! connection; the broker node is restarted under it, and the probe counts
//! what came out.
//!
//! ```text
//! scripts/fault-node.sh start
//! cargo run --release -p sudokud-tools --bin recovery_probe -- --restarts 3
//! ```
//!
//! Run it against the dedicated fault node only (it restarts the node).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use lapin::options::{
    BasicAckOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use sudokud_tools::{Consuming, consume_no_ack, consume_with_confirms};
use tokio_stream::StreamExt;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5673/%2f")]
    url: String,
    #[arg(long, default_value_t = 5000)]
    jobs: usize,
    #[arg(long, default_value_t = 1)]
    restarts: usize,
    /// How the probe's consumer takes the loss: lapin's recovery, or none.
    #[arg(long, default_value = "auto")]
    recovery: String,
}

fn ctl(args: &[&str]) -> anyhow::Result<()> {
    let status = std::process::Command::new("scripts/fault-node.sh")
        .arg("ctl")
        .args(args)
        .status()
        .context("scripts/fault-node.sh")?;
    anyhow::ensure!(status.success(), "rabbitmqctl {args:?} failed");
    Ok(())
}

fn quorum() -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    args
}

async fn connect_retrying(url: &str) -> Connection {
    loop {
        if let Ok(c) = Connection::connect(url, ConnectionProperties::default()).await {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

const JOBS_QUEUE: &str = "probe.jobs";
const RESULTS_QUEUE: &str = "probe.results";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    fill_queues(&args.url, args.jobs).await?;
    println!("published {}", args.jobs);

    let consumer_task = tokio::spawn(answer(args.url.clone(), args.recovery == "auto"));
    for _ in 0..args.restarts {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let start = Instant::now();
        ctl(&["stop_app"])?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        ctl(&["start_app"])?;
        println!("restarted in {:?}", start.elapsed());
    }
    let _ = consumer_task.await;

    count_results(&args.url, args.jobs).await
}

/// What the consumer got: a delivery, a failure it recovered from, or the
/// end of the probe's consuming.
enum Next {
    Delivery(Box<lapin::message::Delivery>),
    Recovered,
    Stop,
}

/// The next delivery, waiting at most 20 s for it and 60 s for recovery
/// after an error (counted in `stats`).
async fn next_delivery(
    consumer: &mut lapin::Consumer,
    jobs: &lapin::Channel,
    stats: &mut HashMap<&'static str, u64>,
) -> Next {
    match tokio::time::timeout(Duration::from_secs(20), consumer.next()).await {
        Err(_) => {
            println!("consumer: no delivery for 20 s; stats {stats:?}");
            Next::Stop
        }
        Ok(None) => {
            println!("consumer: stream ended; stats {stats:?}");
            Next::Stop
        }
        Ok(Some(Err(e))) => {
            println!("consumer: error {e}; waiting for recovery");
            *stats.entry("consumer_error").or_default() += 1;
            match tokio::time::timeout(Duration::from_secs(60), jobs.wait_for_recovery(e)).await {
                Ok(Ok(())) => println!("consumer: recovered"),
                Ok(Err(e)) => {
                    println!("consumer: not recovered: {e}");
                    return Next::Stop;
                }
                Err(_) => {
                    println!("consumer: no recovery within 60 s; stats {stats:?}");
                    return Next::Stop;
                }
            }
            Next::Recovered
        }
        Ok(Some(Ok(d))) => Next::Delivery(Box::new(d)),
    }
}

/// Acknowledges the delivery once the broker confirms its result, on a task
/// of `acks`; sends what happened (`acked`, `nacked`, ...) on `tx`.
fn settle(
    acks: &mut tokio::task::JoinSet<()>,
    confirm: lapin::PublisherConfirm,
    acker: lapin::Acker,
    tx: tokio::sync::mpsc::UnboundedSender<&'static str>,
) {
    acks.spawn(async move {
        let what = match confirm.await {
            Ok(c) if c.is_ack() => match acker.ack(BasicAckOptions::default()).await {
                Ok(true) => "acked",
                Ok(false) => "ack_not_sent",
                Err(_) => "ack_error",
            },
            Ok(_) => "nacked",
            Err(_) => "confirm_error",
        };
        let _ = tx.send(what);
    });
}

/// Declares the probe's two quorum queues afresh and publishes `jobs` jobs
/// (their numbers) with confirms.
async fn fill_queues(url: &str, jobs: usize) -> anyhow::Result<()> {
    let (jobs_q, results_q) = (JOBS_QUEUE, RESULTS_QUEUE);
    let c = connect_retrying(url).await;
    let ch = c.create_channel().await?;
    for q in [jobs_q, results_q] {
        let _ = ch
            .queue_delete(q.into(), QueueDeleteOptions::default())
            .await;
    }
    ch.queue_declare(jobs_q.into(), QueueDeclareOptions::durable(), quorum())
        .await?;
    ch.queue_declare(results_q.into(), QueueDeclareOptions::durable(), quorum())
        .await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    let mut confirms = Vec::new();
    for i in 0..jobs {
        confirms.push(
            ch.basic_publish(
                "".into(),
                jobs_q.into(),
                BasicPublishOptions::default(),
                i.to_string().as_bytes(),
                BasicProperties::default().with_delivery_mode(2),
            )
            .await?,
        );
    }
    for c in confirms {
        c.await?;
    }
    let _ = c.close(200, "OK".into()).await;
    Ok(())
}

/// Consumes the jobs on a connection with lapin's recovery (`auto`) or
/// without, publishing each as its result with confirms and acknowledging
/// it once the result is confirmed, until nothing comes for 20 s.
async fn answer(url: String, auto: bool) -> anyhow::Result<()> {
    let (jobs_q, results_q) = (JOBS_QUEUE, RESULTS_QUEUE);
    let mut props = ConnectionProperties::default();
    if auto {
        props = props.enable_auto_recover();
    }
    let connection = Connection::connect(&url, props).await?;
    let Consuming {
        jobs,
        mut consumer,
        results,
    } = consume_with_confirms(&connection, jobs_q, 64).await?;
    let mut stats: HashMap<&'static str, u64> = HashMap::new();
    let mut acks = tokio::task::JoinSet::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    loop {
        while let Ok(what) = rx.try_recv() {
            *stats.entry(what).or_default() += 1;
        }
        let delivery = match next_delivery(&mut consumer, &jobs, &mut stats).await {
            Next::Delivery(d) => *d,
            Next::Recovered => continue,
            Next::Stop => break,
        };
        let publish = results.basic_publish(
            "".into(),
            results_q.into(),
            BasicPublishOptions::default(),
            &delivery.data,
            BasicProperties::default().with_delivery_mode(2),
        );
        let confirm = match tokio::time::timeout(Duration::from_secs(20), publish).await {
            Err(_) => {
                println!("publish: hung for 20 s; stats {stats:?}");
                break;
            }
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                println!("publish: error {e}; waiting for recovery");
                *stats.entry("publish_error").or_default() += 1;
                match tokio::time::timeout(Duration::from_secs(60), results.wait_for_recovery(e))
                    .await
                {
                    Err(_) => {
                        println!("publish: no recovery within 60 s; stats {stats:?}");
                        break;
                    }
                    Ok(r) => println!("publish: recovery {r:?}"),
                }
                continue;
            }
        };
        settle(&mut acks, confirm, delivery.acker, tx.clone());
        while acks.try_join_next().is_some() {}
    }
    anyhow::Ok(())
}

/// Counts what came out: jobs left, results missing, and duplicates.
async fn count_results(url: &str, jobs: usize) -> anyhow::Result<()> {
    let (jobs_q, results_q) = (JOBS_QUEUE, RESULTS_QUEUE);
    let c = connect_retrying(url).await;
    let ch = c.create_channel().await?;
    let left = ch
        .queue_declare(
            jobs_q.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?
        .message_count();
    let mut consumer = consume_no_ack(&ch, results_q).await?;
    let mut seen = vec![0u32; jobs];
    while let Ok(Some(Ok(d))) = tokio::time::timeout(Duration::from_secs(2), consumer.next()).await
    {
        if let Some(i) = std::str::from_utf8(&d.data)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        {
            seen[i] += 1;
        }
    }
    let missing = seen.iter().filter(|&&n| n == 0).count();
    let dup: u32 = seen.iter().map(|&n| n.saturating_sub(1)).sum();
    println!("jobs left in the queue: {left}; results missing: {missing}; duplicates: {dup}");
    Ok(())
}
