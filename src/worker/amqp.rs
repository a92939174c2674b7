//! The worker's session with the broker: its two channels on a connection
//! from [`crate::broker`].

use std::pin::Pin;

use anyhow::Context;
use lapin::options::ConfirmSelectOptions;
use lapin::types::ShortString;
use lapin::{Channel, Connection, Consumer, Event};
use tokio_stream::Stream;
use tracing::{debug, info};

pub(crate) use crate::broker::is_permanent;

use crate::broker::{Broker, CLOSE_TIMEOUT, declare_topology, start_consuming};
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
                    let (jobs, results, consumer) = Session::setup(connection, amqp).await?;
                    Ok((events, jobs, results, consumer))
                })
            })
            .await?;
        let (events, jobs, results, consumer) = opened.setup;
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
        let results = connection
            .create_channel()
            .await
            .context("cannot open the results channel")?;
        results
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .context("cannot enable publisher confirms")?;
        // Careful at first: see `intake`.
        let consumer = start_consuming(&jobs, amqp).await?;
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

/// Closes a connection, bounded in time, unless it is already gone.
pub(crate) async fn close_quietly(connection: &Connection) {
    crate::broker::close_quietly(connection).await;
}
