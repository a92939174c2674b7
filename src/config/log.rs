//! The `[log]` section: the log filter, the format of log lines and the
//! throughput line.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

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

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
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

impl LogSettings {
    /// Checks the section; the error names the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        tracing_subscriber::EnvFilter::try_new(&self.level)
            .map_err(|e| invalid("log.level", e.to_string()))?;
        Ok(())
    }

    /// `None` when throughput lines are off.
    pub fn throughput_interval(&self) -> Option<Duration> {
        (self.throughput_secs > 0).then(|| Duration::from_secs(self.throughput_secs))
    }
}
