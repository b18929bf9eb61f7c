//! A message's text as a client sends it after SMTP DATA or NNTP POST: lines up to one holding
//! a single `.`, dot-unstuffed (`smtp-proto`'s `DataReceiver`), kept up to a limit. Past the
//! limit the rest is read and dropped up to [`DISCARD`] bytes more to find its end, so the
//! client hears the refusal; a client still sending after that is answered and closed, never
//! read for ever.

use smtp_proto::request::receiver::DataReceiver;

use crate::LineBuffer;

/// Bytes read and dropped past the limit while looking for the end.
pub const DISCARD: usize = 1024 * 1024;

/// Where a message's text is.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// More is to come.
    More,
    /// It ended: its bytes.
    Done(Vec<u8>),
    /// It ended, over the limit: nothing was kept.
    TooBig,
    /// Over the limit and still coming after [`DISCARD`] more bytes: give up on the client.
    Endless,
}

/// A message's text being received.
pub struct Body {
    receiver: DataReceiver,
    bytes: Vec<u8>,
    limit: usize,
    /// Bytes dropped past the limit (`Some` once over it).
    dropped: Option<usize>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("bytes", &self.bytes.len())
            .field("limit", &self.limit)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl Body {
    /// A text of at most `limit` bytes.
    pub fn new(limit: usize) -> Body {
        // The receiver takes its first bytes as the middle of a line: without the line end
        // it is told of, a first line `.` would not end the text, nor `..` lose its dot.
        let mut receiver = DataReceiver::new();
        receiver.ingest(&mut b"\r\n".iter(), &mut Vec::new());
        Body {
            receiver,
            bytes: Vec::new(),
            limit,
            dropped: None,
        }
    }

    /// Takes what `lines` holds of the text; what follows its end stays in `lines`.
    pub fn take(&mut self, lines: &mut LineBuffer) -> Taken {
        let rest = lines.take_rest();
        let mut iter = rest.iter();
        let mut chunk = Vec::new();
        let done = self.receiver.ingest(&mut iter, &mut chunk);
        lines.push(iter.as_slice());
        match &mut self.dropped {
            None if self.bytes.len() + chunk.len() <= self.limit => {
                self.bytes.extend_from_slice(&chunk)
            }
            None => {
                self.dropped = Some(self.bytes.len() + chunk.len() - self.limit);
                self.bytes = Vec::new();
            }
            Some(n) => *n += chunk.len(),
        }
        match (done, self.dropped) {
            (true, None) => Taken::Done(std::mem::take(&mut self.bytes)),
            (true, Some(_)) => Taken::TooBig,
            (false, Some(n)) if n > DISCARD => Taken::Endless,
            (false, _) => Taken::More,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_dropped_or_given_up() {
        let mut lines = LineBuffer::new(100);
        let mut b = Body::new(10);
        lines.push(b".\r\n");
        assert_eq!(b.take(&mut lines), Taken::Done(Vec::new()));
        let mut b = Body::new(10);
        lines.push(b"..dot\r\nab");
        assert_eq!(b.take(&mut lines), Taken::More);
        lines.push(b"\r\n.\r\nQUIT\r\n");
        assert_eq!(b.take(&mut lines), Taken::Done(b".dot\r\nab\r\n".to_vec()));
        assert_eq!(lines.next_line(), Some(Ok(b"QUIT".to_vec())));
        let mut b = Body::new(10);
        lines.push(b"0123456789abc\r\n.\r\n");
        assert_eq!(b.take(&mut lines), Taken::TooBig);
        let mut b = Body::new(10);
        let mut taken = Taken::More;
        for _ in 0..=DISCARD / 1000 {
            lines.push(&[b'x'; 1000]);
            taken = b.take(&mut lines);
        }
        assert_eq!(taken, Taken::Endless);
    }
}
