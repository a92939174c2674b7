//! The worker's session with the broker: its two channels on a connection
//! from [`crate::broker`].

use std::pin::Pin;

use anyhow::Context;
use lapin::types::ShortString;
use lapin::{Channel, Connection, Consumer, Event};
use tokio_stream::Stream;
use tracing::{debug, info, warn};

pub(crate) use crate::broker::is_permanent;

use crate::broker::{
    Broker, CLOSE_TIMEOUT, declare_jobs_queue, declare_results_queue, is_home_node_down,
    log_declared, open_confirm_channel, start_consuming,
};
use crate::config::AmqpSettings;

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
    /// The results or dead-letter queues that could not be declared
    /// because their node is down: the worker serves without them.
    pub unreachable: Vec<ShortString>,
}

/// A connection's events: blocked and unblocked by the broker, and its
/// failure.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Event> + Send>>;

impl Session {
    /// Connects to a node of the broker (walking the address list), declares
    /// the topology and starts consuming, each step within
    /// `amqp.connect_timeout_secs`. A failure part-way closes what was
    /// opened, and the next node is tried.
    pub(crate) async fn open(broker: &Broker, worker_id: &str) -> anyhow::Result<Opened> {
        let opened = broker
            .open(&format!("sudokud {worker_id}"), |connection, amqp| {
                Box::pin(async move {
                    // Listen before anything else, so no event is missed.
                    let events: Events = Box::pin(connection.events_listener());
                    let (jobs, results, consumer, unreachable) =
                        Session::setup(connection, amqp).await?;
                    Ok((events, jobs, results, consumer, unreachable))
                })
            })
            .await?;
        let (events, jobs, results, consumer, unreachable) = opened.setup;
        let connection = opened.connection;
        info!(url = %opened.node, heartbeat_secs = connection.configuration().heartbeat(), "connected");
        let session = Session {
            connection,
            jobs,
            results,
        };
        Ok(Opened {
            session,
            consumer,
            events,
            unreachable,
        })
    }

    async fn setup(
        connection: &Connection,
        amqp: &AmqpSettings,
    ) -> anyhow::Result<(Channel, Channel, Consumer, Vec<ShortString>)> {
        let (jobs, unreachable) = declare_what_is_reachable(connection, amqp).await?;
        let results = open_results_channel(connection).await?;
        // Careful at first: see `intake`.
        let consumer = start_consuming(&jobs, amqp).await?;
        Ok((jobs, results, consumer, unreachable))
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

/// A new channel for publishing results, in confirm mode.
pub(crate) async fn open_results_channel(connection: &Connection) -> anyhow::Result<Channel> {
    open_confirm_channel(connection, "the results channel").await
}

/// Declares the topology on a new channel, which becomes the jobs channel,
/// and returns it. A results or dead-letter queue whose node is down
/// ([`is_home_node_down`]) is left out and returned: the worker consumes
/// and answers without it, and declares it again later. The refusal closes
/// the channel, so the next declaration takes a new one.
async fn declare_what_is_reachable(
    connection: &Connection,
    amqp: &AmqpSettings,
) -> anyhow::Result<(Channel, Vec<ShortString>)> {
    let open = async || {
        connection
            .create_channel()
            .await
            .context("cannot open the jobs channel")
    };
    let mut channel = open().await?;
    let mut unreachable = Vec::new();
    for queue in [&amqp.dead_letter_queue, &amqp.results_queue] {
        match declare_results_queue(&channel, amqp, queue).await {
            Ok(()) => {}
            Err(e) if is_home_node_down(&e) => {
                warn!(
                    queue = %queue,
                    error = format!("{e:#}"),
                    "this queue's node is down; serving without it, answers for it wait until it is back"
                );
                unreachable.push(ShortString::from(queue.as_str()));
                channel = open().await?;
            }
            Err(e) => return Err(e),
        }
    }
    declare_jobs_queue(&channel, amqp).await?;
    log_declared(amqp);
    Ok((channel, unreachable))
}

/// Closes a connection, bounded in time, unless it is already gone.
pub(crate) async fn close_quietly(connection: &Connection) {
    crate::broker::close_quietly(connection).await;
}
