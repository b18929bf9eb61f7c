//! How bytes are framed on a connection: raw (a forwarding port, an AX.25 link), telnet (IAC
//! negotiation stripped and answered, 0xFF doubled), or IAC-escaped (a partner that doubles
//! 0xFF on a raw port without speaking telnet: xfbbd's outgoing forwarding).
//!
//! Line ends follow the connection kind: CR on raw links (FBB, LinBPQ, AX.25), CR LF on telnet
//! (the NVT line end) and on IAC-escaped links in a text mode (see [`Codec::encode_session`]). Once a forwarding session agrees on a compressed mode
//! its telnet link turns binary-transparent: only IAC is escaped, because the NVT CR NUL rule
//! would corrupt the binary blocks (xfbbd and JNOS send them that way).

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
    /// Raw bytes with 0xFF doubled both ways, nothing negotiated; `binary` once a forwarding
    /// session agreed on a compressed mode.
    Iac { telnet: Box<Telnet>, binary: bool },
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

    /// An IAC-escaped raw link.
    pub fn iac() -> Codec {
        let mut t = Telnet::new(qtc_telnet::Role::Client);
        t.set_transparent(true);
        Codec::Iac {
            telnet: Box::new(t),
            binary: false,
        }
    }

    /// A forwarding session agreed on its mode: a telnet link carries binary blocks untouched
    /// but for IAC doubling in the compressed modes.
    pub fn set_binary(&mut self, binary: bool) {
        match self {
            Codec::Telnet(t) => t.set_transparent(binary),
            Codec::Iac { binary: b, .. } => *b = binary,
            Codec::Raw { .. } => {}
        }
    }

    /// How a login line ends on this connection: CR on a raw link, as FBB, LinBPQ and every
    /// AX.25 BBS end lines (LinBPQ's FBBPORT reads CR LF as a line and one stray byte, which
    /// it keeps as part of the password); CR LF on telnet, the NVT line end.
    pub fn line_end(&self) -> &'static [u8] {
        match self {
            Codec::Raw { .. } | Codec::Iac { .. } => b"\r",
            Codec::Telnet(_) => b"\r\n",
        }
    }

    /// Decodes received bytes: application data to `app`, protocol answers to `reply`.
    pub fn decode(&mut self, input: &[u8], app: &mut Vec<u8>, reply: &mut Vec<u8>) {
        match self {
            Codec::Raw { .. } => app.extend_from_slice(input),
            Codec::Telnet(t) | Codec::Iac { telnet: t, .. } => t.receive(input, app, reply),
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
            Codec::Iac { telnet, .. } => telnet.send_raw(data, out),
        }
    }

    /// Encodes protocol bytes unchanged but for telnet's 0xFF doubling.
    pub fn encode_raw(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Raw { after_cr } => {
                *after_cr = false;
                out.extend_from_slice(data);
            }
            Codec::Telnet(t) | Codec::Iac { telnet: t, .. } => t.send_raw(data, out),
        }
    }

    /// Encodes a forwarding session's output (CR line ends, binary blocks in compressed
    /// modes): in a text mode CR becomes CR LF on a telnet link, since LinBPQ's telnet port
    /// swallows the byte after a bare CR, and on an IAC-escaped one, since xfbbd takes the byte
    /// after a CR as it is, without undoing the doubling (its telnet driver expects the LF of CR
    /// LF there: `tcp_trame` in LinFBB's drv_tcp.c), so a line starting 0xFF 0xFF lost its
    /// next two bytes; everything else as [`Codec::encode_raw`].
    pub fn encode_session(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Telnet(t) if !t.is_transparent() => t.send(data, out),
            Codec::Iac {
                telnet,
                binary: false,
            } => telnet.send(data, out),
            _ => self.encode_raw(data, out),
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

    #[test]
    fn session_output_per_connection_kind() {
        let session = b"FA P A B C D 1\r\x02\x0d\x00\xff";
        let mut out = Vec::new();
        // Telnet before a compressed mode: protocol lines end in CR LF (LinBPQ's telnet port
        // eats the byte after a bare CR).
        let mut t = Codec::telnet(qtc_telnet::Role::Client);
        t.encode_session(b"SP N0XYZ\r", &mut out);
        assert_eq!(out, b"SP N0XYZ\r\n");
        // Binary-transparent once B1 is agreed: only 0xFF doubled, CR NUL as it is.
        out.clear();
        t.set_binary(true);
        t.encode_session(session, &mut out);
        assert_eq!(out, b"FA P A B C D 1\r\x02\x0d\x00\xff\xff");
        // xfbbd's IAC-escaped raw link: CR LF lines in a text mode (xfbbd reads the byte after
        // a CR unescaped), binary-transparent in a compressed one; and a plain raw link.
        out.clear();
        let mut iac = Codec::iac();
        iac.encode_session(b"SP N0XYZ\r\xff\xff x\r", &mut out);
        assert_eq!(out, b"SP N0XYZ\r\n\xff\xff\xff\xff x\r\n");
        out.clear();
        iac.set_binary(true);
        iac.encode_session(session, &mut out);
        assert_eq!(out, b"FA P A B C D 1\r\x02\x0d\x00\xff\xff");
        out.clear();
        Codec::raw().encode_session(session, &mut out);
        assert_eq!(out, session);
        assert_eq!(Codec::raw().line_end(), b"\r");
        assert_eq!(Codec::iac().line_end(), b"\r");
        assert_eq!(t.line_end(), b"\r\n");
    }
}
