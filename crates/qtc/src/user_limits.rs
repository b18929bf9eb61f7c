//! Per-user allowances for mail a user enters (at the BBS, on the web, from a mail client):
//! messages per hour and bytes per day, counted in memory (a restart starts afresh). Sysops
//! and BBS accounts are exempt; forwarded mail is not counted here (partners have their own
//! limits in the forwarding session). A message to several addressees counts once per copy.
//! Checked and counted on the store thread, with the message's write ([`crate::submission`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;
use qtc_mail::{MessageStore, StoreError};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);
/// Senders remembered at most; beyond it the counts of the quietest are dropped.
const MAX_ENTRIES: usize = 10_000;

/// The allowances (0: no limit).
pub struct UserLimits {
    per_hour: u32,
    bytes_per_day: u64,
    usage: Mutex<HashMap<Callsign, Usage>>,
}

#[derive(Clone, Copy)]
struct Usage {
    hour_start: Instant,
    messages: u32,
    day_start: Instant,
    bytes: u64,
}

impl Usage {
    fn fresh(now: Instant) -> Usage {
        Usage {
            hour_start: now,
            messages: 0,
            day_start: now,
            bytes: 0,
        }
    }

    /// The counts as they stand at `now` (a new hour or day starts them again).
    fn at(mut self, now: Instant) -> Usage {
        if now.duration_since(self.hour_start) >= HOUR {
            (self.hour_start, self.messages) = (now, 0);
        }
        if now.duration_since(self.day_start) >= DAY {
            (self.day_start, self.bytes) = (now, 0);
        }
        self
    }
}

impl UserLimits {
    /// `per_hour` messages an hour and `bytes_per_day` bytes a day per user; 0: no limit.
    pub fn new(per_hour: u32, bytes_per_day: u64) -> UserLimits {
        UserLimits {
            per_hour,
            bytes_per_day,
            usage: Mutex::new(HashMap::new()),
        }
    }

    fn usage(&self) -> std::sync::MutexGuard<'_, HashMap<Callsign, Usage>> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `call` may send `messages` more messages of `size` bytes in all now, or why
    /// not. Nothing is counted.
    pub fn check(
        &self,
        call: Callsign,
        messages: u32,
        size: u64,
        now: Instant,
    ) -> Result<(), String> {
        let u = self
            .usage()
            .get(&call)
            .map_or(Usage::fresh(now), |u| u.at(now));
        if self.per_hour > 0 && u.messages.saturating_add(messages) > self.per_hour {
            return Err(format!(
                "You have sent {} messages this hour, the most allowed here",
                u.messages.min(self.per_hour)
            ));
        }
        if self.bytes_per_day > 0 && u.bytes.saturating_add(size) > self.bytes_per_day {
            return Err(format!(
                "That would pass your allowance of {} KB a day",
                self.bytes_per_day / 1024
            ));
        }
        Ok(())
    }

    /// Counts `messages` messages of `size` bytes in all from `call`.
    pub fn count(&self, call: Callsign, messages: u32, size: u64, now: Instant) {
        let mut map = self.usage();
        if map.len() >= MAX_ENTRIES && !map.contains_key(&call) {
            map.retain(|_, u| now.duration_since(u.day_start) < DAY);
        }
        let u = map.entry(call).or_insert_with(|| Usage::fresh(now));
        *u = u.at(now);
        u.messages = u.messages.saturating_add(messages);
        u.bytes = u.bytes.saturating_add(size);
    }
}

/// Whether `call` is exempt from the allowances: the sysop, or a BBS account.
pub fn exempt(store: &mut dyn MessageStore, call: Callsign) -> Result<bool, StoreError> {
    Ok(store.user(call)?.is_some_and(|u| u.sysop || u.bbs))
}

/// Whether `call` may send `messages` more messages of `size` bytes now (exempt users
/// always may); `StoreError::OverLimit` with the words for the user when not.
pub fn may_send(
    store: &mut dyn MessageStore,
    limits: &UserLimits,
    call: Callsign,
    (messages, size): (u32, u64),
    now: Instant,
) -> Result<(), StoreError> {
    if exempt(store, call)? {
        return Ok(());
    }
    limits
        .check(call, messages, size, now)
        .map_err(|why| refused(call, why))
}

/// A message from `call` refused for `why` (logged).
pub fn refused(call: Callsign, why: String) -> StoreError {
    tracing::warn!(from = %call, "message refused: {why}");
    StoreError::OverLimit(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_per_hour_and_bytes_per_day() {
        let l = UserLimits::new(2, 2048);
        let t0 = crate::clock::now();
        let take = |call: &str, n: u32, size: u64, t: Instant| {
            let call = call.parse().unwrap();
            l.check(call, n, size, t)?;
            l.count(call, n, size, t);
            Ok::<(), String>(())
        };
        take("N0USR", 1, 100, t0).unwrap();
        take("N0USR", 1, 100, t0).unwrap();
        assert!(take("N0USR", 1, 100, t0)
            .unwrap_err()
            .contains("2 messages"));
        take("N0OTH", 1, 100, t0).unwrap();
        take("N0USR", 1, 1700, t0 + HOUR).unwrap();
        assert!(take("N0USR", 1, 200, t0 + HOUR)
            .unwrap_err()
            .contains("2 KB"));
        take("N0USR", 1, 1900, t0 + DAY).unwrap();
    }

    #[test]
    fn a_message_to_several_counts_each_copy_all_or_none() {
        let l = UserLimits::new(4, 0);
        let t0 = crate::clock::now();
        let usr = "N0USR".parse().unwrap();
        l.count(usr, 2, 10, t0);
        assert!(l.check(usr, 3, 30, t0).is_err(), "3 copies would pass 4");
        l.check(usr, 2, 20, t0).unwrap();
        // A check alone counts nothing.
        l.check(usr, 2, 20, t0).unwrap();
    }
}
