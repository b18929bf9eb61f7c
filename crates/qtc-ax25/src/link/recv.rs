//! Frame reception: the per-state handling of U, S and I frames (spec §3.4–3.8).

use std::time::Instant;

use super::{DisconnectReason, Event, Link, State, Timer, XidState};
use crate::wire::{
    CommandResponse, Control, Frame, Modulo, Pid, Supervisory, Unnumbered, XidParams,
};

/// Result of checking a received N(R) against V(A)..vs_max.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NrCheck {
    Valid,
    /// Up to k behind V(A): an old acknowledgement that arrived late or twice.
    Stale,
    Invalid,
}

impl Link {
    fn check_nr(&self, nr: u8) -> NrCheck {
        if self.seq_sub(nr, self.va) <= self.seq_sub(self.vs_max, self.va) {
            NrCheck::Valid
        } else if self.seq_sub(self.va, nr) <= self.k {
            NrCheck::Stale
        } else {
            NrCheck::Invalid
        }
    }

    /// V(A) = N(R): free acknowledged frames. N(R) must be valid.
    fn ack_to(&mut self, now: Instant, nr: u8) {
        let old_va = self.va;
        self.sample_rtt(now, old_va, nr);
        if self.seq_sub(nr, old_va) > self.seq_sub(self.vs, old_va) {
            // The peer already has frames we were about to send again.
            self.vs = nr;
        }
        let mut seq = old_va;
        for _ in 0..self.seq_sub(nr, old_va) {
            self.sent[usize::from(seq)] = None;
            seq = self.seq_add(seq, 1);
        }
        if nr != old_va {
            self.traffic_seen = true;
        }
        self.va = nr;
        let (va, vs_max, m) = (self.va, self.vs_max, self.modulo.mask());
        self.resend
            .retain(|&s| (s.wrapping_sub(va) & m) < (vs_max.wrapping_sub(va) & m));
    }

    /// "Check I frames acknowledged" (state 3).
    fn check_iframes_acked(&mut self, now: Instant, nr: u8) {
        if self.peer_busy {
            self.ack_to(now, nr);
            self.start_t3_or_t1(now);
        } else if nr == self.vs_max {
            self.ack_to(now, nr);
            self.stop_t1();
            self.select_t1_value();
            self.start_t3_or_t1(now);
        } else if nr != self.va {
            self.ack_to(now, nr);
            self.start_t1(now);
        }
    }

    /// Acknowledgement processing in timer recovery: update V(A), and go back to state 3 if
    /// everything is acknowledged (Direwolf).
    fn ack_in_recovery(&mut self, now: Instant, nr: u8) {
        self.ack_to(now, nr);
        if self.va == self.vs_max {
            self.stop_t1();
            self.rc = 0;
            self.start_t3_or_t1(now);
            self.set_state(State::Connected);
        }
    }

    /// Go back N: resend everything from N(R).
    fn invoke_retransmission(&mut self, nr: u8) {
        self.vs = nr;
    }

    fn nr_error_recovery(&mut self, now: Instant, nr: u8) {
        tracing::debug!(
            nr,
            va = self.va,
            vs = self.vs_max,
            "N(R) error, re-establishing"
        );
        self.reestablish(now, self.modulo);
    }

    /// Hands one I frame's information field to the application: layer-3 packets (NET/ROM,
    /// IP, ARP) as [`Event::Datagram`] (each frame is one packet), everything else as stream
    /// data.
    fn deliver(&mut self, pid: Pid, data: Vec<u8>) {
        self.rx_undelivered += data.len();
        self.stats.i_bytes_received += data.len() as u64;
        self.traffic_seen = true;
        self.events
            .push_back(if matches!(pid, Pid::NETROM | Pid::IP | Pid::ARP) {
                Event::Datagram { pid, data }
            } else {
                Event::Data(data)
            });
    }

    // ------------------------------------------------------------------ U frames

    pub(super) fn on_unnumbered(&mut self, now: Instant, kind: Unnumbered, pf: bool, f: &Frame) {
        let cmd = !matches!(f.address.cr, CommandResponse::Response);
        match kind {
            Unnumbered::Sabm | Unnumbered::Sabme => {
                self.on_sabm(now, kind == Unnumbered::Sabme, pf)
            }
            Unnumbered::Disc => match self.state {
                State::AwaitingRelease => {
                    self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                }
                State::Connected | State::TimerRecovery => {
                    self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                    self.go_disconnected(DisconnectReason::Remote);
                }
                _ => self.push_u(Unnumbered::Dm, pf, CommandResponse::Response),
            },
            Unnumbered::Ua => self.on_ua(now, pf),
            Unnumbered::Dm => self.on_dm(now, pf),
            Unnumbered::Frmr => match self.state {
                State::AwaitingV22Connection => {
                    tracing::debug!("FRMR to SABME, falling back to SABM");
                    self.set_version(Modulo::Mod8);
                    self.establish(now);
                }
                State::Connected | State::TimerRecovery => {
                    if let XidState::Pending(_) = self.xid {
                        // Our XID was rejected: keep the defaults (spec §3.8).
                        self.xid = XidState::Idle;
                        self.timers.stop(Timer::Xid);
                    } else {
                        tracing::debug!("FRMR received, re-establishing as v2.0");
                        self.reestablish(now, Modulo::Mod8);
                    }
                }
                _ => {}
            },
            Unnumbered::Ui => {
                if cmd && pf {
                    match self.state {
                        State::Disconnected => {
                            self.push_u(Unnumbered::Dm, true, CommandResponse::Response);
                        }
                        State::Connected | State::TimerRecovery => self.enquiry_response(),
                        _ => {}
                    }
                }
            }
            Unnumbered::Xid => self.on_xid(cmd, pf, f),
            Unnumbered::Test => {
                if cmd {
                    let mut r = Frame::unnumbered(
                        self.address(CommandResponse::Response),
                        Unnumbered::Test,
                        pf,
                    );
                    r.info.clone_from(&f.info);
                    self.push_frame(r);
                }
            }
        }
    }

    fn on_sabm(&mut self, now: Instant, extended: bool, pf: bool) {
        let modulo = if extended {
            Modulo::Mod128
        } else {
            Modulo::Mod8
        };
        match self.state {
            State::Disconnected => {
                self.set_version(modulo);
                self.clear_exceptions();
                self.reset_sequence();
                self.layer3_initiated = false;
                self.close_pending = false;
                self.rc = 0;
                self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                self.timers.stop(Timer::T1);
                self.start_t3_or_t1(now);
                self.became_connected();
            }
            State::AwaitingConnection => {
                if extended {
                    // Spec §3.7 table: DM, and try v2.2 ourselves from now on.
                    self.push_u(Unnumbered::Dm, pf, CommandResponse::Response);
                    self.set_version(Modulo::Mod128);
                    self.set_state(State::AwaitingV22Connection);
                } else {
                    // SABM collision: answer, keep waiting for our UA.
                    self.crossed = true;
                    self.peer_called_us();
                    self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                }
            }
            State::AwaitingV22Connection => {
                self.crossed = true;
                self.peer_called_us();
                self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                if !extended {
                    self.set_version(Modulo::Mod8);
                    self.set_state(State::AwaitingConnection);
                }
            }
            State::AwaitingRelease => {
                // Expedited.
                let f = crate::wire::Frame::unnumbered(
                    self.address(CommandResponse::Response),
                    Unnumbered::Dm,
                    pf,
                );
                self.tx.push_front(f);
            }
            State::Connected | State::TimerRecovery => {
                // On a quiet link we asked for, the peer's SABM repeats nothing of ours: it asked
                // for the link too, late.
                let crossed_late = self.layer3_initiated && !self.crossed && !self.traffic_seen;
                self.push_u(Unnumbered::Ua, pf, CommandResponse::Response);
                // A repeated SABM (our UA was lost) or a real re-connect: either way the peer
                // starts from zero; keep what it never acknowledged (Linux requeues too).
                self.requeue_unacked();
                self.clear_exceptions();
                self.set_version(modulo);
                self.xid = XidState::Idle;
                self.timers.stop(Timer::Xid);
                self.stop_t1();
                self.rtt_sample = None;
                self.rc = 0;
                self.reset_by_peer = true;
                self.start_t3_or_t1(now);
                self.became_connected();
                if crossed_late {
                    self.crossed = true;
                    self.events.push_back(Event::CrossedLate);
                }
            }
        }
    }

    /// The peer asked for the link while we wait for our UA: it is there, and once it has our
    /// UA its end is up and answers our next SABM. Our retries count afresh from here: those
    /// spent while it was away (down, restarting) must not make us give up a link whose other
    /// end is up.
    fn peer_called_us(&mut self) {
        self.rc = 0;
    }

    fn on_ua(&mut self, now: Instant, pf: bool) {
        match self.state {
            State::AwaitingConnection | State::AwaitingV22Connection => {
                if !pf {
                    tracing::debug!("UA without F bit ignored");
                    return;
                }
                let from_v22 = self.state == State::AwaitingV22Connection;
                self.stop_t1();
                self.select_t1_value();
                self.rc = 0;
                self.reset_sequence();
                self.start_t3_or_t1(now);
                self.became_connected();
                if from_v22 && self.cfg.xid && self.layer3_initiated {
                    self.xid = XidState::Pending(0);
                    self.send_xid_command(now);
                }
            }
            State::AwaitingRelease => {
                if pf {
                    self.go_disconnected(DisconnectReason::Local);
                }
            }
            State::Connected | State::TimerRecovery => {
                tracing::debug!("UA while connected ignored");
            }
            State::Disconnected => {}
        }
    }

    fn on_dm(&mut self, now: Instant, pf: bool) {
        match self.state {
            State::AwaitingConnection => {
                if pf {
                    self.go_disconnected(DisconnectReason::Refused);
                }
            }
            State::AwaitingV22Connection => {
                if pf {
                    // KPC-3+ answers SABME with DM (spec §3.7): try v2.0.
                    tracing::debug!("DM to SABME, falling back to SABM");
                    self.set_version(Modulo::Mod8);
                    self.establish(now);
                }
            }
            State::AwaitingRelease => {
                if pf {
                    self.go_disconnected(DisconnectReason::Local);
                }
            }
            State::Connected | State::TimerRecovery => {
                self.go_disconnected(DisconnectReason::PeerDisconnectedMode);
            }
            State::Disconnected => {}
        }
    }

    fn on_xid(&mut self, cmd: bool, pf: bool, f: &Frame) {
        if !self.is_connected() {
            if cmd && self.state == State::Disconnected {
                self.push_u(Unnumbered::Dm, pf, CommandResponse::Response);
            }
            return;
        }
        let params = match XidParams::parse(&f.info) {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e, "malformed XID ignored");
                return;
            }
        };
        if cmd {
            let answer = self.xid_answer(&params);
            self.apply_xid(&answer);
            let mut info = Vec::new();
            answer.emit(&mut info);
            let mut r =
                Frame::unnumbered(self.address(CommandResponse::Response), Unnumbered::Xid, pf);
            r.info = info;
            self.push_frame(r);
        } else if let XidState::Pending(_) = self.xid {
            self.apply_xid(&params);
            self.xid = XidState::Idle;
            self.timers.stop(Timer::Xid);
        }
    }

    // ------------------------------------------------------------------ S frames

    pub(super) fn on_supervisory(
        &mut self,
        now: Instant,
        kind: Supervisory,
        nr: u8,
        pf: bool,
        f: &Frame,
    ) {
        // A v1 frame (both C bits equal) answering our poll counts as a response.
        let cmd = match f.address.cr {
            CommandResponse::Command => true,
            CommandResponse::Response => false,
            CommandResponse::Legacy(_) => !(pf && self.state == State::TimerRecovery),
        };
        match self.state {
            State::Disconnected => {
                if cmd {
                    self.push_u(Unnumbered::Dm, pf, CommandResponse::Response);
                }
                return;
            }
            State::AwaitingRelease => {
                if cmd && pf {
                    self.push_u(Unnumbered::Dm, true, CommandResponse::Response);
                }
                return;
            }
            State::AwaitingConnection | State::AwaitingV22Connection => return,
            State::Connected | State::TimerRecovery => {}
        }

        match kind {
            Supervisory::Rnr => self.peer_busy = true,
            Supervisory::Rr | Supervisory::Rej => self.peer_busy = false,
            Supervisory::Srej => {}
        }
        if cmd && pf {
            self.enquiry_response();
        }
        match self.check_nr(nr) {
            NrCheck::Valid => {}
            NrCheck::Stale => {
                tracing::trace!(nr, va = self.va, "stale N(R) ignored");
                return;
            }
            NrCheck::Invalid => {
                self.nr_error_recovery(now, nr);
                return;
            }
        }

        if kind == Supervisory::Srej {
            self.on_srej(now, nr, pf, f);
            return;
        }

        if self.state == State::TimerRecovery && !cmd && pf {
            self.on_enquiry_answer(now, nr);
            return;
        }

        match kind {
            Supervisory::Rr | Supervisory::Rnr => {
                if self.state == State::Connected {
                    self.check_iframes_acked(now, nr);
                } else {
                    self.ack_in_recovery(now, nr);
                }
            }
            Supervisory::Rej => {
                self.ack_to(now, nr);
                if self.state == State::Connected {
                    self.stop_t1();
                    self.timers.stop(Timer::T3);
                    self.select_t1_value();
                }
                if self.va == self.vs_max {
                    self.start_t3_or_t1(now);
                } else {
                    if !self.asked_before_last_copy(nr, now) {
                        self.invoke_retransmission(nr);
                    }
                    self.ensure_t1(now);
                }
            }
            Supervisory::Srej => {}
        }
        if cmd && pf && kind != Supervisory::Rej {
            self.resend_what_a_poll_lacks(now);
        }
    }

    /// The answer to our enquiry in timer recovery (spec §3.4): back to connected, and the
    /// frames it does not acknowledge sent again unless it asked before their last copy left.
    fn on_enquiry_answer(&mut self, now: Instant, nr: u8) {
        self.stop_t1();
        self.select_t1_value();
        let progress = nr != self.va;
        self.ack_to(now, nr);
        self.rc = 0;
        if self.va == self.vs_max {
            self.start_t3_or_t1(now);
        } else {
            // An answer that acknowledges more than before shows our frames still arriving:
            // the rest may yet be on the air (a modem slower than modelled), so they go
            // again only when an answer shows no progress.
            if !progress && !self.asked_before_last_copy(nr, now) {
                self.invoke_retransmission(nr);
            }
            self.timers.stop(Timer::T3);
            self.start_t1(now);
        }
        self.set_state(State::Connected);
    }

    fn on_srej(&mut self, now: Instant, nr: u8, pf: bool, f: &Frame) {
        let cmd = f.address.cr == CommandResponse::Command;
        if pf {
            // F=1: everything before N(R) is acknowledged (spec §2.3).
            self.ack_to(now, nr);
        }
        if self.state == State::TimerRecovery && pf && !cmd {
            // The answer to our poll: the peer holds what follows the gap, so only the frames
            // it names go again, and the link is back in the connected state.
            self.stop_t1();
            self.select_t1_value();
            self.rc = 0;
            self.set_state(State::Connected);
        }
        let shift = match self.modulo {
            Modulo::Mod8 => 5,
            Modulo::Mod128 => 1,
        };
        let extra = f.info.iter().map(|&b| b >> shift);
        for seq in core::iter::once(nr).chain(extra) {
            if self.outstanding(seq)
                && !self.resend.contains(&seq)
                && !self.asked_before_last_copy(seq, now)
            {
                self.resend.push_back(seq);
            }
        }
        if self.va == self.vs_max {
            self.stop_t1();
            self.start_t3_or_t1(now);
        } else {
            self.ensure_t1(now);
        }
    }

    // ------------------------------------------------------------------ I frames

    pub(super) fn on_information(&mut self, now: Instant, ns: u8, nr: u8, poll: bool, f: Frame) {
        match self.state {
            State::Disconnected => {
                self.push_u(Unnumbered::Dm, poll, CommandResponse::Response);
                return;
            }
            State::AwaitingRelease => {
                if poll {
                    self.push_u(Unnumbered::Dm, true, CommandResponse::Response);
                }
                return;
            }
            State::AwaitingConnection | State::AwaitingV22Connection => return,
            State::Connected | State::TimerRecovery => {}
        }
        if f.address.cr == CommandResponse::Response {
            tracing::debug!("I frame marked as response ignored");
            return;
        }
        self.stats.i_frames_received += 1;
        self.max_rx_len = self.max_rx_len.max(f.buffer_len());
        self.last_rx_ns = Some(ns);
        if !poll {
            self.peer_still_sending(now);
        }

        // A repeat of a frame we already have (behind V(R)) also carries an old N(R): skip
        // acknowledgement processing for it, or a reordered copy could acknowledge frames of
        // the next sequence cycle.
        let ahead = self.seq_sub(ns, self.vr);
        let old_copy = ns != self.vr && ahead >= self.k;
        match if old_copy {
            NrCheck::Stale
        } else {
            self.check_nr(nr)
        } {
            NrCheck::Valid => {
                if self.state == State::Connected {
                    self.check_iframes_acked(now, nr);
                } else {
                    self.ack_in_recovery(now, nr);
                }
            }
            NrCheck::Stale => {}
            NrCheck::Invalid => {
                self.nr_error_recovery(now, nr);
                return;
            }
        }

        if self.busy() {
            // Refuse the data; the peer resends once we say RR.
            self.announced_busy = true;
            self.acknowledged();
            self.push_s(Supervisory::Rnr, poll, CommandResponse::Response);
            return;
        }

        if ns == self.vr {
            self.deliver(f.pid.unwrap_or(Pid::NO_LAYER3), f.info);
            self.srej_requested &= !(1u128 << ns);
            self.vr = self.seq_add(self.vr, 1);
            self.reject_exception = false;
            while let Some((pid, data)) = self.rx_stash[usize::from(self.vr)].take() {
                self.srej_requested &= !(1u128 << self.vr);
                self.deliver(pid, data);
                self.vr = self.seq_add(self.vr, 1);
            }
        } else if old_copy {
            // Behind V(R): a repeat of a frame we already have. Make sure the peer hears our
            // V(R) in case our acknowledgement was lost.
            tracing::trace!(ns, vr = self.vr, "duplicate I frame");
        } else {
            self.on_out_of_sequence(ns, poll, f.pid.unwrap_or(Pid::NO_LAYER3), f.info);
            return;
        }
        if poll {
            self.enquiry_response();
        } else {
            self.ack_later(now);
        }
    }

    /// An I frame past V(R) (its PID and information field): kept and the gap asked for with
    /// SREJ, or refused with REJ (spec §3.5).
    fn on_out_of_sequence(&mut self, ns: u8, poll: bool, pid: Pid, info: Vec<u8>) {
        let ahead = self.seq_sub(ns, self.vr);
        if self.srej {
            self.rx_stash[usize::from(ns)].get_or_insert((pid, info));
            let mut answered_poll = false;
            let mut seq = self.vr;
            for _ in 0..ahead {
                let bit = 1u128 << seq;
                if self.rx_stash[usize::from(seq)].is_none() && self.srej_requested & bit == 0 {
                    let fbit = seq == self.vr;
                    answered_poll |= fbit && poll;
                    self.srej_requested |= bit;
                    self.stats.srej_sent += 1;
                    let mut s = self.s_frame(Supervisory::Srej, fbit, CommandResponse::Response);
                    if let Control::S { nr, .. } = &mut s.control {
                        *nr = seq;
                    }
                    self.push_frame(s);
                }
                seq = self.seq_add(seq, 1);
            }
            if poll && !answered_poll {
                self.enquiry_response();
            }
        } else if self.reject_exception {
            if poll {
                self.enquiry_response();
            }
        } else {
            self.reject_exception = true;
            self.acknowledged();
            self.stats.rej_sent += 1;
            self.push_s(Supervisory::Rej, poll, CommandResponse::Response);
        }
    }
}
