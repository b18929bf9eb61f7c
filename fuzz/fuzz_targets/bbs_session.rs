//! Fuzz a BBS session driven by arbitrary user input against a store in memory: whatever is
//! typed, in whatever chunks, nothing may panic, and once the session has asked to close it
//! produces nothing more. Every store request runs through `Request::run`, as in the daemon.
//!
//! Every input starts from the same store: a plain user, a sysop, a BBS and a few messages.
//! Users have no password, so the password login path fails, and RF logins
//! (`Access::Callsign`) need none.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use qtc_bbs::{Access, Answer, Ask, Config, Event, OnlineUser, Session};
use qtc_mail::memory::MemoryStore;
use qtc_mail::{MessageStore, MsgStatus, MsgType, NewMessage};

/// A plausible clock: 2023-11-14, plus up to 65535 s taken from the input.
const NOW: i64 = 1_700_000_000;

fn template() -> MemoryStore {
    let mut store = MemoryStore::new();
    store
        .add_user("N0USR".parse().expect("a callsign"), None, false, false)
        .unwrap();
    store
        .add_user("N0SYS".parse().expect("a callsign"), None, true, false)
        .unwrap();
    store
        .add_user("N0FWD".parse().expect("a callsign"), None, false, true)
        .unwrap();
    let msg = |kind, to: &str, at: &str, from: &str, subject: &str, body: &[u8]| NewMessage {
        kind,
        status: MsgStatus::New,
        to: to.into(),
        at: at.into(),
        from: from.into(),
        bid: None,
        subject: subject.as_bytes().to_vec(),
        rlines: Vec::new(),
        body: body.to_vec(),
    };
    let msgs = [
        msg(
            MsgType::Personal,
            "N0USR",
            "",
            "N0SYS",
            "hello",
            b"hi\r\nthere\r\n",
        ),
        msg(
            MsgType::Bulletin,
            "ALL",
            "WW",
            "N0SYS",
            "news",
            b"bulletin\r\n",
        ),
        msg(
            MsgType::Traffic,
            "12345",
            "NTSCA",
            "N0USR",
            "QTC 1",
            b"\xff\x00\x1a\r\n",
        ),
        msg(MsgType::Personal, "N0SYS", "N0BBS", "N0USR", "re", b"x\r\n"),
    ];
    for m in &msgs {
        store.insert_message(m, "N0BBS".parse().expect("a callsign"), NOW).expect("seed message");
    }
    store
}

/// The starting store, fresh for this input.
fn fresh_store() -> MemoryStore {
    static TEMPLATE: OnceLock<MemoryStore> = OnceLock::new();
    TEMPLATE.get_or_init(template).clone()
}

fn config() -> Arc<Config> {
    static CFG: OnceLock<Arc<Config>> = OnceLock::new();
    CFG.get_or_init(|| {
        let mut cfg = Config::new("N0BBS".parse().expect("a callsign"));
        cfg.haddr = "N0BBS.#NCA.CA.USA.NOAM".into();
        cfg.max_line = 80;
        cfg.max_message = 4096;
        cfg.info = "fuzz\rBBS".into();
        Arc::new(cfg)
    })
    .clone()
}

/// Does what the daemon does until the session waits for input: sends its output, answers
/// password checks, questions (U, J, PORTS...) and store requests, and asks for the next piece
/// of a long output; notes when the session asked to close.
fn drain(s: &mut Session, store: &mut MemoryStore, now: i64, closed: &mut bool) {
    loop {
        let out = s.take_output();
        if *closed {
            assert!(out.is_empty(), "output after Close");
        }
        let mut check = None;
        while let Some(ev) = s.poll_event() {
            match ev {
                Event::Close => *closed = true,
                Event::CheckPassword { call, password, .. } => check = Some((call, password)),
                _ => {}
            }
        }
        if let Some((call, password)) = check {
            let ok = store.check_password(call, &password);
            s.password_checked(ok, now);
            continue;
        }
        if let Some(ask) = s.pending_ask() {
            let answer = match ask {
                Ask::Connect { .. } => Answer::Disconnected(Err("no radio".into())),
                Ask::Conv { .. } => Answer::ConvEnded,
                Ask::Users => Answer::Users(vec![OnlineUser {
                    call: "N0USR".into(),
                    via: "telnet".into(),
                }]),
                Ask::Heard | Ask::Ports => Answer::Ports(Vec::new()),
                Ask::Nodes { .. } => Answer::Nodes(None),
                Ask::Routes => Answer::Routes(None),
            };
            s.answer(answer, now);
            continue;
        }
        if let Some(request) = s.take_request() {
            let reply = request.run(store);
            s.store_answered(reply, now);
            continue;
        }
        if s.has_more_output() {
            s.more_output(now);
            continue;
        }
        return;
    }
}

fuzz_target!(|data: &[u8]| {
    let [who, step, t0, t1, input @ ..] = data else {
        return;
    };
    let mut db = fresh_store();
    let store = &mut db;

    let rf = |call: &str| Access::Callsign(call.parse().expect("a callsign"));
    let access = match who % 6 {
        0 => Access::Password,
        1 => rf("N0USR"),
        2 => rf("N0SYS"),
        3 => rf("N0FWD"),
        4 => rf("N0GST"),
        _ => rf("N0USR-7"),
    };
    let now = NOW + i64::from(u16::from_le_bytes([*t0, *t1]));
    let mut s = Session::new(config(), access);
    let mut closed = false;
    s.start();
    drain(&mut s, store, now, &mut closed);
    let step = usize::from(*step % 64).max(1);
    for chunk in input.chunks(step) {
        s.handle_input(chunk, now);
        drain(&mut s, store, now, &mut closed);
        let _ = s.user().is_some();
        let _ = s.take_unconsumed();
    }
});
