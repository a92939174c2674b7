//! The broker side: connection, channels, the queue topology of the wire
//! protocol, and the properties of result messages.

use anyhow::Context;
use lapin::options::{
    BasicConsumeOptions, BasicQosOptions, ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer};
use tracing::info;

use crate::config::{AmqpSettings, QueueType};

/// An open connection, ready to work: the jobs channel (consume, ack, with
/// the prefetch set) and the results channel (publish, in confirm mode).
pub(crate) struct Session {
    pub connection: Connection,
    pub jobs: Channel,
    pub results: Channel,
    pub consumer: Consumer,
}

impl Session {
    /// Connects, declares the topology and starts consuming.
    pub(crate) async fn open(
        amqp: &AmqpSettings,
        prefetch: u16,
        worker_id: &str,
    ) -> anyhow::Result<Session> {
        let url = amqp.url_masked();
        let properties = ConnectionProperties::default()
            .with_connection_name(LongString::from(format!("sudokud {worker_id}")));
        let connection = Connection::connect(&amqp.url, properties)
            .await
            .with_context(|| format!("cannot connect to {url}"))?;
        info!(url = %url, "connected");
        let jobs = connection
            .create_channel()
            .await
            .context("cannot open the jobs channel")?;
        declare_topology(&jobs, amqp).await?;
        info!(
            jobs_queue = %amqp.jobs_queue,
            results_queue = %amqp.results_queue,
            dead_letter_queue = %amqp.dead_letter_queue,
            queue_type = amqp.queue_type.as_str(),
            "topology declared"
        );
        jobs.basic_qos(prefetch, BasicQosOptions { global: false })
            .await
            .context("cannot set the prefetch (basic.qos)")?;
        let results = connection
            .create_channel()
            .await
            .context("cannot open the results channel")?;
        results
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .context("cannot enable publisher confirms")?;
        let consumer = jobs
            .basic_consume(
                ShortString::from(amqp.jobs_queue.as_str()),
                ShortString::from(""),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .with_context(|| format!("cannot consume from {}", amqp.jobs_queue))?;
        Ok(Session {
            connection,
            jobs,
            results,
            consumer,
        })
    }
}

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
    Ok(())
}

/// Properties of a result message: persistent JSON, with the job's
/// `correlation_id`, else its `message_id`, else none.
pub(crate) fn result_properties(correlation_id: Option<&ShortString>) -> BasicProperties {
    let properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into());
    match correlation_id {
        Some(id) => properties.with_correlation_id(id.clone()),
        None => properties,
    }
}

/// The `correlation_id` a job's result carries.
pub(crate) fn reply_correlation(job: &BasicProperties) -> Option<ShortString> {
    job.correlation_id()
        .clone()
        .or_else(|| job.message_id().clone())
}
