//! One circuit's stream: bytes between a `DuplexStream` (whose other end is a BBS session, a
//! forwarding session or a user's `C`) and the node, with backpressure both ways: the stream
//! is read only while the circuit takes more, and a session that stops reading chokes the
//! far end.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use qtc_netrom::{CircuitId, Node};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::sync::oneshot;

use crate::radio::port::{BUSY_ABOVE, DUPLEX_BUF};

/// Most bytes read from a session at once (about four information frames).
const READ_CHUNK: usize = 1024;

/// A circuit's end of its stream.
pub(super) struct CircuitIo {
    io: DuplexStream,
    /// Received data not yet written to the stream, from `written` on.
    to_user: Vec<u8>,
    written: usize,
    /// The session closed its end (or went away).
    user_eof: bool,
    /// We choked the far end because the session is not reading.
    busy: bool,
    /// The circuit is closed: flush `to_user`, then drop the stream.
    pub(super) gone: bool,
    /// A circuit we opened, still connecting: its stream and who waits for it.
    pub(super) pending: Option<(DuplexStream, oneshot::Sender<Result<DuplexStream, String>>)>,
}

impl CircuitIo {
    /// A bridge and the stream for its session.
    pub(super) fn new() -> (CircuitIo, DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(DUPLEX_BUF);
        (
            CircuitIo {
                io: ours,
                to_user: Vec::new(),
                written: 0,
                user_eof: false,
                busy: false,
                gone: false,
                pending: None,
            },
            theirs,
        )
    }

    /// Data from the far end, for the session; chokes the far end past [`BUSY_ABOVE`].
    pub(super) fn received(&mut self, node: &mut Node, id: CircuitId, data: &[u8]) {
        if self.user_eof {
            return;
        }
        self.to_user.extend_from_slice(data);
        if self.to_user.len() - self.written > BUSY_ABOVE && !self.busy {
            self.busy = true;
            node.set_busy(id, true);
        }
    }

    /// The circuit is over; `why` for a connect still waiting.
    pub(super) fn closed(&mut self, why: &str) {
        self.gone = true;
        if let Some((_, reply)) = self.pending.take() {
            let _ = reply.send(Err(why.to_string()));
        }
    }

    /// The circuit came up: the caller gets its stream.
    pub(super) fn connected(&mut self) {
        if let Some((theirs, reply)) = self.pending.take() {
            let _ = reply.send(Ok(theirs));
        }
    }

    /// Closed and flushed (or the session is gone): the bridge can be dropped.
    pub(super) fn finished(&self) -> bool {
        self.gone && (self.written >= self.to_user.len() || self.user_eof)
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
        if self.user_eof || self.gone || self.pending.is_some() || !node.is_connected(id) {
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
                self.user_eof = true;
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
        let mut progress = false;
        while self.written < self.to_user.len() && !self.user_eof {
            match Pin::new(&mut self.io).poll_write(cx, &self.to_user[self.written..]) {
                Poll::Ready(Ok(n)) if n > 0 => {
                    self.written += n;
                    progress = true;
                }
                Poll::Ready(_) => {
                    // The session is gone: close the circuit too.
                    self.user_eof = true;
                    self.to_user.clear();
                    self.written = 0;
                    node.close(now, id);
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        if self.written >= self.to_user.len() {
            self.to_user.clear();
            self.written = 0;
            if self.busy {
                self.busy = false;
                node.set_busy(id, false);
                progress = true;
            }
        }
        progress
    }
}
