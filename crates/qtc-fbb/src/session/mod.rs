//! The forwarding session state machine (spec §1–§5), both roles, every mode.
//!
//! # Driving a [`Session`]
//! 1. `Session::new(role, config)`, then `start(now)`.
//! 2. Feed bytes from the connection with `handle_input(now, bytes)`; call `handle_eof(now)`
//!    when the peer closes and `handle_timeout(now)` when `poll_timeout()` passes.
//! 3. After every call drain, in this order: `poll_transmit(&mut buf)` until it returns 0
//!    (write those bytes), `poll_event()` until `None` (answer events with `offer`, `answer`,
//!    `committed`), then re-read `poll_timeout()`.
//! 4. On [`Event::Closed`] write what `poll_transmit` still yields and close the connection.

mod types;

pub use types::*;

use crate::challenge;
use crate::wire::b2f;
use crate::wire::block::{self, Decoder, Encoder, Frame, OffsetPad};
use crate::wire::mbl::{MblAnswer, SendLine};
use crate::wire::proposal::{
    self as wp, AnswerCode, B2Proposal, Dialect, FbbLine, FbbProposal, MsgType, ProposalLine,
    MAX_PROPOSALS,
};
use crate::wire::sid::{forwards_line, trim_end, Flags, Mode, Sid, SidInfo};
use crate::Error;
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Instant;
use tracing::{debug, trace, warn};

const CTRL_Z: u8 = 0x1A;
/// Longest silence, as caller, between the login and the partner's prompt.
const PROMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// At most this many `;FW:` calls are kept (a Winlink station names itself and a few others).
const MAX_PEER_FORWARDS: usize = 32;
const PROPOSAL_CHECKSUM_ERROR: &str = "*** Checksum error (Checsum of proposals is wrong.)";
const MESSAGE_CHECKSUM_ERROR: &str = "*** Checksum error (Checsum of message is wrong.)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// FBB batch. `peer_ff`: the peer's last turn was FF (so nothing from us means FQ).
    /// `may_yield`: we refused everything just now; a peer that keeps proposing
    /// (wl2k-go) may take the turn back.
    Fbb {
        peer_ff: bool,
        may_yield: bool,
    },
    Mbl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterCommit {
    FbbTurn,
    MblPrompt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    CallerWaitPrompt,
    CalledWaitSid,
    MblWaitPrompt,
    WaitOffer(Turn),
    FbbWaitAnswer,
    FbbWaitPeer,
    FbbReadBlock,
    FbbWaitApp,
    Receiving,
    WaitCommit(AfterCommit),
    MblWaitSLine,
    MblWaitApp,
    MblWaitAnswer,
    MblWaitPromptAfter,
    MblDone,
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Text,
    B0,
    B1,
    B2,
}

#[derive(Debug)]
struct OutMsg {
    msg: Outgoing,
    line: Vec<u8>,
    file: Option<Bytes>,
}

#[derive(Debug)]
struct RxMsg {
    proposal: Proposal,
    codec: Codec,
    prefix: Option<Bytes>,
}

#[derive(Debug)]
enum RxProgress {
    Body { title: Vec<u8>, body: Vec<u8> },
    Binary(Decoder),
}

/// One forwarding session with one partner. See the module docs for how to drive it.
#[derive(Debug)]
pub struct Session {
    role: Role,
    cfg: Config,
    state: State,
    mode: Option<Mode>,
    peer: Option<SidInfo>,
    peer_flags: Flags,
    seen_sid: Option<SidInfo>,
    /// A Winlink `;PQ` challenge seen before the partner's prompt (answered after our SID).
    winlink_challenge: Option<String>,
    /// Calls the partner collects mail for (Winlink `;FW:` line), upper case, no SSID.
    peer_forwards: Vec<String>,
    /// The partner has sent an FBB batch line (answer, proposal, FF, FQ) in this session.
    peer_spoke_fbb: bool,
    /// We sent a message from a resume offset and it is not acknowledged yet.
    resumed_unacked: bool,
    inbuf: Vec<u8>,
    pos: usize,
    skip_lf: bool,
    out: Vec<u8>,
    out_pos: usize,
    events: VecDeque<Event>,
    deadline: Option<Instant>,
    pending: VecDeque<Outgoing>,
    offer_outstanding: bool,
    block: Vec<OutMsg>,
    /// The block in flight was proposed after the peer's FF (nothing more from us means FQ).
    block_after_ff: bool,
    unacked: Vec<(u64, Outcome)>,
    incoming: Vec<Proposal>,
    in_sum: u8,
    rx: VecDeque<RxMsg>,
    rx_cur: Option<RxProgress>,
}

fn is_prompt(line: &[u8]) -> bool {
    trim_end(line).last() == Some(&b'>')
}

/// The called side's normal end of MBL forwarding: `*** Done` (JNOS, qtc) or `*** DONE`
/// (LinBPQ, which then disconnects).
fn is_mbl_done(line: &[u8]) -> bool {
    line.len() >= 8 && line[..8].eq_ignore_ascii_case(b"*** Done")
}

fn is_peer_error(line: &[u8]) -> bool {
    line.starts_with(b"*** ")
}

fn ignorable(line: &[u8]) -> bool {
    trim_end(line).is_empty() || line.first() == Some(&b';')
}

fn lossy(line: &[u8]) -> String {
    String::from_utf8_lossy(trim_end(line)).into_owned()
}

/// CR/LF/^Z/NUL become spaces; cut to the header limit.
fn clean_title(title: &[u8]) -> Vec<u8> {
    title
        .iter()
        .take(block::MAX_TITLE_LEN)
        .map(|&b| match b {
            b'\r' | b'\n' | CTRL_Z | 0 => b' ',
            b => b,
        })
        .collect()
}

/// CR LF / CR / LF -> CR, ^Z dropped, final CR ensured; then `^Z CR`.
fn emit_wire_text(text: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\r' => {
                out.push(b'\r');
                if text.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
            }
            b'\n' => out.push(b'\r'),
            CTRL_Z => {}
            b => out.push(b),
        }
        i += 1;
    }
    if !text.is_empty() && out.last() != Some(&b'\r') {
        out.push(b'\r');
    }
    out.extend_from_slice(&[CTRL_Z, b'\r']);
}

impl Session {
    /// A session in `role`; nothing happens until [`Session::start`].
    pub fn new(role: Role, mut cfg: Config) -> Session {
        cfg.max_proposals = cfg.max_proposals.clamp(1, MAX_PROPOSALS);
        Session {
            role,
            cfg,
            state: State::Idle,
            mode: None,
            peer: None,
            peer_flags: Flags::default(),
            seen_sid: None,
            winlink_challenge: None,
            peer_forwards: Vec::new(),
            peer_spoke_fbb: false,
            resumed_unacked: false,
            inbuf: Vec::new(),
            pos: 0,
            skip_lf: false,
            out: Vec::new(),
            out_pos: 0,
            events: VecDeque::new(),
            deadline: None,
            pending: VecDeque::new(),
            offer_outstanding: false,
            block: Vec::new(),
            block_after_ff: false,
            unacked: Vec::new(),
            incoming: Vec::new(),
            in_sum: 0,
            rx: VecDeque::new(),
            rx_cur: None,
        }
    }

    /// Begin: the called side sends SID, greeting and prompt; the caller starts waiting for
    /// the prompt. Calling it again does nothing.
    pub fn start(&mut self, now: Instant) {
        if self.state != State::Idle {
            return;
        }
        match self.role {
            Role::Called => {
                let sid = self.our_sid(self.cfg.max_mode);
                self.send_line(sid.as_bytes());
                for g in self.cfg.greeting.clone() {
                    self.send_line(g.as_bytes());
                }
                let prompt = format!("de {}>", self.cfg.callsign);
                self.send_line(prompt.as_bytes());
                self.state = State::CalledWaitSid;
            }
            Role::Caller => self.state = State::CallerWaitPrompt,
        }
        self.process();
        self.rearm(now, true);
    }

    /// Bytes received from the peer.
    pub fn handle_input(&mut self, now: Instant, bytes: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        self.inbuf.extend_from_slice(bytes);
        self.process();
        self.rearm(now, true);
    }

    /// The peer closed the connection.
    pub fn handle_eof(&mut self, now: Instant) {
        match self.state {
            State::Closed => {}
            State::MblDone => self.close_clean(),
            // xfbbd, asked for its mail with our `F>`, hangs up when it has no more: nothing
            // is in flight, so that is the end of the session, as `*** DONE` is from LinBPQ.
            State::MblWaitSLine if self.role == Role::Caller && self.buffered().is_empty() => {
                self.close_clean()
            }
            _ => {
                self.out.clear();
                self.out_pos = 0;
                self.fail(Error::ConnectionLost);
            }
        }
        self.rearm(now, false);
    }

    /// Call when `poll_timeout()` has passed; early or repeated calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(d) = self.deadline {
            if now >= d && self.state != State::Closed {
                debug!(state = ?self.state, "fbb idle timeout");
                let waiting_for = self.awaited();
                self.fail(Error::Timeout { waiting_for });
            }
        }
        self.rearm(now, false);
    }

    /// Abort the session from our side ([`Event::Closed`] with [`Error::LocalClose`]).
    pub fn close(&mut self, now: Instant) {
        if self.state != State::Closed {
            self.fail(Error::LocalClose);
        }
        self.rearm(now, false);
    }

    /// Append bytes to send (CR line ends) to `buf`; returns how many (0: nothing).
    #[must_use]
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> usize {
        let n = (self.out.len() - self.out_pos).min(MAX_TRANSMIT_CHUNK);
        buf.extend_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        n
    }

    /// The next event for the application.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call `handle_timeout`: armed only while we wait for the peer.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// The agreed mode, once connected.
    pub fn mode(&self) -> Option<Mode> {
        self.mode
    }

    /// The peer's SID, once connected (if it sent one).
    pub fn peer_sid(&self) -> Option<&SidInfo> {
        self.peer.as_ref()
    }

    /// The calls the partner announced it collects mail for (`;FW: CALL ...`, sent by Winlink
    /// software before its SID): upper case, SSID and `@` part dropped. Known from
    /// [`Event::Connected`] on.
    pub fn peer_forwards(&self) -> &[String] {
        &self.peer_forwards
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Our role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether [`Event::Closed`] has been emitted.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Answer [`Event::NeedOutgoing`]: the messages we have for this partner (empty: none).
    /// More than a block's worth is fine: the rest is proposed in later turns. Do not offer
    /// a message again before it is acknowledged or the session has closed. Like `answer`
    /// and `committed`, a call after [`Event::Closed`] does nothing and returns `Ok`.
    pub fn offer(&mut self, now: Instant, msgs: Vec<Outgoing>) -> Result<(), Error> {
        if self.state == State::Closed {
            return Ok(());
        }
        if !self.offer_outstanding {
            return Err(Error::InvalidCall("offer() without a pending NeedOutgoing"));
        }
        self.offer_outstanding = false;
        self.pending.extend(msgs);
        if let State::WaitOffer(turn) = self.state {
            self.propose(turn);
        }
        self.process();
        self.rearm(now, true);
        Ok(())
    }

    /// Answer [`Event::Proposals`]: one [`Answer`] per proposal, in order.
    pub fn answer(&mut self, now: Instant, answers: Vec<Answer>) -> Result<(), Error> {
        match self.state {
            State::FbbWaitApp | State::MblWaitApp => {}
            State::Closed => return Ok(()),
            _ => return Err(Error::InvalidCall("answer() without pending Proposals")),
        }
        if answers.len() != self.incoming.len() {
            return Err(Error::AnswerCount {
                expected: self.incoming.len(),
                got: answers.len(),
            });
        }
        let proposals = std::mem::take(&mut self.incoming);
        if self.state == State::FbbWaitApp {
            self.answer_fbb(proposals, answers);
        } else {
            self.answer_mbl(proposals, answers);
        }
        self.process();
        self.rearm(now, true);
        Ok(())
    }

    /// Answer [`Event::BlockComplete`]: the block is stored; the session may go on.
    pub fn committed(&mut self, now: Instant) -> Result<(), Error> {
        if self.state == State::Closed {
            return Ok(());
        }
        let State::WaitCommit(then) = self.state else {
            return Err(Error::InvalidCall(
                "committed() without a pending BlockComplete",
            ));
        };
        match then {
            AfterCommit::FbbTurn => self.start_turn(Turn::Fbb {
                peer_ff: false,
                may_yield: false,
            }),
            AfterCommit::MblPrompt => {
                self.send_mbl_prompt();
                self.state = State::MblWaitSLine;
            }
        }
        self.process();
        self.rearm(now, true);
        Ok(())
    }

    // ---- plumbing ----

    fn our_sid(&self, mode: Mode) -> String {
        Sid {
            name: &self.cfg.software,
            version: &self.cfg.version,
            flags: Flags::ours(mode),
        }
        .to_string()
    }

    fn send_line(&mut self, line: &[u8]) {
        trace!(line = %String::from_utf8_lossy(line), "fbb >");
        self.out.extend_from_slice(line);
        self.out.push(b'\r');
    }

    fn send_mbl_prompt(&mut self) {
        match self.role {
            Role::Called => self.send_line(b">"),
            Role::Caller => self.send_line(b"F>"),
        }
    }

    fn waits_for_peer(&self) -> bool {
        !matches!(
            self.state,
            State::Idle
                | State::Closed
                | State::WaitOffer(_)
                | State::FbbWaitApp
                | State::MblWaitApp
                | State::WaitCommit(_)
        )
    }

    /// What the partner owes us in the current state, for the timeout message.
    fn awaited(&self) -> &'static str {
        match self.state {
            State::CallerWaitPrompt => {
                "prompt after the login (a line ending in '>'; a pager prompt such as \
                 xfbbd's '-->' means the user we log in as is not a BBS there)"
            }
            State::CalledWaitSid => "SID",
            State::FbbWaitAnswer => "answer to our proposals (FS)",
            State::FbbWaitPeer => "proposals, FF or FQ",
            State::FbbReadBlock => "rest of its proposal block (F>)",
            State::Receiving => "message data",
            State::MblWaitPrompt | State::MblWaitPromptAfter => "MBL prompt (>)",
            State::MblWaitAnswer => "answer to our S line",
            _ => "next line",
        }
    }

    fn rearm(&mut self, now: Instant, activity: bool) {
        if self.waits_for_peer() {
            if activity || self.deadline.is_none() {
                // A login that stopped short of the prompt (a pager, a menu) will not go on
                // by itself: give up after the login's time rather than the idle timeout.
                let wait = match self.state {
                    State::CallerWaitPrompt => self.cfg.idle_timeout.min(PROMPT_TIMEOUT),
                    _ => self.cfg.idle_timeout,
                };
                self.deadline = Some(now + wait);
            }
        } else {
            self.deadline = None;
        }
    }

    fn close_clean(&mut self) {
        self.state = State::Closed;
        self.deadline = None;
        self.events.push_back(Event::Closed { error: None });
    }

    fn fail(&mut self, err: Error) {
        if self.state == State::Closed {
            return;
        }
        debug!(error = %err, state = ?self.state, "fbb session failed");
        let line = match &err {
            Error::ProposalChecksum { .. } => Some(PROPOSAL_CHECKSUM_ERROR.to_owned()),
            Error::BlockChecksum { .. } => Some(MESSAGE_CHECKSUM_ERROR.to_owned()),
            Error::Timeout { .. }
            | Error::ConnectionLost
            | Error::LocalClose
            | Error::PeerError(_)
            | Error::PeerAborted(_) => None,
            Error::Protocol { reason, .. } => Some(format!("*** Protocol error: {reason}")),
            other => Some(format!("*** Protocol error: {other}")),
        };
        if let Some(l) = line {
            self.send_line(l.as_bytes());
        }
        self.emit_partial();
        self.state = State::Closed;
        self.deadline = None;
        self.events.push_back(Event::Closed { error: Some(err) });
    }

    fn emit_partial(&mut self) {
        if self.state != State::Receiving {
            return;
        }
        let Some(RxProgress::Binary(dec)) = self.rx_cur.take() else {
            return;
        };
        let Some(rx) = self.rx.front() else { return };
        if !matches!(rx.codec, Codec::B1 | Codec::B2) {
            return;
        }
        let Some((_, offset)) = dec.header() else {
            return;
        };
        let data = dec.data();
        let file = match (&rx.prefix, offset) {
            (Some(_), off) if off > 0 && data.len() < 6 => return,
            (Some(prefix), off) if off > 0 && off as usize == prefix.len() => {
                let head = prefix.len().min(6);
                if data[..head] == prefix[..head] {
                    [prefix, &data[6..]].concat()
                } else if rx.codec == Codec::B1 {
                    // FBB's 6 check bytes say the partner's file is not the one we kept a
                    // piece of: drop it (an empty partial), so the next try starts from 0.
                    Vec::new()
                } else {
                    // wl2k-go resumes with the data alone.
                    [prefix, data].concat()
                }
            }
            _ if data.is_empty() => return,
            _ => data.to_vec(),
        };
        self.events.push_back(Event::Partial {
            bid: rx.proposal.bid.clone(),
            data: Bytes::from(file),
        });
    }

    /// The partner's resumed file is not the one we kept the start of: have the application
    /// drop the partial, so the message comes from 0 next time rather than `A<offset>` again.
    fn drop_partial(&mut self) {
        if let Some(rx) = self.rx.front() {
            self.events.push_back(Event::Partial {
                bid: rx.proposal.bid.clone(),
                data: Bytes::new(),
            });
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.inbuf[self.pos..]
    }

    /// Find the next complete line: (start, end, next position, ended by CR).
    fn find_line(&mut self, max: usize) -> Result<Option<(usize, usize, usize, bool)>, Error> {
        if self.skip_lf && self.pos < self.inbuf.len() {
            self.skip_lf = false;
            if self.inbuf[self.pos] == b'\n' {
                self.pos += 1;
            }
        }
        let buf = self.buffered();
        match buf.iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(i) if i > max => Err(Error::LineTooLong { max }),
            Some(i) => Ok(Some((
                self.pos,
                self.pos + i,
                self.pos + i + 1,
                buf[i] == b'\r',
            ))),
            None if buf.len() > max => Err(Error::LineTooLong { max }),
            None => Ok(None),
        }
    }

    fn take_line(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.find_line(max)?.map(|(s, e, next, cr)| {
            let line = self.inbuf[s..e].to_vec();
            self.pos = next;
            self.skip_lf = cr;
            trace!(line = %String::from_utf8_lossy(&line), "fbb <");
            line
        }))
    }

    fn process(&mut self) {
        loop {
            if self.state == State::Closed {
                self.inbuf.clear();
                self.pos = 0;
                return;
            }
            match self.step() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        if self.pos > 0 {
            self.inbuf.drain(..self.pos);
            self.pos = 0;
        }
        if !self.waits_for_peer() && self.inbuf.len() > MAX_BUFFERED_INPUT {
            self.fail(Error::InputOverflow {
                max: MAX_BUFFERED_INPUT,
            });
        }
    }

    fn step(&mut self) -> Result<bool, Error> {
        match self.state {
            State::Idle
            | State::Closed
            | State::FbbWaitApp
            | State::MblWaitApp
            | State::WaitCommit(_) => Ok(false),
            State::WaitOffer(Turn::Fbb {
                may_yield: true, ..
            }) => {
                // The peer may keep the turn after we refused all it offered (wl2k-go).
                let Some((s, e, next, cr)) = self.find_line(MAX_LINE_LEN)? else {
                    return Ok(false);
                };
                let line = self.inbuf[s..e].to_vec();
                if ignorable(&line) {
                    self.pos = next;
                    self.skip_lf = cr;
                    return Ok(true);
                }
                if matches!(line.as_slice(), [b'F', b'A' | b'B' | b'C', ..]) {
                    self.pos = next;
                    self.skip_lf = cr;
                    debug!("peer keeps the turn after an all-refused block");
                    self.state = State::FbbWaitPeer;
                    self.on_line(line)?;
                    return Ok(true);
                }
                Ok(false)
            }
            State::WaitOffer(_) => Ok(false),
            State::Receiving => self.step_receive(),
            _ => match self.take_line(MAX_LINE_LEN)? {
                None => Ok(false),
                Some(line) => {
                    self.on_line(line)?;
                    Ok(true)
                }
            },
        }
    }

    fn on_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if matches!(self.state, State::CallerWaitPrompt | State::CalledWaitSid) {
            if let Some(calls) = forwards_line(&line) {
                let room = MAX_PEER_FORWARDS.saturating_sub(self.peer_forwards.len());
                self.peer_forwards.extend(calls.into_iter().take(room));
                return Ok(());
            }
        }
        match self.state {
            State::CallerWaitPrompt => {
                if Sid::is_sid_line(&line) {
                    if let Ok(s) = Sid::parse(&line) {
                        self.seen_sid = Some(s.to_info());
                    }
                } else if let Some(c) = challenge::winlink_challenge(&line) {
                    self.winlink_challenge = Some(c);
                } else if let Some(answer) = self
                    .cfg
                    .secret
                    .as_deref()
                    .and_then(|secret| challenge::sys_answer(&line, secret))
                {
                    debug!("answering the partner's SYS challenge");
                    self.send_line(answer.as_bytes());
                } else if is_prompt(&line) {
                    let sid = self.seen_sid.take();
                    let mode = self.connect(sid);
                    let ours = self.our_sid(mode);
                    self.send_line(ours.as_bytes());
                    if let Some(c) = self.winlink_challenge.take() {
                        match self.cfg.secret.as_deref() {
                            Some(secret) => {
                                let pr = format!(";PR: {}", challenge::winlink_response(&c, secret));
                                self.send_line(pr.as_bytes());
                            }
                            None => warn!("the partner asks for a Winlink secure login (;PQ) and no secret is set"),
                        }
                    }
                    if mode.is_batch() {
                        self.start_turn(Turn::Fbb {
                            peer_ff: false,
                            may_yield: false,
                        });
                    } else {
                        self.state = State::MblWaitPrompt;
                    }
                }
                Ok(())
            }
            State::CalledWaitSid => {
                if ignorable(&line) {
                    return Ok(());
                }
                if Sid::is_sid_line(&line) {
                    let sid = Sid::parse(&line)
                        .map_err(|e| Error::protocol(&line, format!("bad SID: {e}")))?
                        .to_info();
                    let mode = self.connect(Some(sid));
                    if mode.is_batch() {
                        self.state = State::FbbWaitPeer;
                    } else {
                        self.send_mbl_prompt();
                        self.state = State::MblWaitSLine;
                    }
                    Ok(())
                } else if SendLine::is_send_line(&line) {
                    // An MBL partner that sends no SID.
                    self.connect(None);
                    self.state = State::MblWaitSLine;
                    self.on_line(line)
                } else if matches!(trim_end(&line), b"B" | b"b" | b"BYE" | b"bye") {
                    // A partner that logs off before forwarding anything (xfbbd closes quietly).
                    self.close_clean();
                    Ok(())
                } else {
                    Err(Error::protocol(&line, "expected the caller's SID"))
                }
            }
            State::MblWaitPrompt => {
                if is_peer_error(&line) {
                    return Err(Error::PeerError(lossy(&line)));
                }
                if is_prompt(&line) {
                    self.start_turn(Turn::Mbl);
                }
                Ok(())
            }
            State::FbbWaitAnswer => self.on_fbb_answer(line),
            State::FbbWaitPeer => self.on_fbb_peer_turn(line),
            State::FbbReadBlock => self.on_fbb_block_line(line),
            State::MblWaitSLine => self.on_mbl_command(line),
            State::MblWaitAnswer => self.on_mbl_answer(line),
            State::MblWaitPromptAfter => {
                if is_peer_error(&line) {
                    return Err(Error::PeerError(lossy(&line)));
                }
                if is_prompt(&line) {
                    self.ack_unacked();
                    self.start_turn(Turn::Mbl);
                }
                Ok(())
            }
            State::MblDone => {
                let l = trim_end(&line);
                if l.eq_ignore_ascii_case(b"B") || l.eq_ignore_ascii_case(b"BYE") {
                    self.close_clean();
                }
                Ok(())
            }
            _ => Err(Error::protocol(&line, "unexpected line")),
        }
    }

    fn connect(&mut self, sid: Option<SidInfo>) -> Mode {
        self.peer_flags = sid.as_ref().map(|s| s.flags).unwrap_or_default();
        let mode = Mode::negotiate(
            &Flags::ours(self.cfg.max_mode),
            &self.peer_flags,
            self.cfg.max_mode,
        );
        debug!(?mode, peer = ?sid, "fbb connected");
        self.mode = Some(mode);
        self.peer = sid.clone();
        self.events.push_back(Event::Connected {
            peer_sid: sid,
            mode,
        });
        mode
    }

    fn peer_is_winlink(&self) -> bool {
        self.peer.as_ref().is_some_and(SidInfo::is_winlink_client)
    }

    fn mode_or_mbl(&self) -> Mode {
        self.mode.unwrap_or(Mode::Mbl)
    }

    /// Whether a transfer we resumed (sent from an offset) is not yet acknowledged: a session
    /// failing now may be the partner refusing our resumes (64-bit LinFBB refuses them all).
    pub fn resumed_unacked(&self) -> bool {
        self.resumed_unacked
    }

    fn ack_unacked(&mut self) {
        self.resumed_unacked = false;
        for (id, outcome) in self.unacked.drain(..) {
            self.events.push_back(Event::Acknowledged { id, outcome });
        }
    }

    // ---- our turn ----

    fn start_turn(&mut self, turn: Turn) {
        if self.pending.is_empty() {
            if !self.offer_outstanding {
                self.offer_outstanding = true;
                let max = match turn {
                    Turn::Mbl => 1,
                    Turn::Fbb { .. } => self.cfg.max_proposals,
                };
                self.events.push_back(Event::NeedOutgoing { max });
            }
            self.state = State::WaitOffer(turn);
        } else {
            self.propose(turn);
        }
    }

    fn propose(&mut self, turn: Turn) {
        match turn {
            Turn::Mbl => self.propose_mbl(),
            Turn::Fbb { peer_ff, .. } => self.propose_fbb(peer_ff),
        }
    }

    /// Build the wire line for `msg` in the current mode, or say why it cannot be sent.
    fn prepare(&self, msg: Outgoing) -> Result<OutMsg, (u64, Error)> {
        let mode = self.mode_or_mbl();
        let kind = if msg.kind == MsgType::Ack && !self.peer_flags.ack_messages {
            MsgType::Personal
        } else {
            msg.kind
        };
        let at = if self.peer_flags.hierarchical {
            msg.at.as_str()
        } else {
            msg.at.split('.').next().unwrap_or("")
        };
        let Ok(size) = u32::try_from(msg.text.len()) else {
            return Err((
                msg.id,
                Error::MessageTooLarge {
                    max: u32::MAX as usize,
                },
            ));
        };
        let mut line = Vec::new();
        let mut file = None;
        let checked = match mode {
            Mode::Mbl => {
                let s = SendLine {
                    kind,
                    to: &msg.to,
                    at: (!at.is_empty()).then_some(at),
                    from: (!msg.from.is_empty()).then_some(msg.from.as_str()),
                    bid: (!msg.bid.is_empty()).then_some(msg.bid.as_str()),
                };
                s.emit(&mut line);
                SendLine::parse(&line).map(|_| ())
            }
            Mode::FbbAscii | Mode::B0 | Mode::B1 => {
                let p = ProposalLine::Fbb(FbbProposal {
                    compressed: mode != Mode::FbbAscii,
                    kind,
                    from: &msg.from,
                    at,
                    to: &msg.to,
                    bid: &msg.bid,
                    size,
                });
                p.emit(&mut line);
                p.validate()
            }
            Mode::B2 => match b2f::Message::parse(&msg.text) {
                Err(e) => Err(e),
                Ok(_) => {
                    let f = self.file_form(&msg, mode);
                    let p = ProposalLine::B2(B2Proposal {
                        cms: false,
                        mid: &msg.bid,
                        size,
                        compressed_size: u32::try_from(f.len()).unwrap_or(u32::MAX),
                    });
                    p.emit(&mut line);
                    file = Some(f);
                    p.validate()
                }
            },
        };
        match checked {
            Ok(()) => Ok(OutMsg { msg, line, file }),
            Err(e) => Err((msg.id, e)),
        }
    }

    fn file_form(&self, msg: &Outgoing, mode: Mode) -> Bytes {
        match (mode, &msg.compressed) {
            (Mode::B0, Some(c)) if c.len() >= 6 => c.slice(2..),
            (Mode::B1 | Mode::B2, Some(c)) => c.clone(),
            (Mode::B0, _) => Bytes::from(qtc_lzhuf::compress(&qtc_lzhuf::fbb_text(&msg.text))),
            (Mode::B2, _) => Bytes::from(qtc_lzhuf::compress_with_crc(&msg.text)),
            _ => Bytes::from(qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(
                &msg.text,
            ))),
        }
    }

    fn next_sendable(&mut self) -> Option<OutMsg> {
        while let Some(msg) = self.pending.pop_front() {
            match self.prepare(msg) {
                Ok(m) => return Some(m),
                Err((id, e)) => {
                    debug!(id, error = %e, "unsendable message");
                    self.events.push_back(Event::Acknowledged {
                        id,
                        outcome: Outcome::Unsendable(e),
                    });
                }
            }
        }
        None
    }

    fn propose_fbb(&mut self, peer_ff: bool) {
        let mut total = 0usize;
        let mut block = Vec::new();
        while block.len() < self.cfg.max_proposals
            && (block.is_empty() || total < self.cfg.block_budget)
        {
            let Some(m) = self.next_sendable() else { break };
            total += m.msg.text.len();
            block.push(m);
        }
        if block.is_empty() {
            if peer_ff {
                self.send_line(b"FQ");
                self.close_clean();
            } else {
                self.send_line(b"FF");
                self.state = State::FbbWaitPeer;
            }
            return;
        }
        let mut sum = 0u8;
        let mut plain = true;
        for m in &block {
            sum = wp::checksum_add(sum, &m.line);
            plain &= m.line.starts_with(b"FB");
            let line = m.line.clone();
            self.send_line(&line);
        }
        // JNOS rewrites a first FB into FA internally and would then reject the checksum
        // (spec §4): plain `F>` after uncompressed proposals.
        let mut end = Vec::new();
        wp::emit_end((!plain).then(|| wp::checksum_value(sum)), &mut end);
        self.send_line(&end);
        self.block = block;
        self.block_after_ff = peer_ff;
        self.state = State::FbbWaitAnswer;
    }

    fn propose_mbl(&mut self) {
        if let Some(m) = self.next_sendable() {
            let line = m.line.clone();
            self.send_line(&line);
            self.block = vec![m];
            self.state = State::MblWaitAnswer;
            return;
        }
        match self.role {
            Role::Caller if self.cfg.mbl_reverse => {
                self.send_line(b"F>");
                self.state = State::MblWaitSLine;
            }
            Role::Caller => {
                self.send_line(b"B");
                self.close_clean();
            }
            Role::Called => {
                self.send_line(b"*** Done");
                self.state = State::MblDone;
            }
        }
    }

    /// LinBPQ takes FBB batch mode only from other BPQs: to anyone else it answers our SID
    /// with a bare MBL prompt `>` and ignores `FA`/`FB`/`FF`. A bare `>` as the partner's
    /// first answer after our SID therefore means it speaks MBL.
    fn answers_in_mbl(&self, line: &[u8]) -> bool {
        self.role == Role::Caller && !self.peer_spoke_fbb && trim_end(line) == b">"
    }

    fn fall_back_to_mbl(&mut self) {
        warn!(
            peer = ?self.peer.as_ref().map(|s| &s.name),
            "the partner answers FBB proposals with an MBL prompt: going on in MBL \
             (set its protocol to mbl to avoid the detour)"
        );
        self.mode = Some(Mode::Mbl);
        self.events.push_back(Event::Connected {
            peer_sid: self.peer.clone(),
            mode: Mode::Mbl,
        });
    }

    fn send_text_message(&mut self, m: &OutMsg) {
        let title = clean_title(&m.msg.title);
        self.send_line(&title);
        emit_wire_text(&m.msg.text, &mut self.out);
    }

    fn send_binary_message(&mut self, m: &mut OutMsg, resume: u32) {
        let mode = self.mode_or_mbl();
        let file = match &m.file {
            Some(f) => f.clone(),
            None => {
                let f = self.file_form(&m.msg, mode);
                m.file = Some(f.clone());
                f
            }
        };
        let off = if mode == Mode::B0 || !self.cfg.send_resumes || resume as usize > file.len() {
            0
        } else {
            resume as usize
        };
        self.resumed_unacked |= off > 0;
        let title = clean_title(&m.msg.title);
        let pad = if mode == Mode::B2 {
            OffsetPad::Zero
        } else {
            OffsetPad::Space
        };
        let mut enc = Encoder::new();
        enc.header(&title, off as u32, pad, &mut self.out);
        if off > 0 && mode == Mode::B1 {
            // FBB resume: the first 6 bytes (CRC + length) let the receiver check it is
            // the same file, then the data from the offset (spec §5).
            enc.block(&file[..file.len().min(6)], &mut self.out);
        }
        enc.data(&file[off..], &mut self.out);
        enc.finish(&mut self.out);
    }

    fn on_fbb_answer(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if self.answers_in_mbl(&line) {
            self.fall_back_to_mbl();
            let block = std::mem::take(&mut self.block);
            let plain = block.iter().all(|m| m.line.starts_with(b"FB"));
            for m in block.into_iter().rev() {
                self.pending.push_front(m.msg);
            }
            if plain {
                // Our bare `F>` read as MBL's reverse-forward request: its `S` lines or
                // `*** DONE` come next.
                self.state = State::MblWaitSLine;
            } else {
                self.start_turn(Turn::Mbl);
            }
            return Ok(());
        }
        if ignorable(&line) || (is_prompt(&line) && !line.starts_with(b"F")) {
            return Ok(());
        }
        if is_peer_error(&line) {
            return Err(Error::PeerError(lossy(&line)));
        }
        let codes = match FbbLine::parse(&line) {
            Ok(FbbLine::Answer(codes)) => {
                self.peer_spoke_fbb = true;
                codes
            }
            Ok(_) => return Err(Error::protocol(&line, "expected an FS answer")),
            Err(e) => return Err(Error::protocol(&line, e.to_string())),
        };
        if codes.len() != self.block.len() {
            return Err(Error::protocol(
                &line,
                Error::AnswerCount {
                    expected: self.block.len(),
                    got: codes.len(),
                }
                .to_string(),
            ));
        }
        let block = std::mem::take(&mut self.block);
        let compressed = self.mode_or_mbl().is_compressed();
        let mut any_sent = false;
        for (mut m, code) in block.into_iter().zip(codes) {
            let id = m.msg.id;
            let outcome = match code {
                AnswerCode::Accept | AnswerCode::Resume(_) | AnswerCode::Held => {
                    let resume = if let AnswerCode::Resume(o) = code {
                        o
                    } else {
                        0
                    };
                    if compressed {
                        self.send_binary_message(&mut m, resume);
                    } else {
                        self.send_text_message(&m);
                    }
                    let o = if code == AnswerCode::Held {
                        Outcome::Held
                    } else {
                        Outcome::Sent
                    };
                    self.unacked.push((id, o));
                    any_sent = true;
                    continue;
                }
                AnswerCode::Reject => Outcome::Rejected,
                AnswerCode::Later => Outcome::Later,
                AnswerCode::RejectedByRule => Outcome::RejectedByRule,
                AnswerCode::FormatError => Outcome::FormatError,
            };
            self.events.push_back(Event::Acknowledged { id, outcome });
        }
        if !any_sent && self.peer_is_winlink() {
            // Winlink software refusing a whole block sends neither FF nor proposals: it
            // waits for our next block (LinBPQ goes on the same way).
            debug!("partner refused the whole block; our turn goes on");
            self.start_turn(Turn::Fbb {
                peer_ff: self.block_after_ff,
                may_yield: false,
            });
        } else {
            self.state = State::FbbWaitPeer;
        }
        Ok(())
    }

    // ---- the peer's turn (FBB) ----

    fn on_fbb_peer_turn(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if self.answers_in_mbl(&line) {
            // Our `FF` meant nothing to it; it waits for an MBL command.
            self.fall_back_to_mbl();
            self.start_turn(Turn::Mbl);
            return Ok(());
        }
        if ignorable(&line) || (is_prompt(&line) && !line.starts_with(b"F")) {
            return Ok(());
        }
        if is_peer_error(&line) {
            return Err(Error::PeerError(lossy(&line)));
        }
        let parsed = FbbLine::parse(&line);
        self.peer_spoke_fbb |= parsed.is_ok();
        match parsed {
            Ok(FbbLine::Proposal(p)) => {
                self.ack_unacked();
                self.incoming.clear();
                self.in_sum = 0;
                self.add_proposal(&line, p)?;
                self.state = State::FbbReadBlock;
                Ok(())
            }
            Ok(FbbLine::NoMore) => {
                self.ack_unacked();
                self.start_turn(Turn::Fbb {
                    peer_ff: true,
                    may_yield: false,
                });
                Ok(())
            }
            Ok(FbbLine::Quit) => {
                self.ack_unacked();
                self.close_clean();
                Ok(())
            }
            Ok(_) => Err(Error::protocol(&line, "expected proposals, FF or FQ")),
            Err(e) => Err(Error::protocol(&line, e.to_string())),
        }
    }

    fn add_proposal(&mut self, line: &[u8], p: ProposalLine<'_>) -> Result<(), Error> {
        if self.incoming.len() >= MAX_PROPOSALS {
            return Err(Error::protocol(
                line,
                Error::TooManyProposals { max: MAX_PROPOSALS }.to_string(),
            ));
        }
        let mode = self.mode_or_mbl();
        let prop = match p {
            ProposalLine::Fbb(f) => {
                if f.compressed && !mode.is_compressed() {
                    return Err(Error::protocol(
                        line,
                        "FA proposal but no compression agreed",
                    ));
                }
                Proposal {
                    format: if f.compressed {
                        ProposalFormat::Compressed
                    } else {
                        ProposalFormat::Plain
                    },
                    kind: f.kind,
                    from: f.from.to_owned(),
                    at: f.at.to_owned(),
                    to: f.to.to_owned(),
                    bid: f.bid.to_owned(),
                    size: f.size,
                    compressed_size: None,
                }
            }
            ProposalLine::B2(b) => {
                if mode != Mode::B2 {
                    return Err(Error::protocol(line, "FC proposal but B2 not agreed"));
                }
                Proposal {
                    format: ProposalFormat::B2 { cms: b.cms },
                    kind: MsgType::Personal,
                    from: String::new(),
                    at: String::new(),
                    to: String::new(),
                    bid: b.mid.to_owned(),
                    size: b.size,
                    compressed_size: Some(b.compressed_size),
                }
            }
        };
        self.in_sum = wp::checksum_add(self.in_sum, trim_end(line));
        self.incoming.push(prop);
        Ok(())
    }

    fn on_fbb_block_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) {
            return Ok(());
        }
        match FbbLine::parse(&line) {
            Ok(FbbLine::Proposal(p)) => self.add_proposal(&line, p),
            Ok(FbbLine::End(chk)) => {
                if let Some(c) = chk {
                    if self.in_sum.wrapping_add(c) != 0 {
                        return Err(Error::ProposalChecksum {
                            expected: wp::checksum_value(self.in_sum),
                            got: c,
                        });
                    }
                }
                self.events
                    .push_back(Event::Proposals(self.incoming.clone()));
                self.state = State::FbbWaitApp;
                Ok(())
            }
            Ok(_) => Err(Error::protocol(&line, "expected a proposal or F>")),
            Err(e) => Err(Error::protocol(&line, e.to_string())),
        }
    }

    fn codec_for(&self, p: &Proposal) -> Codec {
        match p.format {
            ProposalFormat::Mbl | ProposalFormat::Plain => Codec::Text,
            ProposalFormat::Compressed if self.mode == Some(Mode::B0) => Codec::B0,
            ProposalFormat::Compressed => Codec::B1,
            ProposalFormat::B2 { .. } => Codec::B2,
        }
    }

    fn answer_fbb(&mut self, proposals: Vec<Proposal>, answers: Vec<Answer>) {
        let mut codes = Vec::with_capacity(answers.len());
        for (p, a) in proposals.into_iter().zip(answers) {
            let codec = self.codec_for(&p);
            let resumable = matches!(codec, Codec::B1 | Codec::B2);
            let (code, prefix) = match a {
                Answer::Accept => (AnswerCode::Accept, None),
                Answer::AcceptFrom { offset, prefix }
                    if resumable && offset > 0 && prefix.len() >= offset as usize =>
                {
                    (
                        AnswerCode::Resume(offset),
                        Some(prefix.slice(..offset as usize)),
                    )
                }
                Answer::AcceptFrom { .. } => (AnswerCode::Accept, None),
                Answer::Held => (AnswerCode::Held, None),
                Answer::Reject => (AnswerCode::Reject, None),
                Answer::Later => (AnswerCode::Later, None),
                Answer::RejectedByRule => (AnswerCode::RejectedByRule, None),
            };
            if code.sends() {
                self.rx.push_back(RxMsg {
                    proposal: p,
                    codec,
                    prefix,
                });
            }
            codes.push(code);
        }
        let dialect = if self.mode_or_mbl() >= Mode::B1 {
            Dialect::B1
        } else {
            Dialect::Plain
        };
        let mut line = Vec::new();
        wp::emit_answer(&codes, dialect, &mut line);
        self.send_line(&line);
        if self.rx.is_empty() && self.peer_is_winlink() {
            // Winlink software keeps the turn after a whole block is refused: its next
            // block or FF follows.
            self.state = State::FbbWaitPeer;
        } else if self.rx.is_empty() {
            self.start_turn(Turn::Fbb {
                peer_ff: false,
                may_yield: true,
            });
        } else {
            self.rx_cur = None;
            self.state = State::Receiving;
        }
    }

    // ---- receiving messages ----

    fn step_receive(&mut self) -> Result<bool, Error> {
        let Some(rx) = self.rx.front() else {
            return Err(Error::InvalidCall("receiving with nothing accepted"));
        };
        if rx.codec == Codec::Text {
            return self.step_receive_text();
        }
        if self.rx_cur.is_none() {
            if self.skip_lf && self.pos < self.inbuf.len() {
                self.skip_lf = false;
                if self.inbuf[self.pos] == b'\n' {
                    self.pos += 1;
                }
            }
            if self.pos == self.inbuf.len() {
                return Ok(false);
            }
            self.rx_cur = Some(RxProgress::Binary(Decoder::new(self.cfg.max_message_size)));
        }
        let Some(RxProgress::Binary(dec)) = self.rx_cur.as_mut() else {
            return Err(Error::InvalidCall("binary receive state lost"));
        };
        let input = &self.inbuf[self.pos..];
        if input.is_empty() {
            return Ok(false);
        }
        let (used, frame) = match dec.decode(input) {
            Ok(r) => r,
            Err(e) => {
                if matches!(e, Error::BlockChecksum { .. }) {
                    self.rx_cur = None; // known-bad data: nothing to resume from
                }
                return Err(e);
            }
        };
        self.pos += used;
        match frame {
            None => Ok(false),
            Some(Frame::Aborted(reason)) => Err(Error::PeerAborted(lossy(&reason))),
            Some(Frame::Message {
                title,
                offset,
                data,
            }) => {
                self.rx_cur = None;
                let done = self.finish_binary(title, offset, data);
                if matches!(done, Err(Error::ResumeMismatch)) {
                    self.drop_partial();
                }
                done.map(|()| true)
            }
        }
    }

    fn finish_binary(&mut self, title: Vec<u8>, offset: u32, data: Vec<u8>) -> Result<(), Error> {
        let Some(rx) = self.rx.front() else {
            return Err(Error::InvalidCall("no message being received"));
        };
        let limits = qtc_lzhuf::Limits::new(self.cfg.max_message_size);
        let decode = |file: &[u8]| match rx.codec {
            Codec::B0 => qtc_lzhuf::decompress(file, &limits),
            _ => qtc_lzhuf::decompress_with_crc(file, &limits),
        };
        let text = match (&rx.prefix, offset) {
            (Some(prefix), off) if off > 0 => {
                if off as usize != prefix.len() {
                    return Err(Error::ResumeMismatch);
                }
                // FBB style: 6 check bytes, then data from the offset; wl2k-go: data only.
                let head = prefix.len().min(6);
                let mut fbb = None;
                if data.len() >= 6 && data[..head] == prefix[..head] {
                    let mut f = prefix.to_vec();
                    f.extend_from_slice(&data[6..]);
                    fbb = decode(&f).ok();
                }
                match fbb {
                    Some(t) => t,
                    None => {
                        let mut f = prefix.to_vec();
                        f.extend_from_slice(&data);
                        decode(&f).map_err(|_| Error::ResumeMismatch)?
                    }
                }
            }
            (None, off) if off > 0 => {
                return Err(Error::BadBlock("offset in header but no resume asked"))
            }
            _ => decode(&data).map_err(|e| Error::Decompress(e.to_string()))?,
        };
        let mut proposal = rx.proposal.clone();
        let mut title = title;
        if rx.codec == Codec::B2 {
            match b2f::Message::parse(&text) {
                Ok(m) => {
                    if title.is_empty() {
                        title = m.subject().to_vec();
                    }
                    if proposal.from.is_empty() {
                        proposal.from = lossy(m.get("From").unwrap_or_default());
                    }
                    if proposal.to.is_empty() {
                        proposal.to = lossy(m.get("To").unwrap_or_default());
                    }
                }
                // It arrived whole (CRC checked): failing the session here would have the
                // partner send it again at every connect and block everything behind it.
                Err(e) => warn!(bid = %proposal.bid, error = %e,
                    "received B2F message does not parse; delivered as it came"),
            }
        }
        if proposal.size as usize != text.len() {
            debug!(bid = %proposal.bid, proposed = proposal.size, got = text.len(), "size differs");
        }
        self.deliver(proposal, title, text);
        Ok(())
    }

    fn step_receive_text(&mut self) -> Result<bool, Error> {
        let mbl = self.mode_or_mbl() == Mode::Mbl;
        match self.rx_cur.take() {
            None => {
                let Some(title) = self.take_line(MAX_LINE_LEN)? else {
                    return Ok(false);
                };
                if let Some(p) = title.iter().position(|&b| b == CTRL_Z) {
                    let t = title[..p].to_vec();
                    self.finish_text(t, Vec::new());
                } else {
                    self.rx_cur = Some(RxProgress::Body {
                        title,
                        body: Vec::new(),
                    });
                }
                Ok(true)
            }
            Some(RxProgress::Body { title, mut body }) => {
                let max = self.cfg.max_message_size;
                let line = match self.take_line(max.saturating_sub(body.len()).max(MAX_LINE_LEN)) {
                    Ok(Some(l)) => l,
                    Ok(None) if mbl && self.buffered().first() == Some(&CTRL_Z) => {
                        // LinBPQ ends a message with `CR ^Z` and no CR after it, then waits
                        // for our prompt (a CR that does follow is an ignored empty line).
                        self.pos += 1;
                        self.skip_lf = false;
                        self.finish_text(title, body);
                        return Ok(true);
                    }
                    Ok(None) => {
                        self.rx_cur = Some(RxProgress::Body { title, body });
                        return Ok(false);
                    }
                    Err(_) => return Err(Error::MessageTooLarge { max }),
                };
                let end = line.iter().position(|&b| b == CTRL_Z);
                let part = &line[..end.unwrap_or(line.len())];
                if end.is_none() && mbl && part.eq_ignore_ascii_case(b"/EX") {
                    self.finish_text(title, body);
                    return Ok(true);
                }
                if end.is_none() || !part.is_empty() {
                    body.extend_from_slice(part);
                    body.extend_from_slice(b"\r\n");
                }
                if body.len() > max {
                    return Err(Error::MessageTooLarge { max });
                }
                if end.is_some() {
                    self.finish_text(title, body);
                } else {
                    self.rx_cur = Some(RxProgress::Body { title, body });
                }
                Ok(true)
            }
            Some(other) => {
                self.rx_cur = Some(other);
                Err(Error::InvalidCall("text receive state lost"))
            }
        }
    }

    fn finish_text(&mut self, title: Vec<u8>, body: Vec<u8>) {
        if let Some(rx) = self.rx.front() {
            let p = rx.proposal.clone();
            self.deliver(p, title, body);
        }
    }

    fn deliver(&mut self, proposal: Proposal, title: Vec<u8>, text: Vec<u8>) {
        self.rx.pop_front();
        self.rx_cur = None;
        self.events.push_back(Event::Received {
            proposal,
            title: Bytes::from(title),
            text: Bytes::from(text),
        });
        if self.rx.is_empty() {
            self.events.push_back(Event::BlockComplete);
            self.state = State::WaitCommit(if self.mode_or_mbl().is_batch() {
                AfterCommit::FbbTurn
            } else {
                AfterCommit::MblPrompt
            });
        }
    }

    // ---- MBL ----

    fn on_mbl_command(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) {
            return Ok(());
        }
        let l = trim_end(&line);
        if SendLine::is_send_line(l) {
            let s = SendLine::parse(l).map_err(|e| Error::protocol(&line, e.to_string()))?;
            self.incoming = vec![Proposal {
                format: ProposalFormat::Mbl,
                kind: s.kind,
                from: s.from.unwrap_or_default().to_owned(),
                at: s.at.unwrap_or_default().to_owned(),
                to: s.to.to_owned(),
                bid: s.bid.unwrap_or_default().to_owned(),
                size: 0,
                compressed_size: None,
            }];
            self.events
                .push_back(Event::Proposals(self.incoming.clone()));
            self.state = State::MblWaitApp;
            return Ok(());
        }
        if l.eq_ignore_ascii_case(b"B") || l.eq_ignore_ascii_case(b"BYE") {
            self.close_clean();
            return Ok(());
        }
        match self.role {
            Role::Called if l == b"F>" || l == b"F" => {
                // The caller asks us to reverse-forward.
                self.start_turn(Turn::Mbl);
                Ok(())
            }
            Role::Called if is_prompt(l) => Ok(()),
            Role::Caller if is_mbl_done(l) || is_prompt(l) => {
                // The called side has nothing (more) for us.
                self.send_line(b"B");
                self.close_clean();
                Ok(())
            }
            _ if is_peer_error(l) => Err(Error::PeerError(lossy(l))),
            _ => Err(Error::protocol(&line, "expected an S command")),
        }
    }

    fn answer_mbl(&mut self, proposals: Vec<Proposal>, answers: Vec<Answer>) {
        let ext = self.peer_flags.extended_answers;
        for (p, a) in proposals.into_iter().zip(answers) {
            let ans = match a {
                Answer::Accept | Answer::AcceptFrom { .. } | Answer::Held => MblAnswer::Ok,
                Answer::Reject => MblAnswer::No,
                Answer::Later => MblAnswer::Later,
                Answer::RejectedByRule => MblAnswer::Reject,
            };
            self.send_line(ans.as_str(ext).as_bytes());
            if ans == MblAnswer::Ok {
                self.rx.push_back(RxMsg {
                    proposal: p,
                    codec: Codec::Text,
                    prefix: None,
                });
            }
        }
        if self.rx.is_empty() {
            self.send_mbl_prompt();
            self.state = State::MblWaitSLine;
        } else {
            self.rx_cur = None;
            self.state = State::Receiving;
        }
    }

    fn on_mbl_answer(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) || is_prompt(&line) {
            return Ok(());
        }
        if is_peer_error(&line) {
            return Err(Error::PeerError(lossy(&line)));
        }
        let ans = MblAnswer::parse(&line).map_err(|e| Error::protocol(&line, e.to_string()))?;
        let Some(m) = self.block.pop() else {
            return Err(Error::protocol(&line, "answer without an S line"));
        };
        let outcome = match ans {
            MblAnswer::Ok => {
                self.send_text_message(&m);
                self.unacked.push((m.msg.id, Outcome::Sent));
                None
            }
            MblAnswer::No => Some(Outcome::Rejected),
            MblAnswer::Reject => Some(Outcome::RejectedByRule),
            MblAnswer::Later => Some(Outcome::Later),
        };
        if let Some(outcome) = outcome {
            self.events.push_back(Event::Acknowledged {
                id: m.msg.id,
                outcome,
            });
        }
        self.state = State::MblWaitPromptAfter;
        Ok(())
    }
}
