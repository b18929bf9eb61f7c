//! A circuit's timers, quinn-style: one deadline per kind, the earliest is the wake-up.

use std::time::{Duration, Instant};

/// The timers of one circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The oldest unacknowledged information frame is due again.
    Retransmit,
    /// The connect or disconnect request is due again.
    Handshake,
    /// The acknowledgement we hold back for a while is due.
    Ack,
    /// The peer choked us this long ago: try again.
    Choke,
}

impl Timer {
    const ALL: [Timer; 4] = [
        Timer::Retransmit,
        Timer::Handshake,
        Timer::Ack,
        Timer::Choke,
    ];

    fn slot(self) -> usize {
        self as usize
    }
}

/// Deadlines by [`Timer`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Timers([Option<Instant>; 4]);

impl Timers {
    pub(crate) fn set(&mut self, t: Timer, now: Instant, after: Duration) {
        self.0[t.slot()] = Some(now + after);
    }

    pub(crate) fn stop(&mut self, t: Timer) {
        self.0[t.slot()] = None;
    }

    pub(crate) fn stop_all(&mut self) {
        self.0 = [None; 4];
    }

    pub(crate) fn is_running(&self, t: Timer) -> bool {
        self.0[t.slot()].is_some()
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        self.0.iter().flatten().min().copied()
    }

    /// The timers due at `now`, stopped.
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<Timer> {
        Timer::ALL
            .into_iter()
            .filter(|t| {
                let due = self.0[t.slot()].is_some_and(|d| d <= now);
                if due {
                    self.0[t.slot()] = None;
                }
                due
            })
            .collect()
    }
}
