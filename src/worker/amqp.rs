//! The broker side: connection, channels, the queue topology of the wire
//! protocol, and the properties of result messages.

use std::pin::Pin;
use std::time::Duration;

use anyhow::Context;
use lapin::options::{
    BasicConsumeOptions, BasicQosOptions, ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{
    BasicProperties, Channel, Connection, ConnectionProperties, Consumer, ErrorKind, Event,
};
use tokio_stream::Stream;
use tracing::{debug, info};

use crate::config::{AmqpSettings, QueueType};

/// An open connection, ready to work: the jobs channel (consume, ack) and
/// the results channel (publish, in confirm mode).
pub(crate) struct Session {
    pub connection: Connection,
    pub jobs: Channel,
    pub results: Channel,
}

/// A session just opened, its consumer started carefully (prefetch 1, see
/// [`crate::worker::intake`]), and the connection's events.
pub(crate) struct Opened {
    pub session: Session,
    pub consumer: Consumer,
    pub events: Events,
}

/// A connection's events: blocked and unblocked by the broker, and its
/// failure.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Event> + Send>>;

impl Session {
    /// Connects, declares the topology and starts consuming, each step
    /// within `amqp.connect_timeout_secs`. A failure part-way closes what
    /// was opened.
    pub(crate) async fn open(amqp: &AmqpSettings, worker_id: &str) -> anyhow::Result<Opened> {
        let url = amqp.url_masked();
        // The parser's message may quote the URL: never show its password.
        let uri = amqp
            .uri()
            .map_err(|e| anyhow::anyhow!("invalid amqp.url: {}", e.replace(&amqp.url, &url)))?;
        let properties = ConnectionProperties::default()
            .with_connection_name(LongString::from(format!("sudokud {worker_id}")));
        let timeout = amqp.connect_timeout();
        let connection =
            match tokio::time::timeout(timeout, Connection::connect_uri(uri, properties)).await {
                Ok(connected) => connected.with_context(|| format!("cannot connect to {url}"))?,
                Err(_) => anyhow::bail!(
                    "cannot connect to {url}: no answer within {} s",
                    timeout.as_secs()
                ),
            };
        // Listen before anything else, so no event is missed.
        let events: Events = Box::pin(connection.events_listener());
        let setup = tokio::time::timeout(timeout, Session::setup(&connection, amqp));
        let (jobs, results, consumer) = match setup.await {
            Ok(Ok(opened)) => opened,
            failed => {
                close_quietly(&connection).await;
                return Err(match failed {
                    Ok(Err(e)) => e,
                    _ => anyhow::anyhow!(
                        "cannot set up the channels and queues on {url}: no answer within {} s",
                        timeout.as_secs()
                    ),
                });
            }
        };
        info!(url = %url, heartbeat_secs = connection.configuration().heartbeat(), "connected");
        let session = Session {
            connection,
            jobs,
            results,
        };
        Ok(Opened {
            session,
            consumer,
            events,
        })
    }

    async fn setup(
        connection: &Connection,
        amqp: &AmqpSettings,
    ) -> anyhow::Result<(Channel, Channel, Consumer)> {
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
        // Careful at first: jobs a crashed worker held come back first, and
        // each of them runs alone (see `intake`).
        jobs.basic_qos(1, BasicQosOptions { global: false })
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
        Ok((jobs, results, consumer))
    }

    /// Closes the channels, then the connection, each bounded in time: a
    /// broker that is gone or blocks the connection cannot hold the worker.
    pub(crate) async fn close(&self) {
        for (name, channel) in [("results", &self.results), ("jobs", &self.jobs)] {
            match tokio::time::timeout(
                CLOSE_TIMEOUT,
                channel.close(200, ShortString::from("worker stopping")),
            )
            .await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => debug!(channel = name, error = %e, "channel already closed"),
                Err(_) => debug!(channel = name, "no answer to closing the channel"),
            }
        }
        close_quietly(&self.connection).await;
    }
}

/// How long closing a channel or the connection may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Closes a connection, bounded in time, unless it is already gone.
pub(crate) async fn close_quietly(connection: &Connection) {
    if !connection.status().connected() {
        return;
    }
    match tokio::time::timeout(
        CLOSE_TIMEOUT,
        connection.close(200, ShortString::from("worker stopping")),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => debug!(error = %e, "connection already closed"),
        Err(_) => debug!("no answer to closing the connection"),
    }
}

/// Whether retrying cannot help: the broker refused the login, or the
/// queues exist with other arguments. Anything else (refused or lost
/// connections, timeouts, a broker still starting) is worth retrying.
pub(crate) fn is_permanent(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let Some(e) = cause.downcast_ref::<lapin::Error>() else {
            return false;
        };
        let ErrorKind::ProtocolError(amqp) = e.kind() else {
            return false;
        };
        matches!(
            amqp.kind(),
            AMQPErrorKind::Soft(AMQPSoftError::ACCESSREFUSED)
                | AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED)
        )
    })
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
