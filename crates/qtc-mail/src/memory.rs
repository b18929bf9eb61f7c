//! A [`MessageStore`] in memory, for the interpreter's tests and fuzz target: no SQLite, no
//! files. It keeps what the interpreter sees (users, messages, BIDs, white pages) with the
//! same listing rules as the real store; routing, rules and forwarding queues are not here.

use std::collections::{BTreeMap, HashMap, HashSet};

use qtc_callsign::Callsign;

use crate::message::{ListFilter, Message, MessageHeader, MsgStatus, MsgType, NewMessage};
use crate::store::{MessageStore, StoreError, User};

/// Users, messages and BIDs in memory.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    /// Each user with their password (plain text: this is for tests).
    users: BTreeMap<String, (User, Option<String>)>,
    messages: BTreeMap<u64, Message>,
    bids: HashSet<String>,
    homes: HashMap<String, String>,
    /// Each user's read marks on bulletins and on copies (a copy's recipient, a number).
    reads: HashSet<(String, u64)>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Adds a user (`password` `None`: none, as a radio-only user).
    pub fn add_user(
        &mut self,
        call: Callsign,
        password: Option<&str>,
        sysop: bool,
        bbs: bool,
    ) -> Result<(), StoreError> {
        let user = User {
            call: call.without_ssid(),
            name: String::new(),
            home_bbs: String::new(),
            sysop,
            bbs,
            last_listed: 0,
            page_len: None,
        };
        let call = user.call.to_string();
        if self.users.contains_key(&call) {
            return Err(StoreError::UserExists(call));
        }
        self.users
            .insert(call, (user, password.map(str::to_string)));
        Ok(())
    }

    /// Whether `password` is `call`'s (the daemon checks passwords on its own, off the store).
    pub fn check_password(&mut self, call: Callsign, password: &str) -> Result<bool, StoreError> {
        Ok(self
            .users
            .get(&call.to_string())
            .and_then(|(_, p)| p.as_deref())
            == Some(password))
    }

    /// Makes `call` one of message `number`'s other recipients (a Winlink Cc).
    pub fn add_copy(&mut self, number: u64, call: &str) {
        if let Some(m) = self.messages.get_mut(&number) {
            m.copies.push(call.to_ascii_uppercase());
            m.cc.push(call.to_ascii_uppercase());
        }
    }

    /// Clears `reader`'s read mark on message `number` (a mail client's `\Seen` taken off).
    pub fn mark_unread(&mut self, number: u64, reader: Callsign) {
        let reader = reader.to_string();
        if let Some(m) = self.messages.get_mut(&number) {
            if m.header.to == reader && m.header.status == MsgStatus::Read {
                m.header.status = MsgStatus::New;
            }
        }
        self.reads.remove(&(reader, number));
    }

    /// The status `reader` sees: their own mark on a bulletin or a copy.
    fn seen(&self, m: &Message, reader: Option<&str>) -> MsgStatus {
        let h = &m.header;
        let Some(reader) = reader else {
            return h.status;
        };
        let read = || {
            if self.reads.contains(&(reader.to_string(), h.number)) {
                MsgStatus::Read
            } else {
                MsgStatus::New
            }
        };
        match h.status {
            MsgStatus::Held | MsgStatus::Killed => h.status,
            _ if h.kind == MsgType::Bulletin => read(),
            _ if h.to == reader => h.status,
            _ if m.copies.iter().any(|c| c == reader) => read(),
            s => s,
        }
    }

    fn matches(&self, f: &ListFilter, m: &Message) -> bool {
        let h = &m.header;
        let mine = |call: &str| h.to == call || m.copies.iter().any(|c| c == call);
        let upper = |s: &Option<String>| s.as_ref().map(|s| s.to_ascii_uppercase());
        let reader = upper(
            &f.reader
                .clone()
                .or(f.to_or_copy.clone())
                .or(f.visible_to.clone()),
        );
        let seen = self.seen(m, reader.as_deref());
        f.after.is_none_or(|a| h.number > a)
            && f.range.is_none_or(|(lo, hi)| (lo..=hi).contains(&h.number))
            && f.kind.is_none_or(|k| h.kind == k)
            && match f.status {
                Some(s) => seen == s,
                None => f.include_killed || h.status != MsgStatus::Killed,
            }
            && upper(&f.to).is_none_or(|to| h.to == to)
            && upper(&f.to_or_copy).is_none_or(|c| mine(&c))
            && upper(&f.from).is_none_or(|from| h.from == from)
            && upper(&f.at).is_none_or(|at| format!(".{}.", h.at).contains(&format!(".{at}.")))
            && upper(&f.visible_to).is_none_or(|v| {
                (h.kind != MsgType::Personal || h.from == v || mine(&v))
                    && h.status != MsgStatus::Held
            })
            && upper(&f.unread_by).is_none_or(|u| {
                (mine(&u) || h.kind == MsgType::Bulletin)
                    && self.seen(m, Some(&u)) == MsgStatus::New
            })
    }
}

impl MessageStore for MemoryStore {
    fn user(&mut self, call: Callsign) -> Result<Option<User>, StoreError> {
        Ok(self.users.get(&call.to_string()).map(|(u, _)| u.clone()))
    }

    fn set_password(&mut self, call: Callsign, password: &str) -> Result<(), StoreError> {
        let call = call.to_string();
        match self.users.get_mut(&call) {
            Some((_, p)) => {
                *p = Some(password.to_string());
                Ok(())
            }
            None => Err(StoreError::NoSuchUser(call)),
        }
    }

    fn update_user(&mut self, user: &User) -> Result<(), StoreError> {
        let call = user.call.to_string();
        let Some((u, _)) = self.users.get_mut(&call) else {
            return Err(StoreError::NoSuchUser(call));
        };
        u.name.clone_from(&user.name);
        u.home_bbs.clone_from(&user.home_bbs);
        u.last_listed = user.last_listed;
        u.page_len = user.page_len;
        if !user.home_bbs.is_empty() {
            self.homes.insert(call, user.home_bbs.to_ascii_uppercase());
        }
        Ok(())
    }

    fn insert_message(
        &mut self,
        msg: &NewMessage,
        bbs_call: Callsign,
        now: i64,
    ) -> Result<u64, StoreError> {
        if let Some(bid) = &msg.bid {
            if self.bids.contains(&bid.to_ascii_uppercase()) {
                return Err(StoreError::DuplicateBid(bid.clone()));
            }
        }
        let number = self.messages.keys().next_back().map_or(1, |n| n + 1);
        let bid = msg
            .bid
            .clone()
            .unwrap_or_else(|| format!("{number}_{bbs_call}"));
        self.bids.insert(bid.to_ascii_uppercase());
        let header = MessageHeader {
            number,
            kind: msg.kind,
            status: msg.status,
            to: msg.to.to_ascii_uppercase(),
            at: msg.at.to_ascii_uppercase(),
            from: msg.from.to_ascii_uppercase(),
            bid,
            subject: msg.subject.clone(),
            size: msg.body.len() as u64,
            created: now,
        };
        let m = Message {
            header,
            rlines: msg.rlines.clone(),
            body: msg.body.clone(),
            read_count: 0,
            copies: Vec::new(),
            cc: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        };
        self.messages.insert(number, m);
        Ok(number)
    }

    fn message(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        Ok(self.messages.get(&number).cloned())
    }

    fn list(&mut self, filter: &ListFilter) -> Result<Vec<MessageHeader>, StoreError> {
        let reader = filter
            .reader
            .clone()
            .or(filter.to_or_copy.clone())
            .or(filter.visible_to.clone())
            .map(|r| r.to_ascii_uppercase());
        let matching = self
            .messages
            .values()
            .filter(|m| self.matches(filter, m))
            .map(|m| MessageHeader {
                status: self.seen(m, reader.as_deref()),
                ..m.header.clone()
            });
        let limit = filter.last.unwrap_or(usize::MAX);
        Ok(if filter.oldest_first {
            matching.take(limit).collect()
        } else {
            matching.rev().take(limit).collect()
        })
    }

    fn set_status(&mut self, number: u64, status: MsgStatus) -> Result<bool, StoreError> {
        Ok(match self.messages.get_mut(&number) {
            Some(m) => {
                m.header.status = status;
                true
            }
            None => false,
        })
    }

    fn mark_read(&mut self, number: u64, reader: Callsign) -> Result<(), StoreError> {
        let reader = reader.to_string();
        let Some(m) = self.messages.get_mut(&number) else {
            return Ok(());
        };
        if m.header.to == reader {
            m.read_count += 1;
            if m.header.status == MsgStatus::New {
                m.header.status = MsgStatus::Read;
            }
        } else if m.header.kind == MsgType::Bulletin {
            self.reads.insert((reader, number));
        } else if m.copies.contains(&reader) {
            m.read_count += 1;
            self.reads.insert((reader, number));
        }
        Ok(())
    }

    fn status_seen_by(
        &mut self,
        number: u64,
        reader: Callsign,
    ) -> Result<Option<MsgStatus>, StoreError> {
        let reader = reader.to_string();
        Ok(self
            .messages
            .get(&number)
            .map(|m| self.seen(m, Some(&reader))))
    }

    fn bid_known(&mut self, bid: &str) -> Result<bool, StoreError> {
        Ok(self.bids.contains(&bid.to_ascii_uppercase()))
    }

    fn counts(&mut self) -> Result<(u64, u64), StoreError> {
        let active = self
            .messages
            .values()
            .filter(|m| m.header.status != MsgStatus::Killed)
            .count();
        let latest = self.messages.keys().next_back().copied().unwrap_or(0);
        Ok((active as u64, latest))
    }

    fn home_bbs(&mut self, call: &str) -> Result<Option<String>, StoreError> {
        Ok(self.homes.get(&call.to_ascii_uppercase()).cloned())
    }
}
