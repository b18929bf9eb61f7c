//! Driving a core without the daemon: [`pump`] answers every event as the daemon would, its
//! store requests run against a [`MemoryMail`]; the fuzz targets (fuzz/fuzz_targets/
//! *_session.rs; the seeds run in this module's test) feed a core arbitrary bytes with
//! [`drive`], and the cores' unit tests use [`pump`] too.

use qtc_callsign::Callsign;
use qtc_mail::{MsgStatus, MsgType, NewMessage};

use crate::memory::MemoryMail;
use crate::store::Attachment;
use crate::{Core, Event, LoginRefused, Settings};

/// The station the sessions run at, N0CALL.
fn station() -> Callsign {
    Callsign::parse_station("N0CALL").expect("a station call")
}

/// Settings for a fuzzed session: passwords in clear and STARTTLS both allowed.
pub fn settings() -> Settings {
    Settings {
        call: station(),
        haddr: "N0CALL.#NCA.CA.USA.NOAM".into(),
        domain: "n0call".into(),
        max_message: 4096,
        plain_auth: true,
        starttls: true,
        news_without_login: false,
        version: "fuzz".into(),
    }
}

/// What the daemon did for a core, as [`pump`] reports it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pumped {
    /// The core asked to close.
    pub closed: bool,
    /// The core watches the store (IMAP IDLE).
    pub watching: bool,
}

/// How a test answers a login: the account (`None`: not a user's call) and the password in,
/// the user's callsign or why not out.
pub type Login<'a> = dyn FnMut(Option<Callsign>, &str) -> Result<Callsign, LoginRefused> + 'a;

/// Answers every event `core` has, in order, until it has none: logins by `login`, store
/// requests against `store`, STARTTLS at once. What the daemon does, in place.
pub fn pump<C: Core>(
    core: &mut C,
    store: &mut MemoryMail,
    login: &mut Login<'_>,
    state: &mut Pumped,
) {
    while let Some(ev) = core.poll_event() {
        match ev {
            Event::Login { call, password } => core.login_done(login(call, &password)),
            Event::Store(req) => {
                let reply = req.run(store);
                core.answered(reply);
            }
            Event::StartTls => core.tls_started(),
            Event::Watch(on) => state.watching = on,
            Event::Close => state.closed = true,
        }
    }
}

/// A store with users `N0OTH` (password `x`) and `N0USR` (`pw`), a message to N0OTH with a
/// copy to N0CC and an attachment, and two bulletins in `WX @ WW`.
pub fn sample_store() -> MemoryMail {
    let mut m = MemoryMail::new(station());
    for (call, pw) in [("N0OTH", "x"), ("N0USR", "pw")] {
        if let Ok(call) = qtc_callsign::Callsign::parse_station(call) {
            let _ = m.store.add_user(call, Some(pw), false, false);
        }
    }
    let msg = |kind, to: &str, at: &str| NewMessage {
        kind,
        status: MsgStatus::New,
        to: to.into(),
        at: at.into(),
        from: "N0USR".into(),
        bid: None,
        subject: b"s\xe9".to_vec(),
        rlines: Vec::new(),
        body: b"hi\r\n.dot\r\n".to_vec(),
    };
    let file = || {
        vec![Attachment {
            name: b"a.bin".to_vec(),
            mime: String::new(),
            data: vec![0, 1, 2],
        }]
    };
    let _ = m.insert(
        &msg(MsgType::Personal, "N0OTH", ""),
        file(),
        Default::default(),
    );
    m.store.add_copy(1, "N0CC");
    for _ in 0..2 {
        let _ = m.insert(
            &msg(MsgType::Bulletin, "WX", "WW"),
            file(),
            Default::default(),
        );
    }
    m
}

/// Feeds `data` to `core` in chunks whose sizes come from the data, answering every event
/// (logins alternately accepted as N0OTH and refused); the output is bounded by what came in.
pub fn drive<C: Core>(core: &mut C, data: &[u8]) {
    let mut store = sample_store();
    let mut logins = 0;
    let mut login = |_: Option<Callsign>, _: &str| {
        logins += 1;
        match logins % 2 {
            1 => Callsign::parse_station("N0OTH").map_err(|_| LoginRefused::Unavailable),
            _ => Err(LoginRefused::Wrong),
        }
    };
    let mut state = Pumped::default();
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() && !state.closed {
        let n = usize::from(rest[0] % 64) + 1;
        let (chunk, tail) = rest[1..].split_at(n.min(rest.len() - 1));
        rest = tail;
        if core.wants_input() {
            core.handle_input(chunk);
        }
        pump(core, &mut store, &mut login, &mut state);
        if state.watching {
            core.changed();
            pump(core, &mut store, &mut login, &mut state);
        }
        core.take_output(&mut out);
        out.clear();
    }
}

/// The BODY and BODYSTRUCTURE of a message kept in a folder (fuzz/fuzz_targets/kept_message.rs).
pub fn kept_structures(bytes: &[u8]) -> [String; 2] {
    let r = crate::kept::rendered(bytes.to_vec());
    [false, true].map(|ext| crate::imap::fetch::structure(&r, ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: &[u8]) -> Vec<u8> {
        // Chunk sizes come from the first byte of each chunk: a leading 63 gives 64.
        let mut data = Vec::new();
        for chunk in seed.chunks(64) {
            data.push(63);
            data.extend_from_slice(chunk);
        }
        data
    }

    #[test]
    fn the_fuzz_seeds_run_through_every_core() {
        drive(
            &mut crate::smtp::Smtp::new(settings()),
            &seeded(include_bytes!("../../../fuzz/seeds/smtp_session/session")),
        );
        drive(
            &mut crate::pop3::Pop3::new(settings()),
            &seeded(include_bytes!("../../../fuzz/seeds/pop3_session/session")),
        );
        drive(
            &mut crate::imap::Imap::new(settings(), 1),
            &seeded(include_bytes!("../../../fuzz/seeds/imap_session/session")),
        );
        drive(
            &mut crate::imap::Imap::new(settings(), 1),
            &seeded(include_bytes!("../../../fuzz/seeds/imap_session/folders")),
        );
        drive(
            &mut crate::nntp::Nntp::new(settings()),
            &seeded(include_bytes!("../../../fuzz/seeds/nntp_session/session")),
        );
    }
}
