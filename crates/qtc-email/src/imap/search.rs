//! Sequence sets and SEARCH keys, evaluated on the INBOX as the session holds it.

use imap_codec::imap_types::search::SearchKey;
use imap_codec::imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

use super::Msg;

/// Whether `value` is in `set`, `*` being `largest`. Checked per value: a set such as
/// `1:4294967295` is never expanded.
pub fn contains(set: &SequenceSet, value: u64, largest: u64) -> bool {
    let n = |s: &SeqOrUid| match s {
        SeqOrUid::Value(v) => u64::from(v.get()),
        SeqOrUid::Asterisk => largest,
    };
    set.0.as_ref().iter().any(|seq| match seq {
        Sequence::Single(s) => n(s) == value,
        Sequence::Range(a, b) => {
            let (lo, hi) = (n(a).min(n(b)), n(a).max(n(b)));
            (lo..=hi).contains(&value)
        }
    })
}

/// The indexes (from 0) of the messages a set names, by sequence number or UID.
pub fn select(set: &SequenceSet, msgs: &[Msg], uid: bool) -> Vec<usize> {
    let largest = match uid {
        true => msgs.last().map_or(0, |m| m.entry.number),
        false => msgs.len() as u64,
    };
    (0..msgs.len())
        .filter(|&i| {
            let v = if uid {
                msgs[i].entry.number
            } else {
                i as u64 + 1
            };
            contains(set, v, largest)
        })
        .collect()
}

fn day_start(d: &imap_codec::imap_types::datetime::NaiveDate) -> i64 {
    d.as_ref()
        .and_hms_opt(0, 0, 0)
        .map_or(0, |t| t.and_utc().timestamp())
}

fn has(hay: &str, needle: &[u8]) -> bool {
    hay.to_lowercase()
        .contains(&String::from_utf8_lossy(needle).to_lowercase())
}

/// Whether message `i` (sequence number `i + 1`) matches `key`; `me` is the mailbox's owner.
pub fn matches(key: &SearchKey<'_>, msgs: &[Msg], i: usize, me: &str) -> bool {
    let m = &msgs[i];
    let e = &m.entry;
    let subject = qtc_mail::charset::decode_header(&e.subject);
    match key {
        SearchKey::And(keys) => keys.as_ref().iter().all(|k| matches(k, msgs, i, me)),
        SearchKey::Or(a, b) => matches(a, msgs, i, me) || matches(b, msgs, i, me),
        SearchKey::Not(k) => !matches(k, msgs, i, me),
        SearchKey::SequenceSet(set) => contains(set, i as u64 + 1, msgs.len() as u64),
        SearchKey::Uid(set) => contains(set, e.number, msgs.last().map_or(0, |m| m.entry.number)),
        SearchKey::All => true,
        SearchKey::Seen | SearchKey::Old => e.seen,
        SearchKey::Unseen | SearchKey::New => !e.seen,
        SearchKey::Deleted => m.deleted,
        SearchKey::Undeleted => !m.deleted,
        SearchKey::Answered => e.answered,
        SearchKey::Unanswered => !e.answered,
        SearchKey::Undraft | SearchKey::Unflagged => true,
        SearchKey::Unkeyword(_) => true,
        SearchKey::From(s) => has(&e.from, s.as_ref()),
        SearchKey::To(s) => has(me, s.as_ref()),
        SearchKey::Subject(s) => has(&subject, s.as_ref()),
        // Text and body are matched against what the INBOX holds: sender and subject.
        SearchKey::Text(s) | SearchKey::Body(s) => {
            has(&subject, s.as_ref()) || has(&e.from, s.as_ref())
        }
        SearchKey::Larger(n) => e.size > u64::from(*n),
        SearchKey::Smaller(n) => e.size < u64::from(*n),
        SearchKey::Before(d) | SearchKey::SentBefore(d) => e.created < day_start(d),
        SearchKey::Since(d) | SearchKey::SentSince(d) => e.created >= day_start(d),
        SearchKey::On(d) | SearchKey::SentOn(d) => {
            (day_start(d)..day_start(d) + 86_400).contains(&e.created)
        }
        _ => false,
    }
}
