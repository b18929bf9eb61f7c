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
//!
//! # Files
//! This file holds the state, the public calls and the plumbing; `input` cuts lines and
//! dispatches them by state, `handshake` does SIDs and the mode, `send` our turn, `receive`
//! the partner's turn and the messages we take, `mbl` the one-at-a-time MBL/RLI exchange.

mod handshake;
mod input;
mod mbl;
mod receive;
mod send;
mod types;

pub use types::*;

use crate::challenge;
use crate::wire::b2f;
use crate::wire::block::{self, Decoder, Encoder, Frame, OffsetPad};
use crate::wire::body::{self as wire_body, Reader};
use crate::wire::mbl::{MblAnswer, SendLine};
use crate::wire::proposal::{
    self as wp, AnswerCode, B2Proposal, Dialect, FbbLine, FbbProposal, MsgType, ProposalLine,
    MAX_PROPOSALS,
};
use crate::wire::sid::{forwards_line, skip_telnet_commands, trim_end, Flags, Sid, SidInfo};
use crate::Error;
use crate::Mode;
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

#[derive(Debug)]
struct OutMsg {
    msg: Outgoing,
    line: Vec<u8>,
    file: Option<Bytes>,
}

#[derive(Debug)]
struct RxMsg {
    proposal: Proposal,
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
    /// The partner answered our FBB proposals in MBL (LinBPQ): ours go in MBL when it hands
    /// the turn back.
    fell_back: bool,
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

/// Whether a line read in an FBB turn is for the protocol: noise and prompts (a line starting
/// with `F` is none here) are skipped, and a partner's error line ends the session.
fn fbb_line_matters(line: &[u8]) -> Result<bool, Error> {
    if ignorable(line) || (is_prompt(line) && !line.starts_with(b"F")) {
        return Ok(false);
    }
    if is_peer_error(line) {
        return Err(Error::PeerError(lossy(line)));
    }
    Ok(true)
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
            fell_back: false,
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

    /// Append bytes to send (lines ended as [`Config::line_end`] says) to `buf`; returns how many (0: nothing).
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

    fn send_line(&mut self, line: &[u8]) {
        trace!(line = %String::from_utf8_lossy(line), "fbb >");
        self.out.extend_from_slice(line);
        self.out.extend_from_slice(self.cfg.line_end.as_bytes());
    }

    /// Ends our lines with `eol` from now on (a link whose line end differs by phase).
    pub fn set_line_end(&mut self, eol: LineEnd) {
        self.cfg.line_end = eol;
    }

    fn send_mbl_prompt(&mut self) {
        match self.role {
            Role::Called => self.send_line(b">"),
            // After a fall-back our messages still wait: a bare `>` lets LinBPQ send its next
            // message or, with none left, hand the turn back (`F>`); `F>` would make it end.
            Role::Caller if self.fell_back && !self.pending.is_empty() => self.send_line(b">"),
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
        if self.fell_back && !self.pending.is_empty() {
            // Never a clean end with our mail left behind.
            let unsent = self.pending.len();
            self.fail(Error::MblOnly { unsent });
            return;
        }
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
            | Error::MblOnly { .. }
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

    /// Who reads what we send: a qtc partner takes message text as written.
    fn reader(&self) -> Reader {
        Reader::of(self.peer.as_ref().map(|p| p.name.as_str()))
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
}
