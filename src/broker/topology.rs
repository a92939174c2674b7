//! The queue topology of the wire protocol (the jobs queue, its dead-letter
//! queue and the results queue, with their arguments) and starting to
//! consume the jobs queue.

use anyhow::Context;
use lapin::options::{BasicConsumeOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, Consumer};
use tracing::info;

use crate::config::{AmqpSettings, QueueType};

/// The arguments of the jobs queue, exactly as the protocol states them.
/// A producer that declares the queue must pass the same.
pub fn jobs_queue_arguments(amqp: &AmqpSettings) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString(amqp.queue_type.as_str().into()),
    );
    args.insert(
        "x-dead-letter-exchange".into(),
        AMQPValue::LongString("".into()),
    );
    args.insert(
        "x-dead-letter-routing-key".into(),
        AMQPValue::LongString(amqp.dead_letter_queue.as_str().into()),
    );
    if amqp.queue_type == QueueType::Quorum {
        // A 32-bit integer, as pika, amqplib and the Java client send it.
        let limit = i32::try_from(amqp.delivery_limit).unwrap_or(i32::MAX);
        args.insert("x-delivery-limit".into(), AMQPValue::LongInt(limit));
    }
    args
}

/// Declares the dead-letter, results and jobs queues, all durable. Always
/// the same arguments, so any number of workers can declare them.
pub async fn declare_topology(channel: &Channel, amqp: &AmqpSettings) -> anyhow::Result<()> {
    let durable = QueueDeclareOptions::durable();
    for queue in [&amqp.dead_letter_queue, &amqp.results_queue] {
        channel
            .queue_declare(queue.as_str().into(), durable, FieldTable::default())
            .await
            .with_context(|| format!("cannot declare queue {queue}"))?;
    }
    channel
        .queue_declare(
            amqp.jobs_queue.as_str().into(),
            durable,
            jobs_queue_arguments(amqp),
        )
        .await
        .with_context(|| {
            format!(
                "cannot declare queue {} (if it exists with other arguments, delete it or set amqp.queue_type to match)",
                amqp.jobs_queue
            )
        })?;
    info!(
        jobs_queue = %amqp.jobs_queue,
        results_queue = %amqp.results_queue,
        dead_letter_queue = %amqp.dead_letter_queue,
        queue_type = amqp.queue_type.as_str(),
        "topology declared"
    );
    Ok(())
}

/// Starts consuming the jobs queue on `channel`, carefully: prefetch 1 at
/// first (jobs a crashed worker held come back first, and each of them
/// runs alone; the worker raises the prefetch later).
pub(crate) async fn start_consuming(
    channel: &Channel,
    amqp: &AmqpSettings,
) -> anyhow::Result<Consumer> {
    channel
        .basic_qos(1, BasicQosOptions { global: false })
        .await
        .context("cannot set the prefetch (basic.qos)")?;
    channel
        .basic_consume(
            ShortString::from(amqp.jobs_queue.as_str()),
            ShortString::from(""),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .with_context(|| format!("cannot consume from {}", amqp.jobs_queue))
}
