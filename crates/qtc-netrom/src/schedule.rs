//! When the node broadcasts: every interval less a random share of it (up to a tenth), the
//! first one too. Two nodes started in the same second would otherwise send their NODES at the
//! same instant every interval and, on one channel, collide every time. The randomness is a
//! seed the daemon gives (the core reads no clock and no entropy).

use std::time::{Duration, Instant};

/// The broadcast schedule.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    interval: Duration,
    rng: SplitMix,
    next: Option<Instant>,
}

impl Schedule {
    /// A schedule whose first broadcast is due within a tenth of `interval` after `now`;
    /// `None` for a node with no NET/ROM port (it never broadcasts).
    pub(crate) fn new(interval: Duration, seed: u64, now: Instant, on_air: bool) -> Schedule {
        let mut s = Schedule {
            interval,
            rng: SplitMix(seed),
            next: None,
        };
        if on_air {
            s.next = Some(now + s.jitter());
        }
        s
    }

    /// The next broadcast.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// Whether a broadcast is due at `now`; if so, the one after is set.
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        if self.next.is_none_or(|t| t > now) {
            return false;
        }
        // Never longer than the interval: neighbours age our routes by their own clocks.
        self.next = Some(now + self.interval - self.jitter());
        true
    }

    /// A random share of the interval, up to a tenth of it.
    fn jitter(&mut self) -> Duration {
        let tenth = u64::try_from(self.interval.as_micros() / 10).unwrap_or(u64::MAX);
        Duration::from_micros(self.rng.next() % tenth.saturating_add(1))
    }
}

/// splitmix64: small, and enough to spread broadcasts.
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)]
    fn base() -> Instant {
        Instant::now()
    }

    #[test]
    fn every_broadcast_is_within_a_tenth_of_the_interval_before_its_time() {
        let start = base();
        let every = Duration::from_secs(20);
        let mut s = Schedule::new(every, 7, start, true);
        let first = s.next().unwrap() - start;
        assert!(first <= every / 10, "{first:?}");
        let mut now = s.next().unwrap();
        for _ in 0..100 {
            assert!(s.due(now));
            let gap = s.next().unwrap() - now;
            assert!(gap <= every && gap >= every - every / 10, "{gap:?}");
            assert!(!s.due(now + gap - Duration::from_micros(1)));
            now += gap;
        }
        assert!(Schedule::new(every, 7, start, false).next().is_none());
    }

    #[test]
    fn two_nodes_started_together_drift_apart() {
        let start = base();
        let every = Duration::from_secs(20);
        let (mut a, mut b) = (
            Schedule::new(every, 1, start, true),
            Schedule::new(every, 2, start, true),
        );
        let mut apart = Vec::new();
        for _ in 0..10 {
            let (ta, tb) = (a.next().unwrap(), b.next().unwrap());
            apart.push(if ta > tb { ta - tb } else { tb - ta });
            assert!(a.due(ta) && b.due(tb));
        }
        // Not in step: seconds apart on a 20 s interval, and not the same gap each time.
        assert!(
            apart.iter().all(|d| *d > Duration::from_millis(10)),
            "{apart:?}"
        );
        assert!(apart.windows(2).any(|w| w[0] != w[1]), "{apart:?}");
    }
}
