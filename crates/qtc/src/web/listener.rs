//! The web listener's admission: a cap per source address, a fixed number of places (when all
//! are taken the oldest connection is closed), and an idle timeout that only a response resets,
//! so neither idle keep-alive connections nor ones that trickle a request byte by byte
//! (slowloris) hold a descriptor for long or keep the sysop out.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::admission::{AcceptErrors, Place, Places};
use crate::metrics::Metrics;
use crate::throttle::{AddressSlot, AddressSlots, KnownPlaces};

/// Accepts web connections within the caps.
pub struct WebListener {
    inner: TcpListener,
    per_address: AddressSlots,
    grouping: crate::prefix::Grouping,
    places: Places,
    idle: Duration,
    errors: AcceptErrors,
    metrics: Arc<Metrics>,
}

impl WebListener {
    /// `max` places (the oldest connection makes room for a new one; half kept for networks
    /// in `known`), at most `per_address` from one address (or network), each closed after
    /// `idle` without a response.
    /// Refusals and failures are counted in `metrics`.
    pub fn new(
        inner: TcpListener,
        max: usize,
        per_address: usize,
        idle: Duration,
        metrics: Arc<Metrics>,
        known: Arc<KnownPlaces>,
    ) -> Self {
        WebListener {
            inner,
            per_address: AddressSlots::new(per_address),
            grouping: known.grouping(),
            places: Places::new(max, metrics.clone(), known),
            idle,
            errors: AcceptErrors::new(metrics.clone()),
            metrics,
        }
    }
}

impl Listener for WebListener {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        loop {
            let (io, peer) = match self.inner.accept().await {
                Ok(a) => a,
                Err(e) => {
                    self.errors.failed("web", &e);
                    // Out of descriptors, say: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let Some(slot) = self.per_address.take(self.grouping.group(peer.ip())) else {
                tracing::debug!(%peer, "web: refused: too many connections from this address");
                self.metrics.error("web_refused");
                continue;
            };
            let Some(place) = self.places.enter(peer.ip()) else {
                tracing::debug!(%peer, "web: refused: every place is taken");
                self.metrics.error("web_refused");
                continue;
            };
            let _ = io.set_nodelay(true);
            let conn = Conn {
                io,
                idle: self.idle,
                deadline: Box::pin(tokio::time::sleep(self.idle)),
                long_lived: LongLived::default(),
                _slot: slot,
                place,
            };
            return (conn, peer);
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// The client's address, for handlers (`ConnectInfo<Peer>`), and its connection's idle rule.
#[derive(Clone, Debug)]
pub struct Peer(pub SocketAddr, pub LongLived);

impl Connected<IncomingStream<'_, WebListener>> for Peer {
    fn connect_info(s: IncomingStream<'_, WebListener>) -> Peer {
        Peer(*s.remote_addr(), s.io().long_lived.clone())
    }
}

/// Set by a handler that turns its connection into a long-lived session (the terminal's
/// WebSocket, after the login was checked): the web's idle timeout no longer closes it, and
/// the session's own timers (the BBS's idle timeout) take over.
#[derive(Clone, Debug, Default)]
pub struct LongLived(Arc<std::sync::atomic::AtomicBool>);

impl LongLived {
    /// From now on the connection has no web idle timeout.
    pub fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One web connection: reads fail once `idle` has passed since it was accepted or since the
/// last bytes of a response went out (bytes from the client do not count), or once a newer
/// connection needed its place.
pub struct Conn {
    io: TcpStream,
    idle: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    long_lived: LongLived,
    _slot: AddressSlot,
    place: Place,
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let idle = !this.long_lived.is_set() && this.deadline.as_mut().poll(cx).is_ready();
        if idle || this.place.poll_closed(cx) {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "web connection idle, or its place was needed",
            )));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            let next = tokio::time::Instant::now() + this.idle;
            this.deadline.as_mut().reset(next);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
