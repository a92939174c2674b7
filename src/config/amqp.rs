//! The `[amqp]` section: the broker's addresses (one URL or a cluster's),
//! TLS files, the queue topology and the connection timings; and how a URL
//! is shown with its password masked.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// The broker and the queue topology.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmqpSettings {
    /// `amqp://user:password@host:port/vhost` (`%2f` is the vhost `/`), or
    /// `amqps://` for TLS. Not used when `urls` is set.
    pub url: String,
    /// The nodes of a cluster, each a URL like `url`; when not empty it
    /// replaces `url`. Every connection walks the list, starting from a
    /// different node per process. In the environment, one variable with
    /// the URLs separated by commas.
    #[serde(deserialize_with = "list_or_commas")]
    pub urls: Vec<String>,
    /// PEM file of CA certificates trusted for `amqps://`, besides the
    /// system's; empty for none.
    pub tls_ca_file: String,
    /// PEM file of a client certificate (with its chain) for brokers that
    /// verify peers; set with `tls_key_file`, or neither.
    pub tls_cert_file: String,
    /// PEM file of the client certificate's private key (not encrypted).
    pub tls_key_file: String,
    /// Queue the worker takes jobs from.
    pub jobs_queue: String,
    /// Queue results go to when a job has no `reply_to`, and when its
    /// `reply_to` queue does not exist.
    pub results_queue: String,
    /// Queue the jobs queue dead-letters to.
    pub dead_letter_queue: String,
    /// Type of the jobs queue: `quorum` or `classic`.
    pub queue_type: QueueType,
    /// Type of the results and dead-letter queues: `classic` or `quorum`
    /// (a cluster's choice: they then survive the loss of a node).
    pub results_queue_type: QueueType,
    /// Deliveries of one job before a quorum jobs queue dead-letters it
    /// (`x-delivery-limit`); unused for classic queues.
    pub delivery_limit: u32,
    /// Heartbeat interval proposed to the broker, in seconds; a connection
    /// silent for two intervals counts as lost. 0 takes the broker's. A
    /// `heartbeat` parameter in the URL wins over this.
    pub heartbeat_secs: u16,
    /// How long one attempt to connect and set up the channels may take.
    pub connect_timeout_secs: u64,
    /// How long a result may wait for its publisher confirm (time the
    /// broker blocks the connection aside) before the connection counts as
    /// failed and the worker moves to the next node; 0 waits forever.
    pub confirm_timeout_secs: u64,
    /// First wait before reconnecting after the connection is lost (or
    /// before retrying a failed first connection); it doubles with every
    /// failed attempt, with random jitter, up to `reconnect_max_ms`.
    pub reconnect_initial_ms: u64,
    /// Longest wait between two attempts to reconnect.
    pub reconnect_max_ms: u64,
    /// Stop with an error (exit code 1) when the broker has been unreachable
    /// this long, so a supervisor can act; 0 means retry forever.
    pub reconnect_give_up_secs: u64,
}

/// An `x-queue-type`: of the jobs queue (`queue_type`), of the results
/// and dead-letter queues (`results_queue_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    Quorum,
    Classic,
}

impl QueueType {
    /// The name RabbitMQ uses in `x-queue-type`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Quorum => "quorum",
            QueueType::Classic => "classic",
        }
    }
}

impl Default for AmqpSettings {
    fn default() -> Self {
        AmqpSettings {
            url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
            urls: Vec::new(),
            tls_ca_file: String::new(),
            tls_cert_file: String::new(),
            tls_key_file: String::new(),
            jobs_queue: "sudoku.jobs".into(),
            results_queue: "sudoku.results".into(),
            dead_letter_queue: "sudoku.jobs.dead".into(),
            queue_type: QueueType::Quorum,
            results_queue_type: QueueType::Classic,
            delivery_limit: 5,
            heartbeat_secs: 30,
            connect_timeout_secs: 10,
            confirm_timeout_secs: 15,
            reconnect_initial_ms: 500,
            reconnect_max_ms: 30_000,
            reconnect_give_up_secs: 0,
        }
    }
}

impl AmqpSettings {
    /// Checks the section; the error names the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        super::endpoints(self).map_err(|e| invalid(e.key, e.reason))?;
        for (key, name) in [
            ("amqp.jobs_queue", &self.jobs_queue),
            ("amqp.results_queue", &self.results_queue),
            ("amqp.dead_letter_queue", &self.dead_letter_queue),
        ] {
            if name.is_empty() || name.len() > 255 {
                return Err(invalid(key, "a queue name has 1 to 255 bytes"));
            }
            if name.starts_with("amq.") {
                return Err(invalid(key, "names starting with \"amq.\" are reserved"));
            }
        }
        if self.jobs_queue == self.results_queue
            || self.jobs_queue == self.dead_letter_queue
            || self.results_queue == self.dead_letter_queue
        {
            return Err(invalid(
                "amqp.jobs_queue",
                "the jobs, results and dead-letter queues must be three different queues",
            ));
        }
        if self.queue_type == QueueType::Quorum && self.delivery_limit == 0 {
            return Err(invalid(
                "amqp.delivery_limit",
                "must be at least 1 on a quorum queue",
            ));
        }
        if !(1..=3600).contains(&self.connect_timeout_secs) {
            return Err(invalid(
                "amqp.connect_timeout_secs",
                "must be from 1 to 3600",
            ));
        }
        if self.confirm_timeout_secs > 3600 {
            return Err(invalid(
                "amqp.confirm_timeout_secs",
                "must be from 0 (wait forever) to 3600",
            ));
        }
        if !(1..=3_600_000).contains(&self.reconnect_max_ms) {
            return Err(invalid(
                "amqp.reconnect_max_ms",
                "must be from 1 to 3600000 (an hour)",
            ));
        }
        if !(1..=self.reconnect_max_ms).contains(&self.reconnect_initial_ms) {
            return Err(invalid(
                "amqp.reconnect_initial_ms",
                format!(
                    "must be from 1 to amqp.reconnect_max_ms ({})",
                    self.reconnect_max_ms
                ),
            ));
        }
        Ok(())
    }

    /// The URL with its password replaced by `***`, for logs.
    pub fn url_masked(&self) -> String {
        mask_password(&self.url)
    }

    /// The broker addresses in use: `urls` when set, else `url` alone.
    pub fn addresses(&self) -> Vec<&str> {
        if self.urls.is_empty() {
            vec![self.url.as_str()]
        } else {
            self.urls.iter().map(String::as_str).collect()
        }
    }

    /// The setting [`AmqpSettings::addresses`] come from, for messages.
    pub fn addresses_key(&self) -> &'static str {
        if self.urls.is_empty() {
            "amqp.url"
        } else {
            "amqp.urls"
        }
    }

    /// `url` parsed, with `heartbeat_secs` applied unless the URL sets a
    /// heartbeat itself.
    pub fn uri(&self) -> Result<lapin::uri::AMQPUri, String> {
        self.parse_address(&self.url)
    }

    /// One address parsed, with `heartbeat_secs` applied unless the URL
    /// sets a heartbeat itself. The error may quote the URL, password and
    /// all: mask it before showing it.
    pub fn parse_address(&self, url: &str) -> Result<lapin::uri::AMQPUri, String> {
        let mut uri: lapin::uri::AMQPUri = url.parse()?;
        if uri.query.heartbeat.is_none() {
            uri.query.heartbeat = Some(self.heartbeat_secs);
        }
        Ok(uri)
    }

    /// `tls_ca_file`, unless empty.
    pub fn tls_ca_file(&self) -> Option<&Path> {
        (!self.tls_ca_file.is_empty()).then(|| Path::new(&self.tls_ca_file))
    }

    /// `tls_cert_file`, unless empty.
    pub fn tls_cert_file(&self) -> Option<&Path> {
        (!self.tls_cert_file.is_empty()).then(|| Path::new(&self.tls_cert_file))
    }

    /// `tls_key_file`, unless empty.
    pub fn tls_key_file(&self) -> Option<&Path> {
        (!self.tls_key_file.is_empty()).then(|| Path::new(&self.tls_key_file))
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }

    /// `None` when a confirm may take forever.
    pub fn confirm_timeout(&self) -> Option<Duration> {
        (self.confirm_timeout_secs > 0).then(|| Duration::from_secs(self.confirm_timeout_secs))
    }

    pub fn reconnect_initial(&self) -> Duration {
        Duration::from_millis(self.reconnect_initial_ms)
    }

    pub fn reconnect_max(&self) -> Duration {
        Duration::from_millis(self.reconnect_max_ms)
    }

    /// `None` when the worker retries forever.
    pub fn reconnect_give_up(&self) -> Option<Duration> {
        (self.reconnect_give_up_secs > 0).then(|| Duration::from_secs(self.reconnect_give_up_secs))
    }
}

impl std::fmt::Debug for AmqpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpSettings")
            .field("url", &self.url_masked())
            .field(
                "urls",
                &self
                    .urls
                    .iter()
                    .map(|url| mask_password(url))
                    .collect::<Vec<_>>(),
            )
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_key_file", &self.tls_key_file)
            .field("jobs_queue", &self.jobs_queue)
            .field("results_queue", &self.results_queue)
            .field("dead_letter_queue", &self.dead_letter_queue)
            .field("queue_type", &self.queue_type)
            .field("results_queue_type", &self.results_queue_type)
            .field("delivery_limit", &self.delivery_limit)
            .field("heartbeat_secs", &self.heartbeat_secs)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("confirm_timeout_secs", &self.confirm_timeout_secs)
            .field("reconnect_initial_ms", &self.reconnect_initial_ms)
            .field("reconnect_max_ms", &self.reconnect_max_ms)
            .field("reconnect_give_up_secs", &self.reconnect_give_up_secs)
            .finish()
    }
}

/// `amqp.urls` from a TOML array, or from one string of URLs separated by
/// commas (how an environment variable gives it). Blanks around the
/// commas are ignored, and so are empty entries; a comma inside a URL
/// must be percent-encoded (`%2C`).
fn list_or_commas<'de, D>(deserializer: D) -> Result<Vec<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrCommas {
        List(Vec<String>),
        Commas(String),
    }
    let urls = match ListOrCommas::deserialize(deserializer)? {
        ListOrCommas::List(urls) => urls,
        ListOrCommas::Commas(text) => text.split(',').map(str::to_string).collect(),
    };
    Ok(urls
        .into_iter()
        .map(|url| url.trim().to_string())
        .filter(|url| !url.is_empty())
        .collect())
}

/// `scheme://user:secret@host/...` becomes `scheme://user:***@host/...`;
/// anything without a password in it is returned as it is.
pub fn mask_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}
