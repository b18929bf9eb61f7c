//! Interpreter tests against a store in memory; no SQLite, no sockets. Every store request goes
//! through [`crate::Request::run`], as in the daemon.

use super::*;
use crate::cmd::list::MAX_LIST;
use crate::cmd::read::BODY_PIECE;
use crate::testing::*;
use qtc_mail::{MessageStore, MsgStatus, MsgType};

#[test]
fn telnet_login_asks_and_checks_password() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Password);
    start(&mut s, &mut bbs.store);
    assert!(String::from_utf8_lossy(&s.take_output()).ends_with("\rCallsign:\r"));
    input(&mut s, b"n0usr\r\n", &mut bbs.store);
    // Whole lines: wl2k-go (pat) reads the prompt up to CR and matches its first word.
    assert_eq!(s.take_output(), b"\rPassword:\r");
    assert_eq!(s.poll_event(), Some(Event::HideInput(true)));
    // The password is checked outside the interpreter (the daemon does it off its threads);
    // a line typed meanwhile waits for the answer.
    input(&mut s, b"pw\r\nL\r", &mut bbs.store);
    assert_eq!(s.take_output(), b"\r");
    assert_eq!(s.poll_event(), Some(Event::HideInput(false)));
    assert_eq!(
        s.poll_event(),
        Some(Event::CheckPassword {
            call: callsign("N0USR"),
            password: "pw".into(),
            purpose: Checking::Login,
        })
    );
    assert_eq!(s.poll_event(), None);
    checked(&mut s, Ok(true), &mut bbs.store);
    let out = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert_eq!(
        s.poll_event(),
        Some(Event::LoggedIn {
            call: callsign("N0USR"),
            bbs: false
        })
    );
    assert!(out.contains("You have 0 messages, 0 new"), "{out}");
    // Then the `L` typed ahead ran: a second prompt.
    assert_eq!(out.matches("de N0CALL>\r").count(), 2, "{out}");
}

#[test]
fn three_bad_passwords_close() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Password);
    start(&mut s, &mut bbs.store);
    for i in 0..3 {
        feed(&mut s, b"N0USR\rwrong\r", &mut bbs.store);
        let out = String::from_utf8_lossy(&s.take_output()).into_owned();
        assert!(out.contains("Login incorrect."), "{out}");
        if i < 2 {
            assert!(out.ends_with("Callsign:\r"));
        } else {
            assert!(out.contains("Goodbye"));
        }
    }
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::LoginFailed { .. }))
            .count(),
        3
    );
    assert_eq!(events.last(), Some(&Event::Close));
    // Nothing more is interpreted after the close.
    input(&mut s, b"N0USR\rpw\r", &mut bbs.store);
    assert!(s.take_output().is_empty());
}

#[test]
fn a_login_the_daemon_would_not_check_says_why() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Password);
    start(&mut s, &mut bbs.store);
    // Many logins to one account at once: not a failure, the user may try again.
    input(&mut s, b"N0USR\rpw\r", &mut bbs.store);
    s.take_output();
    s.password_refused(Refusal::Busy, NOW);
    let out = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(out.contains("Too many logins to N0USR at once"), "{out}");
    assert!(!out.contains("incorrect"), "{out}");
    assert!(out.ends_with("Callsign:\r"), "{out}");
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(!events
        .iter()
        .any(|e| matches!(e, Event::LoginFailed { .. } | Event::Close)));
    // Locked out: said as it is (a partner's sysop reads it in their log), then goodbye.
    input(&mut s, b"N0BBB\rfwd\r", &mut bbs.store);
    s.take_output();
    s.password_refused(Refusal::Locked, NOW);
    let out = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(
        out.contains("Logins to N0BBB from here are locked"),
        "{out}"
    );
    assert_eq!(
        std::iter::from_fn(|| s.poll_event()).last(),
        Some(Event::Close)
    );
}

#[test]
fn paging_the_sysop_is_rate_limited() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    let pages = |u: &mut User_| {
        std::iter::from_fn(|| u.s.poll_event())
            .filter(|e| matches!(e, Event::PageSysop { .. }))
            .count()
    };
    for _ in 0..3 {
        assert!(u
            .send(&mut bbs, "T hello")
            .contains("The sysop has been paged."));
    }
    // A flood of pages from one session reaches nobody.
    for _ in 0..1000 {
        assert!(u.send(&mut bbs, "T hello").contains("try again later"));
    }
    assert_eq!(pages(&mut u), 3);
    // Ten minutes on, one more may go.
    input(&mut u.s, b"T again\r", &mut bbs.store);
    u.s.handle_input(b"T later\r", NOW + 600);
    assert!(String::from_utf8_lossy(&u.s.take_output()).contains("The sysop has been paged."));
    assert_eq!(pages(&mut u), 1);
}

#[test]
fn a_wrong_current_password_at_pw_is_not_a_failed_login() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    u.send(&mut bbs, "PW");
    assert!(u.send(&mut bbs, "wrong").contains("Wrong password"));
    let events: Vec<_> = std::iter::from_fn(|| u.s.poll_event()).collect();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::LoginFailed { .. })),
        "{events:?}"
    );
    // The daemon is told not to count it against the address either.
    u.send(&mut bbs, "PW");
    input(&mut u.s, b"guess\r", &mut bbs.store);
    assert!(u.s.events.iter().any(|e| matches!(
        e,
        Event::CheckPassword {
            purpose: Checking::Current,
            ..
        }
    )));
    u.s.events.clear();
    checked(&mut u.s, Ok(false), &mut bbs.store);
    // Three wrong ones end the session.
    u.send(&mut bbs, "PW");
    let out = u.send(&mut bbs, "again");
    assert!(out.contains("Too many wrong passwords"), "{out}");
    assert!(std::iter::from_fn(|| u.s.poll_event()).any(|e| e == Event::Close));
}

#[test]
fn unknown_user_and_bad_callsign_fail_like_a_bad_password() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Password);
    start(&mut s, &mut bbs.store);
    // A password typed at `Callsign:` is neither echoed nor passed on (the daemon logs the
    // event).
    input(&mut s, b"MySecretPassw0rd!\r", &mut bbs.store);
    let out = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(out.contains("3 to 6"), "{out}");
    assert!(!out.contains("MySecret"), "{out}");
    assert_eq!(s.poll_event(), Some(Event::LoginFailed { call: None }));
    // An unknown callsign is asked for a password and checked like any other (the daemon
    // checks a dummy hash, so it takes as long).
    input(&mut s, b"N9ZZZ\rpw\r", &mut bbs.store);
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(events.contains(&Event::CheckPassword {
        call: callsign("N9ZZZ"),
        password: "pw".into(),
        purpose: Checking::Login,
    }));
    checked(&mut s, Ok(false), &mut bbs.store);
    let out = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(out.contains("Login incorrect."), "{out}");
    assert_eq!(
        s.poll_event(),
        Some(Event::LoginFailed {
            call: Some(callsign("N9ZZZ"))
        })
    );
}

#[test]
fn bbs_user_is_handed_over() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Password);
    start(&mut s, &mut bbs.store);
    feed(
        &mut s,
        b".N0BBB\rfwd\r[QTC-0.1-B1FHM$]\rFF\r",
        &mut bbs.store,
    );
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(events.contains(&Event::LoggedIn {
        call: callsign("N0BBB"),
        bbs: true
    }));
    assert_eq!(s.take_unconsumed(), b"[QTC-0.1-B1FHM$]\rFF\r");
}

#[test]
fn a_bbs_call_by_an_unexpected_way_is_a_user_without_partner_rights() {
    let mut bbs = Bbs::new();
    let mut s = Session::new(bbs.cfg.clone(), Access::Claimed("N0BBB-2".parse().unwrap()));
    start(&mut s, &mut bbs.store);
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(events.contains(&Event::LoggedIn {
        call: callsign("N0BBB"),
        bbs: false
    }));
    let greeting = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(greeting.contains("welcome to"), "{greeting}");
    let mut u = User_ {
        s,
        first: Vec::new(),
    };
    assert!(u
        .send(&mut bbs, "SP N0OTH < N0SYS")
        .contains("Only the sysop or a BBS"));
    // The same account by its own way is handed to forwarding.
    let mut s = Session::new(bbs.cfg.clone(), Access::Callsign("N0BBB".parse().unwrap()));
    start(&mut s, &mut bbs.store);
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(events.contains(&Event::LoggedIn {
        call: callsign("N0BBB"),
        bbs: true
    }));
}

#[test]
fn send_list_read_kill() {
    let mut bbs = Bbs::new();
    let out = post(
        &mut bbs,
        "N0OTH",
        "SP N0USR",
        "Hello there",
        &["line one", "caf\u{e9} \u{fc}", "/EX"],
    );
    assert!(out.contains("Enter message, end with /EX or ^Z:"), "{out}");
    assert!(out.contains("Message #1 stored, BID 1_N0CALL"), "{out}");

    let mut u = bbs.rf("N0USR");
    let greeting = String::from_utf8_lossy(&u.first).into_owned();
    assert!(greeting.contains("You have 1 message, 1 new"), "{greeting}");
    let list = u.send(&mut bbs, "L");
    assert!(list.contains("Msg#   TSLD   Size To     @BBS    From   Date/Time Subject"));
    assert!(
        list.contains("1      PN       20 N0USR          N0OTH  1202/1231 Hello there"),
        "{list}"
    );
    // L shows only what is new since the last L.
    assert!(u.send(&mut bbs, "L").starts_with("No messages."));
    let read = u.send(&mut bbs, "R 1");
    assert!(read.contains("Subject: Hello there"), "{read}");
    assert!(read.contains("line one\r\ncaf\u{e9} \u{fc}\r\n"), "{read}");
    assert!(read.contains("[End of message #1 from N0OTH]"));
    let m = bbs.store.message(1).unwrap().unwrap();
    assert_eq!(m.header.status, MsgStatus::Read);
    assert_eq!(m.body, "line one\r\ncaf\u{e9} \u{fc}\r\n".as_bytes());

    // Another user can neither read nor kill it.
    let mut o = bbs.rf("N0XYZ");
    assert!(o.send(&mut bbs, "R 1").contains("No message #1 for you."));
    assert!(o.send(&mut bbs, "K 1").contains("No message #1 for you."));
    assert!(o.send(&mut bbs, "LL 5").contains("No messages."));

    let k = u.send(&mut bbs, "K 1");
    assert!(k.contains("Message #1 killed."), "{k}");
    assert_eq!(
        bbs.store.message(1).unwrap().unwrap().header.status,
        MsgStatus::Killed
    );
    assert!(u.send(&mut bbs, "R 1").contains("No message #1 for you."));
}

#[test]
fn bulletins_are_public_but_only_owner_or_sysop_kills() {
    let mut bbs = Bbs::new();
    post(&mut bbs, "N0OTH", "SB ALL @ WW", "For all", &["hi\x1a"]);
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "LB").contains("For all"));
    assert!(u.send(&mut bbs, "L@ WW").contains("@WW"));
    assert!(u.send(&mut bbs, "L< N0OTH").contains("For all"));
    assert!(u.send(&mut bbs, "R 1").contains("hi\r\n"));
    assert!(u
        .send(&mut bbs, "K 1")
        .contains("You may not kill message #1"));
    let mut sys = bbs.sysop();
    assert!(sys.send(&mut bbs, "K 1").contains("Message #1 killed."));
    assert!(sys.send(&mut bbs, "LK").contains("For all"));
    assert!(u.send(&mut bbs, "LK").contains("Only the sysop"));
}

#[test]
fn read_mine_and_kill_mine() {
    let mut bbs = Bbs::new();
    post(&mut bbs, "N0OTH", "SP N0USR", "One", &["a", "/ex"]);
    post(&mut bbs, "N0OTH", "SP N0USR", "Two", &["b", "/EX"]);
    let mut u = bbs.rf("N0USR");
    let out = u.send(&mut bbs, "RM");
    assert!(out.find("Subject: One").unwrap() < out.find("Subject: Two").unwrap());
    assert!(u.send(&mut bbs, "RM").contains("no unread"));
    let out = u.send(&mut bbs, "KM");
    assert!(
        out.contains("#1 killed") && out.contains("#2 killed"),
        "{out}"
    );
    assert!(u.send(&mut bbs, "LM").contains("No messages."));
}

#[test]
fn duplicate_bid_and_impersonation_are_refused() {
    let mut bbs = Bbs::new();
    post(&mut bbs, "N0OTH", "SB ALL $X1_N0OTH", "Once", &["/EX"]);
    let mut u = bbs.rf("N0USR");
    assert!(u
        .send(&mut bbs, "SB ALL $X1_N0OTH")
        .contains("BID X1_N0OTH exists already"));
    assert!(u
        .send(&mut bbs, "SP N0OTH < N0SYS")
        .contains("Only the sysop or a BBS"));
    let mut sys = bbs.sysop();
    assert!(sys.send(&mut bbs, "SP N0OTH < N0ABC").contains("Subject:"));
}

#[test]
fn too_large_message_is_not_stored() {
    let mut bbs = Bbs::new();
    let line = "x".repeat(70);
    let mut u = bbs.rf("N0USR");
    u.send(&mut bbs, "SP N0OTH");
    u.send(&mut bbs, "Big");
    let mut out = String::new();
    for _ in 0..20 {
        out += &u.send(&mut bbs, &line);
    }
    out += &u.send(&mut bbs, "/EX");
    assert_eq!(out.matches("Message too large").count(), 1, "{out}");
    assert!(out.ends_with("de N0CALL>\r"));
    assert_eq!(bbs.store.counts().unwrap(), (0, 0));
}

#[test]
fn long_lines_bad_commands_and_abort() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    let out = u.send(&mut bbs, &"L".repeat(200));
    assert!(out.contains("Line too long"), "{out}");
    assert!(out.ends_with("de N0CALL>\r"));
    let out = u.send(&mut bbs, "XYZZY");
    assert!(out.contains("Unknown command XYZZY. Type H for help."));
    assert!(u.send(&mut bbs, "R").contains("Usage: R n"));
    assert!(u.send(&mut bbs, "? S").contains("S[P|B|T] to[@bbs]"));
    assert!(u.send(&mut bbs, "H").contains("Commands:"));
    u.send(&mut bbs, "SP N0OTH");
    u.send(&mut bbs, "Cancelled one");
    u.send(&mut bbs, "text");
    assert!(u.send(&mut bbs, "/ABORT").contains("Message cancelled."));
    assert_eq!(bbs.store.counts().unwrap(), (0, 0));
    assert!(u.send(&mut bbs, "SP N0OTH").contains("Subject:"));
    assert!(u.send(&mut bbs, "").contains("No subject"));
}

#[test]
fn a_line_longer_than_a_command_is_kept_in_a_message() {
    let mut bbs = Bbs::new();
    let long = "x".repeat(300);
    // The whole message in one chunk, as a paste arrives: the subject and command lines are
    // split before the body's.
    let mut u = bbs.rf("N0USR");
    let out = u.send(&mut bbs, &format!("SP N0OTH\rlong line\r{long}\rend\r/EX"));
    assert!(out.contains("stored"), "{out}");
    assert!(!out.contains("too long"), "{out}");
    let m = bbs.store.message(1).unwrap().unwrap();
    assert_eq!(m.body, format!("{long}\r\nend\r\n").into_bytes());
    // Commands keep their limit; a body line longer than a message may be is not kept.
    assert!(u.send(&mut bbs, &long).contains("Line too long"));
    u.send(&mut bbs, "SP N0OTH");
    u.send(&mut bbs, "too long");
    let out = u.send(&mut bbs, &"y".repeat(1200));
    assert!(out.contains("Message too large"), "{out}");
    assert!(!u.send(&mut bbs, "/EX").contains("stored"));
}

#[test]
fn arrow_keys_never_reach_an_answer() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    // Up arrow after `LL`, as a line-mode terminal sends it.
    let out = u.send(&mut bbs, "LX\x1b[A");
    assert!(out.contains("Unknown command LX."), "{out:?}");
    assert!(!out.contains('\x1b'), "{out:?}");
}

#[test]
fn profile_info_version_bye() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "N Ann").contains("Saved."));
    assert!(u
        .send(&mut bbs, "NH n0bbs.#nca.ca.usa.noam")
        .contains("Saved."));
    let user = bbs.store.user(callsign("N0USR")).unwrap().unwrap();
    assert_eq!(user.name, "Ann");
    assert_eq!(user.home_bbs, "N0BBS.#NCA.CA.USA.NOAM");
    assert!(u.send(&mut bbs, "I").contains("N0CALL BBS"));
    assert!(u.send(&mut bbs, "V").contains("qtc"));
    assert!(u.send(&mut bbs, "B").contains("Goodbye"));
    let events: Vec<_> = std::iter::from_fn(|| u.s.poll_event()).collect();
    assert_eq!(events.last(), Some(&Event::Close));
}

#[test]
fn white_pages_learn_from_nh() {
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    assert!(u
        .send(&mut bbs, "WP N0ZED")
        .contains("No white pages entry for N0ZED."));
    // N0OTH says its home is another BBS; then mail to N0OTH... stays local: it is a user here.
    u.send(&mut bbs, "NH N0BBS.#NCA.CA.USA.NOAM");
    assert!(u
        .send(&mut bbs, "WP n0usr")
        .contains("N0USR: home BBS N0BBS.#NCA.CA.USA.NOAM"));
    // Routing mail by the white pages is the store's (qtc-store's tests).
}

#[test]
fn rf_sysop_needs_sys_and_the_password() {
    let mut bbs = Bbs::new();
    post(&mut bbs, "N0OTH", "SB ALL", "Theirs", &["x", "/EX"]);
    let mut sys = bbs.rf("N0SYS");
    assert!(sys.send(&mut bbs, "K 1").contains("You may not kill"));
    assert!(sys.send(&mut bbs, "SYS").contains("Password:"));
    assert!(sys.send(&mut bbs, "wrong").contains("Wrong password."));
    assert!(sys.send(&mut bbs, "SYS").contains("Password:"));
    assert!(sys.send(&mut bbs, "root").contains("Sysop rights granted."));
    assert!(sys.send(&mut bbs, "K 1").contains("Message #1 killed."));
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "SYS").contains("Only a sysop"));
}

#[test]
fn a_session_the_transport_verified_needs_no_password_nor_sys() {
    let mut bbs = Bbs::new();
    post(&mut bbs, "N0OTH", "SB ALL", "Theirs", &["x", "/EX"]);
    let mut s = Session::new(bbs.cfg.clone(), Access::Verified("N0SYS".parse().unwrap()));
    start(&mut s, &mut bbs.store);
    let first = String::from_utf8_lossy(&s.take_output()).into_owned();
    assert!(
        !first.contains("Password") && first.contains("de N0CALL>"),
        "{first}"
    );
    let mut sys = User_ {
        s,
        first: Vec::new(),
    };
    assert!(sys.send(&mut bbs, "K 1").contains("Message #1 killed."));
}

#[test]
fn listings_are_bounded() {
    let mut bbs = Bbs::new();
    let m = bulletin("Many", b"x\r\n");
    let many = vec![m; MAX_LIST + 5];
    insert_all(&mut bbs.store, &many);
    let mut u = bbs.rf("N0USR");
    let out = u.send(&mut bbs, "L");
    assert_eq!(out.matches("Many").count(), MAX_LIST);
    assert!(
        out.contains("The newest 1000 are shown"),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(u.send(&mut bbs, "LL 3").matches("Many").count() == 3);
}

/// Twenty bulletins, numbered 1 to 20.
fn twenty(bbs: &mut Bbs) {
    let m = bulletin("Bull", b"one\r\ntwo\r\nthree\r\n");
    insert_all(&mut bbs.store, &vec![m; 20]);
}

fn numbers_listed(out: &str) -> Vec<u64> {
    out.split('\r')
        .filter(|l| l.contains("Bull"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn list_from_n_up_and_combined_filters() {
    let mut bbs = Bbs::new();
    twenty(&mut bbs);
    let mut u = bbs.rf("N0USR");
    let l3 = numbers_listed(&u.send(&mut bbs, "L 3"));
    assert_eq!(l3, (3..=20).rev().collect::<Vec<_>>());
    assert_eq!(numbers_listed(&u.send(&mut bbs, "L 5-7")), vec![7, 6, 5]);
    assert_eq!(numbers_listed(&u.send(&mut bbs, "LL 2")), vec![20, 19]);
    assert_eq!(numbers_listed(&u.send(&mut bbs, "LR 18")), vec![18, 19, 20]);
    assert_eq!(
        numbers_listed(&u.send(&mut bbs, "LB 10-11 > ALL @ WW")),
        vec![11, 10]
    );
    assert!(u.send(&mut bbs, "LP 10").contains("No messages."));
    assert!(u.send(&mut bbs, "L 19995").contains("No messages."));
    let lc = u.send(&mut bbs, "LC");
    assert!(lc.contains("ALL      20"), "{lc}");
}

#[test]
fn paging_with_more_abort_and_next_message() {
    let mut bbs = Bbs::new();
    twenty(&mut bbs);
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "OP 5").contains("5 lines per page."));
    let page = u.send(&mut bbs, "L");
    assert_eq!(page.matches('\r').count(), 6, "{page:?}");
    assert!(page.ends_with(paging::MORE), "{page:?}");
    assert_eq!(numbers_listed(&page), vec![20, 19, 18, 17]);
    let next = u.send(&mut bbs, "");
    assert_eq!(numbers_listed(&next), vec![16, 15, 14, 13, 12]);
    assert!(next.ends_with(paging::MORE));
    // A stops it: the prompt, nothing more.
    assert_eq!(u.send(&mut bbs, "A"), "de N0CALL>\r");
    // Plain L remembers what was shown: 12 and up, so the next L starts below nothing new.
    assert!(u.send(&mut bbs, "L").contains("No messages."));
    // A read pages too; n skips to the next message.
    let read = u.send(&mut bbs, "R 1 2");
    assert!(
        read.contains("Msg #1") && read.ends_with(paging::MORE),
        "{read}"
    );
    let next = u.send(&mut bbs, "n");
    assert!(next.contains("Msg #2") && !next.contains("#1"), "{next}");
    // Anything else at More? ends the output and runs as a command.
    u.send(&mut bbs, "L 1");
    assert!(u.send(&mut bbs, "OP 0").contains("Paging off."));
    assert_eq!(numbers_listed(&u.send(&mut bbs, "L 1")).len(), 20);
    assert!(u.send(&mut bbs, "A").contains("Nothing to abort."));
}

#[test]
fn page_length_is_kept_for_the_next_session() {
    let mut bbs = Bbs::new();
    twenty(&mut bbs);
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "OP 5").contains("5 lines per page."));
    drop(u);
    let mut again = bbs.rf("N0USR");
    assert!(again.send(&mut bbs, "OP").contains("5 lines per page."));
    // Another user still pages at the port's default (off in these tests).
    let mut other = bbs.rf("N0OTH");
    assert!(other.send(&mut bbs, "OP").contains("Paging off."));
}

#[test]
fn reply_expert_and_password() {
    let mut bbs = Bbs::new();
    post(
        &mut bbs,
        "N0OTH",
        "SP N0USR",
        "Antenna",
        &["Up at last.", "/EX"],
    );
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "SR").contains("Read a message first"));
    u.send(&mut bbs, "R 1");
    let sr = u.send(&mut bbs, "SR");
    assert!(sr.contains("To N0OTH, subject: Re: Antenna"), "{sr}");
    let stored = u.send(&mut bbs, "Congrats!\r/EX");
    assert!(stored.contains("Message #2 stored"), "{stored}");
    let m = bbs.store.message(2).unwrap().unwrap();
    assert_eq!(
        (m.header.to.as_str(), &m.header.subject[..]),
        ("N0OTH", &b"Re: Antenna"[..])
    );

    assert!(u
        .send(&mut bbs, "X")
        .ends_with("Expert mode: short prompts.\r>\r"));
    assert!(u.send(&mut bbs, "X").ends_with("de N0CALL>\r"));

    assert!(u.send(&mut bbs, "PW").contains("Old password: "));
    assert!(u.send(&mut bbs, "wrong").contains("Wrong password"));
    u.send(&mut bbs, "PASS");
    assert!(u.send(&mut bbs, "pw").contains("New password: "));
    assert!(u.send(&mut bbs, "n3w").contains("Again: "));
    assert!(u.send(&mut bbs, "n3w").contains("Password changed."));
    assert!(bbs.store.check_password(callsign("N0USR"), "n3w").unwrap());
}

#[test]
fn nodes_and_routes_show_the_netrom_tables() {
    use crate::ask::{Answer, Ask, NeighbourInfo, NodeInfo, RouteInfo};
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    u.s.take_output();
    let node = |alias: &str, call: &str| NodeInfo {
        alias: alias.into(),
        call: call.into(),
        routes: vec![RouteInfo {
            quality: 144,
            obsolescence: Some(5),
            port: "vhf".into(),
            neighbour: "N0BBB-1".into(),
        }],
    };
    u.send(&mut bbs, "NODES");
    assert_eq!(u.s.pending_ask(), Some(&Ask::Nodes { node: None }));
    let nodes = vec![
        node("BBB", "N0BBB-1"),
        node("CCC", "N0CCC-1"),
        node("", "N0DDD"),
        node("EEE", "N0EEE"),
    ];
    answered(&mut u.s, Answer::Nodes(Some(nodes)), &mut bbs.store);
    let out = String::from_utf8(u.s.take_output()).unwrap();
    assert!(
        out.starts_with(
            "Nodes (4):\rBBB:N0BBB-1      CCC:N0CCC-1      N0DDD\rEEE:N0EEE\rde N0CALL>"
        ),
        "{out:?}"
    );
    u.send(&mut bbs, "NODES ccc");
    assert_eq!(
        u.s.pending_ask(),
        Some(&Ask::Nodes {
            node: Some("CCC".into())
        })
    );
    answered(
        &mut u.s,
        Answer::Nodes(Some(vec![node("CCC", "N0CCC-1")])),
        &mut bbs.store,
    );
    let out = String::from_utf8(u.s.take_output()).unwrap();
    assert!(
        out.starts_with("Routes to CCC:N0CCC-1\r  quality 144  obs 5      vhf      via N0BBB-1\r"),
        "{out:?}"
    );
    u.send(&mut bbs, "NODES XYZ");
    answered(&mut u.s, Answer::Nodes(Some(Vec::new())), &mut bbs.store);
    assert!(String::from_utf8_lossy(&u.s.take_output()).contains("No such node: XYZ."));
    u.send(&mut bbs, "ROUTES");
    assert_eq!(u.s.pending_ask(), Some(&Ask::Routes));
    let n = NeighbourInfo {
        port: "vhf".into(),
        call: "N0BBB-1".into(),
        quality: 192,
        locked: true,
        nodes: 2,
    };
    answered(&mut u.s, Answer::Routes(Some(vec![n])), &mut bbs.store);
    let out = String::from_utf8(u.s.take_output()).unwrap();
    assert!(
        out.contains("  vhf      N0BBB-1   192    2 (locked)\r"),
        "{out:?}"
    );
    u.send(&mut bbs, "ROUTES");
    answered(&mut u.s, Answer::Routes(None), &mut bbs.store);
    assert!(String::from_utf8_lossy(&u.s.take_output()).contains("This BBS is no NET/ROM node."));
}

#[test]
fn node_questions_wait_for_the_daemon_and_keep_typed_ahead_lines() {
    use crate::ask::{Answer, Ask, OnlineUser};
    let mut bbs = Bbs::new();
    let mut u = bbs.rf("N0USR");
    // U and, typed ahead in the same chunk, I: I's output must follow U's answer.
    input(&mut u.s, b"U\rI\r", &mut bbs.store);
    assert_eq!(u.s.take_output(), b"");
    assert_eq!(u.s.pending_ask(), Some(&Ask::Users));
    let who = vec![OnlineUser {
        call: "N0USR".into(),
        via: "vhf".into(),
    }];
    answered(&mut u.s, Answer::Users(who), &mut bbs.store);
    let out = String::from_utf8(u.s.take_output()).unwrap();
    assert!(
        out.starts_with("1 online:\rN0USR     vhf\rde N0CALL>\rN0CALL BBS"),
        "{out}"
    );
    assert!(u
        .send(&mut bbs, "T hello sysop")
        .contains("The sysop has been paged."));
    assert_eq!(
        std::iter::from_fn(|| u.s.poll_event()).last(),
        Some(Event::PageSysop {
            from: callsign("N0USR"),
            text: "hello sysop".into()
        })
    );
    u.send(&mut bbs, "PORTS");
    assert_eq!(u.s.pending_ask(), Some(&Ask::Ports));
    answered(&mut u.s, Answer::Ports(Vec::new()), &mut bbs.store);
    assert!(String::from_utf8_lossy(&u.s.take_output()).contains("No radio ports."));
    // The daemon says what it calls, once it has checked the port.
    assert_eq!(u.send(&mut bbs, "C N0BBB"), "");
    assert!(matches!(u.s.pending_ask(), Some(Ask::Connect { .. })));
    answered(&mut u.s, Answer::Disconnected(Ok(())), &mut bbs.store);
    let back = String::from_utf8(u.s.take_output()).unwrap();
    assert_eq!(
        back,
        "*** Disconnected from N0BBB. Back at N0CALL.\rde N0CALL>\r"
    );
    u.send(&mut bbs, "C N0BBB");
    answered(
        &mut u.s,
        Answer::Disconnected(Err("busy".into())),
        &mut bbs.store,
    );
    assert!(String::from_utf8_lossy(&u.s.take_output()).contains("*** Failure with N0BBB: busy"));
    u.send(&mut bbs, "C vhf");
    answered(
        &mut u.s,
        Answer::Refused("VHF is a radio port: C VHF CALL calls out on it.".into()),
        &mut bbs.store,
    );
    assert_eq!(
        u.s.take_output(),
        b"*** VHF is a radio port: C VHF CALL calls out on it.\rde N0CALL>\r"
    );
}

#[test]
fn a_copy_is_the_cc_recipients_own_mail_but_not_theirs_to_kill() {
    let mut bbs = Bbs::new();
    // A Winlink message to N0OTH with N0USR as a copy, as a B2 partner delivers it.
    let mut m = bulletin("Copied", b"hi\r\n");
    m.kind = MsgType::Personal;
    m.to = "N0OTH".into();
    m.at = String::new();
    m.from = "N0XYZ".into();
    insert_all(&mut bbs.store, &[m]);
    bbs.store.add_copy(1, "N0USR");
    let mut u = bbs.rf("N0USR");
    assert!(u.send(&mut bbs, "LN").contains("Copied"));
    assert!(u.send(&mut bbs, "RM").contains("Subject: Copied"));
    assert!(u.send(&mut bbs, "LM").contains("Copied"));
    assert!(u.send(&mut bbs, "KM").contains("no read messages to kill"));
    assert!(bbs.rf("N0OTH").send(&mut bbs, "LM").contains("Copied"));
}

#[test]
fn long_output_is_made_as_the_reader_takes_it_and_a_stops_it() {
    let mut bbs = Bbs::new();
    let line = b"0123456789 abcdefghijklmnopqrstuvwxyz 0123456789 abcdefghijklmnopqrstuvwxyz\r\n";
    let body: Vec<u8> = line.iter().copied().cycle().take(200 * 1024).collect();
    insert_all(&mut bbs.store, &[bulletin("Big", &body)]);
    let mut u = bbs.rf("N0USR");
    // Three reads of a 200 KB bulletin: only the first piece is made until the daemon asks
    // for more (its output has gone out).
    u.s.handle_input(b"R 1 1 1\r", NOW);
    crate::answer_all(&mut u.s, &mut bbs.store, NOW);
    let first = u.s.take_output();
    assert!(first.len() <= 2 * BODY_PIECE, "{}", first.len());
    assert!(u.s.has_more_output());
    let mut total = first.len();
    for _ in 0..3 {
        u.s.more_output(NOW);
        crate::answer_all(&mut u.s, &mut bbs.store, NOW);
        let piece = u.s.take_output();
        assert!(piece.len() <= 2 * BODY_PIECE, "{}", piece.len());
        total += piece.len();
    }
    // A line typed meanwhile waits for the end of the output; `A` does not.
    u.s.handle_input(b"V\r", NOW);
    assert!(u.s.take_output().is_empty());
    u.s.handle_input(b"A\r", NOW);
    crate::answer_all(&mut u.s, &mut bbs.store, NOW);
    let after = String::from_utf8(u.s.take_output()).unwrap();
    assert!(!u.s.has_more_output());
    assert!(after.starts_with("de N0CALL>\rqtc"), "{after}");
    assert!(total < 3 * body.len());
    // Read to the end, the body comes out whole, its line ends as stored.
    let out = u.send(&mut bbs, "R 1");
    let word = "abcdefghijklmnopqrstuvwxyz";
    let in_body = String::from_utf8(body).unwrap().matches(word).count();
    assert_eq!(out.matches(word).count(), in_body);
    assert!(out.contains("[End of message #1 from N0OTH]"));
}

#[test]
fn a_character_split_between_body_pieces_is_shown_whole() {
    let mut bbs = Bbs::new();
    // A C1 control (U+009B, CSI) straddling the first piece's end is still made visible.
    let mut body = vec![b'x'; BODY_PIECE - 1];
    body.extend_from_slice("\u{9b}2J\r\n".as_bytes());
    insert_all(&mut bbs.store, &[bulletin("Split", &body)]);
    let mut u = bbs.rf("N0USR");
    let out = u.send(&mut bbs, "R 1");
    assert!(out.contains("x\\u{9B}2J"), "{}", &out[out.len() - 100..]);
}

#[test]
fn a_bulletin_is_new_for_each_user_until_they_read_it() {
    let mut bbs = Bbs::new();
    insert_all(&mut bbs.store, &[bulletin("Swapfest", b"Sunday\r\n")]);
    let line = |out: &str| {
        out.split('\r')
            .find(|l| l.contains("Swapfest") && !l.starts_with("Subject"))
            .map(str::to_string)
    };
    let mut u = bbs.rf("N0USR");
    let mut o = bbs.rf("N0SYS");
    for (who, s) in [("N0USR", &mut u), ("N0SYS", &mut o)] {
        let ln = s.send(&mut bbs, "LN");
        assert!(
            line(&ln).is_some_and(|l| l.contains(" BN ")),
            "{who} LN: {ln}"
        );
        let lb = s.send(&mut bbs, "LB");
        assert!(
            line(&lb).is_some_and(|l| l.contains(" BN ")),
            "{who} LB: {lb}"
        );
    }
    // N0USR reads it: new for them until then (R shows BN), read from then on.
    assert!(u.send(&mut bbs, "R 1").contains("Msg #1 BN"));
    assert!(u.send(&mut bbs, "R 1").contains("Msg #1 BY"));
    assert!(line(&u.send(&mut bbs, "LB")).is_some_and(|l| l.contains(" BY ")));
    assert!(line(&u.send(&mut bbs, "LN")).is_none());
    assert!(line(&u.send(&mut bbs, "LY")).is_some());
    // Still new for everyone else, the sysop included.
    assert!(line(&o.send(&mut bbs, "LN")).is_some_and(|l| l.contains(" BN ")));
    assert!(line(&o.send(&mut bbs, "L")).is_some_and(|l| l.contains(" BN ")));
    assert!(o.send(&mut bbs, "R 1").contains("Msg #1 BN"));
}
