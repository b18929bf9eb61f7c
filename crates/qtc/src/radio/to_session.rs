//! Bytes from the air on their way to a session's stream (an AX.25 link's or a NET/ROM
//! circuit's): kept while the session is slow, with the busy mark that holds the far end back
//! (AX.25 RNR, a NET/ROM choke) once more than [`BUSY_ABOVE`] wait.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncWrite, DuplexStream};

/// Received data waiting for the session beyond this sets the link busy (RNR).
pub const BUSY_ABOVE: usize = 8 * 1024;

/// Received data not yet written to the session, and whether the session still takes any.
#[derive(Default)]
pub(crate) struct ToSession {
    /// Waiting data, from `written` on.
    buf: Vec<u8>,
    written: usize,
    /// The session closed its end (or went away): nothing more goes to it.
    closed: bool,
    /// The far end is held back because the session is not reading.
    busy: bool,
}

/// What one [`ToSession::poll_write`] did.
pub(crate) struct Flush {
    /// Bytes moved (or the session went).
    pub moved: bool,
    /// The session's stream refused a write: it is gone.
    pub gone: bool,
    /// The session caught up: release the far end.
    pub release: bool,
}

impl ToSession {
    /// Keeps data for the session; true when the far end must now be held back.
    pub fn push(&mut self, data: &[u8]) -> bool {
        if self.closed {
            return false;
        }
        self.buf.extend_from_slice(data);
        let hold = self.buf.len() - self.written > BUSY_ABOVE && !self.busy;
        self.busy |= hold;
        hold
    }

    /// The session closed its end.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the session closed its end.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Nothing left to write (or nobody to write it to).
    pub fn flushed(&self) -> bool {
        self.closed || self.written >= self.buf.len()
    }

    /// Writes to `io` what the session takes now.
    pub fn poll_write(&mut self, io: &mut DuplexStream, cx: &mut Context<'_>) -> Flush {
        let mut flush = Flush {
            moved: false,
            gone: false,
            release: false,
        };
        while self.written < self.buf.len() && !self.closed {
            match Pin::new(&mut *io).poll_write(cx, &self.buf[self.written..]) {
                Poll::Ready(Ok(n)) if n > 0 => {
                    self.written += n;
                    flush.moved = true;
                }
                Poll::Ready(_) => {
                    self.closed = true;
                    flush.moved = true;
                    flush.gone = true;
                }
                Poll::Pending => break,
            }
        }
        if self.flushed() {
            self.buf.clear();
            self.written = 0;
            flush.release = std::mem::take(&mut self.busy);
        }
        flush
    }
}
