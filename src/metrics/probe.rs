//! `sudokud health --worker`: this machine's worker process, asked over its
//! own HTTP listener (`metrics.listen`) whether it is ready, for probes
//! that can run a command but have no HTTP client (a distroless image's
//! `HEALTHCHECK`, compose, systemd).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::config::MetricsSettings;

/// Where the worker of `settings` answers on this machine: its listening
/// address, with an unspecified IP (`0.0.0.0`, `::`) replaced by loopback.
pub fn local_address(settings: &MetricsSettings) -> anyhow::Result<SocketAddr> {
    let Some(mut addr) = settings
        .listen_addr()
        .map_err(|e| anyhow::anyhow!("invalid setting metrics.listen: {e}"))?
    else {
        bail!(
            "the worker serves /readyz only with metrics.listen set (SUDOKUD__METRICS__LISTEN, \
             e.g. 127.0.0.1:9464); it is empty here"
        );
    };
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    Ok(addr)
}

/// `GET /readyz` at `addr`, within `timeout`: `Ok` with the worker's
/// one-line answer when it is ready (200), else an error with that line
/// or with why nothing answered.
pub async fn readyz(addr: SocketAddr, timeout: Duration) -> anyhow::Result<String> {
    let (status, body) = tokio::time::timeout(timeout, get(addr, "/readyz"))
        .await
        .map_err(|_| {
            anyhow::anyhow!("no answer from {addr} within {} s", timeout.as_secs_f64())
        })??;
    let line = body.trim().to_string();
    if status != 200 {
        bail!("{addr}/readyz answered {status}: {line}");
    }
    Ok(line)
}

async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let stream = TcpStream::connect(addr)
        .await
        .with_context(|| format!("no worker listens on {addr} (metrics.listen)"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .with_context(|| format!("cannot speak HTTP with {addr}"))?;
    let connection = tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .context("cannot build the request")?;
    let response = sender
        .send_request(request)
        .await
        .with_context(|| format!("no answer from {addr}"))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .with_context(|| format!("the answer from {addr} broke off"))?
        .to_bytes();
    connection.abort();
    // The listener's answers are one short line; cap anything else.
    let text = String::from_utf8_lossy(&body);
    let line: String = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    Ok((status, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen(listen: &str) -> MetricsSettings {
        MetricsSettings {
            listen: listen.into(),
            ..MetricsSettings::default()
        }
    }

    #[test]
    fn an_unspecified_address_is_asked_on_loopback() {
        assert_eq!(
            local_address(&listen("0.0.0.0:9464")).unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            local_address(&listen("[::]:9464")).unwrap(),
            "[::1]:9464".parse().unwrap()
        );
        assert_eq!(
            local_address(&listen("10.1.2.3:80")).unwrap(),
            "10.1.2.3:80".parse().unwrap()
        );
    }

    #[test]
    fn no_listener_is_an_error_naming_the_setting() {
        let error = local_address(&listen("")).unwrap_err().to_string();
        assert!(error.contains("metrics.listen"), "{error}");
        let error = local_address(&listen("nonsense")).unwrap_err().to_string();
        assert!(error.contains("metrics.listen"), "{error}");
    }
}
