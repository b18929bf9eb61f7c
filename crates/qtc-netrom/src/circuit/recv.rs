//! What a circuit does with the frames its peer sends (JNOS nr4.c, `nr4input`).

use std::time::Instant;

use super::{Circuit, CircuitEvent, CircuitState, CloseReason, Timer};
use crate::wire::{Flags, Transport};

impl Circuit {
    /// One frame from the peer node for this circuit.
    pub(crate) fn on_frame(&mut self, now: Instant, t: Transport) {
        self.heard = true;
        match (self.state, t) {
            (
                CircuitState::Connecting,
                Transport::ConnectAck {
                    my_index,
                    my_id,
                    window,
                    refused,
                    ..
                },
            ) => self.on_connect_ack(now, (my_index, my_id), window, refused),
            (
                CircuitState::Connected | CircuitState::Disconnecting,
                Transport::DisconnectRequest { .. },
            ) => {
                self.push(Transport::DisconnectAck {
                    your_index: self.your_ids().0,
                    your_id: self.your_ids().1,
                });
                self.finish(CloseReason::Remote);
            }
            (CircuitState::Disconnecting, Transport::DisconnectAck { .. }) => {
                self.finish(CloseReason::Local)
            }
            (
                CircuitState::Connected | CircuitState::Disconnecting,
                Transport::Info {
                    tx_seq,
                    rx_seq,
                    flags,
                    data,
                    ..
                },
            ) => {
                self.stats.info_received += 1;
                self.receive(now, tx_seq, data);
                if self.state == CircuitState::Connected {
                    self.on_ack_field(now, rx_seq, flags);
                }
            }
            (CircuitState::Connected, Transport::InfoAck { rx_seq, flags, .. }) => {
                self.on_ack_field(now, rx_seq, flags)
            }
            (state, Transport::Reset { .. }) if state != CircuitState::Closed => {
                self.finish(CloseReason::Reset)
            }
            (_, other) => {
                tracing::trace!(
                    circuit = self.my_index,
                    frame = other.name(),
                    "frame ignored"
                );
            }
        }
    }

    fn on_connect_ack(&mut self, now: Instant, your: (u8, u8), window: u8, refused: bool) {
        self.timers.stop(Timer::Handshake);
        if refused {
            self.finish(CloseReason::Refused);
            return;
        }
        self.your = Some(your);
        self.window = self.window.min(window.max(1));
        self.state = CircuitState::Connected;
        self.events.push_back(CircuitEvent::Connected);
        // A close asked for while connecting waits for the queue, like any other.
        self.maybe_start_close(now);
    }

    /// Received data: delivered in order, a gap asked for once, repeats acknowledged.
    fn receive(&mut self, now: Instant, seq: u8, data: Vec<u8>) {
        if self.busy() {
            // Choked: the frame is not taken; our next acknowledgement says choke again.
            self.ack_now = true;
            return;
        }
        let ahead = seq.wrapping_sub(self.rx_expected);
        if ahead == 0 {
            self.deliver(data);
            while let Some(next) = self.stash.remove(&self.rx_expected) {
                self.deliver(next);
            }
            self.nak_sent = false;
            self.rx_unacked = self.rx_unacked.saturating_add(1);
            // Half a window in: acknowledge at once, or the sender stalls on a full window.
            if self.rx_unacked >= (self.window / 2).max(1) {
                self.ack_now = true;
            } else if !self.timers.is_running(Timer::Ack) {
                self.timers.set(Timer::Ack, now, self.cfg.ack_delay);
            }
        } else if ahead < self.window {
            self.stash.entry(seq).or_insert(data);
            if !self.nak_sent {
                self.nak_sent = true;
                let nak = self.info_ack(true);
                self.push(nak);
            }
        } else {
            // A repeat of something we have: tell the sender where we are.
            self.ack_now = true;
        }
    }

    fn deliver(&mut self, data: Vec<u8>) {
        self.rx_expected = self.rx_expected.wrapping_add(1);
        if data.is_empty() {
            return;
        }
        self.rx_undelivered += data.len();
        self.events.push_back(CircuitEvent::Data(data));
    }

    /// The peer's N(R), choke and NAK, from any frame it sends.
    fn on_ack_field(&mut self, now: Instant, rx_seq: u8, flags: Flags) {
        if flags.choke {
            self.acked(now, rx_seq);
            if !self.peer_choked {
                self.choked(now);
            }
            return;
        }
        if self.peer_choked {
            self.peer_choked = false;
            self.timers.stop(Timer::Choke);
            // What the choke took back goes out again now.
            self.resend = self.outstanding.iter().map(|s| s.seq).collect();
        }
        if flags.nak && self.outstanding.iter().any(|s| s.seq == rx_seq) {
            self.resend.push_back(rx_seq);
        }
        self.acked(now, rx_seq);
    }

    /// Frames up to (not including) `rx_seq` arrived.
    fn acked(&mut self, now: Instant, rx_seq: u8) {
        let base = self.outstanding.front().map_or(self.next_seq, |s| s.seq);
        let n = usize::from(rx_seq.wrapping_sub(base));
        if n == 0 || n > self.outstanding.len() {
            return;
        }
        self.outstanding.drain(..n);
        self.tx_retries = 0;
        if self.outstanding.is_empty() {
            self.timers.stop(Timer::Retransmit);
        } else {
            self.timers.set(Timer::Retransmit, now, self.cfg.timeout);
        }
        self.maybe_start_close(now);
    }

    /// The peer is full: stop, and resend the window once it says so (or the choke times out).
    fn choked(&mut self, now: Instant) {
        tracing::debug!(circuit = self.my_index, "choked by the peer");
        self.peer_choked = true;
        self.resend.clear();
        self.timers.stop(Timer::Retransmit);
        self.timers.set(Timer::Choke, now, self.cfg.choke_timeout);
    }
}
