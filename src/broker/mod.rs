//! The one way to the broker, for the worker and the producer commands
//! alike: connecting (deadline, heartbeat, TLS, the list of cluster nodes
//! with failover, the node logged with its password masked) and the queue
//! topology of the wire protocol.
//!
//! - `address`: the order the addresses are tried in (the addresses and
//!   the `amqp.tls_*` files are read and checked with the settings, in
//!   `config`).
//! - `tls`: TLS failures of a connection, explained.
//! - `topology`: the queues and their arguments, and starting to consume.
//!
//! One connection attempt ([`Broker::open`]) walks the whole address list:
//! a node that is down costs one failed try, and the next node is tried at
//! once. Only when every node failed does the caller back off. Each walk
//! starts from a different node: the first at random (so workers spread
//! over the cluster), later ones after the node last connected to (so a
//! node just lost is tried last).
//!
//! TLS never falls back to plain text: an `amqps://` address either
//! completes a verified TLS handshake (the system's CA certificates plus
//! `amqp.tls_ca_file`, and the host name of the URL checked against the
//! certificate) or fails to connect.

mod address;
mod tls;
mod topology;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use lapin::tcp::OwnedTLSConfig;
use lapin::types::{LongString, ShortString};
use lapin::{Connection, ConnectionProperties, ErrorKind};
use tracing::{debug, warn};

pub use topology::{
    declare_jobs_queue, declare_results_queue, declare_topology, is_home_node_down,
    jobs_queue_arguments, results_queue_arguments,
};
pub(crate) use topology::{log_declared, start_consuming};

use crate::config::{Address, AmqpSettings, SettingError};

/// Checks what [`Broker::new`] checks: the addresses parse, the TLS files
/// are readable PEM that TLS accepts, and TLS settings come with
/// `amqps://` addresses only.
pub fn check_settings(amqp: &AmqpSettings) -> Result<(), SettingError> {
    Broker::new(amqp).map(drop)
}

/// The broker addresses, the TLS material and where the next walk over the
/// addresses starts. Cheap to clone; clones share the starting point.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<Inner>,
}

struct Inner {
    amqp: AmqpSettings,
    addresses: Vec<Address>,
    /// Empty unless the `amqp.tls_*` files are set.
    tls: OwnedTLSConfig,
    connect_timeout: Duration,
    /// Index of the address the next walk starts from.
    next: AtomicUsize,
}

/// What [`Broker::open`] does on a fresh connection before calling it
/// open, given the connection and the settings: boxed and `Send`, so the
/// worker's future stays `Send` whatever the caller's lifetimes.
pub type Setup<'c, T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send + 'c>>;

/// A connection opened by [`Broker::open`], with what its setup made.
pub struct Opened<T> {
    pub connection: Connection,
    /// The node connected to, its password masked.
    pub node: String,
    pub setup: T,
}

impl Broker {
    /// Parses the addresses and reads the TLS files; errors name the key.
    pub fn new(amqp: &AmqpSettings) -> Result<Broker, SettingError> {
        let (addresses, tls) = crate::config::endpoints(amqp)?;
        Ok(Broker {
            inner: Arc::new(Inner {
                amqp: amqp.clone(),
                next: AtomicUsize::new(address::random_start(addresses.len())),
                addresses,
                tls,
                connect_timeout: amqp.connect_timeout(),
            }),
        })
    }

    /// The same broker with another deadline for each address (the
    /// producer commands take theirs on the command line).
    pub fn with_connect_timeout(&self, timeout: Duration) -> Broker {
        let inner = &self.inner;
        Broker {
            inner: Arc::new(Inner {
                amqp: inner.amqp.clone(),
                addresses: inner.addresses.clone(),
                tls: inner.tls.clone(),
                connect_timeout: timeout,
                next: AtomicUsize::new(inner.next.load(Ordering::Relaxed)),
            }),
        }
    }

    /// The settings this broker was made from.
    pub fn settings(&self) -> &AmqpSettings {
        &self.inner.amqp
    }

    /// The addresses, passwords masked, in the order of the settings.
    pub fn nodes(&self) -> Vec<String> {
        self.inner
            .addresses
            .iter()
            .map(|a| a.masked.clone())
            .collect()
    }

    /// Connects to one node after the other until one accepts the
    /// connection and `setup` succeeds on it, each within the connect
    /// timeout; the connection is named `name` in the broker's views.
    /// A node that fails is closed and the next one is tried at once.
    ///
    /// Errors: a refusal retrying cannot help (`is_permanent`) at once;
    /// otherwise, once every node has failed, one error naming each.
    pub async fn open<T>(
        &self,
        name: &str,
        setup: impl for<'c> Fn(&'c Connection, &'c AmqpSettings) -> Setup<'c, T>,
    ) -> anyhow::Result<Opened<T>> {
        let inner = &self.inner;
        let count = inner.addresses.len();
        let start = inner.next.load(Ordering::Relaxed) % count;
        let mut failures = Vec::new();
        for step in 0..count {
            let index = (start + step) % count;
            let address = &inner.addresses[index];
            match self.try_node(address, name, &setup).await {
                Ok((connection, setup)) => {
                    // The next walk (a reconnection) starts after this node.
                    inner.next.store((index + 1) % count, Ordering::Relaxed);
                    return Ok(Opened {
                        connection,
                        node: address.masked.clone(),
                        setup,
                    });
                }
                Err(e) if is_permanent(&e) => return Err(e),
                Err(e) => {
                    if step + 1 < count {
                        warn!(
                            node = %address.masked,
                            error = format!("{e:#}"),
                            "cannot use this broker node; trying the next"
                        );
                    }
                    failures.push(e);
                }
            }
        }
        inner.next.store((start + 1) % count, Ordering::Relaxed);
        if failures.len() == 1 {
            return Err(failures.remove(0));
        }
        let each: Vec<String> = failures.iter().map(|e| format!("{e:#}")).collect();
        Err(anyhow::anyhow!(
            "no node of {} could be used: {}",
            inner.amqp.addresses_key(),
            each.join("; ")
        ))
    }

    /// One node: connect (TCP, TLS for `amqps://`, AMQP handshake), then
    /// `setup`, each within the connect timeout.
    async fn try_node<T>(
        &self,
        address: &Address,
        name: &str,
        setup: &impl for<'c> Fn(&'c Connection, &'c AmqpSettings) -> Setup<'c, T>,
    ) -> anyhow::Result<(Connection, T)> {
        let url = &address.masked;
        let timeout = self.inner.connect_timeout;
        let properties =
            ConnectionProperties::default().with_connection_name(LongString::from(name));
        let runtime = lapin::runtime::default_runtime().context("no async runtime")?;
        let connect = Connection::connect_uri_with_config(
            address.uri.clone(),
            properties,
            self.inner.tls.clone(),
            runtime,
        );
        let connection = match tokio::time::timeout(timeout, connect).await {
            Ok(connected) => connected
                .map_err(|e| tls::explain(e, address))
                .with_context(|| format!("cannot connect to {url}"))?,
            Err(_) => anyhow::bail!(
                "cannot connect to {url}: no answer within {} s",
                timeout.as_secs_f64()
            ),
        };
        match tokio::time::timeout(timeout, setup(&connection, &self.inner.amqp)).await {
            Ok(Ok(made)) => Ok((connection, made)),
            Ok(Err(e)) => {
                close_quietly(&connection).await;
                Err(e.context(format!("on {url}")))
            }
            Err(_) => {
                close_quietly(&connection).await;
                anyhow::bail!(
                    "cannot set up the channels and queues on {url}: no answer within {} s",
                    timeout.as_secs_f64()
                )
            }
        }
    }
}

/// A new channel on `connection` in confirm mode, for publishing; `name`
/// says which in an error ("the results channel").
pub(crate) async fn open_confirm_channel(
    connection: &Connection,
    name: &str,
) -> anyhow::Result<lapin::Channel> {
    let channel = connection
        .create_channel()
        .await
        .with_context(|| format!("cannot open {name}"))?;
    channel
        .confirm_select(lapin::options::ConfirmSelectOptions::default())
        .await
        .context("cannot enable publisher confirms")?;
    Ok(channel)
}

/// How long closing a channel or the connection may take.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Closes a connection, bounded in time, unless it is already gone.
pub(crate) async fn close_quietly(connection: &Connection) {
    if !connection.status().connected() {
        return;
    }
    match tokio::time::timeout(
        CLOSE_TIMEOUT,
        connection.close(200, ShortString::from("closing")),
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
/// connections, timeouts, a certificate that cannot be verified, a broker
/// still starting) is worth retrying.
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
