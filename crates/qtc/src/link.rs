//! How bytes are framed on a connection: raw (a forwarding port, later an AX.25 link) or
//! telnet (IAC negotiation stripped and answered, 0xFF doubled).

use qtc_telnet::Telnet;

/// The byte layer under a BBS or forwarding session.
pub enum Codec {
    /// Bytes as they are; `after_cr` remembers a CR that ended the last text chunk, so a
    /// CR LF split between two chunks still counts once.
    Raw {
        /// The last text byte sent was CR.
        after_cr: bool,
    },
    /// RFC 854 telnet.
    Telnet(Box<Telnet>),
}

impl Codec {
    /// A raw codec.
    pub fn raw() -> Codec {
        Codec::Raw { after_cr: false }
    }

    /// A telnet codec in the given role.
    pub fn telnet(role: qtc_telnet::Role) -> Codec {
        Codec::Telnet(Box::new(Telnet::new(role)))
    }

    /// How a login line ends on this connection: CR on a raw link, as FBB, LinBPQ and every
    /// AX.25 BBS end lines (LinBPQ's FBBPORT reads CR LF as a line and one stray byte, which
    /// it keeps as part of the password); CR LF on telnet, the NVT line end.
    pub fn line_end(&self) -> &'static [u8] {
        match self {
            Codec::Raw { .. } => b"\r",
            Codec::Telnet(_) => b"\r\n",
        }
    }

    /// Decodes received bytes: application data to `app`, protocol answers to `reply`.
    pub fn decode(&mut self, input: &[u8], app: &mut Vec<u8>, reply: &mut Vec<u8>) {
        match self {
            Codec::Raw { .. } => app.extend_from_slice(input),
            Codec::Telnet(t) => t.receive(input, app, reply),
        }
    }

    /// Encodes text for the user: line ends as the transport wants them (telnet CR LF; raw CR).
    pub fn encode_text(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Raw { after_cr } => {
                // Packet convention: bare CR ends a line.
                for &b in data {
                    match b {
                        b'\n' if *after_cr => {}
                        b'\n' => out.push(b'\r'),
                        b => out.push(b),
                    }
                    *after_cr = b == b'\r';
                }
            }
            Codec::Telnet(t) => t.send(data, out),
        }
    }

    /// Encodes protocol bytes unchanged but for telnet's 0xFF doubling.
    pub fn encode_raw(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Raw { after_cr } => {
                *after_cr = false;
                out.extend_from_slice(data);
            }
            Codec::Telnet(t) => t.send_raw(data, out),
        }
    }

    /// Asks a telnet client to stop or resume local echo; nothing on a raw link.
    pub fn hide_input(&mut self, hide: bool, out: &mut Vec<u8>) {
        if let Codec::Telnet(t) = self {
            t.set_hide_input(hide, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_text_uses_bare_cr() {
        let mut out = Vec::new();
        let mut c = Codec::raw();
        c.encode_text(b"a\r\nb\nc\rd\r", &mut out);
        c.encode_text(b"\ne", &mut out);
        assert_eq!(out, b"a\rb\rc\rd\re");
    }
}
