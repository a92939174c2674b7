//! The HTTP listener of `metrics.listen`: `GET /metrics`, `/livez` and
//! `/readyz`, on the worker's own runtime.
//!
//! It runs beside the worker's event loop on the same runtime, so a worker
//! whose thread is stuck cannot answer its probes either. Each connection
//! is served by a task of its own; dropping the [`Server`] stops the
//! listener and every connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::Source;
use crate::config::MetricsSettings;

/// How long a client may take to send its request's head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The running listener; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// The address it listens on (with the port the system chose, if
    /// `metrics.listen` gave port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts listening on `metrics.listen`, or does nothing when it is empty.
/// A failure to bind is an error naming the setting.
pub async fn serve<S: Source>(
    settings: &MetricsSettings,
    stats: Arc<S>,
) -> anyhow::Result<Option<Server>> {
    let Some(addr) = settings
        .listen_addr()
        .map_err(|e| anyhow::anyhow!("invalid setting metrics.listen: {e}"))?
    else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (metrics.listen)"))?;
    let addr = listener
        .local_addr()
        .with_context(|| format!("cannot listen on {addr} (metrics.listen)"))?;
    info!(addr = %addr, "serving /metrics, /livez and /readyz over HTTP");
    let liveness_timeout = settings.liveness_timeout();
    let task = tokio::spawn(accept(listener, stats, liveness_timeout));
    Ok(Some(Server { addr, task }))
}

/// Accepts connections until aborted; aborting drops the connections too.
async fn accept<S: Source>(listener: TcpListener, stats: Arc<S>, liveness_timeout: Duration) {
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connections so the set stays small.
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, most likely: try again soon.
                warn!(error = %e, "cannot accept an HTTP connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let stats = Arc::clone(&stats);
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let response = respond(&request, &*stats, liveness_timeout);
                async move { Ok::<_, Infallible>(response) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                debug!(peer = %peer, error = %e, "HTTP connection ended with an error");
            }
        });
    }
}

/// The answer to one request.
fn respond(
    request: &Request<Incoming>,
    stats: &impl Source,
    liveness_timeout: Duration,
) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD are served\n".into(),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match request.uri().path() {
        "/metrics" => {
            let mut response = text(StatusCode::OK, stats.encode_metrics());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(super::CONTENT_TYPE),
            );
            response
        }
        "/livez" => {
            let since = stats.metrics().since_tick();
            let secs = (since.as_secs_f64() * 10.0).round() / 10.0;
            if since <= liveness_timeout {
                text(
                    StatusCode::OK,
                    format!("live: the event loop ticked {secs} s ago\n"),
                )
            } else {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "not live: the event loop has not ticked for {secs} s (metrics.liveness_timeout_secs is {})\n",
                        liveness_timeout.as_secs()
                    ),
                )
            }
        }
        "/readyz" => match stats.metrics().readiness() {
            Ok(line) => text(StatusCode::OK, format!("{line}\n")),
            Err(line) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{line}\n")),
        },
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: this server has /metrics, /livez and /readyz\n".into(),
        ),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
