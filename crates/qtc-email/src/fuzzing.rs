//! The fuzz targets' driver (fuzz/fuzz_targets/*_session.rs; the seeds run in its test): feeds a core arbitrary bytes in
//! chunks and answers every event as the daemon would, with canned store answers.

use crate::render::render;
use crate::{Core, Entry, Event, GroupInfo, Reply, Request, Settings};
use qtc_mail::{Message, MessageHeader, MsgStatus, MsgType};

/// Settings for a fuzzed session: passwords in clear and STARTTLS both allowed.
pub fn settings() -> Settings {
    Settings {
        call: "N0CALL".into(),
        haddr: "N0CALL.#NCA.CA.USA.NOAM".into(),
        domain: "n0call".into(),
        max_message: 4096,
        plain_auth: true,
        starttls: true,
        version: "fuzz".into(),
    }
}

fn sample(number: u64) -> Message {
    Message {
        header: MessageHeader {
            number,
            kind: MsgType::Personal,
            status: MsgStatus::New,
            to: "N0OTH".into(),
            at: String::new(),
            from: "N0USR".into(),
            bid: format!("{number}_N0CALL"),
            subject: b"s\xe9".to_vec(),
            size: 4,
            created: 1_796_214_665,
        },
        rlines: Vec::new(),
        body: b"hi\r\n".to_vec(),
        read_count: 0,
        copies: vec!["N0CC".into()],
        cc: vec!["N0CC".into()],
        files: Vec::new(),
        charset: String::new(),
    }
}

fn answer(core: &mut dyn Core, req: Request, s: &Settings) {
    let reply = match req {
        Request::Mailbox { .. } => Reply::Mailbox(
            (1..4)
                .map(|n| Entry {
                    number: n * 3,
                    seen: n == 2,
                    size: 100,
                    created: 0,
                    from: "N0USR".into(),
                    subject: b"x".to_vec(),
                    bid: format!("{n}_N0CALL"),
                })
                .collect(),
        ),
        Request::Render { number, .. } => {
            let files = vec![(b"a.bin".to_vec(), vec![0u8, 1, 2])];
            let files = if number % 2 == 0 { files } else { Vec::new() };
            Reply::Rendered(Some(Box::new(render(&sample(number), &files, s))))
        }
        Request::Groups => Reply::Groups(vec![GroupInfo {
            category: "WX".into(),
            at: "WW".into(),
            count: 2,
            low: 3,
            high: 9,
        }]),
        Request::Articles { .. } => Reply::Articles(Vec::new()),
        Request::Submit(_) => Reply::Stored {
            number: 10,
            bid: "10_N0CALL".into(),
        },
        Request::Kill { .. } => Reply::Killed(true),
        Request::Seen { .. } => Reply::Done,
    };
    core.answered(Ok(reply));
}

/// Feeds `data` to `core` in chunks whose sizes come from the data, answering every event;
/// the output is bounded by what came in.
pub fn drive(core: &mut dyn Core, data: &[u8]) {
    let s = settings();
    let mut out = Vec::new();
    let mut rest = data;
    let mut logins = 0;
    while !rest.is_empty() {
        let n = usize::from(rest[0] % 64) + 1;
        let (chunk, tail) = rest[1..].split_at(n.min(rest.len() - 1));
        rest = tail;
        if core.wants_input() {
            core.handle_input(chunk);
        }
        while let Some(ev) = core.poll_event() {
            match ev {
                Event::Login { .. } => {
                    logins += 1;
                    let r = if logins % 2 == 1 {
                        Ok("N0OTH".into())
                    } else {
                        Err(crate::LoginRefused::Wrong)
                    };
                    core.login_done(r);
                }
                Event::Store(req) => answer(core, req, &s),
                Event::StartTls => core.tls_started(),
                Event::Watch(_) => core.changed(),
                Event::Close => return,
            }
        }
        core.take_output(&mut out);
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuzz_seeds_run_through_every_core() {
        let seeds: [(&str, &[u8]); 4] = [
            (
                "smtp",
                include_bytes!("../../../fuzz/seeds/smtp_session/session"),
            ),
            (
                "pop3",
                include_bytes!("../../../fuzz/seeds/pop3_session/session"),
            ),
            (
                "imap",
                include_bytes!("../../../fuzz/seeds/imap_session/session"),
            ),
            (
                "nntp",
                include_bytes!("../../../fuzz/seeds/nntp_session/session"),
            ),
        ];
        for (proto, seed) in seeds {
            // Chunk sizes come from the first byte of each chunk: a leading 63 gives 64.
            let mut data = Vec::new();
            for chunk in seed.chunks(64) {
                data.push(63);
                data.extend_from_slice(chunk);
            }
            let mut core: Box<dyn Core> = match proto {
                "smtp" => Box::new(crate::smtp::Smtp::new(settings())),
                "pop3" => Box::new(crate::pop3::Pop3::new(settings())),
                "imap" => Box::new(crate::imap::Imap::new(settings(), 1)),
                _ => Box::new(crate::nntp::Nntp::new(settings())),
            };
            drive(core.as_mut(), &data);
        }
    }
}
