//! Lines from a client: CR LF (or a bare LF) ended, each at most a given length.

/// A line longer than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line longer than {0} bytes")]
pub struct LineError(pub usize);

/// Why a command line (POP3, NNTP) is not a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not a command the protocol has (or this server does).
    Unknown,
    /// A command with bad arguments: how it is written.
    Usage(&'static str),
}

/// Collects bytes into lines.
#[derive(Debug)]
pub struct LineBuffer {
    buf: Vec<u8>,
    max: usize,
    /// Dropping a too-long line up to its end.
    skipping: bool,
}

impl LineBuffer {
    /// Lines of at most `max` bytes (line end included).
    pub fn new(max: usize) -> LineBuffer {
        LineBuffer {
            buf: Vec::new(),
            max,
            skipping: false,
        }
    }

    /// Adds bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line without its line end; `Err` once for a line over the limit
    /// (its bytes are dropped up to its end).
    pub fn next_line(&mut self) -> Option<Result<Vec<u8>, LineError>> {
        loop {
            let Some(nl) = self.buf.iter().position(|&b| b == b'\n') else {
                if self.buf.len() > self.max {
                    self.buf.clear();
                    if !self.skipping {
                        self.skipping = true;
                        return Some(Err(LineError(self.max)));
                    }
                }
                return None;
            };
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            if line.len() > self.max {
                return Some(Err(LineError(self.max)));
            }
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Some(Ok(line));
        }
    }

    /// Takes every byte not yet made into a line (a DATA body's start, say).
    pub fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Drops everything buffered (what a client sent after STARTTLS in clear).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.skipping = false;
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_limits() {
        let mut l = LineBuffer::new(8);
        l.push(b"ab\r\ncd\nlongerthan8");
        assert_eq!(l.next_line(), Some(Ok(b"ab".to_vec())));
        assert_eq!(l.next_line(), Some(Ok(b"cd".to_vec())));
        assert_eq!(l.next_line(), Some(Err(LineError(8))));
        assert_eq!(l.next_line(), None);
        l.push(b"more\r\nok\r\n");
        assert_eq!(l.next_line(), Some(Ok(b"ok".to_vec())));
    }
}
