//! What the fault tools (`soak`, `recovery_probe`) and the pipeline bench
//! share: publishing jobs with confirms, opening a consumer beside a
//! channel for confirmed results or one that reads results
//! unacknowledged, and finding the sudokud binary.

use std::path::{Path, PathBuf};

use anyhow::{Context, ensure};
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, Consumer};

/// Publishes `bodies` to `queue` with `properties` on a channel in confirm
/// mode, confirms pipelined in windows of 1,024 so the broker is not
/// flooded. Returns how many were published, all confirmed.
pub async fn publish_confirmed(
    channel: &Channel,
    queue: &str,
    bodies: impl Iterator<Item = Vec<u8>>,
    properties: &BasicProperties,
) -> anyhow::Result<usize> {
    let mut window = Vec::with_capacity(1024);
    let mut sent = 0;
    for body in bodies {
        window.push(
            channel
                .basic_publish(
                    "".into(),
                    ShortString::from(queue),
                    BasicPublishOptions::default(),
                    &body,
                    properties.clone(),
                )
                .await?,
        );
        sent += 1;
        if window.len() == 1024 {
            for confirm in window.drain(..) {
                ensure!(confirm.await?.is_ack(), "the broker refused a job");
            }
        }
    }
    for confirm in window {
        ensure!(confirm.await?.is_ack(), "the broker refused a job");
    }
    Ok(sent)
}

/// The two channels of a consumer: jobs come in on one, results go out
/// on the other, in confirm mode. Keep the jobs channel while consuming.
pub struct Consuming {
    pub jobs: Channel,
    pub consumer: Consumer,
    pub results: Channel,
}

/// A consumer of `queue` with manual acks and `prefetch`, and a channel in
/// confirm mode to publish results on.
pub async fn consume_with_confirms(
    connection: &Connection,
    queue: &str,
    prefetch: u16,
) -> anyhow::Result<Consuming> {
    let jobs = connection.create_channel().await?;
    jobs.basic_qos(prefetch, BasicQosOptions::default()).await?;
    let results = connection.create_channel().await?;
    results
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let consumer = jobs
        .basic_consume(
            queue.into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    Ok(Consuming {
        jobs,
        consumer,
        results,
    })
}

/// A consumer of `queue` without acknowledgements: the broker forgets each
/// message once it is sent, for results read once.
pub async fn consume_no_ack(channel: &Channel, queue: &str) -> anyhow::Result<Consumer> {
    let consumer = channel
        .basic_consume(
            queue.into(),
            "".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    Ok(consumer)
}

/// The sudokud binary: `given` when set, else the one beside this program
/// (cargo builds both into the same directory).
pub fn sudokud_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    match given {
        Some(path) => Ok(path.to_path_buf()),
        None => Ok(std::env::current_exe()?
            .parent()
            .context("no directory for this binary")?
            .join("sudokud")),
    }
}
