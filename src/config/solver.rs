//! The `[solver]` section: what jobs may ask of the solver.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

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
    /// Rating budget per puzzle, in units of work (a chain node
    /// explored, a trial of the rater's search), never in time: a rating that needs more stops
    /// and is reported as a lower bound (`"bound": "lower"`).
    pub max_rate_work: u64,
}

impl Default for SolverSettings {
    fn default() -> Self {
        SolverSettings {
            default_count_limit: 1000,
            max_count_limit: 1000,
            default_timeout_ms: 10_000,
            max_timeout_ms: 60_000,
            max_rate_work: crate::solver::DEFAULT_MAX_RATE_WORK,
        }
    }
}

impl SolverSettings {
    /// Checks the section; the error names the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_count_limit == 0 {
            return Err(invalid("solver.max_count_limit", "must be at least 1"));
        }
        if !(1..=self.max_count_limit).contains(&self.default_count_limit) {
            return Err(invalid(
                "solver.default_count_limit",
                format!(
                    "must be from 1 to solver.max_count_limit ({})",
                    self.max_count_limit
                ),
            ));
        }
        if self.max_timeout_ms == 0 {
            return Err(invalid("solver.max_timeout_ms", "must be at least 1"));
        }
        if !(1..=self.max_timeout_ms).contains(&self.default_timeout_ms) {
            return Err(invalid(
                "solver.default_timeout_ms",
                format!(
                    "must be from 1 to solver.max_timeout_ms ({})",
                    self.max_timeout_ms
                ),
            ));
        }
        if self.max_rate_work == 0 {
            return Err(invalid("solver.max_rate_work", "must be at least 1"));
        }
        Ok(())
    }

    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }

    pub fn max_timeout(&self) -> Duration {
        Duration::from_millis(self.max_timeout_ms)
    }
}
