//! Web login sessions: a random 128-bit token in an HttpOnly, SameSite=Strict cookie, kept in
//! memory only (a restart logs everyone out), each with its own CSRF token for the forms.
//! Sessions age out when looked at (no timer).

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

/// The session cookie's name.
pub const COOKIE: &str = "qtc_session";
/// The cookie that carries the login form's CSRF token before there is a session.
pub const PRE_COOKIE: &str = "qtc_login";
/// A session ends this long after login.
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Most sessions kept at once; the oldest goes first.
pub const MAX_SESSIONS: usize = 1024;
/// Most sessions of one user; their own oldest goes first, so one account logging in again and
/// again cannot push anyone else out.
pub const MAX_PER_USER: usize = 4;

/// One logged-in user.
#[derive(Clone, Debug)]
pub struct WebSession {
    /// The user's callsign.
    pub call: Callsign,
    /// The token every form of this session carries.
    pub csrf: String,
    /// The user's login stamp at login ([`qtc_store::Store::login_stamp`]): every request
    /// compares it with the store's, so a delete, lock, promotion, demotion or new password
    /// ends it.
    pub stamp: String,
    created: Instant,
}

impl WebSession {
    /// Whether the user is a sysop (as of the login stamp, checked on every request).
    pub fn sysop(&self) -> bool {
        is_sysop(&self.stamp)
    }
}

#[cfg(test)]
impl WebSession {
    /// A session for a page's unit test.
    pub fn for_test(call: &str, sysop: bool) -> WebSession {
        WebSession {
            call: Callsign::parse_station(call).expect("a test callsign"),
            csrf: "0".repeat(32),
            stamp: if sysop { "S:x" } else { "U:x" }.into(),
            created: crate::clock::now(),
        }
    }
}

/// Whether a login stamp ([`qtc_store::Store::login_stamp`]) is a sysop's.
pub fn is_sysop(stamp: &str) -> bool {
    stamp.starts_with("S:")
}

/// 128 random bits from the kernel, as 32 hex digits.
pub fn token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Compares two tokens without stopping at the first difference.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The value of cookie `name` in a `Cookie:` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// The sessions in memory.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, WebSession>>,
}

impl Sessions {
    /// Starts a session for `call`, whose login stamp is `stamp`; returns its cookie token.
    pub fn create(&self, call: Callsign, stamp: String, now: Instant) -> std::io::Result<String> {
        let id = token()?;
        let s = WebSession {
            call,
            csrf: token()?,
            stamp,
            created: now,
        };
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, s| now.duration_since(s.created) < LIFETIME);
        let oldest = |m: &HashMap<String, WebSession>, of: Option<Callsign>| {
            m.iter()
                .filter(|(_, s)| of.is_none_or(|c| s.call == c))
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
        };
        while m.values().filter(|s| s.call == call).count() >= MAX_PER_USER {
            match oldest(&m, Some(call)) {
                Some(k) => m.remove(&k),
                None => break,
            };
        }
        while m.len() >= MAX_SESSIONS {
            match oldest(&m, None) {
                Some(k) => m.remove(&k),
                None => break,
            };
        }
        m.insert(id.clone(), s);
        Ok(id)
    }

    /// The live session with this token.
    pub fn get(&self, id: &str, now: Instant) -> Option<WebSession> {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match m.get(id) {
            Some(s) if now.duration_since(s.created) < LIFETIME => Some(s.clone()),
            Some(_) => {
                m.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends a session.
    pub fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_bits_and_differ() {
        let a = token().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, token().unwrap());
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &token().unwrap()));
        assert!(!same("ab", "abc"));
    }

    #[test]
    fn cookies_parse_and_sessions_age() {
        assert_eq!(cookie("a=1; qtc_session=xyz; b=2", COOKIE), Some("xyz"));
        assert_eq!(cookie("qtc_sessionx=1", COOKIE), None);
        let s = Sessions::default();
        let t0 = crate::clock::now();
        let id = s
            .create(
                Callsign::parse_station("N0SYS").unwrap(),
                "stamp".into(),
                t0,
            )
            .unwrap();
        assert_eq!(s.get(&id, t0).unwrap().call.to_string(), "N0SYS");
        assert!(s.get(&id, t0 + LIFETIME).is_none());
        assert!(s.get(&id, t0).is_none());
    }

    #[test]
    fn one_user_logging_in_again_and_again_pushes_out_only_their_own() {
        let s = Sessions::default();
        let t0 = crate::clock::now();
        let sysop = s
            .create(Callsign::parse_station("N0SYS").unwrap(), "S:x".into(), t0)
            .unwrap();
        let mine: Vec<String> = (1..=MAX_PER_USER as u64 + 3)
            .map(|i| {
                s.create(
                    Callsign::parse_station("N0USR").unwrap(),
                    "U:x".into(),
                    t0 + Duration::from_secs(i),
                )
                .unwrap()
            })
            .collect();
        assert!(s.get(&sysop, t0).is_some());
        let live = mine.iter().filter(|id| s.get(id, t0).is_some()).count();
        assert_eq!(live, MAX_PER_USER);
        assert!(
            s.get(mine.last().unwrap(), t0).is_some(),
            "the newest stays"
        );
        assert!(s.get(&mine[0], t0).is_none(), "the oldest went");
    }
}
