//! Settings of the worker daemon: typed, layered and validated.
//!
//! Layers, later ones winning: the defaults in this file (the `Default`
//! impls, the one source of defaults), then `config/default.toml` or the
//! file given with `--config`, then environment variables
//! `SUDOKUD__SECTION__KEY` (for example `SUDOKUD__AMQP__URL`). Every section
//! rejects unknown keys, so a typo is an error rather than a silent default.
//! [`Settings::load`] never returns settings that fail [`Settings::validate`].

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::protocol::Limits;

/// The file read when no `--config` is given, relative to the working
/// directory; it is optional.
pub const DEFAULT_FILE: &str = "config/default.toml";

/// Prefix of the environment variables that override the files.
pub const ENV_PREFIX: &str = "SUDOKUD";

/// Everything `sudokud run` can be told.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub amqp: AmqpSettings,
    pub worker: WorkerSettings,
    pub solver: SolverSettings,
    pub log: LogSettings,
    pub metrics: MetricsSettings,
}

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
    /// Deliveries of one job before a quorum jobs queue dead-letters it
    /// (`x-delivery-limit`); unused for classic queues.
    pub delivery_limit: u32,
    /// Heartbeat interval proposed to the broker, in seconds; a connection
    /// silent for two intervals counts as lost. 0 takes the broker's. A
    /// `heartbeat` parameter in the URL wins over this.
    pub heartbeat_secs: u16,
    /// How long one attempt to connect and set up the channels may take.
    pub connect_timeout_secs: u64,
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

/// The `x-queue-type` of the jobs queue.
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

/// The solver pool, flow control and message limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Solver threads; 0 means one per core.
    pub threads: usize,
    /// Unacknowledged jobs the broker may hand this worker at once
    /// (`basic.qos`); 0 means `prefetch_per_thread` times `threads`.
    pub prefetch: u16,
    /// Prefetch per solver thread when `prefetch` is 0.
    pub prefetch_per_thread: u16,
    /// On SIGINT/SIGTERM, how long to finish the jobs in flight before
    /// leaving the rest unacknowledged for redelivery.
    pub shutdown_grace_secs: u64,
    /// Job messages larger than this are answered `invalid` unparsed.
    pub max_message_bytes: usize,
    /// Most puzzles in one batch job.
    pub max_batch: usize,
    /// Deadline of a whole job, from its delivery, in milliseconds: puzzles
    /// of a batch not reached by then are answered `timeout`. Keep it well
    /// under the broker's `consumer_timeout` (30 minutes by default), past
    /// which the broker takes the job back.
    pub max_job_ms: u64,
}

/// What jobs may ask of the solver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SolverSettings {
    /// `limit` of a count job that gives none.
    pub default_count_limit: u64,
    /// Largest `limit` a count job may ask for.
    pub max_count_limit: u64,
    /// Per-puzzle deadline of a job that gives no `timeout_ms`.
    pub default_timeout_ms: u64,
    /// Cap on any per-puzzle deadline.
    pub max_timeout_ms: u64,
}

/// Logging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// An `EnvFilter` directive such as `info` or `info,sudokud=debug`;
    /// `RUST_LOG`, when set, replaces it.
    pub level: String,
    /// `text` for people, `json` for log pipelines (one object a line).
    pub format: LogFormat,
    /// Seconds between throughput lines; 0 turns them off.
    pub throughput_secs: u64,
}

/// The HTTP listener for Prometheus metrics and the health checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// `IP:port` to serve `/metrics`, `/livez` and `/readyz` on, for
    /// example `127.0.0.1:9464` or `0.0.0.0:9464`; empty: no listener.
    pub listen: String,
    /// `/livez` fails once the worker's event loop has not ticked for this
    /// many seconds (it ticks at least once a second while it runs).
    pub liveness_timeout_secs: u64,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
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
            delivery_limit: 5,
            heartbeat_secs: 30,
            connect_timeout_secs: 10,
            reconnect_initial_ms: 500,
            reconnect_max_ms: 30_000,
            reconnect_give_up_secs: 0,
        }
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            threads: 0,
            prefetch: 0,
            prefetch_per_thread: 64,
            shutdown_grace_secs: 30,
            max_message_bytes: 1024 * 1024,
            max_batch: 10_000,
            max_job_ms: 600_000,
        }
    }
}

impl Default for SolverSettings {
    fn default() -> Self {
        SolverSettings {
            default_count_limit: 1000,
            max_count_limit: 1000,
            default_timeout_ms: 10_000,
            max_timeout_ms: 60_000,
        }
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            level: "info".into(),
            format: LogFormat::Text,
            throughput_secs: 10,
        }
    }
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            listen: String::new(),
            liveness_timeout_secs: 10,
        }
    }
}

/// Why settings could not be loaded; the message names the key or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid setting {key}: {reason}")]
    Invalid { key: &'static str, reason: String },
}

fn invalid(key: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        reason: reason.into(),
    }
}

impl Settings {
    /// Loads the layers from the real environment: `file` (required) when
    /// given, else [`DEFAULT_FILE`] if it exists, then `SUDOKUD__*`
    /// variables; then validates.
    pub fn load(file: Option<&Path>) -> Result<Settings, ConfigError> {
        Settings::load_from(file, std::env::vars().collect())
    }

    /// [`Settings::load`] with the environment given as a map, so tests
    /// need not touch the process environment.
    pub fn load_from(
        file: Option<&Path>,
        env: HashMap<String, String>,
    ) -> Result<Settings, ConfigError> {
        let mut builder = config::Config::builder();
        builder = match file {
            Some(path) => builder.add_source(config::File::from(path).required(true)),
            None => builder.add_source(config::File::with_name(DEFAULT_FILE).required(false)),
        };
        let environment = config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("__")
            .separator("__")
            .source(Some(env));
        let settings: Settings = builder.add_source(environment).build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks every value a person could get wrong; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let amqp = &self.amqp;
        crate::broker::check_settings(amqp).map_err(|e| invalid(e.key, e.reason))?;
        for (key, name) in [
            ("amqp.jobs_queue", &amqp.jobs_queue),
            ("amqp.results_queue", &amqp.results_queue),
            ("amqp.dead_letter_queue", &amqp.dead_letter_queue),
        ] {
            if name.is_empty() || name.len() > 255 {
                return Err(invalid(key, "a queue name has 1 to 255 bytes"));
            }
            if name.starts_with("amq.") {
                return Err(invalid(key, "names starting with \"amq.\" are reserved"));
            }
        }
        if amqp.jobs_queue == amqp.results_queue
            || amqp.jobs_queue == amqp.dead_letter_queue
            || amqp.results_queue == amqp.dead_letter_queue
        {
            return Err(invalid(
                "amqp.jobs_queue",
                "the jobs, results and dead-letter queues must be three different queues",
            ));
        }
        if amqp.queue_type == QueueType::Quorum && amqp.delivery_limit == 0 {
            return Err(invalid(
                "amqp.delivery_limit",
                "must be at least 1 on a quorum queue",
            ));
        }
        if !(1..=3600).contains(&amqp.connect_timeout_secs) {
            return Err(invalid(
                "amqp.connect_timeout_secs",
                "must be from 1 to 3600",
            ));
        }
        if !(1..=3_600_000).contains(&amqp.reconnect_max_ms) {
            return Err(invalid(
                "amqp.reconnect_max_ms",
                "must be from 1 to 3600000 (an hour)",
            ));
        }
        if !(1..=amqp.reconnect_max_ms).contains(&amqp.reconnect_initial_ms) {
            return Err(invalid(
                "amqp.reconnect_initial_ms",
                format!(
                    "must be from 1 to amqp.reconnect_max_ms ({})",
                    amqp.reconnect_max_ms
                ),
            ));
        }
        let worker = &self.worker;
        if worker.threads > 1024 {
            return Err(invalid("worker.threads", "at most 1024"));
        }
        if worker.prefetch == 0 && worker.prefetch_per_thread == 0 {
            return Err(invalid(
                "worker.prefetch_per_thread",
                "must be at least 1 when worker.prefetch is 0",
            ));
        }
        if worker.max_message_bytes == 0 {
            return Err(invalid("worker.max_message_bytes", "must be at least 1"));
        }
        if worker.max_job_ms == 0 {
            return Err(invalid("worker.max_job_ms", "must be at least 1"));
        }
        if worker.max_batch == 0 {
            return Err(invalid("worker.max_batch", "must be at least 1"));
        }
        let solver = &self.solver;
        if solver.max_count_limit == 0 {
            return Err(invalid("solver.max_count_limit", "must be at least 1"));
        }
        if !(1..=solver.max_count_limit).contains(&solver.default_count_limit) {
            return Err(invalid(
                "solver.default_count_limit",
                format!(
                    "must be from 1 to solver.max_count_limit ({})",
                    solver.max_count_limit
                ),
            ));
        }
        if solver.max_timeout_ms == 0 {
            return Err(invalid("solver.max_timeout_ms", "must be at least 1"));
        }
        if !(1..=solver.max_timeout_ms).contains(&solver.default_timeout_ms) {
            return Err(invalid(
                "solver.default_timeout_ms",
                format!(
                    "must be from 1 to solver.max_timeout_ms ({})",
                    solver.max_timeout_ms
                ),
            ));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map_err(|e| invalid("log.level", e.to_string()))?;
        self.metrics
            .listen_addr()
            .map_err(|e| invalid("metrics.listen", e))?;
        if !(1..=3600).contains(&self.metrics.liveness_timeout_secs) {
            return Err(invalid(
                "metrics.liveness_timeout_secs",
                "must be from 1 to 3600",
            ));
        }
        Ok(())
    }

    /// What jobs may ask for, as the protocol module needs it.
    pub fn limits(&self) -> Limits {
        Limits {
            max_message_bytes: self.worker.max_message_bytes,
            max_batch: self.worker.max_batch,
            default_count_limit: self.solver.default_count_limit,
            max_count_limit: self.solver.max_count_limit,
            default_timeout_ms: self.solver.default_timeout_ms,
            max_timeout_ms: self.solver.max_timeout_ms,
        }
    }
}

impl AmqpSettings {
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
            .field("delivery_limit", &self.delivery_limit)
            .field("heartbeat_secs", &self.heartbeat_secs)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("reconnect_initial_ms", &self.reconnect_initial_ms)
            .field("reconnect_max_ms", &self.reconnect_max_ms)
            .field("reconnect_give_up_secs", &self.reconnect_give_up_secs)
            .finish()
    }
}

impl WorkerSettings {
    /// Solver threads, with 0 resolved to the number of cores.
    pub fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The `basic.qos` prefetch count, with 0 resolved from the pool size.
    pub fn prefetch(&self) -> u16 {
        match self.prefetch {
            0 => {
                let n = self
                    .threads()
                    .saturating_mul(self.prefetch_per_thread as usize);
                u16::try_from(n).unwrap_or(u16::MAX).max(1)
            }
            n => n,
        }
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// Deadline of a whole job, from its delivery.
    pub fn max_job(&self) -> Duration {
        Duration::from_millis(self.max_job_ms)
    }
}

impl SolverSettings {
    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }

    pub fn max_timeout(&self) -> Duration {
        Duration::from_millis(self.max_timeout_ms)
    }
}

impl LogSettings {
    /// `None` when throughput lines are off.
    pub fn throughput_interval(&self) -> Option<Duration> {
        (self.throughput_secs > 0).then(|| Duration::from_secs(self.throughput_secs))
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

impl MetricsSettings {
    /// The address to listen on; `None` when the listener is off.
    pub fn listen_addr(&self) -> Result<Option<std::net::SocketAddr>, String> {
        let listen = self.listen.trim();
        if listen.is_empty() {
            return Ok(None);
        }
        listen.parse().map(Some).map_err(|_| {
            format!("{listen:?} is not an IP address and port such as 127.0.0.1:9464 or [::]:9464")
        })
    }

    pub fn liveness_timeout(&self) -> Duration {
        Duration::from_secs(self.liveness_timeout_secs)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn shipped_file() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_FILE)
    }

    #[test]
    fn the_shipped_file_holds_exactly_the_defaults() {
        let text = std::fs::read_to_string(shipped_file()).unwrap();
        // Every key is present: the file alone, without serde defaults,
        // must describe a complete Settings.
        let table: toml_like::Table = toml_like::parse(&text);
        let expected = serde_json::to_value(Settings::default()).unwrap();
        for (section, keys) in expected.as_object().unwrap() {
            for key in keys.as_object().unwrap().keys() {
                assert!(
                    table.contains(section, key),
                    "{DEFAULT_FILE} lacks {section}.{key}"
                );
            }
        }
        let loaded = Settings::load_from(Some(&shipped_file()), HashMap::new()).unwrap();
        assert_eq!(loaded, Settings::default());
        loaded.validate().unwrap();
    }

    #[test]
    fn defaults_validate() {
        Settings::default().validate().unwrap();
        // The defaults the wire protocol documents.
        let limits = Settings::default().limits();
        assert_eq!(limits.max_message_bytes, 1024 * 1024);
        assert_eq!(limits.max_batch, 10_000);
        assert_eq!(
            (limits.default_count_limit, limits.max_count_limit),
            (1000, 1000)
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[
                ("SUDOKUD__AMQP__URL", "amqp://u:p@broker:5672/%2f"),
                ("SUDOKUD__AMQP__QUEUE_TYPE", "classic"),
                ("SUDOKUD__WORKER__THREADS", "3"),
                ("SUDOKUD__SOLVER__MAX_TIMEOUT_MS", "90000"),
                ("SUDOKUD__LOG__FORMAT", "json"),
                ("OTHER__AMQP__URL", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.amqp.url, "amqp://u:p@broker:5672/%2f");
        assert_eq!(settings.amqp.queue_type, QueueType::Classic);
        assert_eq!(settings.worker.threads(), 3);
        assert_eq!(settings.worker.prefetch(), 192);
        assert_eq!(settings.solver.max_timeout(), Duration::from_secs(90));
        assert_eq!(settings.log.format, LogFormat::Json);
    }

    #[test]
    fn the_metrics_listener_is_off_unless_set() {
        assert_eq!(Settings::default().metrics.listen_addr(), Ok(None));
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[("SUDOKUD__METRICS__LISTEN", "0.0.0.0:9464")]),
        )
        .unwrap();
        assert_eq!(
            settings.metrics.listen_addr(),
            Ok(Some(std::net::SocketAddr::from(([0, 0, 0, 0], 9464))))
        );
        assert_eq!(settings.metrics.liveness_timeout(), Duration::from_secs(10));
    }

    #[test]
    fn a_given_file_is_layered_over_the_defaults() {
        let dir = std::env::temp_dir().join(format!("sudokud-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("worker.toml");
        std::fs::write(
            &path,
            "[worker]\nprefetch = 10\n[log]\nthroughput_secs = 0\n",
        )
        .unwrap();
        let settings = Settings::load_from(Some(&path), HashMap::new()).unwrap();
        assert_eq!(settings.worker.prefetch(), 10);
        assert_eq!(settings.log.throughput_interval(), None);
        assert_eq!(settings.amqp, AmqpSettings::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_name_the_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("SUDOKUD__AMQP__URL", "http://x")], "amqp.url"),
            (&[("SUDOKUD__AMQP__QUEUE_TYPE", "stream")], "queue_type"),
            (
                &[("SUDOKUD__AMQP__DELIVERY_LIMIT", "0")],
                "amqp.delivery_limit",
            ),
            (
                &[("SUDOKUD__AMQP__RESULTS_QUEUE", "sudoku.jobs")],
                "amqp.jobs_queue",
            ),
            (
                &[("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "0")],
                "amqp.reconnect_initial_ms",
            ),
            (
                &[
                    ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "5000"),
                    ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "1000"),
                ],
                "amqp.reconnect_initial_ms",
            ),
            (
                &[("SUDOKUD__AMQP__RECONNECT_MAX_MS", "0")],
                "amqp.reconnect_max_ms",
            ),
            (
                &[("SUDOKUD__AMQP__CONNECT_TIMEOUT_SECS", "0")],
                "amqp.connect_timeout_secs",
            ),
            (
                &[("SUDOKUD__AMQP__HEARTBEAT_SECS", "70000")],
                "heartbeat_secs",
            ),
            (&[("SUDOKUD__WORKER__THREADS", "many")], "threads"),
            (&[("SUDOKUD__WORKER__MAX_BATCH", "0")], "worker.max_batch"),
            (&[("SUDOKUD__WORKER__TREADS", "2")], "treads"),
            (
                &[("SUDOKUD__SOLVER__DEFAULT_TIMEOUT_MS", "70000")],
                "solver.default_timeout_ms",
            ),
            (
                &[("SUDOKUD__SOLVER__DEFAULT_COUNT_LIMIT", "0")],
                "solver.default_count_limit",
            ),
            (&[("SUDOKUD__LOG__LEVEL", "info,[=")], "log.level"),
            (&[("SUDOKUD__LOG__FORMAT", "xml")], "format"),
            (
                &[("SUDOKUD__METRICS__LISTEN", "localhost:9464")],
                "metrics.listen",
            ),
            (&[("SUDOKUD__METRICS__LISTEN", "9464")], "metrics.listen"),
            (
                &[("SUDOKUD__METRICS__LIVENESS_TIMEOUT_SECS", "0")],
                "metrics.liveness_timeout_secs",
            ),
        ];
        for (vars, key) in cases {
            let error = Settings::load_from(Some(&shipped_file()), env(vars))
                .unwrap_err()
                .to_string();
            assert!(error.contains(key), "{vars:?}: {error}");
        }
        let missing = Settings::load_from(Some(Path::new("/nonexistent/x.toml")), HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/nonexistent/x.toml"), "{missing}");
    }

    #[test]
    fn reconnect_settings_and_the_heartbeat() {
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[
                ("SUDOKUD__AMQP__HEARTBEAT_SECS", "5"),
                ("SUDOKUD__AMQP__RECONNECT_GIVE_UP_SECS", "90"),
            ]),
        )
        .unwrap();
        let amqp = &settings.amqp;
        assert_eq!(amqp.uri().unwrap().query.heartbeat, Some(5));
        assert_eq!(amqp.reconnect_give_up(), Some(Duration::from_secs(90)));
        assert_eq!(amqp.reconnect_initial(), Duration::from_millis(500));
        assert_eq!(amqp.reconnect_max(), Duration::from_secs(30));
        assert_eq!(AmqpSettings::default().reconnect_give_up(), None);
        // The URL's own heartbeat wins.
        let url = AmqpSettings {
            url: "amqp://u:p@h:5672/%2f?heartbeat=7".into(),
            ..AmqpSettings::default()
        };
        assert_eq!(url.uri().unwrap().query.heartbeat, Some(7));
    }

    #[test]
    fn urls_come_as_a_list_or_separated_by_commas() {
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[(
                "SUDOKUD__AMQP__URLS",
                "amqp://u:p@n1:5672/%2f, amqp://u:p@n2:5672/%2f,amqp://u:p@n3:5672/%2f,",
            )]),
        )
        .unwrap();
        assert_eq!(
            settings.amqp.addresses(),
            [
                "amqp://u:p@n1:5672/%2f",
                "amqp://u:p@n2:5672/%2f",
                "amqp://u:p@n3:5672/%2f"
            ]
        );
        assert_eq!(settings.amqp.addresses_key(), "amqp.urls");
        // One address is a list of one.
        let one = Settings::load_from(
            Some(&shipped_file()),
            env(&[("SUDOKUD__AMQP__URLS", "amqp://u:p@n1:5672/%2f")]),
        )
        .unwrap();
        assert_eq!(one.amqp.addresses(), ["amqp://u:p@n1:5672/%2f"]);
        // Without urls, url is the only address.
        let default = Settings::default();
        assert_eq!(default.amqp.addresses(), [default.amqp.url.as_str()]);
        assert_eq!(default.amqp.addresses_key(), "amqp.url");

        let dir = TempDir::new("urls");
        let path = dir.file(
            "cluster.toml",
            "[amqp]\nurls = [\"amqp://u:p@n1/%2f\", \"amqp://u:p@n2/%2f\"]\n",
        );
        let settings = Settings::load_from(Some(Path::new(&path)), HashMap::new()).unwrap();
        assert_eq!(
            settings.amqp.addresses(),
            ["amqp://u:p@n1/%2f", "amqp://u:p@n2/%2f"]
        );
    }

    #[test]
    fn tls_files_are_checked_at_start_and_named() {
        let dir = TempDir::new("tls");
        let not_pem = dir.file("not.pem", "hello\n");
        let broken = dir.file(
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
        );
        let ca = dir.file("ca.pem", TEST_CA);
        let missing = dir.0.join("missing.pem");
        let missing = missing.to_str().unwrap();
        let amqps = ("SUDOKUD__AMQP__URL", "amqps://u:p@broker/%2f");
        // The variables, the key the error names, and what it says.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case] = &[
            (
                &[amqps, ("SUDOKUD__AMQP__TLS_CA_FILE", missing)],
                "amqp.tls_ca_file",
                "cannot read",
            ),
            (
                &[amqps, ("SUDOKUD__AMQP__TLS_CA_FILE", &not_pem)],
                "amqp.tls_ca_file",
                "no PEM certificate",
            ),
            (
                &[amqps, ("SUDOKUD__AMQP__TLS_CA_FILE", &broken)],
                "amqp.tls_ca_file",
                "not valid PEM",
            ),
            (
                &[
                    amqps,
                    ("SUDOKUD__AMQP__TLS_CERT_FILE", &not_pem),
                    ("SUDOKUD__AMQP__TLS_KEY_FILE", &not_pem),
                ],
                "amqp.tls_cert_file",
                "no PEM certificate",
            ),
            (
                &[amqps, ("SUDOKUD__AMQP__TLS_CERT_FILE", &not_pem)],
                "amqp.tls_key_file",
                "must be set",
            ),
            (
                &[amqps, ("SUDOKUD__AMQP__TLS_KEY_FILE", missing)],
                "amqp.tls_cert_file",
                "must be set",
            ),
            (
                // TLS files with a plain address: never log in in clear.
                &[
                    (
                        "SUDOKUD__AMQP__URLS",
                        "amqps://u:p@n1/%2f,amqp://u:secret@n2/%2f",
                    ),
                    ("SUDOKUD__AMQP__TLS_CA_FILE", &ca),
                ],
                "amqp.urls",
                "amqp://u:***@n2/%2f is not amqps://",
            ),
            (
                &[
                    ("SUDOKUD__AMQP__URL", "amqp://u:secret@n2/%2f"),
                    ("SUDOKUD__AMQP__TLS_CA_FILE", &ca),
                ],
                "amqp.url",
                "is not amqps://",
            ),
            (
                &[(
                    "SUDOKUD__AMQP__URLS",
                    "amqps://u:p@n1/%2f,http://u:secret@n2/%2f",
                )],
                "amqp.urls",
                "http://u:***@n2/%2f",
            ),
        ];
        for (vars, key, reason) in cases {
            let error = Settings::load_from(Some(&shipped_file()), env(vars))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("invalid setting {key}:")) && error.contains(reason),
                "{vars:?}: {error}"
            );
            assert!(!error.contains("secret"), "{error}");
        }
        // A good CA file with amqps:// addresses.
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[amqps, ("SUDOKUD__AMQP__TLS_CA_FILE", &ca)]),
        )
        .unwrap();
        assert_eq!(settings.amqp.tls_ca_file(), Some(Path::new(&ca)));
    }

    /// A self-signed CA certificate (no key kept): PEM that TLS accepts.
    const TEST_CA: &str = "\
-----BEGIN CERTIFICATE-----\n\
MIIBmTCCAT+gAwIBAgIUGvHb2Z+0u3k9VFZ68zhfBN3CjsAwCgYIKoZIzj0EAwIw\n\
ITEfMB0GA1UEAwwWc3Vkb2t1ZCBjb25maWcgdGVzdCBDQTAgFw0yNjExMzAxNjM1\n\
MjlaGA8yMTI2MTEwNjE2MzUyOVowITEfMB0GA1UEAwwWc3Vkb2t1ZCBjb25maWcg\n\
dGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABBTWPRqVfHujlz+/QCmU\n\
+gCURUOF2wLqrsFb1ISZJgrAsYIoiC/o7Q9BANzICVfZbKB/KfMGzIUF8ySXYI3j\n\
P76jUzBRMB0GA1UdDgQWBBTv7hdN0owlFGJwv9FWZTPdOQToQDAfBgNVHSMEGDAW\n\
gBTv7hdN0owlFGJwv9FWZTPdOQToQDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49\n\
BAMCA0gAMEUCIAzj047Xmew6ypIta1CxSY37tc6DMxzh8ALowffj962LAiEA4vRf\n\
QCFUOua2eNWCpUn4qmlkTYQyMqtnY1Yq3SUmieA=\n\
-----END CERTIFICATE-----\n\
";

    /// A directory of test files, removed when dropped.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn new(test: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("sudokud-config-{test}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn file(&self, name: &str, text: &str) -> String {
            let path = self.0.join(name);
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_string()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_password("amqp://guest:s3cr%40t@host:5672/%2f"),
            "amqp://guest:***@host:5672/%2f"
        );
        assert_eq!(
            mask_password("amqps://u:p@h/v?heartbeat=10"),
            "amqps://u:***@h/v?heartbeat=10"
        );
        assert_eq!(mask_password("amqp://host/%2f"), "amqp://host/%2f");
        assert_eq!(mask_password("amqp://user@host"), "amqp://user@host");
        let settings = AmqpSettings {
            url: "amqp://a:hunter2@h/%2f".into(),
            ..AmqpSettings::default()
        };
        assert!(!format!("{settings:?}").contains("hunter2"));
        let cluster = AmqpSettings {
            urls: vec![
                "amqp://a:hunter2@n1/%2f".into(),
                "amqp://a:hunter3@n2/%2f".into(),
            ],
            ..AmqpSettings::default()
        };
        let shown = format!("{cluster:?}");
        assert!(
            !shown.contains("hunter") && shown.contains("amqp://a:***@n2/%2f"),
            "{shown}"
        );
    }

    /// Just enough TOML reading to list which `section.key` pairs a file
    /// sets, independently of the `config` crate under test.
    mod toml_like {
        pub struct Table(Vec<(String, String)>);

        impl Table {
            pub fn contains(&self, section: &str, key: &str) -> bool {
                self.0.iter().any(|(s, k)| s == section && k == key)
            }
        }

        pub fn parse(text: &str) -> Table {
            let mut section = String::new();
            let mut keys = Vec::new();
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                    section = name.trim().to_string();
                } else if let Some((key, _)) = line.split_once('=') {
                    keys.push((section.clone(), key.trim().to_string()));
                }
            }
            Table(keys)
        }
    }
}
