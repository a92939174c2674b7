//! The queue topology of the wire protocol (the jobs queue, its dead-letter
//! queue and the results queue, with their arguments) and starting to
//! consume the jobs queue.

use anyhow::Context;
use lapin::options::{BasicConsumeOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
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

/// The arguments of the results and dead-letter queues, exactly as the
/// protocol states them: `x-queue-type` from `amqp.results_queue_type`.
/// A producer that declares either queue must pass the same.
pub fn results_queue_arguments(amqp: &AmqpSettings) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString(amqp.results_queue_type.as_str().into()),
    );
    args
}

/// Where docs/deploy.md says how to change the type of an existing results
/// or dead-letter queue.
const RESULTS_QUEUE_MIGRATION: &str =
    "docs/deploy.md, \"Changing the type of the results and dead-letter queues\"";

/// Declares the dead-letter, results and jobs queues, all durable. Always
/// the same arguments, so any number of workers can declare them.
///
/// A results or dead-letter queue that exists as another type than
/// `amqp.results_queue_type` (the broker answers PRECONDITION_FAILED) is
/// an error naming the setting and where the migration is described.
pub async fn declare_topology(channel: &Channel, amqp: &AmqpSettings) -> anyhow::Result<()> {
    for queue in [&amqp.dead_letter_queue, &amqp.results_queue] {
        declare_results_queue(channel, amqp, queue).await?;
    }
    declare_jobs_queue(channel, amqp).await?;
    log_declared(amqp);
    Ok(())
}

/// Declares the results or the dead-letter queue (`queue`), durable, with
/// [`results_queue_arguments`]. A queue of another type than
/// `amqp.results_queue_type` is an error naming the setting; a classic
/// queue whose node is down, one that [`is_home_node_down`] recognises.
pub async fn declare_results_queue(
    channel: &Channel,
    amqp: &AmqpSettings,
    queue: &str,
) -> anyhow::Result<()> {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions::durable(),
            results_queue_arguments(amqp),
        )
        .await
        .map_err(|e| {
            let refused = is_precondition_failed(&e);
            let error = anyhow::Error::from(e);
            if refused {
                error.context(format!(
                    "cannot declare queue {queue} as a {} queue (amqp.results_queue_type): it exists with other arguments, most likely as the other type; set amqp.results_queue_type to the type it has, or move it to the new type ({RESULTS_QUEUE_MIGRATION})",
                    amqp.results_queue_type.as_str()
                ))
            } else {
                error.context(format!("cannot declare queue {queue}"))
            }
        })?;
    Ok(())
}

/// Declares the jobs queue, durable, with [`jobs_queue_arguments`].
pub async fn declare_jobs_queue(channel: &Channel, amqp: &AmqpSettings) -> anyhow::Result<()> {
    channel
        .queue_declare(
            amqp.jobs_queue.as_str().into(),
            QueueDeclareOptions::durable(),
            jobs_queue_arguments(amqp),
        )
        .await
        .with_context(|| {
            format!(
                "cannot declare queue {} (if it exists with other arguments, delete it or set amqp.queue_type to match)",
                amqp.jobs_queue
            )
        })?;
    Ok(())
}

/// Logs the topology, once it is declared.
pub(crate) fn log_declared(amqp: &AmqpSettings) {
    info!(
        jobs_queue = %amqp.jobs_queue,
        results_queue = %amqp.results_queue,
        dead_letter_queue = %amqp.dead_letter_queue,
        queue_type = amqp.queue_type.as_str(),
        results_queue_type = amqp.results_queue_type.as_str(),
        "topology declared"
    );
}

/// Whether the broker refused a declaration because the queue lives on a
/// node that is down: a classic queue is on one node, and while that node
/// is away RabbitMQ answers NOT_FOUND "home node ... is down or
/// inaccessible" (publications to it come back unroutable).
pub fn is_home_node_down(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<lapin::Error>().map(lapin::Error::kind),
            Some(lapin::ErrorKind::ProtocolError(e))
                if matches!(e.kind(), AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND))
                    && e.get_message().as_str().contains("home node")
        )
    })
}

/// Whether the broker refused a declaration with PRECONDITION_FAILED (the
/// queue exists with other arguments).
fn is_precondition_failed(error: &lapin::Error) -> bool {
    matches!(
        error.kind(),
        lapin::ErrorKind::ProtocolError(e)
            if matches!(e.kind(), AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED))
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn queue_type(args: &FieldTable) -> Option<String> {
        match args.inner().get("x-queue-type") {
            Some(AMQPValue::LongString(kind)) => Some(kind.to_string()),
            _ => None,
        }
    }

    #[test]
    fn the_results_and_dead_letter_queues_take_their_own_type() {
        let mut amqp = AmqpSettings::default();
        assert_eq!(
            queue_type(&results_queue_arguments(&amqp)).as_deref(),
            Some("classic")
        );
        assert_eq!(
            queue_type(&jobs_queue_arguments(&amqp)).as_deref(),
            Some("quorum")
        );
        amqp.results_queue_type = QueueType::Quorum;
        amqp.queue_type = QueueType::Classic;
        let results = results_queue_arguments(&amqp);
        assert_eq!(queue_type(&results).as_deref(), Some("quorum"));
        // Nothing else: no delivery limit or dead-lettering of their own.
        assert_eq!(results.inner().len(), 1);
        assert_eq!(
            queue_type(&jobs_queue_arguments(&amqp)).as_deref(),
            Some("classic")
        );
    }
}
