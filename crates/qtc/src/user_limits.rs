//! Per-user allowances for mail a user enters at the BBS: messages per hour and bytes per day,
//! counted in memory (a restart starts afresh). Sysops and BBS accounts are exempt; forwarded
//! mail is not counted here (partners have their own limits in the forwarding session).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qtc_mail::{MessageStore, NewMessage, StoreError};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);
/// Senders remembered at most; beyond it the counts of the quietest are dropped.
const MAX_ENTRIES: usize = 10_000;

/// The allowances (0: no limit).
pub struct UserLimits {
    per_hour: u32,
    bytes_per_day: u64,
    usage: Mutex<HashMap<String, Usage>>,
}

#[derive(Clone, Copy)]
struct Usage {
    hour_start: Instant,
    messages: u32,
    day_start: Instant,
    bytes: u64,
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

    /// Counts a message of `size` bytes from `call`, or says why it is over the allowance
    /// (then nothing is counted).
    pub fn take(&self, call: &str, size: u64, now: Instant) -> Result<(), String> {
        let mut map = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES && !map.contains_key(call) {
            map.retain(|_, u| now.duration_since(u.day_start) < DAY);
        }
        let u = map.entry(call.to_string()).or_insert(Usage {
            hour_start: now,
            messages: 0,
            day_start: now,
            bytes: 0,
        });
        if now.duration_since(u.hour_start) >= HOUR {
            (u.hour_start, u.messages) = (now, 0);
        }
        if now.duration_since(u.day_start) >= DAY {
            (u.day_start, u.bytes) = (now, 0);
        }
        if self.per_hour > 0 && u.messages >= self.per_hour {
            return Err(format!(
                "You have sent {} messages this hour, the most allowed here",
                self.per_hour
            ));
        }
        if self.bytes_per_day > 0 && u.bytes.saturating_add(size) > self.bytes_per_day {
            return Err(format!(
                "That would pass your allowance of {} KB a day",
                self.bytes_per_day / 1024
            ));
        }
        u.messages += 1;
        u.bytes = u.bytes.saturating_add(size);
        Ok(())
    }
}

/// Counts a message a user entered (at the BBS or on the web) against their allowances, or
/// refuses it; sysops and BBS accounts are exempt.
pub fn within_allowance(
    store: &mut dyn MessageStore,
    limits: &UserLimits,
    msg: &NewMessage,
    now: Instant,
) -> Result<(), StoreError> {
    let exempt = store.user(&msg.from)?.is_some_and(|u| u.sysop || u.bbs);
    if !exempt {
        let size = (msg.body.len() + msg.subject.len()) as u64;
        if let Err(why) = limits.take(&msg.from, size, now) {
            tracing::warn!(from = %msg.from, "message refused: {why}");
            return Err(StoreError::OverLimit(why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_per_hour_and_bytes_per_day() {
        let l = UserLimits::new(2, 2048);
        let t0 = crate::clock::now();
        l.take("N0USR", 100, t0).unwrap();
        l.take("N0USR", 100, t0).unwrap();
        assert!(l.take("N0USR", 100, t0).unwrap_err().contains("2 messages"));
        l.take("N0OTH", 100, t0).unwrap();
        l.take("N0USR", 1700, t0 + HOUR).unwrap();
        assert!(l
            .take("N0USR", 200, t0 + HOUR)
            .unwrap_err()
            .contains("2 KB"));
        l.take("N0USR", 1900, t0 + DAY).unwrap();
    }
}
