//! The one way a message a user wrote is stored, whatever door it came in by: the BBS's `S`
//! (through `SessionWrites`), the web's compose page, SMTP and NNTP. On the store thread, in
//! order: the store's room is measured again (a quota that follows the disk), the sender's
//! allowances are checked for every copy, the copies are stored in one transaction under the
//! hold/reject rules (every copy or none), and only then counted. Text and subject are checked
//! before they get here ([`qtc_mail::submitted`] for the web and mail clients; the interpreter
//! for typed lines).

use std::time::Instant;

use qtc_callsign::Callsign;
use qtc_mail::{NewMessage, StoreError};
use qtc_store::{MailParts, Store};

use crate::user_limits::UserLimits;

/// Stores every copy of one message from one user (each `NewMessage` is a copy, one per
/// addressee, the same sender) with its parts, at `now` (for the allowances) and `unix`
/// (Unix seconds, stamped on the copies): each copy's number and BID, or nothing stored and
/// why.
pub fn store(
    st: &mut Store,
    limits: &UserLimits,
    copies: &[NewMessage],
    parts: &MailParts,
    (now, unix): (Instant, i64),
) -> Result<Vec<(u64, String)>, StoreError> {
    let Some(from) = copies.first().map(|m| m.from.as_str()) else {
        return Ok(Vec::new());
    };
    // The sender is the user who logged in, so a station's call; anything else has no
    // account here and no allowance to count against.
    let from = Callsign::parse_station(from).map_err(|_| StoreError::NoSuchUser(from.into()))?;
    // The room it may take is measured now, not as it was at start.
    crate::room::refresh(st);
    let size: u64 = copies
        .iter()
        .map(|m| (m.body.len() + m.subject.len()) as u64)
        .sum();
    let n = u32::try_from(copies.len()).unwrap_or(u32::MAX);
    let exempt = crate::user_limits::exempt(st, from)?;
    if !exempt {
        limits
            .check(from, n, size, now)
            .map_err(|why| crate::user_limits::refused(from, why))?;
    }
    let stored = st.insert_submission(copies, parts, unix)?;
    if !exempt {
        limits.count(from, n, size, now);
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, Station};

    fn copy(to: &str) -> NewMessage {
        NewMessage {
            kind: MsgType::Personal,
            status: MsgStatus::New,
            to: to.into(),
            at: String::new(),
            from: "N0USR".into(),
            bid: None,
            subject: b"s".to_vec(),
            rlines: Vec::new(),
            body: b"b\r\n".to_vec(),
        }
    }

    #[test]
    fn a_message_at_the_hourly_limit_is_stored_for_all_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(dir.path(), qtc_store::Durability::Normal).unwrap();
        st.set_station(Station::new("N0CALL".parse().unwrap()));
        let limits = UserLimits::new(6, 0);
        let now = (crate::clock::now(), 0);
        let parts = MailParts::default();
        store(&mut st, &limits, &[copy("N0A"), copy("N0B")], &parts, now).unwrap();
        let five: Vec<NewMessage> = ["N0C", "N0D", "N0E", "N0F", "N0G"]
            .iter()
            .map(|c| copy(c))
            .collect();
        let e = store(&mut st, &limits, &five, &parts, now).unwrap_err();
        assert!(matches!(e, StoreError::OverLimit(_)), "{e:?}");
        let all = st.list(&ListFilter::default()).unwrap();
        assert_eq!(all.len(), 2, "none of the five stored");
        let stored = store(&mut st, &limits, &five[..4], &parts, now).unwrap();
        assert_eq!(stored.len(), 4);
        assert_eq!(st.list(&ListFilter::default()).unwrap().len(), 6);
    }
}
