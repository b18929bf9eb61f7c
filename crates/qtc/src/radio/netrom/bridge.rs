//! One circuit's stream: bytes between a `DuplexStream` (whose other end is a BBS session, a
//! forwarding session or a user's `C`) and the node, with backpressure both ways: the stream
//! is read only while the circuit takes more, and a session that stops reading chokes the
//! far end.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use qtc_netrom::{CircuitId, Node};
use tokio::io::{AsyncRead, DuplexStream, ReadBuf};
use tokio::sync::oneshot;

use super::Circuit;
use crate::radio::port::DUPLEX_BUF;
use crate::radio::to_session::ToSession;

/// Most bytes read from a session at once (about four information frames).
const READ_CHUNK: usize = 1024;

/// A circuit's end of its stream.
pub(super) struct CircuitIo {
    io: DuplexStream,
    /// Received data on its way to the session.
    to_user: ToSession,
    /// The circuit is closed: flush `to_user`, then drop the stream.
    gone: bool,
    /// A circuit we opened, still connecting: its stream and who waits for it.
    pending: Option<(DuplexStream, oneshot::Sender<Result<Circuit, String>>)>,
    /// A circuit we opened: who hears what went wrong when it ends.
    failure: Option<oneshot::Sender<String>>,
}

impl CircuitIo {
    /// A bridge and the stream for its session.
    fn new() -> (CircuitIo, DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(DUPLEX_BUF);
        (
            CircuitIo {
                io: ours,
                to_user: ToSession::default(),
                gone: false,
                pending: None,
                failure: None,
            },
            theirs,
        )
    }

    /// The bridge of a circuit the far end opened, and the stream for its session.
    pub(super) fn incoming() -> (CircuitIo, DuplexStream) {
        CircuitIo::new()
    }

    /// The bridge of a circuit we open; `reply` gets the circuit once it is up.
    pub(super) fn outgoing(reply: oneshot::Sender<Result<Circuit, String>>) -> CircuitIo {
        let (mut io, theirs) = CircuitIo::new();
        io.pending = Some((theirs, reply));
        io
    }

    /// Data from the far end, for the session; chokes the far end while the session lags.
    pub(super) fn received(&mut self, node: &mut Node, id: CircuitId, data: &[u8]) {
        if self.to_user.push(data) {
            node.set_busy(id, true);
        }
    }

    /// The circuit is over; `failure` says what went wrong, if anything did, to a connect still
    /// waiting or to the user of a circuit we opened.
    pub(super) fn closed(&mut self, failure: Option<&str>) {
        self.gone = true;
        if let Some((_, reply)) = self.pending.take() {
            let _ = reply.send(Err(failure.unwrap_or("closed").to_string()));
        }
        if let (Some(tell), Some(why)) = (self.failure.take(), failure) {
            let _ = tell.send(why.to_string());
        }
    }

    /// The circuit came up: the caller gets its stream.
    pub(super) fn connected(&mut self) {
        if let Some((stream, reply)) = self.pending.take() {
            let (tell, failure) = oneshot::channel();
            self.failure = Some(tell);
            let _ = reply.send(Ok(Circuit { stream, failure }));
        }
    }

    /// Closed and flushed (or the session is gone): the bridge can be dropped.
    pub(super) fn finished(&self) -> bool {
        self.gone && self.to_user.flushed()
    }

    /// Moves bytes both ways; true when anything happened.
    pub(super) fn poll(
        &mut self,
        cx: &mut Context<'_>,
        node: &mut Node,
        id: CircuitId,
        now: Instant,
    ) -> bool {
        let mut progress = self.poll_from_user(cx, node, id, now);
        progress |= self.poll_to_user(cx, node, id, now);
        progress
    }

    /// Session -> circuit, only while the circuit can take more.
    fn poll_from_user(
        &mut self,
        cx: &mut Context<'_>,
        node: &mut Node,
        id: CircuitId,
        now: Instant,
    ) -> bool {
        if self.to_user.is_closed() || self.gone || self.pending.is_some() || !node.is_connected(id)
        {
            return false;
        }
        let cap = node.send_capacity(id).min(READ_CHUNK);
        if cap == 0 {
            return false;
        }
        let mut buf = [0u8; READ_CHUNK];
        let mut rb = ReadBuf::new(&mut buf[..cap]);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                let _ = node.send(id, rb.filled());
            }
            Poll::Ready(_) => {
                // End of the session's stream (or an error): close once the data is through.
                self.to_user.close();
                node.close(now, id);
            }
            Poll::Pending => return false,
        }
        true
    }

    /// Circuit -> session; the choke lifts once the session has caught up.
    fn poll_to_user(
        &mut self,
        cx: &mut Context<'_>,
        node: &mut Node,
        id: CircuitId,
        now: Instant,
    ) -> bool {
        let flush = self.to_user.poll_write(&mut self.io, cx);
        if flush.gone {
            // The session is gone: close the circuit too.
            node.close(now, id);
        }
        if flush.release {
            node.set_busy(id, false);
        }
        flush.moved || flush.release
    }
}
