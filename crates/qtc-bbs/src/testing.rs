//! The interpreter's test harness: a memory store with a few users, sessions driven the way
//! the daemon drives them (store requests answered, output asked for, password checks made).

use std::sync::Arc;

use qtc_callsign::Callsign;
use qtc_mail::memory::MemoryStore as Store;
use qtc_mail::{MessageStore, MsgStatus, MsgType, NewMessage, StoreError};

use crate::{Access, Answer, Config, Event, Session};

/// A memory store with four users (`N0USR`, the sysop `N0SYS`, `N0OTH`, the BBS `N0BBB`) and
/// the interpreter's settings.
pub(crate) struct Bbs {
    pub(crate) store: Store,
    pub(crate) cfg: Arc<Config>,
}

pub(crate) const NOW: i64 = 1_796_214_665; // 2026-12-02 12:31:05Z

impl Bbs {
    pub(crate) fn new() -> Bbs {
        let mut store = Store::new();
        // Call, password, sysop, BBS.
        for (call, pw, sysop, bbs) in [
            ("N0USR", "pw", false, false),
            ("N0SYS", "root", true, false),
            ("N0OTH", "x", false, false),
            ("N0BBB", "fwd", false, true),
        ] {
            store
                .add_user(callsign(call), Some(pw), sysop, bbs)
                .unwrap();
        }
        let mut cfg = Config::new(callsign("N0CALL"));
        cfg.max_line = 80;
        cfg.max_message = 1000;
        // Paging has its own tests; the others see whole listings.
        cfg.page_len_radio = 0;
        Bbs {
            store,
            cfg: Arc::new(cfg),
        }
    }

    /// The sysop over RF, with rights granted by SYS.
    pub(crate) fn sysop(&mut self) -> User_ {
        let mut s = self.rf("N0SYS");
        s.send(self, "SYS");
        assert!(s.send(self, "root").contains("granted"));
        s
    }

    /// A session already logged in over RF as `call`.
    pub(crate) fn rf(&mut self, call: &str) -> User_ {
        let mut s = Session::new(
            self.cfg.clone(),
            Access::Callsign(call.parse().expect("a test callsign")),
        );
        start(&mut s, &mut self.store);
        let out = s.take_output();
        User_ { s, first: out }
    }
}

/// A station's call written in a test.
pub(crate) fn callsign(text: &str) -> Callsign {
    Callsign::parse_station(text).expect("a test callsign")
}

/// A user's session.
pub(crate) struct User_ {
    pub(crate) s: Session,
    /// What the session said on login.
    pub(crate) first: Vec<u8>,
}

impl User_ {
    /// Sends `line` and answers what it asked for; the output.
    pub(crate) fn send(&mut self, bbs: &mut Bbs, line: &str) -> String {
        feed(&mut self.s, format!("{line}\r").as_bytes(), &mut bbs.store);
        String::from_utf8_lossy(&self.s.take_output()).into_owned()
    }
}

/// Answers the session's store requests and asks for its output until it has all of it, as
/// the daemon does when the reader keeps up.
pub(crate) fn pump(s: &mut Session, store: &mut Store) {
    loop {
        crate::answer_all(s, store, NOW);
        if !s.has_more_output() {
            return;
        }
        s.more_output(NOW);
    }
}

pub(crate) fn start(s: &mut Session, store: &mut Store) {
    s.start();
    pump(s, store);
}

pub(crate) fn input(s: &mut Session, bytes: &[u8], store: &mut Store) {
    s.handle_input(bytes, NOW);
    pump(s, store);
}

pub(crate) fn checked(s: &mut Session, ok: Result<bool, StoreError>, store: &mut Store) {
    s.password_checked(ok, NOW);
    pump(s, store);
}

pub(crate) fn answered(s: &mut Session, answer: Answer, store: &mut Store) {
    s.answer(answer, NOW);
    pump(s, store);
}

/// Feeds `input`, then answers the password checks it asked for from `store`, as the daemon
/// does (there off its threads); the other events stay queued, in order.
pub(crate) fn feed(s: &mut Session, bytes: &[u8], store: &mut Store) {
    input(s, bytes, store);
    while let Some(i) = s
        .events
        .iter()
        .position(|e| matches!(e, Event::CheckPassword { .. }))
    {
        let Some(Event::CheckPassword { call, password, .. }) = s.events.remove(i) else {
            unreachable!()
        };
        let ok = store.check_password(call, &password);
        checked(s, ok, store);
    }
}

pub(crate) fn post(bbs: &mut Bbs, who: &str, cmd: &str, subject: &str, body: &[&str]) -> String {
    let mut u = bbs.rf(who);
    let mut out = u.send(bbs, cmd);
    out += &u.send(bbs, subject);
    for l in body {
        out += &u.send(bbs, l);
    }
    out
}

pub(crate) fn insert_all(store: &mut Store, msgs: &[NewMessage]) {
    for m in msgs {
        store
            .insert_message(m, "N0CALL".parse().unwrap(), NOW)
            .unwrap();
    }
}

/// A bulletin to ALL @ WW from N0OTH.
pub(crate) fn bulletin(subject: &str, body: &[u8]) -> NewMessage {
    NewMessage {
        kind: MsgType::Bulletin,
        status: MsgStatus::New,
        to: "ALL".into(),
        at: "WW".into(),
        from: "N0OTH".into(),
        bid: None,
        subject: subject.as_bytes().to_vec(),
        rlines: Vec::new(),
        body: body.to_vec(),
    }
}
