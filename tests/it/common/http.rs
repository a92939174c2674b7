//! The worker's HTTP listener (`metrics.listen`), seen from outside.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use sudokud::Settings;
use tokio::net::TcpStream;

use super::PATIENCE;

/// A port nobody listens on now. Another process could take it before
/// the worker binds it; the worker would then fail to start, loudly.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Settings with the listener on a free loopback port.
pub fn with_listener(mut settings: Settings) -> (Settings, u16) {
    let port = free_port();
    settings.metrics.listen = format!("127.0.0.1:{port}");
    (settings, port)
}

/// `GET path` on the worker's listener: the status code and the body.
/// `None` while nothing listens there.
pub async fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, "127.0.0.1")
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(request))
        .await
        .expect("no HTTP answer within the patience limit")
        .ok()?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some((status, String::from_utf8(body.to_vec()).expect("UTF-8")))
}

/// `GET path`, once the listener is up.
pub async fn get_ok(port: u16, path: &str) -> (u16, String) {
    let start = Instant::now();
    loop {
        if let Some(answer) = get(port, path).await {
            return answer;
        }
        assert!(start.elapsed() < PATIENCE, "nothing listens on port {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `path` until its status is `status`; returns the body then.
/// `each` sees every answer on the way.
pub async fn wait_for_status(
    port: u16,
    path: &str,
    status: u16,
    mut each: impl FnMut(u16, &str),
) -> String {
    let start = Instant::now();
    loop {
        let (got, body) = get_ok(port, path).await;
        each(got, &body);
        if got == status {
            return body;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{path} never answered {status}; last {got}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
