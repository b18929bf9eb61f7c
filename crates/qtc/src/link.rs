//! How bytes are framed on a connection, per link and per phase (docs/forwarding.md, "Line
//! ends and escaping").
//!
//! Three things vary from link to link, and each setting serves a peer's quirk:
//! - **what is read**: telnet-decoded (commands stripped and answered, `IAC IAC` undone) or taken
//!   byte for byte;
//! - **what is written**: 0xFF doubled or not, apart in the text phase (login, MBL, FBB ASCII,
//!   protocol lines) and the binary phase (compressed blocks);
//! - **how lines end**: for users' text (CR on raw links and AX.25, CR LF on telnet), and for a
//!   forwarding session's lines ([`Codec::session_line_end`]), which the session itself writes.
//!
//! The kinds of link: raw (a forwarding port, AX.25, a telnet-port client that never spoke
//! telnet), telnet (negotiated: IAC rules both ways), IAC-escaped (0xFF doubled both ways,
//! nothing negotiated: xfbbd's outgoing forwarding), and a call to JNOS over TCP (its mailbox
//! undoes 0xFF doubling in the text lines it reads, writes raw, and takes compressed blocks raw).
//! A forwarding port's link, and a telnet-port client's that never spoke telnet, are raw until
//! the partner's SID names its software: LinFBB's become IAC-escaped ([`Codec::settle`]).

use qtc_fbb::{LineEnd, SidInfo};
use qtc_telnet::Telnet;

/// The byte layer under a BBS or forwarding session.
pub struct Codec {
    /// Telnet state: options answered, 0xFF doubled on output. `None` on a raw link.
    telnet: Option<Box<Telnet>>,
    /// A negotiated telnet link: users' text gets NVT line ends, passwords hidden with ECHO.
    nvt: bool,
    /// Received bytes go through the telnet decoder; otherwise they are taken as they are.
    decode: bool,
    /// 0xFF is doubled in what we write in the text phase.
    escape_text: bool,
    /// 0xFF is doubled in what we write in the binary phase.
    escape_binary: bool,
    /// A forwarding session agreed on a compressed mode.
    binary: bool,
    /// How a forwarding session's lines end in the text phase and in the binary phase.
    lines: (LineEnd, LineEnd),
    /// How users' text lines end (before any forwarding session).
    text_eol: LineEnd,
    /// The last text byte sent on a raw link was CR (a CR LF split between two chunks).
    after_cr: bool,
    /// A link whose 0xFF rule the peer's software settles, once its SID names it
    /// ([`Codec::settle`]); `None`: the link's rule is known.
    undecided: Option<Undecided>,
    /// The first byte the peer sent (its login's): `.` is LinFBB's transparent login.
    first_byte: Option<u8>,
}

/// Why a link's 0xFF rule waits for the peer's SID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Undecided {
    /// Our raw forwarding port: raw is the port's rule, LinFBB alone doubles 0xFF anyway.
    RawPort,
    /// The telnet port took a client that spoke no telnet as raw: a guess until its software
    /// is known.
    SilentTelnet,
}

impl Codec {
    /// A raw link: bytes as they are, bare CR line ends (AX.25, LinBPQ's FBBPORT, FBB).
    pub fn raw() -> Codec {
        Codec {
            telnet: None,
            nvt: false,
            decode: false,
            escape_text: false,
            escape_binary: false,
            binary: false,
            lines: (LineEnd::Cr, LineEnd::Cr),
            text_eol: LineEnd::Cr,
            after_cr: false,
            undecided: None,
            first_byte: None,
        }
    }

    /// Our raw TCP forwarding port: raw, but its prompts end in CR LF. A caller waiting for a
    /// line end then gets the one it waits for: JNOS without `cronly` reads on after a CR until
    /// the LF (a prompt ending in CR costs it its script's whole `*N` wait), and a reader that
    /// splits at CR (wl2k-go, LinBPQ) skips the LF as the start of the next line.
    pub fn forward_port() -> Codec {
        Codec {
            text_eol: LineEnd::CrLf,
            undecided: Some(Undecided::RawPort),
            ..Codec::raw()
        }
    }

    /// A telnet codec in the given role, with IAC rules both ways and CR LF line ends.
    pub fn telnet(role: qtc_telnet::Role) -> Codec {
        Codec::from_telnet(Telnet::new(role))
    }

    /// A telnet codec over a [`Telnet`] already started.
    pub fn from_telnet(t: Telnet) -> Codec {
        Codec {
            telnet: Some(Box::new(t)),
            nvt: true,
            decode: true,
            escape_text: true,
            escape_binary: true,
            lines: (LineEnd::CrLf, LineEnd::CrLf),
            text_eol: LineEnd::CrLf,
            ..Codec::raw()
        }
    }

    /// An IAC-escaped raw link (xfbbd's outgoing forwarding): 0xFF doubled both ways, nothing
    /// negotiated; CR LF lines in the text modes (xfbbd reads the byte after a CR as it is,
    /// expecting the LF: `tcp_trame` in LinFBB's drv_tcp.c), bare CR in the binary ones.
    pub fn iac() -> Codec {
        let mut t = Telnet::new(qtc_telnet::Role::Client);
        t.set_transparent(true);
        Codec {
            telnet: Some(Box::new(t)),
            decode: true,
            escape_text: true,
            escape_binary: true,
            lines: (LineEnd::CrLf, LineEnd::Cr),
            ..Codec::raw()
        }
    }

    /// Whether the peer has sent a telnet command (anything but `IAC IAC`) so far.
    pub fn peer_spoke_telnet(&self) -> bool {
        self.telnet.as_ref().is_some_and(|t| t.peer_sent_command())
    }

    /// The telnet port's rule for a forwarding partner: a client that never spoke telnet (pat,
    /// LinBPQ, JNOS: none doubles 0xFF or reads IAC) is a raw TCP client, its blocks taken byte
    /// for byte; one that negotiated keeps the IAC rules. Returns whether the link went raw.
    pub fn raw_unless_telnet_spoken(&mut self) -> bool {
        if !self.nvt || self.peer_spoke_telnet() {
            return false;
        }
        let (lines, first_byte) = (self.lines, self.first_byte);
        *self = Codec::raw();
        self.lines = lines;
        self.first_byte = first_byte;
        self.undecided = Some(Undecided::SilentTelnet);
        true
    }

    /// The peer's SID named its software (`peer`): on a link that waited for it, the 0xFF rule
    /// of that software. LinFBB (`FBB`) doubles 0xFF on every TCP link it opens, reads IAC and
    /// wants CR LF text lines (`tcp_trame`, `tcp_snd_dt` in its drv_tcp.c), unless it logged
    /// in transparently (`.CALL`): such a link becomes [`Codec::iac`]. JNOS, LinBPQ, Winlink
    /// software and qtc double nothing: the link stays raw. Returns false when the rule stays a
    /// guess: software not known here, on the telnet port.
    pub fn settle(&mut self, peer: Option<&SidInfo>) -> bool {
        let Some(undecided) = self.undecided.take() else {
            return true;
        };
        let name = peer.map_or("", |p| p.name.as_str());
        if name.eq_ignore_ascii_case("FBB") {
            if self.first_byte != Some(b'.') {
                let first_byte = self.first_byte;
                *self = Codec::iac();
                self.first_byte = first_byte;
            }
            return true;
        }
        let raw = ["JNOS", "BPQ", "QTC"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
            || peer.is_some_and(SidInfo::is_winlink_client);
        raw || undecided == Undecided::RawPort
    }

    /// A link to JNOS that we called over TCP (its telnet mailbox, `cronly` or not): JNOS
    /// writes raw and reads compressed blocks raw (`JNOS_DEFAULT_NOIAC`), but its mailbox line
    /// reader (`mbxrecvline`) undoes 0xFF doubling on a link that came in over telnet, so our
    /// text lines keep 0xFF doubled.
    pub fn jnos_called_over_tcp(&mut self) {
        if self.telnet.is_none() {
            let mut t = Telnet::new(qtc_telnet::Role::Client);
            t.set_transparent(true);
            self.telnet = Some(Box::new(t));
        }
        self.decode = false;
        self.escape_text = true;
        self.escape_binary = false;
    }

    /// A forwarding session agreed on its mode: compressed blocks travel from now on (a
    /// telnet link drops the NVT CR NUL rule, which would corrupt them).
    pub fn set_binary(&mut self, binary: bool) {
        self.binary = binary;
        if let Some(t) = self.telnet.as_mut() {
            t.set_transparent(binary || !self.nvt);
        }
    }

    /// How a login script's lines end: CR LF on telnet, the NVT line end; CR on a raw link, as
    /// FBB, LinBPQ and every AX.25 BBS end lines (LinBPQ's FBBPORT reads CR LF as a line and
    /// one stray byte, which it keeps as part of the password).
    pub fn line_end(&self) -> &'static [u8] {
        if self.nvt {
            b"\r\n"
        } else {
            b"\r"
        }
    }

    /// How a forwarding session's lines end now (by the phase).
    pub fn session_line_end(&self) -> LineEnd {
        if self.binary {
            self.lines.1
        } else {
            self.lines.0
        }
    }

    /// A called session's lines end as the partner ended its login lines: CR LF if it sent LF
    /// (JNOS without `cronly`, which waits for the LF after a bare CR), else a bare CR (LinBPQ,
    /// JNOS with `cronly`, pat). A negotiated telnet link and an IAC-escaped one keep theirs.
    pub fn mirror_line_end(&mut self, partner_sent_lf: bool) {
        if self.telnet.is_none() {
            let eol = if partner_sent_lf {
                LineEnd::CrLf
            } else {
                LineEnd::Cr
            };
            self.lines = (eol, eol);
        }
    }

    /// Decodes received bytes: application data to `app`, protocol answers to `reply`. A
    /// telnet anomaly in them (decoding goes on) is logged.
    pub fn decode(&mut self, input: &[u8], app: &mut Vec<u8>, reply: &mut Vec<u8>) {
        let before = app.len();
        self.decode_into(input, app, reply);
        if self.first_byte.is_none() {
            self.first_byte = app.get(before).copied();
        }
    }

    fn decode_into(&mut self, input: &[u8], app: &mut Vec<u8>, reply: &mut Vec<u8>) {
        match self.telnet.as_mut() {
            Some(t) if self.decode => {
                t.receive(input, app, reply);
                if let Some(e) = t.poll_error() {
                    tracing::debug!(error = %e, "telnet protocol anomaly");
                }
            }
            _ => app.extend_from_slice(input),
        }
    }

    /// Encodes text for a user: line ends as the link wants them (telnet CR LF; raw CR).
    pub fn encode_text(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self.telnet.as_mut() {
            Some(t) if self.nvt => t.send(data, out),
            Some(t) => t.send_raw(data, out),
            None => {
                let eol = self.text_eol.as_bytes();
                for &b in data {
                    match b {
                        b'\n' if self.after_cr => {}
                        b'\n' | b'\r' => out.extend_from_slice(eol),
                        b => out.push(b),
                    }
                    self.after_cr = b == b'\r';
                }
            }
        }
    }

    /// Encodes protocol bytes unchanged but for the 0xFF doubling of the phase.
    pub fn encode_raw(&mut self, data: &[u8], out: &mut Vec<u8>) {
        self.after_cr = false;
        let escape = if self.binary {
            self.escape_binary
        } else {
            self.escape_text
        };
        match self.telnet.as_mut() {
            Some(t) if escape => t.send_raw(data, out),
            _ => out.extend_from_slice(data),
        }
    }

    /// Encodes a forwarding session's output: its lines already end as
    /// [`Codec::session_line_end`] says; only 0xFF is doubled where the link wants it.
    pub fn encode_session(&mut self, data: &[u8], out: &mut Vec<u8>) {
        self.encode_raw(data, out);
    }

    /// Asks a telnet client to stop or resume local echo; nothing on other links.
    pub fn hide_input(&mut self, hide: bool, out: &mut Vec<u8>) {
        if let Some(t) = self.telnet.as_mut().filter(|_| self.nvt) {
            t.set_hide_input(hide, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_text_uses_bare_cr_and_the_forward_port_cr_lf() {
        let mut out = Vec::new();
        let mut c = Codec::raw();
        c.encode_text(b"a\r\nb\nc\rd\r", &mut out);
        c.encode_text(b"\ne", &mut out);
        assert_eq!(out, b"a\rb\rc\rd\re");
        out.clear();
        Codec::forward_port().encode_text(b"Callsign:\rPassword:\n", &mut out);
        assert_eq!(out, b"Callsign:\r\nPassword:\r\n");
    }

    #[test]
    fn session_output_per_connection_kind() {
        let block = b"\x02\x0d\x00\xff";
        let mut out = Vec::new();
        // Telnet: CR LF session lines, 0xFF doubled; binary-transparent once B1 is agreed.
        let mut t = Codec::telnet(qtc_telnet::Role::Client);
        assert_eq!(t.session_line_end(), LineEnd::CrLf);
        t.set_binary(true);
        t.encode_session(block, &mut out);
        assert_eq!(out, b"\x02\x0d\x00\xff\xff");
        assert_eq!(t.session_line_end(), LineEnd::CrLf);
        // xfbbd's IAC-escaped raw link: CR LF in a text mode, CR in a compressed one.
        out.clear();
        let mut iac = Codec::iac();
        assert_eq!(iac.session_line_end(), LineEnd::CrLf);
        iac.encode_session(b"x \xff\xff\r\n", &mut out);
        assert_eq!(out, b"x \xff\xff\xff\xff\r\n");
        iac.set_binary(true);
        assert_eq!(iac.session_line_end(), LineEnd::Cr);
        // A plain raw link: nothing changes.
        out.clear();
        Codec::raw().encode_session(block, &mut out);
        assert_eq!(out, block);
        assert_eq!(Codec::raw().line_end(), b"\r");
        assert_eq!(Codec::iac().line_end(), b"\r");
        assert_eq!(t.line_end(), b"\r\n");
    }

    #[test]
    fn a_telnet_port_client_that_never_spoke_telnet_goes_raw() {
        let (mut app, mut net) = (Vec::new(), Vec::new());
        let mut silent = Codec::telnet(qtc_telnet::Role::Server);
        silent.decode(b"N0PAT\r\xff\xffpw\r", &mut app, &mut net);
        assert!(silent.raw_unless_telnet_spoken());
        app.clear();
        silent.decode(b"\x01\x05\xff\xfb\x01", &mut app, &mut net);
        assert_eq!(app, b"\x01\x05\xff\xfb\x01");
        let mut out = Vec::new();
        silent.encode_session(b"\xff", &mut out);
        assert_eq!(out, b"\xff");
        // A client that answered our WILL ECHO keeps the IAC rules.
        let mut spoke = Codec::telnet(qtc_telnet::Role::Server);
        spoke.decode(b"\xff\xfd\x01N0ABC\r\n", &mut app, &mut net);
        assert!(!spoke.raw_unless_telnet_spoken());
    }

    /// The SID of software `name`, as its SID line gives it.
    fn sid(name: &str) -> SidInfo {
        let line = format!("[{name}-1.0-B1FHM$]");
        qtc_fbb::wire::sid::Sid::parse(line.as_bytes())
            .unwrap()
            .to_info()
    }

    #[test]
    fn a_silent_telnet_client_or_a_raw_port_caller_is_framed_as_its_software_frames() {
        let (mut app, mut net, mut out) = (Vec::new(), Vec::new(), Vec::new());
        let silent = || {
            let mut c = Codec::telnet(qtc_telnet::Role::Server);
            let (mut app, mut net) = (Vec::new(), Vec::new());
            c.decode(b"N0FBB\r\n", &mut app, &mut net);
            assert!(c.raw_unless_telnet_spoken());
            c
        };
        // LinFBB doubles 0xFF on its links: IAC-escaped from its SID on, both ways.
        let mut fbb = silent();
        assert!(fbb.settle(Some(&sid("FBB"))));
        fbb.decode(b"x \xff\xff y", &mut app, &mut net);
        assert_eq!(app, b"x \xff y");
        fbb.encode_session(b"\xff", &mut out);
        assert_eq!(out, b"\xff\xff");
        assert_eq!(fbb.session_line_end(), LineEnd::CrLf);
        // ... unless it logged in transparently (`.CALL`).
        let mut dot = Codec::forward_port();
        dot.decode(b".N0FBB\r", &mut app, &mut net);
        assert!(dot.settle(Some(&sid("FBB"))));
        app.clear();
        dot.decode(b"\xff\xff", &mut app, &mut net);
        assert_eq!(app, b"\xff\xff");
        // JNOS, LinBPQ, Winlink software and qtc double nothing.
        for name in ["JNOS", "BPQ", "QTC", "Pat"] {
            let mut c = silent();
            assert!(c.settle(Some(&sid(name))), "{name}");
            app.clear();
            c.decode(b"\xff\xff", &mut app, &mut net);
            assert_eq!(app, b"\xff\xff", "{name}");
        }
        // Software not known here: raw, a guess on the telnet port, the rule on the raw port.
        assert!(!silent().settle(Some(&sid("XYZ"))));
        assert!(Codec::forward_port().settle(Some(&sid("XYZ"))));
        // A link whose rule is known (a negotiated telnet link, AX.25) keeps it.
        let mut t = Codec::telnet(qtc_telnet::Role::Server);
        assert!(t.settle(Some(&sid("FBB"))));
        out.clear();
        t.encode_session(b"\r\n", &mut out);
        assert_eq!(out, b"\r\n");
        assert!(Codec::raw().settle(None));
    }

    #[test]
    fn a_called_session_mirrors_the_partner_line_end() {
        let mut c = Codec::raw();
        c.mirror_line_end(true);
        assert_eq!(c.session_line_end(), LineEnd::CrLf);
        c.mirror_line_end(false);
        assert_eq!(c.session_line_end(), LineEnd::Cr);
        let mut t = Codec::telnet(qtc_telnet::Role::Server);
        t.mirror_line_end(false);
        assert_eq!(t.session_line_end(), LineEnd::CrLf);
    }

    #[test]
    fn jnos_called_over_tcp_reads_raw_and_escapes_only_text() {
        let mut c = Codec::telnet(qtc_telnet::Role::Client);
        c.jnos_called_over_tcp();
        let (mut app, mut net, mut out) = (Vec::new(), Vec::new(), Vec::new());
        c.decode(b"K\xf6ln \xff x\r\n", &mut app, &mut net);
        assert_eq!(app, b"K\xf6ln \xff x\r\n");
        c.encode_session(b"\xff x\r\n", &mut out);
        assert_eq!(out, b"\xff\xff x\r\n");
        out.clear();
        c.set_binary(true);
        c.encode_session(b"\x02\x01\xff", &mut out);
        assert_eq!(out, b"\x02\x01\xff");
    }
}
