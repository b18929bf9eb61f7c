//! Link timers, after quinn-proto's `TimerTable`: one optional deadline per timer.

use std::time::{Duration, Instant};

/// The timers a link runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Acknowledgement timer (also paces SABM/DISC retries).
    T1 = 0,
    /// XID retry timer (TM201 in the SDL; runs with the T1 value).
    Xid = 1,
    /// Response delay: how long an acknowledgement may be held back.
    T2 = 2,
    /// Idle keep-alive.
    T3 = 3,
}

impl Timer {
    /// Firing order when several are due at once.
    pub(crate) const ALL: [Timer; 4] = [Timer::T1, Timer::Xid, Timer::T2, Timer::T3];
}

#[derive(Debug, Clone, Default)]
pub(crate) struct TimerTable {
    deadlines: [Option<Instant>; 4],
}

impl TimerTable {
    /// Arm `timer` to fire `after` from `now`. A deadline past the end of `Instant` disarms it.
    pub(crate) fn set(&mut self, timer: Timer, now: Instant, after: Duration) {
        self.deadlines[timer as usize] = now.checked_add(after);
    }

    /// Arm `timer` to fire at `deadline`.
    pub(crate) fn set_at(&mut self, timer: Timer, deadline: Instant) {
        self.deadlines[timer as usize] = Some(deadline);
    }

    /// Move a running `timer` out to `deadline` if it would fire earlier; a stopped one stays
    /// stopped.
    pub(crate) fn extend_to(&mut self, timer: Timer, deadline: Instant) {
        if let Some(d) = self.deadlines[timer as usize].as_mut() {
            *d = (*d).max(deadline);
        }
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer as usize] = None;
    }

    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [None; 4];
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer as usize]
    }

    pub(crate) fn is_running(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    /// If `timer` is due at `now`, disarm it and say so.
    pub(crate) fn take_expired(&mut self, timer: Timer, now: Instant) -> bool {
        match self.get(timer) {
            Some(t) if t <= now => {
                self.stop(timer);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }
}
