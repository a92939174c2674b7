//! The `[metrics]` section: the HTTP listener for Prometheus metrics and
//! the health checks.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

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

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            listen: String::new(),
            liveness_timeout_secs: 10,
        }
    }
}

impl MetricsSettings {
    /// Checks the section; the error names the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addr()
            .map_err(|e| invalid("metrics.listen", e))?;
        if !(1..=3600).contains(&self.liveness_timeout_secs) {
            return Err(invalid(
                "metrics.liveness_timeout_secs",
                "must be from 1 to 3600",
            ));
        }
        Ok(())
    }

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
