//! Moving bytes between a connection and a session: read input and write pending output,
//! whichever the stream allows first, with at most one piece of output held per session.
//! The connection driver's ([`crate::connection`]).

use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::link::Codec;

/// What [`read_or_write`] did.
pub enum Io {
    /// Some bytes were written.
    Wrote(std::io::Result<usize>),
    /// Some bytes were read (0: the end).
    Read(std::io::Result<usize>),
}

/// Reads into `buf` (when given) or writes some of `pending`, whichever the stream allows
/// first: output waiting for a slow reader does not stop the user's input (`A`). Input is tried
/// first: to a client that reads as fast as we write, the socket is always writable, and
/// trying the write first would leave its `A` unread until the whole output had gone.
/// Cancel-safe: nothing is written or read unless it returns.
pub async fn read_or_write<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    pending: &[u8],
    mut buf: Option<&mut [u8]>,
) -> Io {
    std::future::poll_fn(|cx| {
        if let Some(buf) = buf.as_deref_mut() {
            let mut rb = ReadBuf::new(buf);
            if let Poll::Ready(r) = Pin::new(&mut *stream).poll_read(cx, &mut rb) {
                return Poll::Ready(Io::Read(r.map(|()| rb.filled().len())));
            }
        }
        if !pending.is_empty() {
            if let Poll::Ready(r) = Pin::new(&mut *stream).poll_write(cx, pending) {
                return Poll::Ready(Io::Wrote(r));
            }
        }
        Poll::Pending
    })
    .await
}

/// Bytes for the stream (encoded by the codec) and how much of them is written: at most one
/// piece of the interpreter's output and the codec's own replies.
pub struct Outbox {
    /// The bytes, encoded for the stream.
    pub net: Vec<u8>,
    sent: usize,
}

impl Outbox {
    /// An outbox holding `initial` (a telnet negotiation, say).
    pub fn new(initial: Vec<u8>) -> Outbox {
        Outbox {
            net: initial,
            sent: 0,
        }
    }

    /// Everything was written.
    pub fn is_empty(&self) -> bool {
        self.sent >= self.net.len()
    }

    /// What is still to write.
    pub fn pending(&self) -> &[u8] {
        &self.net[self.sent..]
    }

    /// `n` more bytes were written.
    pub fn sent(&mut self, n: usize) {
        self.sent += n;
        if self.sent >= self.net.len() {
            self.net.clear();
            self.sent = 0;
        }
    }

    /// Writes everything now; `Err` when the stream is gone.
    pub async fn write_all<S: AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> std::io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let r = stream.write_all(self.pending()).await;
        self.sent(self.net.len() - self.sent);
        r
    }

    /// A last line after what is pending.
    pub async fn bye<S: AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
        codec: &mut Codec,
        text: &str,
    ) {
        codec.encode_text(format!("\r\n{text}\r\n").as_bytes(), &mut self.net);
        let _ = self.write_all(stream).await;
    }
}
