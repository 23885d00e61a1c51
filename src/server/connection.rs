//! One accepted connection: TCP keepalive, the TLS handshake, HTTP/1.1 with bounded
//! request heads, and the connection's slot carried inside its socket.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use socket2::{SockRef, TcpKeepalive};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use crate::connections::Slot;

/// What a connection may buffer of one request's head: hyper's default (~400 KB) let
/// headers that never finish hold 400 KB each until the header timeout, 1.6 GB at 4096
/// connections. The platform's upgrade request is well under 2 KB; 16 KiB is what nginx
/// takes for a request head before it answers 431/400 (`large_client_header_buffers 4 8k`)
/// and Envoy's default header limit is 60 KiB. hyper's smallest allowed is 8 KiB.
pub const MAX_REQUEST_BUFFER: usize = 16 * 1024;
/// Header fields a request may carry (hyper's default is 100).
const MAX_HEADERS: usize = 64;

/// How long a connection open before the drain may still send a request: a probe's
/// request follows its connect within milliseconds, so two seconds cover a loaded host.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Idle time before the kernel probes a silent peer, and between probes: a peer gone
/// without a FIN is found in about a minute and a half.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;

/// One accepted TCP connection: the TLS handshake (if any) and HTTP/1.1 on it, websocket
/// upgrades included. The slot travels with the socket: it is freed when the connection
/// closes, or when a request on it becomes a call (`connections::Handle::upgraded`).
pub(super) async fn serve_connection(
    tcp: TcpStream,
    slot: Slot,
    acceptor: Option<TlsAcceptor>,
    app: Router,
    header_timeout: Duration,
    shutdown: watch::Receiver<bool>,
) {
    // Transcripts are small and latency-bound: send them without Nagle's delay.
    let _ = tcp.set_nodelay(true);
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    if let Err(e) = SockRef::from(&tcp).set_tcp_keepalive(&keepalive) {
        debug!("cannot set TCP keepalive: {e}");
    }
    // Each request can say its connection became a call.
    let app = app.layer(axum::Extension(slot.handle()));
    match acceptor {
        None => {
            serve_http(
                Counted {
                    io: tcp,
                    _slot: slot,
                },
                app,
                header_timeout,
                shutdown,
            )
            .await
        }
        Some(acceptor) => match tokio::time::timeout(header_timeout, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => {
                serve_http(
                    Counted {
                        io: tls,
                        _slot: slot,
                    },
                    app,
                    header_timeout,
                    shutdown,
                )
                .await
            }
            Ok(Err(e)) => debug!("TLS handshake failed: {e}"),
            Err(_) => debug!("TLS handshake not finished within the header timeout"),
        },
    }
}

async fn serve_http<S>(
    io: S,
    app: Router,
    header_timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // A connection opened while draining gets its one answer (a probe's, a 503), then closes.
    let draining = *shutdown.borrow();
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_REQUEST_BUFFER)
        .max_headers(MAX_HEADERS)
        .keep_alive(!draining)
        .serve_connection(TokioIo::new(io), TowerToHyperService::new(app))
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        done = conn.as_mut() => {
            if let Err(e) = done {
                debug!("connection ended: {e}");
            }
        }
        _ = async { shutdown.wait_for(|stop| *stop).await.map(|_| ()) }, if !draining => {
            // hyper closes an idle connection at once on graceful shutdown, unanswered even
            // if a request is on its way (a probe that connected just before SIGTERM): let
            // such a request come and get its 503 first.
            if tokio::time::timeout(DRAIN_GRACE, conn.as_mut()).await.is_err() {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
    }
}

/// A connection's socket with its `max_connections` slot.
struct Counted<S> {
    io: S,
    _slot: Slot,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
