//! The daemon's only clock readings. Protocol cores never read the time; the shell passes it in.
#![allow(clippy::disallowed_methods)]

/// Seconds since the Unix epoch, for message dates.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A byte that differs from one start of the daemon to the next (the wall clock's nanoseconds):
/// where NET/ROM circuit ids start.
pub fn start_salt() -> u8 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.subsec_nanos() >> 10) as u8)
        .unwrap_or(0)
}

/// 64 bits no one can guess: the broadcasts' jitter and a partner's challenge. From the
/// standard library's hash keys, which it takes from the operating system's randomness, mixed
/// with the time and a count so that every call differs.
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// A monotonic instant, for rate limits and protocol timers.
pub fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The one timer a protocol core asks for, kept across the turns of a session's loop and armed
/// only while the core asks.
///
/// A tokio `Sleep` made afresh each turn is registered afresh each turn, and registering a timer
/// while the runtime's driver has none makes the runtime wake its driver: an eventfd write and an
/// extra `epoll_wait` per turn. Moving one `Sleep` to a later deadline does not.
pub struct Timer {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    armed: Option<std::time::Instant>,
}

impl Timer {
    /// A timer that is not armed.
    pub fn new() -> Timer {
        Timer {
            // Registered with the runtime only once polled, i.e. once armed.
            sleep: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
            armed: None,
        }
    }

    /// Arms the timer for `deadline`, or disarms it with `None`.
    pub fn set(&mut self, deadline: Option<std::time::Instant>) {
        if deadline == self.armed {
            return;
        }
        match deadline {
            Some(d) => self.sleep.as_mut().reset(tokio::time::Instant::from_std(d)),
            // A fresh, unpolled `Sleep` is not registered: nothing can fire.
            None => self.sleep = Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
        }
        self.armed = deadline;
    }

    /// Completes when the armed deadline passes; never while disarmed. Cancel-safe: dropping
    /// the future leaves the timer armed.
    pub async fn fired(&mut self) {
        if self.armed.is_none() {
            return std::future::pending().await;
        }
        self.sleep.as_mut().await;
        // Fired: the next `set` arms it again even for the same deadline.
        self.armed = None;
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // A paused clock jumps to the next timer when the runtime has nothing else to do, so these
    // read no real time.
    #[tokio::test(start_paused = true)]
    async fn fires_at_the_deadline_it_was_moved_to_and_never_while_disarmed() {
        let start = tokio::time::Instant::now();
        let mut t = Timer::new();
        let never = tokio::time::timeout(Duration::from_secs(3600), t.fired()).await;
        assert!(never.is_err(), "a disarmed timer fired");
        let base = now();
        t.set(Some(base + Duration::from_secs(5)));
        t.set(Some(base + Duration::from_secs(9)));
        t.fired().await;
        // The later deadline, not the first one (the wheel counts whole milliseconds).
        assert_eq!(start.elapsed().as_secs(), 3609);
        // Fired: the same deadline arms it again; disarming before it passes keeps it quiet.
        t.set(Some(now() + Duration::from_secs(1)));
        t.set(None);
        let quiet = tokio::time::timeout(Duration::from_secs(60), t.fired()).await;
        assert!(quiet.is_err(), "a disarmed timer fired");
    }
}
