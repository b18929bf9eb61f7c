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

/// Completes at `deadline`, or never when there is none: the one timer a protocol core asks
/// for, armed only while it asks.
pub async fn until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        None => std::future::pending().await,
    }
}
