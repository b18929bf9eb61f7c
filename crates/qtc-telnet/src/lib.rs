//! Sans-IO telnet codec (RFC 854 NVT, RFC 855 option negotiation, RFC 1143 Q method) for the
//! qtc BBS telnet port and for outgoing telnet partner links.
//!
//! [`Telnet`] holds all state of one connection and never touches a socket or a clock: the caller
//! hands it the bytes it read and writes out the bytes it is handed back.
//!
//! # What it does
//! - **Input** ([`Telnet::receive`]): strips IAC commands, turns `IAC IAC` into `0xFF` and
//!   `CR NUL` into `CR`, drops subnegotiations (`IAC SB .. IAC SE`), answers option negotiation.
//!   `CR LF`, bare `CR` and bare `LF` pass through unchanged: splitting lines is the BBS layer's job.
//!   State survives between calls, so a sequence split across two reads decodes the same.
//! - **Options**: ECHO and SUPPRESS-GO-AHEAD are supported, every other option is refused.
//!   Negotiation follows the RFC 1143 Q method, so an answer is never answered and two compliant
//!   ends cannot loop.
//! - **Output** ([`Telnet::send`]): every line end (`CR`, `LF` or `CR LF`, also when the `CR` and
//!   the `LF` come in two calls) becomes `CR LF`, and `0xFF` is doubled. [`Telnet::send_raw`] only
//!   escapes (IAC doubling, plus `CR NUL` sent as `CR NUL NUL` so the peer's `CR NUL` rule does
//!   not eat a data NUL).
//!
//! # Option policy
//! | option | we do it (WILL) | peer does it (DO) |
//! |---|---|---|
//! | SUPPRESS-GO-AHEAD (3) | when asked | yes |
//! | ECHO (1) | while [`Telnet::set_hide_input`]`(true)` is in force, or in character mode | never |
//! | anything else | refused (`WONT`) | refused (`DONT`) |
//!
//! **Line mode** is the default: [`Telnet::start`] offers nothing, so the Linux/BSD `telnet`
//! client and PuTTY keep their own line editing and local echo, and send whole lines. A server
//! saying `WILL ECHO` and then not echoing is how a telnet BBS hides a password; outside a
//! password prompt (and outside character mode) a client's `DO ECHO` is refused, because we would
//! not echo and the user would type blind. Neither role lets the peer echo our output back
//! (`DONT ECHO`): our client is a program (a forwarding link), and a partner that echoed (LinBPQ
//! does after `DO ECHO`) would have its echo of our lines read as its own.
//!
//! **Character mode** happens only when the client asks for it with `DO SUPPRESS-GO-AHEAD`
//! (inetutils `telnet` on port 23, PuTTY, Windows telnet): we agree, offer `WILL ECHO` and, once
//! the client agrees, echo what is typed with BS, DEL, Ctrl-U and Ctrl-W erasing on the screen;
//! Enter is echoed as one new line. Nothing is echoed while input is hidden (passwords). The
//! bytes typed, erasing keys included, still reach the application, whose line splitter applies
//! the same edits. We never send GA, so agreeing to SGA is always truthful (RFC 858).
//!
//! The client role stays silent at start because a partner BBS port may not be a real telnet
//! server, and unsolicited IAC bytes would show up there as garbage.
//!
//! Other commands: `AYT` is answered with [`AYT_REPLY`]; `SUSP` and `EOF` (Ctrl-Z and Ctrl-D
//! of a line-mode client) reach the application as [`END_KEY`]; `DO TIMING-MARK`, which
//! inetutils `telnet` sends after `SUSP` and then discards our output until it is answered, is
//! answered `WILL TIMING-MARK` at once, the option never kept on (RFC 860: the answer only marks
//! a point in the stream; BSD telnetd does the same); `NOP`, `DM`, `BRK`, `IP`, `AO`, `ABORT`,
//! `EC`, `EL` and `GA` are consumed and ignored. Anomalies (stray `SE`, unknown command bytes, overlong or
//! unterminated subnegotiations, negotiation answers that contradict our request) never stop
//! decoding; the first one is kept for [`Telnet::poll_error`].
//!
//! # Driving this type
//! 1. `let mut t = Telnet::new(Role::Server);` when the TCP connection is accepted (or
//!    `Role::Client` when we dial out).
//! 2. `t.start(&mut to_net)`, then write `to_net` to the socket.
//! 3. On every read: `t.receive(&buf[..n], &mut to_app, &mut to_net)`; pass `to_app` to the BBS
//!    line splitter and write `to_net` to the socket.
//! 4. On application output: `t.send(text, &mut to_net)` (or `t.send_raw(bytes, &mut to_net)` for
//!    binary / forwarded data) and write `to_net`.
//! 5. Around a password prompt: `t.set_hide_input(true, &mut to_net)` before the prompt,
//!    `t.set_hide_input(false, &mut to_net)` after the line arrives.
//! 6. Whenever convenient (e.g. after `receive`): `while let Some(e) = t.poll_error() { .. }` to log.
//!
//! Bytes appended to any `to_net` must reach the socket in the order they were produced.
//!
//! ```
//! use qtc_telnet::{Role, Telnet};
//! let mut t = Telnet::new(Role::Server);
//! let (mut app, mut net) = (Vec::new(), Vec::new());
//! t.start(&mut net);
//! assert!(net.is_empty()); // line mode: nothing offered
//! t.receive(b"hi\r\0there\r\n", &mut app, &mut net);
//! assert_eq!(app, b"hi\rthere\r\n");
//! assert!(net.is_empty());
//! t.send(b"ok\n", &mut net);
//! assert_eq!(net, b"ok\r\n");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod echo;
mod error;
mod q;

#[cfg(test)]
mod tests;

pub use error::Error;

use q::{Side, Wire};

/// Telnet command bytes (RFC 854).
pub mod cmd {
    /// Interpret As Command: starts every command; doubled to send a data `0xFF`.
    pub const IAC: u8 = 255;
    /// Refuse, or ask the peer to stop, an option on the peer's side.
    pub const DONT: u8 = 254;
    /// Ask the peer to use, or agree that it uses, an option on its side.
    pub const DO: u8 = 253;
    /// Refuse, or announce stopping, an option on our side.
    pub const WONT: u8 = 252;
    /// Offer, or agree to use, an option on our side.
    pub const WILL: u8 = 251;
    /// Subnegotiation begin (RFC 855).
    pub const SB: u8 = 250;
    /// Go ahead.
    pub const GA: u8 = 249;
    /// Erase line.
    pub const EL: u8 = 248;
    /// Erase character.
    pub const EC: u8 = 247;
    /// Are you there.
    pub const AYT: u8 = 246;
    /// Abort output.
    pub const AO: u8 = 245;
    /// Interrupt process.
    pub const IP: u8 = 244;
    /// Break.
    pub const BRK: u8 = 243;
    /// Data mark (the data part of a Synch).
    pub const DM: u8 = 242;
    /// No operation.
    pub const NOP: u8 = 241;
    /// Subnegotiation end (RFC 855).
    pub const SE: u8 = 240;
    /// Abort process (RFC 1184).
    pub const ABORT: u8 = 238;
    /// Suspend process (RFC 1184): what a line-mode client sends for Ctrl-Z.
    pub const SUSP: u8 = 237;
    /// End of file (RFC 1184): what a line-mode client sends for Ctrl-D.
    pub const EOF: u8 = 236;
}

/// Telnet option codes this crate names.
pub mod opt {
    /// TRANSMIT-BINARY (RFC 856); refused.
    pub const BINARY: u8 = 0;
    /// ECHO (RFC 857).
    pub const ECHO: u8 = 1;
    /// SUPPRESS-GO-AHEAD (RFC 858).
    pub const SGA: u8 = 3;
    /// TIMING-MARK (RFC 860): answered `WILL` at once and never kept on.
    pub const TM: u8 = 6;
}

/// The byte `IAC SUSP` and `IAC EOF` become for the application: Ctrl-Z (SUB), the end of a
/// message on a BBS. A line-mode client (inetutils `telnet`) sends them for Ctrl-Z and Ctrl-D
/// instead of the key itself.
pub const END_KEY: u8 = 0x1a;

use cmd::*;

const CR: u8 = b'\r';
const LF: u8 = b'\n';
const NUL: u8 = 0;

/// Subnegotiation payloads are never stored; one longer than this many bytes is reported as
/// [`Error::SubnegotiationTooLong`] (and still discarded up to its `IAC SE`).
pub const MAX_SUBNEGOTIATION: usize = 256;

/// What we send back (on the network side) for `IAC AYT`: visible evidence that we are alive.
pub const AYT_REPLY: &[u8] = b"\r\n[qtc: yes]\r\n";

/// Server or client role decides what we offer initially.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// We accepted the connection (BBS telnet port).
    Server,
    /// We opened the connection (outgoing partner link).
    Client,
}

/// Where the input decoder is inside the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rx {
    /// Plain data.
    Data,
    /// After `IAC`.
    Iac,
    /// After `IAC WILL|WONT|DO|DONT`, waiting for the option byte.
    Verb(u8),
    /// After `IAC SB`, waiting for the option byte.
    SbOption,
    /// Inside a subnegotiation; `len` payload bytes seen so far (saturating).
    Sb { option: u8, len: usize },
    /// After `IAC` inside a subnegotiation.
    SbIac { option: u8, len: usize },
}

/// Both sides of one option (RFC 1143 `us` and `him`).
#[derive(Debug, Clone, Copy, Default)]
struct OptionState {
    us: Side,
    him: Side,
}

/// One telnet connection's codec state. See the crate docs for how to drive it.
#[derive(Debug, Clone)]
pub struct Telnet {
    role: Role,
    rx: Rx,
    /// The last application byte produced by `receive` was a CR (so a following NUL is dropped).
    rx_cr: bool,
    /// `send` turned a CR into CR LF last; an LF right after it is the same line end.
    tx_line_cr: bool,
    /// The last data byte put on the wire was a bare CR, so a data NUL must be stuffed.
    tx_wire_cr: bool,
    /// The application wants input hidden (our ECHO on).
    hide_requested: bool,
    /// Binary data (RFC 856 semantics without negotiating it): only IAC is escaped, the CR NUL
    /// rule is off both ways.
    transparent: bool,
    options: [OptionState; 256],
    /// What the character-mode client sees of the line being typed.
    editor: echo::Editor,
    /// The peer has sent a telnet command (anything after IAC but IAC).
    peer_spoke: bool,
    error: Option<Error>,
}

impl Telnet {
    /// A codec for a fresh connection; nothing is sent until [`Telnet::start`].
    pub fn new(role: Role) -> Self {
        Self {
            role,
            rx: Rx::Data,
            rx_cr: false,
            tx_line_cr: false,
            tx_wire_cr: false,
            hide_requested: false,
            transparent: false,
            options: [OptionState::default(); 256],
            editor: echo::Editor::default(),
            peer_spoke: false,
            error: None,
        }
    }

    /// The role given to [`Telnet::new`].
    pub fn role(&self) -> Role {
        self.role
    }

    /// Bytes to send when the connection opens: nothing in either role (line mode until the
    /// client asks for character mode; see the crate docs). Kept so that a future opening offer
    /// has its place in the driving sequence.
    pub fn start(&mut self, _to_net: &mut Vec<u8>) {}

    /// Feed bytes received from the network.
    ///
    /// Application data is appended to `to_app`: IAC sequences removed, `IAC IAC` -> `0xFF`,
    /// `CR NUL` -> `CR`, subnegotiations dropped; `CR LF` passes unchanged. Negotiation answers
    /// (and the [`AYT_REPLY`]) are appended to `to_net`. Decoder state is kept across calls.
    pub fn receive(&mut self, input: &[u8], to_app: &mut Vec<u8>, to_net: &mut Vec<u8>) {
        let mut typed_from = to_app.len();
        // Fast path for the common case: copy runs of plain data in one go.
        let mut rest = input;
        while let Some((&b, tail)) = rest.split_first() {
            if self.rx == Rx::Data && b != IAC && !(b == NUL && self.rx_cr) {
                let run = rest
                    .iter()
                    .position(|&c| c == IAC || c == NUL)
                    .unwrap_or(rest.len());
                if run > 0 {
                    to_app.extend_from_slice(&rest[..run]);
                    self.rx_cr = rest[run - 1] == CR && !self.transparent;
                    rest = &rest[run..];
                    continue;
                }
            }
            if b == IAC || self.rx != Rx::Data {
                // A command may turn echo on or off: what was typed before it is echoed (or
                // not) as things stood then, however the input was split into reads.
                self.echo_typed(&to_app[typed_from..], to_net);
                typed_from = to_app.len();
            }
            self.step(b, to_app, to_net);
            rest = tail;
        }
        self.echo_typed(&to_app[typed_from..], to_net);
    }

    /// Echoes `typed` when in character mode with input shown.
    fn echo_typed(&mut self, typed: &[u8], to_net: &mut Vec<u8>) {
        if typed.is_empty() || !self.echoing() {
            return;
        }
        let mut echo = Vec::new();
        self.editor.keys(typed, &mut echo);
        for b in echo {
            self.put(b, to_net);
        }
        self.tx_line_cr = false;
    }

    /// In character mode: the client agreed to SGA and to our ECHO.
    fn char_mode(&self) -> bool {
        self.role == Role::Server && self.local_enabled(opt::SGA)
    }

    /// Whether we echo what is typed right now (character mode, input not hidden).
    fn echoing(&self) -> bool {
        self.char_mode() && self.local_enabled(opt::ECHO) && !self.hide_requested
    }

    /// Decode one byte.
    fn step(&mut self, b: u8, to_app: &mut Vec<u8>, to_net: &mut Vec<u8>) {
        match self.rx {
            Rx::Data => {
                if b == IAC {
                    self.rx = Rx::Iac;
                } else if b == NUL && self.rx_cr {
                    // RFC 854: CR NUL is a bare carriage return.
                    self.rx_cr = false;
                } else {
                    to_app.push(b);
                    self.rx_cr = b == CR && !self.transparent;
                }
            }
            Rx::Iac => self.command(b, to_app, to_net),
            Rx::Verb(verb) => {
                self.rx = Rx::Data;
                self.negotiate(verb, b, to_net);
            }
            Rx::SbOption => {
                self.rx = if b == IAC {
                    Rx::SbIac { option: b, len: 0 }
                } else {
                    Rx::Sb { option: b, len: 0 }
                };
            }
            Rx::Sb { option, len } => {
                self.rx = if b == IAC {
                    Rx::SbIac { option, len }
                } else {
                    Rx::Sb {
                        option,
                        len: self.sb_grow(option, len),
                    }
                };
            }
            Rx::SbIac { option, len } => match b {
                SE => self.rx = Rx::Data,
                IAC => {
                    self.rx = Rx::Sb {
                        option,
                        len: self.sb_grow(option, len),
                    }
                }
                _ => {
                    // RFC 855 only defines IAC SE and IAC IAC here. Treat any other command as the
                    // end of a broken subnegotiation and obey it, so a peer that forgot SE does not
                    // swallow the rest of the session.
                    self.note(Error::UnterminatedSubnegotiation { option, command: b });
                    self.command(b, to_app, to_net);
                }
            },
        }
    }

    /// Count one subnegotiation payload byte, reporting the limit once.
    fn sb_grow(&mut self, option: u8, len: usize) -> usize {
        let len = len.saturating_add(1);
        if len == MAX_SUBNEGOTIATION + 1 {
            self.note(Error::SubnegotiationTooLong {
                option,
                limit: MAX_SUBNEGOTIATION,
            });
        }
        len
    }

    /// Handle the byte after `IAC` (outside a subnegotiation).
    fn command(&mut self, b: u8, to_app: &mut Vec<u8>, to_net: &mut Vec<u8>) {
        self.rx = Rx::Data;
        self.peer_spoke |= b != IAC;
        match b {
            IAC => {
                to_app.push(IAC);
                self.rx_cr = false;
            }
            WILL | WONT | DO | DONT => self.rx = Rx::Verb(b),
            SB => self.rx = Rx::SbOption,
            SE => self.note(Error::StraySe),
            AYT => {
                to_net.extend_from_slice(AYT_REPLY);
                // The reply ends in LF, so no CR NUL stuffing is pending on the wire.
                self.tx_wire_cr = false;
            }
            // Ctrl-Z or Ctrl-D on a line-mode client: the key the BBS ends a message with.
            SUSP | EOF if !self.transparent => {
                to_app.push(END_KEY);
                self.rx_cr = false;
            }
            // NOP, DM (we do not use TCP urgent data, so a Synch's DM is a no-op), BRK, IP, AO,
            // ABORT, EC, EL, GA: nothing for a line-oriented BBS to do.
            GA | EL | EC | AO | IP | BRK | DM | NOP | ABORT | SUSP | EOF => {}
            _ => self.note(Error::UnknownCommand(b)),
        }
    }

    /// Whether we agree to enable `option` on our side.
    fn accept_us(&self, option: u8) -> bool {
        match option {
            opt::SGA => true,
            opt::ECHO => self.hide_requested || self.char_mode(),
            _ => false,
        }
    }

    /// Whether we agree that the peer enables `option` on its side: SGA only (never ECHO; see
    /// the crate docs).
    fn accept_him(&self, option: u8) -> bool {
        option == opt::SGA
    }

    /// Handle `IAC verb option` (RFC 1143 section 7).
    fn negotiate(&mut self, verb: u8, option: u8, to_net: &mut Vec<u8>) {
        if option == opt::TM && matches!(verb, DO | DONT) {
            // Everything before it is processed: say so. Never on, so the next DO is answered
            // too; a DONT needs no answer.
            if verb == DO {
                to_net.extend_from_slice(&[IAC, WILL, opt::TM]);
                self.tx_wire_cr = false;
            }
            return;
        }
        let i = usize::from(option);
        let result = match verb {
            DO => {
                let ok = self.accept_us(option);
                self.options[i]
                    .us
                    .received_enable(ok, Wire::US, option, to_net)
            }
            DONT => self.options[i]
                .us
                .received_disable(Wire::US, option, to_net),
            WILL => {
                let ok = self.accept_him(option);
                self.options[i]
                    .him
                    .received_enable(ok, Wire::HIM, option, to_net)
            }
            _ => self.options[i]
                .him
                .received_disable(Wire::HIM, option, to_net),
        };
        if let Err(e) = result {
            self.note(e);
        }
        if self.role == Role::Server && option == opt::SGA && matches!(verb, DO | DONT) {
            self.follow_char_mode(to_net);
        }
    }

    /// The client entered or left character mode: echo for it there, let it echo in line mode.
    fn follow_char_mode(&mut self, to_net: &mut Vec<u8>) {
        let char_mode = self.char_mode();
        let echo = &mut self.options[usize::from(opt::ECHO)].us;
        if char_mode {
            echo.request_enable(Wire::US, opt::ECHO, to_net);
        } else if !self.hide_requested {
            echo.request_disable(Wire::US, opt::ECHO, to_net);
        }
    }

    /// Ask the client not to echo (for a password): sends `IAC WILL ECHO` (we claim to echo and
    /// don't). `false` sends `IAC WONT ECHO`. Negotiation is queued per RFC 1143, so calling this
    /// again before the peer answered is safe; nothing is sent if the state already matches.
    pub fn set_hide_input(&mut self, hide: bool, to_net: &mut Vec<u8>) {
        self.hide_requested = hide;
        // What was typed blind is not on the screen.
        self.editor.clear();
        let char_mode = self.char_mode();
        let echo = &mut self.options[usize::from(opt::ECHO)].us;
        if hide {
            echo.request_enable(Wire::US, opt::ECHO, to_net);
        } else if !char_mode {
            echo.request_disable(Wire::US, opt::ECHO, to_net);
        }
    }

    /// Whether the peer agreed to our ECHO, i.e. its local echo is off right now.
    pub fn is_input_hidden(&self) -> bool {
        self.local_enabled(opt::ECHO)
    }

    /// Whether `option` is in effect on our side (we said WILL and the peer agreed, or vice versa).
    pub fn local_enabled(&self, option: u8) -> bool {
        self.options[usize::from(option)].us.is_enabled()
    }

    /// Whether `option` is in effect on the peer's side.
    pub fn remote_enabled(&self, option: u8) -> bool {
        self.options[usize::from(option)].him.is_enabled()
    }

    /// Whether the peer has sent any telnet command (an `IAC` not followed by `IAC`): a peer
    /// that never has may be a raw TCP client that neither doubles 0xFF nor reads IAC.
    pub fn peer_sent_command(&self) -> bool {
        self.peer_spoke
    }

    /// The first protocol anomaly seen since the last call, if any. Later anomalies seen while
    /// one is pending are not kept (memory stays bounded); none of them stops decoding.
    pub fn poll_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn note(&mut self, e: Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Encode application output for the wire: every line end (`CR`, `LF`, `CR LF`; a `CR` at the
    /// end of one call followed by `LF` at the start of the next counts as one) becomes `CR LF`,
    /// and `0xFF` is doubled.
    pub fn send(&mut self, data: &[u8], to_net: &mut Vec<u8>) {
        to_net.reserve(data.len() + data.len() / 8);
        for &b in data {
            match b {
                CR => {
                    self.put(CR, to_net);
                    self.put(LF, to_net);
                    self.tx_line_cr = true;
                }
                LF if self.tx_line_cr => self.tx_line_cr = false,
                LF => {
                    self.put(CR, to_net);
                    self.put(LF, to_net);
                }
                _ => {
                    self.put(b, to_net);
                    self.tx_line_cr = false;
                }
            }
        }
    }

    /// Like [`Telnet::send`] but with no line-ending translation: `0xFF` is doubled, and a NUL
    /// right after a CR is sent as `NUL NUL` so that the peer's `CR NUL` -> `CR` rule gives back
    /// the original `CR NUL` (RFC 854 defines `CR NUL` as a bare CR). Any other byte, bare CR
    /// included, goes out as it is. Ends the pairing of a `send` CR with a later LF.
    pub fn send_raw(&mut self, data: &[u8], to_net: &mut Vec<u8>) {
        to_net.reserve(data.len() + data.len() / 8);
        for &b in data {
            self.put(b, to_net);
        }
        self.tx_line_cr = false;
    }

    /// Put one data byte on the wire, escaped.
    fn put(&mut self, b: u8, to_net: &mut Vec<u8>) {
        match b {
            IAC => to_net.extend_from_slice(&[IAC, IAC]),
            NUL if self.tx_wire_cr => to_net.extend_from_slice(&[NUL, NUL]),
            _ => to_net.push(b),
        }
        self.tx_wire_cr = b == CR && !self.transparent;
    }

    /// Switch binary transparency on or off. On, the data path only escapes IAC (doubled on
    /// send, undoubled on receive): a CR NUL received stays CR NUL and a NUL after a CR is sent
    /// as it is. FBB compressed forwarding runs over telnet links this way without negotiating
    /// TRANSMIT-BINARY (xfbbd and JNOS do), and the NVT rule would corrupt its binary blocks.
    pub fn set_transparent(&mut self, on: bool) {
        self.transparent = on;
        if on {
            self.rx_cr = false;
            self.tx_wire_cr = false;
        }
    }
}
