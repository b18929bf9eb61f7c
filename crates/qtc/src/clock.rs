//! The daemon's only clock readings. Protocol cores never read the time; the shell passes it in.
#![allow(clippy::disallowed_methods)]

/// Seconds since the Unix epoch, for message dates.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A monotonic instant, for rate limits and protocol timers.
pub fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}
