//! The link's timers (spec §3.3-3.4): T1 anchored where frames leave the modem, the smoothed
//! round trip with Karn's rule, delayed acknowledgement (T2), T3 and TM201 (XID).
//!
//! T1 runs from when our last frame can have left the modem ([`Link::departs`]), not from when
//! it was handed over: over KISS a window of frames waits in the modem's queue for tens of
//! seconds at 1200 bit/s, and the peer cannot answer before our transmission is over. The round
//! trip sampled is the peer's turnaround, from our last departure to its acknowledgement, and
//! only from frames sent once and acknowledged without a poll (Karn's rule).

use std::time::{Duration, Instant};

use super::{DisconnectReason, Link, State, XidState};
use crate::link::timer::Timer;
use crate::wire::{CommandResponse, Modulo, Unnumbered};

/// Lower bound on T1 (Direwolf's guard, spec §3.3).
const MIN_T1: Duration = Duration::from_millis(250);
/// T1 backs off by this much per retry (Direwolf: 0.25 s × RC + 2 × SRT).
const T1_BACKOFF: Duration = Duration::from_millis(250);
/// Transmissions of the same number of I frames, each waiting for T2, after which the peer
/// counts as sending that many at a time: two, so one short line is not taken for it.
const PEER_RUNS: u8 = 2;

impl Link {
    /// The driver's word that the frame `poll_transmit` returned last will have left the modem
    /// (its last bit on the air) at `at`. T1 and the XID timer then run from there: the peer
    /// cannot answer before our transmission is over. A driver that never calls this gets T1
    /// started when frames are handed over.
    pub fn departs(&mut self, at: Instant) {
        self.last_departure = Some(at);
        if let Some(ns) = self.last_i {
            self.departed[usize::from(ns)] = Some(at);
        }
        self.extend_reply_timers();
    }

    /// The channel was busy with another station from `after` for `by` (a frame heard while
    /// ours waited): frames that had not left by `after` leave `by` later.
    pub fn delay_departures(&mut self, after: Instant, by: Duration) {
        for t in self.departed.iter_mut().flatten() {
            if *t > after {
                *t += by;
            }
        }
        if let Some(t) = self.last_departure.as_mut() {
            if *t > after {
                *t += by;
                self.extend_reply_timers();
            }
        }
    }

    /// Whether a request to send frame `seq` again (REJ, SREJ, an answer to a poll) heard at
    /// `now` was sent before the peer could have heard our latest copy: the copy left after
    /// the peer's frame began. Acting on it would send the frame a third time.
    pub(super) fn asked_before_last_copy(&self, seq: u8, now: Instant) -> bool {
        let answer = self.cfg.air.frame_time(self.i_frame_len(0));
        self.departed[usize::from(seq)].is_some_and(|d| d + answer > now)
    }

    /// The peer polled us at `now` with an N(R) (now V(A)) behind what we sent: if all we sent
    /// had left before its poll began, the frame at V(A) never arrived (a lost last frame of
    /// a turn, that nothing else would ask for), so it goes again now rather than after our
    /// T1: alone on an SREJ link, with what follows it on a REJ link.
    pub(super) fn resend_what_a_poll_lacks(&mut self, now: Instant) {
        let nr = self.va;
        if self.peer_busy || nr == self.vs_max || self.vs != self.vs_max {
            return;
        }
        let poll = self.cfg.air.frame_time(self.i_frame_len(0));
        let all_left = self.last_departure.is_some_and(|d| d + poll <= now);
        if !all_left || self.asked_before_last_copy(nr, now) {
            return;
        }
        tracing::debug!(
            nr,
            "the peer's poll shows a frame missing: sending it again"
        );
        if self.srej {
            if !self.resend.contains(&nr) {
                self.resend.push_back(nr);
            }
        } else {
            self.vs = nr;
        }
    }

    /// The channel was busy for `busy` until `now` (a frame heard, for us or not): nobody could
    /// answer meanwhile, so T1 and TM201 stop for that long (Direwolf pauses them while it
    /// sees a carrier; a KISS host sees only the frames).
    pub fn channel_busy(&mut self, now: Instant, busy: Duration) {
        if !self.cfg.air.is_modelled() {
            return;
        }
        self.heard_since_poll = true;
        // Only the part of this busy time not paused for already.
        let began = now.checked_sub(busy).unwrap_or(now);
        let from = self.paused_until.map_or(began, |p| p.max(began));
        let pause = now.saturating_duration_since(from);
        self.paused_until = Some(now.max(self.paused_until.unwrap_or(now)));
        for t in [Timer::T1, Timer::Xid] {
            if let Some(d) = self.timers.get(t).filter(|&d| d > from) {
                self.timers.set_at(t, d + pause);
            }
        }
    }

    /// An I frame without P from the peer: its transmission may go on, and a frame of it may
    /// be lost unheard. T1 waits for one more frame's air time after this one before it counts.
    pub(super) fn peer_still_sending(&mut self, now: Instant) {
        if self.cfg.air.is_modelled() {
            let next = self.cfg.air.frame_time(self.max_rx_len);
            self.timers.extend_to(Timer::T1, now + next + self.t1v);
        }
    }

    /// Air time of the peer's I frames sent before the frame `bytes` in the same run that we
    /// did not hear (lost on the way): a frame N(S) = 5 after 2 means 3 more were on the air.
    /// Counted from the last N(S) heard; frames sent again (N(S) going back) count nothing.
    #[must_use]
    pub fn unheard_before(&self, bytes: &[u8]) -> Duration {
        if !self.cfg.air.is_modelled() || !self.is_connected() {
            return Duration::ZERO;
        }
        let Ok(f) = crate::wire::Frame::parse(bytes, self.modulo) else {
            return Duration::ZERO;
        };
        let crate::wire::Control::I { ns, .. } = f.control else {
            return Duration::ZERO;
        };
        let expected = self.last_rx_ns.map_or(self.vr, |n| self.seq_add(n, 1));
        let missed = self.seq_sub(ns, expected);
        if missed == 0 || missed >= self.k {
            return Duration::ZERO;
        }
        self.cfg.air.frame_time(self.max_rx_len.max(f.buffer_len())) * u32::from(missed)
    }

    /// T1 and TM201 wait for an answer to what we sent: never before our last frame has left.
    fn extend_reply_timers(&mut self) {
        if let Some(at) = self.last_departure {
            self.timers.extend_to(Timer::T1, at + self.t1v);
            self.timers.extend_to(Timer::Xid, at + self.t1v);
        }
    }

    /// Now, or when our last frame leaves if it is still in the modem.
    fn reply_base(&self, now: Instant) -> Instant {
        self.last_departure.map_or(now, |t| t.max(now))
    }

    /// A frame was handed to the driver at `now` (it leaves at `now` unless `departs` says
    /// later).
    pub(super) fn handed_over(&mut self, now: Instant) {
        let at = self.reply_base(now);
        self.last_departure = Some(at);
        if let Some(ns) = self.last_i {
            self.departed[usize::from(ns)] = Some(at);
        }
    }

    pub(super) fn start_t1(&mut self, now: Instant) {
        let at = self.reply_base(now) + self.t1v;
        self.timers.set_at(Timer::T1, at);
    }

    pub(super) fn start_xid_timer(&mut self, now: Instant) {
        let at = self.reply_base(now) + self.t1v;
        self.timers.set_at(Timer::Xid, at);
    }

    pub(super) fn stop_t1(&mut self) {
        self.timers.stop(Timer::T1);
    }

    pub(super) fn t1_running(&self) -> bool {
        self.timers.is_running(Timer::T1)
    }

    pub(super) fn start_t3(&mut self, now: Instant) {
        self.timers.set(Timer::T3, now, self.cfg.t3);
    }

    /// Arm T1 if frames are outstanding, or if the peer is busy and we have data for it (so the
    /// busy peer gets polled, spec §3.6); otherwise arm T3.
    pub(super) fn start_t3_or_t1(&mut self, now: Instant) {
        let outstanding = self.va != self.vs_max;
        if outstanding || (self.peer_busy && !self.pending.is_empty()) {
            if !self.t1_running() {
                self.timers.stop(Timer::T3);
                self.start_t1(now);
            }
        } else {
            self.start_t3(now);
        }
    }

    /// Ensure T1 runs because an I frame just went out (T3 runs only while T1 is stopped).
    pub(super) fn ensure_t1(&mut self, now: Instant) {
        if !self.t1_running() {
            self.timers.stop(Timer::T3);
            self.start_t1(now);
        }
    }

    /// Karn's rule: the frame timed for a round-trip sample was sent again, or a poll went
    /// out, so the next acknowledgement could answer either; no sample from it.
    pub(super) fn forget_probe(&mut self) {
        self.probe = None;
    }

    /// V(A) moves from `old_va` to `nr` at `now`: if that acknowledges the timed frame, take
    /// the peer's turnaround (from our last departure) as a round-trip sample.
    pub(super) fn sample_rtt(&mut self, now: Instant, old_va: u8, nr: u8) {
        let Some(probe) = self.probe else {
            return;
        };
        if self.seq_sub(probe, old_va) >= self.seq_sub(nr, old_va) {
            return;
        }
        self.probe = None;
        if self.rc != 0 {
            return;
        }
        if let Some(left) = self.last_departure.filter(|&t| t <= now) {
            self.rtt_sample = Some(now - left);
        }
    }

    /// "Select T1 value" (spec §3.3): 2 × SRT, backed off by 0.25 s per retry. Kept between
    /// 0.25 s and twice the initial value, or, on a modelled channel, four times the shortest
    /// exchange of a full frame, where a full frame alone can take longer than FRACK; and on a
    /// modelled channel never below the peer's answer in one full frame.
    ///
    /// In timer recovery on a modelled channel, a poll may wait in our modem behind a whole
    /// window of the peer's frames (a transmission we may not hear all of, if frames of it
    /// are lost): T1 then also allows the air time of that window, so a second poll is not
    /// queued behind the first. Polls and their answers are short frames, seldom lost, so
    /// the longer wait seldom costs anything.
    pub(super) fn select_t1_value(&mut self) {
        if self.rc == 0 {
            if let Some(sample) = self.rtt_sample.take() {
                self.srt = (self.srt * 7 + sample) / 8;
            }
            let hops = u32::try_from(self.path.len()).unwrap_or(0);
            let floor = self.cfg.min_srt + self.cfg.srt_per_digipeater * hops;
            self.srt = self.srt.max(floor);
            self.t1v = self.srt * 2;
        } else {
            self.t1v = T1_BACKOFF * u32::from(self.rc) + self.srt * 2;
        }
        let full_frame = self.cfg.air.transmission(self.i_frame_len(self.n1));
        let max = (self.t1_initial * 2).max(full_frame * 4);
        if self.t1v < MIN_T1 || self.t1v > max {
            self.t1v = self.t1_initial.clamp(MIN_T1, max);
        }
        self.t1v = self.t1v.max(self.t1_floor());
        if self.rc > 0 {
            let frame = self.max_rx_len.max(self.i_frame_len(self.n1));
            self.t1v += self.cfg.air.frame_time(frame) * u32::from(self.k);
        }
    }

    /// The shortest T1 on a modelled channel: the answer may ride on a full I frame of the
    /// peer's, after a slot wait or two; a shorter T1 would poll into it.
    pub(super) fn t1_floor(&self) -> Duration {
        let full_frame = self.cfg.air.transmission(self.i_frame_len(self.n1));
        full_frame + self.cfg.air.access_time() * 2
    }

    /// How long an acknowledgement may wait for more frames of the same transmission: the
    /// configured T2, or on a modelled channel the air time of the longest I frame heard on
    /// this link (the next one of the peer's burst arrives that much after the last), plus a
    /// tenth.
    pub(super) fn t2_value(&self) -> Duration {
        if !self.cfg.t2.is_zero() {
            return self.cfg.t2;
        }
        let air = &self.cfg.air;
        if !air.is_modelled() {
            return Duration::ZERO;
        }
        air.frame_time(self.max_rx_len).mul_f64(1.1) + air.slot_time
    }

    /// An I frame was taken (P = 0): acknowledge once the peer's transmission is over (T2,
    /// restarted by every frame of it), or at once when the peer cannot send more: a whole
    /// window is unacknowledged, or it is seen to send so many frames at a time and wait
    /// (JNOS as shipped sends one; Direwolf's and many TNCs' windows are 4), where T2 would
    /// only add the air time of a frame to every run.
    pub(super) fn ack_later(&mut self, now: Instant) {
        self.ack_pending = true;
        self.rx_since_ack = self.rx_since_ack.saturating_add(1);
        let t2 = self.t2_value();
        if self.early_ack.take().is_some_and(|at| now <= at + t2) {
            // More of the same transmission after an early RR: the peer's runs are longer.
            (self.peer_run, self.peer_runs) = (0, 0);
        }
        let run_done = self.peer_runs >= PEER_RUNS && self.rx_since_ack == self.peer_run;
        if self.rx_since_ack >= self.k || run_done {
            if run_done {
                self.early_ack = Some(now);
            }
            let kind = self.rr_or_rnr();
            self.push_s(kind, false, CommandResponse::Response);
            self.acknowledged();
            return;
        }
        if !t2.is_zero() {
            self.timers.set(Timer::T2, now, t2);
        }
    }

    /// A frame carrying V(R) is going out: nothing is left to acknowledge.
    pub(super) fn acknowledged(&mut self) {
        self.ack_pending = false;
        self.rx_since_ack = 0;
        self.timers.stop(Timer::T2);
    }

    pub(super) fn on_t1(&mut self, now: Instant) {
        self.stats.t1_expiries += 1;
        self.forget_probe();
        tracing::debug!(state = self.state.name(), rc = self.rc, "T1 expired");
        match self.state {
            State::AwaitingConnection | State::AwaitingV22Connection => self.retry_connect(now),
            State::AwaitingRelease => {
                if self.rc >= self.n2 {
                    self.go_disconnected(DisconnectReason::Timeout);
                    return;
                }
                self.rc += 1;
                self.push_u(Unnumbered::Disc, true, CommandResponse::Command);
                self.select_t1_value();
                self.start_t1(now);
            }
            State::Connected => {
                self.rc = 1;
                self.select_t1_value();
                self.transmit_enquiry(now);
                self.set_state(State::TimerRecovery);
            }
            State::TimerRecovery if self.heard_since_poll && !self.waited_for_poll => {
                // The channel has carried frames since our poll went to the modem: a
                // half-duplex modem holds it until the channel is clear, and a lost frame of
                // that traffic hides how long. Wait again rather than queue a second poll;
                // once only, so a channel that stays busy (the peer polling us) cannot hold
                // back our recovery for longer than two T1.
                tracing::debug!("channel busy since the poll: waiting for its answer");
                self.heard_since_poll = false;
                self.waited_for_poll = true;
                self.start_t1(now);
            }
            State::TimerRecovery => {
                if self.rc >= self.n2 {
                    tracing::debug!(
                        unacked = self.va != self.vs_max,
                        peer_busy = self.peer_busy,
                        "N2 exceeded in timer recovery"
                    );
                    self.push_u(Unnumbered::Dm, false, CommandResponse::Response);
                    self.go_disconnected(DisconnectReason::Timeout);
                    return;
                }
                self.rc += 1;
                self.select_t1_value();
                self.transmit_enquiry(now);
            }
            State::Disconnected => {}
        }
    }

    /// T1 in states 1 and 5: SABM(E) again, or give up after N2, or fall back to v2.0.
    fn retry_connect(&mut self, now: Instant) {
        if self.rc >= self.n2 {
            self.go_disconnected(DisconnectReason::Timeout);
            return;
        }
        self.rc += 1;
        if self.state == State::AwaitingV22Connection && self.rc >= self.cfg.max_v22_attempts {
            // Peers that ignore SABME (spec §3.7: TM-D710): fall back to v2.0.
            tracing::debug!("no answer to SABME, falling back to SABM");
            self.set_version(Modulo::Mod8);
            self.establish(now);
            return;
        }
        let kind = self.sabm_kind();
        self.push_u(kind, true, CommandResponse::Command);
        self.select_t1_value();
        self.start_t1(now);
    }

    pub(super) fn on_t2(&mut self) {
        if self.ack_pending && self.is_connected() {
            // The peer's transmission is over and it waits for us: how much did it send? A
            // shorter run than before is the end of its data, not its window.
            let run = self.rx_since_ack;
            if run == self.peer_run {
                self.peer_runs = self.peer_runs.saturating_add(1);
            } else if run > self.peer_run {
                (self.peer_run, self.peer_runs) = (run, 1);
            }
            let kind = self.rr_or_rnr();
            self.push_s(kind, false, CommandResponse::Response);
            self.acknowledged();
        }
    }

    pub(super) fn on_t3(&mut self, now: Instant) {
        if self.state == State::Connected && !self.t1_running() {
            self.rc = 1;
            self.select_t1_value();
            self.transmit_enquiry(now);
            self.set_state(State::TimerRecovery);
        }
    }

    pub(super) fn on_xid_timer(&mut self, now: Instant) {
        if let XidState::Pending(n) = self.xid {
            if n >= self.n2 || !self.is_connected() {
                tracing::debug!("no XID response, keeping defaults");
                self.xid = XidState::Idle;
            } else {
                self.xid = XidState::Pending(n + 1);
                self.send_xid_command(now);
            }
        }
    }
}
