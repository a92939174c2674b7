//! Settings of the worker daemon: typed, layered and validated.
//!
//! Layers, later ones winning: the defaults (the `Default` impl of each
//! section, in the section's file: the one source of defaults), then `config/default.toml` or the
//! file given with `--config`, then environment variables
//! `SUDOKUD__SECTION__KEY` (for example `SUDOKUD__AMQP__URL`). Every section
//! rejects unknown keys, so a typo is an error rather than a silent default.
//! [`Settings::load`] never returns settings that fail [`Settings::validate`].
//!
//! This file holds [`Settings`], loading and the validation of the whole;
//! each section (`amqp`, `worker`, `solver`, `log`, `metrics`) has a file
//! with its type, defaults, accessors and checks; `endpoints` holds the
//! checks of `amqp` that read the broker addresses and TLS files, and
//! makes what the broker connects with from them.

mod amqp;
mod endpoints;
mod log;
mod metrics;
mod solver;
mod worker;

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::protocol::Limits;

pub use amqp::{AmqpSettings, QueueType, mask_password};
pub use endpoints::SettingError;
pub(crate) use endpoints::{Address, endpoints};
pub use log::{LogFormat, LogSettings};
pub use metrics::MetricsSettings;
pub use solver::SolverSettings;
pub use worker::WorkerSettings;

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
        self.amqp.validate()?;
        self.worker.validate()?;
        self.solver.validate()?;
        self.log.validate()?;
        self.metrics.validate()
    }

    /// What jobs may ask for, as the protocol module needs it.
    pub fn limits(&self) -> Limits {
        Limits {
            max_message_bytes: self.worker.max_message_bytes,
            max_batch: self.worker.max_batch,
            max_generate: self.worker.max_generate,
            max_rate_work: self.solver.max_rate_work,
            default_count_limit: self.solver.default_count_limit,
            max_count_limit: self.solver.max_count_limit,
            default_timeout_ms: self.solver.default_timeout_ms,
            max_timeout_ms: self.solver.max_timeout_ms,
        }
    }
}

impl Default for Limits {
    /// The limits of the default settings.
    fn default() -> Self {
        Settings::default().limits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
                ("SUDOKUD__AMQP__RESULTS_QUEUE_TYPE", "quorum"),
                ("SUDOKUD__WORKER__THREADS", "3"),
                ("SUDOKUD__SOLVER__MAX_TIMEOUT_MS", "90000"),
                ("SUDOKUD__LOG__FORMAT", "json"),
                ("OTHER__AMQP__URL", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.amqp.url, "amqp://u:p@broker:5672/%2f");
        assert_eq!(settings.amqp.queue_type, QueueType::Classic);
        assert_eq!(settings.amqp.results_queue_type, QueueType::Quorum);
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
                &[("SUDOKUD__AMQP__RESULTS_QUEUE_TYPE", "stream")],
                "results_queue_type",
            ),
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
                &[("SUDOKUD__AMQP__CONFIRM_TIMEOUT_SECS", "3601")],
                "amqp.confirm_timeout_secs",
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

    /// The variables of a case, the key its error names, and what the
    /// error says.
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);

    /// Loading the shipped file with each case's variables fails on its key,
    /// for its reason, and the error never shows a password.
    fn assert_invalid(cases: &[Case]) {
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
    }

    const AMQPS: (&str, &str) = ("SUDOKUD__AMQP__URL", "amqps://u:p@broker/%2f");

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
        assert_invalid(&[
            (
                &[AMQPS, ("SUDOKUD__AMQP__TLS_CA_FILE", missing)],
                "amqp.tls_ca_file",
                "cannot read",
            ),
            (
                &[AMQPS, ("SUDOKUD__AMQP__TLS_CA_FILE", &not_pem)],
                "amqp.tls_ca_file",
                "no PEM certificate",
            ),
            (
                &[AMQPS, ("SUDOKUD__AMQP__TLS_CA_FILE", &broken)],
                "amqp.tls_ca_file",
                "not valid PEM",
            ),
            (
                &[
                    AMQPS,
                    ("SUDOKUD__AMQP__TLS_CERT_FILE", &not_pem),
                    ("SUDOKUD__AMQP__TLS_KEY_FILE", &not_pem),
                ],
                "amqp.tls_cert_file",
                "no PEM certificate",
            ),
            (
                &[AMQPS, ("SUDOKUD__AMQP__TLS_CERT_FILE", &not_pem)],
                "amqp.tls_key_file",
                "must be set",
            ),
            (
                &[AMQPS, ("SUDOKUD__AMQP__TLS_KEY_FILE", missing)],
                "amqp.tls_cert_file",
                "must be set",
            ),
        ]);
        // A good CA file with amqps:// addresses.
        let settings = Settings::load_from(
            Some(&shipped_file()),
            env(&[AMQPS, ("SUDOKUD__AMQP__TLS_CA_FILE", &ca)]),
        )
        .unwrap();
        assert_eq!(settings.amqp.tls_ca_file(), Some(Path::new(&ca)));
    }

    #[test]
    fn addresses_are_checked_at_start_and_tls_files_want_amqps_for_all() {
        let dir = TempDir::new("tls_addresses");
        let ca = dir.file("ca.pem", TEST_CA);
        assert_invalid(&[
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
        ]);
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
