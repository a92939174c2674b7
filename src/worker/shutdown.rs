//! Stopping the worker: the signals that ask for it, the shutdown future as
//! the event loop sees it, and the drain that follows.
//!
//! The first SIGINT or SIGTERM starts a graceful stop: the worker cancels
//! its consumer and answers what it holds within `worker.shutdown_grace_secs`.
//! A second one ends the process at once with status 128 + the signal's
//! number: the broker redelivers every job not yet acknowledged, so nothing
//! is lost, only repeated.

use std::future::Future;
use std::pin::Pin;

use tracing::{info, warn};

/// Completes on the first SIGINT or SIGTERM, logging which. From then on a
/// second signal exits the process at once (status 128 + its number).
pub async fn shutdown_signal() {
    let first = next_signal().await;
    info!(signal = first.name(), "signal received");
    tokio::spawn(async {
        let second = next_signal().await;
        warn!(
            signal = second.name(),
            "second signal: stopping at once; the jobs held stay unacknowledged and will be redelivered"
        );
        std::process::exit(128 + second.number());
    });
}

/// A signal that stops the worker.
#[derive(Debug, Clone, Copy)]
enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The POSIX signal number, for the 128 + n exit status.
    fn number(self) -> i32 {
        match self {
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
        }
    }
}

#[cfg(unix)]
async fn next_signal() -> Signal {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => Some(term),
        Err(e) => {
            warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the worker");
            None
        }
    };
    let sigterm = async {
        match term.as_mut() {
            Some(term) => {
                term.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Signal::Interrupt,
        () = sigterm => Signal::Terminate,
    }
}

#[cfg(not(unix))]
async fn next_signal() -> Signal {
    let _ = tokio::signal::ctrl_c().await;
    Signal::Interrupt
}

/// The `shutdown` future, polled until it completes and never after.
pub(crate) struct Shutdown<F> {
    future: Pin<Box<F>>,
    fired: bool,
}

impl<F: Future<Output = ()>> Shutdown<F> {
    pub(crate) fn new(future: F) -> Shutdown<F> {
        Shutdown {
            future: Box::pin(future),
            fired: false,
        }
    }

    /// Whether the worker has been asked to stop.
    pub(crate) fn fired(&self) -> bool {
        self.fired
    }

    /// Completes once, when the shutdown future does; then never again.
    pub(crate) async fn wait(&mut self) {
        if self.fired {
            return std::future::pending().await;
        }
        self.future.as_mut().await;
        self.fired = true;
    }
}

/// The worker was told to stop and is finishing the jobs it holds.
pub(crate) struct Drain {
    /// Jobs answered before the drain began, so the drain can say how many
    /// it answered.
    pub answered_before: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_fires_once() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut shutdown = Shutdown::new(async move {
            let _ = rx.await;
        });
        assert!(!shutdown.fired());
        tx.send(()).unwrap();
        shutdown.wait().await;
        assert!(shutdown.fired());
        let again = tokio::time::timeout(std::time::Duration::from_millis(20), shutdown.wait());
        assert!(
            again.await.is_err(),
            "a fired shutdown never completes again"
        );
    }

    #[test]
    fn exit_statuses_follow_the_convention() {
        assert_eq!(128 + Signal::Interrupt.number(), 130);
        assert_eq!(128 + Signal::Terminate.number(), 143);
    }
}
