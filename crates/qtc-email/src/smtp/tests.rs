//! SMTP, command by command, against the memory store.

use qtc_mail::route::PartnerRoutes;
use qtc_mail::{ListFilter, MessageStore, MsgType};

use super::*;
use crate::testing::{settings, Client};

/// AUTH PLAIN for N0USR, password `pw`.
const N0USR: &str = "AUTH PLAIN AE4wVVNSAHB3\r\n";

fn client() -> Client<Smtp> {
    let mut c = Client::new(Smtp::new(settings()));
    c.store.partners.push(PartnerRoutes {
        call: "N0AAA".parse().unwrap(),
        routes: vec!["N0AAA".into(), "EU".into()],
        collects: false,
    });
    c
}

/// A client logged in as N0USR, greeting and login read.
fn logged_in() -> Client<Smtp> {
    let mut c = client();
    c.send("");
    assert!(c.send(N0USR).starts_with("235 2.7.0 Welcome N0USR"));
    c
}

/// Messages in the store.
fn stored(c: &mut Client<Smtp>) -> usize {
    c.store.store.list(&ListFilter::default()).unwrap().len()
}

#[test]
fn greeting_ehlo_and_helo() {
    let mut c = client();
    assert_eq!(
        c.send(""),
        "220 bbs.example.org ESMTP qtc test packet mail\r\n"
    );
    let ehlo = c.send("EHLO me\r\n");
    assert!(ehlo.starts_with("250-bbs.example.org\r\n"), "{ehlo}");
    assert!(
        ehlo.contains("250-AUTH PLAIN LOGIN\r\n") && ehlo.contains("250-SIZE "),
        "{ehlo}"
    );
    assert!(ehlo.ends_with("250 ENHANCEDSTATUSCODES\r\n"), "{ehlo}");
    assert_eq!(c.send("HELO me\r\n"), "250 bbs.example.org\r\n");
    c.send(N0USR);
    assert!(
        !c.send("EHLO me\r\n").contains("AUTH"),
        "no AUTH once logged in"
    );
}

#[test]
fn starttls_and_no_password_in_clear() {
    let mut c = client();
    assert!(c
        .send("STARTTLS\r\n")
        .contains("454 4.7.0 TLS not available"));
    let mut set = settings();
    set.plain_auth = false;
    set.starttls = true;
    let mut c = Client::new(Smtp::new(set));
    c.send("");
    let ehlo = c.send("EHLO me\r\n");
    assert!(
        ehlo.contains("STARTTLS") && !ehlo.contains("AUTH"),
        "{ehlo}"
    );
    assert!(c.send(N0USR).starts_with("538 5.7.11"));
    // What came after STARTTLS in clear is dropped; the handshake, then AUTH is offered.
    assert_eq!(
        c.send("STARTTLS\r\nEHLO injected\r\n"),
        "220 2.0.0 Ready to start TLS\r\n"
    );
    assert!(c.send("EHLO me\r\n").contains("AUTH PLAIN LOGIN"));
    assert!(c.send(N0USR).starts_with("235"));
}

#[test]
fn without_tls_a_refused_password_is_not_sent_to_starttls() {
    let mut set = settings();
    set.plain_auth = false;
    let mut c = Client::new(Smtp::new(set));
    c.send("");
    let refused = c.send(N0USR);
    assert!(
        refused.starts_with("538 ") && !refused.contains("STARTTLS"),
        "{refused}"
    );
    assert!(refused.contains("ask its sysop for TLS"), "{refused}");
}

#[test]
fn auth_plain_and_login_in_every_form() {
    let mut c = client();
    c.send("");
    assert_eq!(c.send("AUTH PLAIN\r\n"), "334 \r\n");
    assert!(c.send("AE4wVVNSAHB3\r\n").starts_with("235"));
    assert!(c.send(N0USR).starts_with("503 5.5.1 Already"));
    let mut c = client();
    c.send("");
    assert_eq!(c.send("AUTH LOGIN\r\n"), "334 VXNlcm5hbWU6\r\n");
    assert_eq!(c.send("TjBPVEg=\r\n"), "334 UGFzc3dvcmQ6\r\n");
    assert!(c.send("eA==\r\n").starts_with("235 2.7.0 Welcome N0OTH"));
    let mut c = client();
    c.send("");
    assert_eq!(c.send("AUTH LOGIN TjBPVEg=\r\n"), "334 UGFzc3dvcmQ6\r\n");
    assert!(c.send("d3Jvbmc=\r\n").starts_with("535 5.7.8"));
    assert_eq!(c.send("AUTH LOGIN\r\n"), "334 VXNlcm5hbWU6\r\n");
    assert!(c
        .send("*\r\n")
        .starts_with("501 5.7.0 Authentication cancelled"));
    assert_eq!(c.send("AUTH PLAIN\r\n"), "334 \r\n");
    assert!(c.send("!!\r\n").starts_with("501 5.5.2 Bad base64"));
    assert!(c
        .send("AUTH PLAIN Zm9v\r\n")
        .starts_with("501 5.5.2 Bad AUTH PLAIN"));
    assert!(c.send("AUTH CRAM-MD5\r\n").starts_with("504"));
}

#[test]
fn nothing_before_auth() {
    let mut c = client();
    c.send("");
    for cmd in ["MAIL FROM:<a@b>", "RCPT TO:<n0oth@n0call>", "DATA"] {
        assert!(
            c.send(&format!("{cmd}\r\n")).starts_with("530 5.7.0"),
            "{cmd}"
        );
    }
}

#[test]
fn recipients_are_checked_at_rcpt() {
    let mut c = logged_in();
    let rcpt = |c: &mut Client<Smtp>, a: &str| c.send(&format!("RCPT TO:<{a}>\r\n"));
    assert!(c
        .send("MAIL FROM:<anyone@else>\r\n")
        .starts_with("250 2.1.0"));
    assert_eq!(rcpt(&mut c, "n0oth@n0call"), "250 2.1.5 OK\r\n");
    assert!(rcpt(&mut c, "N0OTH@bbs.example.org").contains("named already"));
    assert_eq!(rcpt(&mut c, "g0abc@n0aaa.#23.gbr.eu"), "250 2.1.5 OK\r\n");
    assert_eq!(rcpt(&mut c, "bull/WX@WW"), "250 2.1.5 OK\r\n");
    let gmail = rcpt(&mut c, "someone@gmail.com");
    assert!(
        gmail.starts_with("550 5.1.1 someone@gmail.com: no Internet gateway here"),
        "{gmail}"
    );
    // A BBS no partner takes mail for, with its hierarchical address or without.
    for far in ["g8bpq@gb7bpq.#23.gbr.euro", "G8BPQ@GB7BPQ"] {
        let nowhere = rcpt(&mut c, far);
        assert!(
            nowhere.starts_with("550 5.1.2 no route to GB7BPQ: it would wait here"),
            "{far}: {nowhere}"
        );
    }
    // Internet mail, whatever the local part's length (not "longer than 6 characters").
    let long = rcpt(&mut c, "someone.else@example.com");
    assert!(
        long.starts_with("550 5.1.1 someone.else@example.com: no Internet gateway here"),
        "{long}"
    );
    assert!(rcpt(&mut c, "foo/x@y").starts_with("550 5.1.1"));
    assert!(rcpt(&mut c, "notacall@n0call").starts_with("550 5.1.1 NOTACALL"));
}

#[test]
fn every_copy_counts_against_the_allowance_at_rcpt() {
    let mut c = logged_in();
    c.store.per_user = 2;
    c.send("MAIL FROM:<a@b>\r\n");
    assert_eq!(c.send("RCPT TO:<n0oth@n0call>\r\n"), "250 2.1.5 OK\r\n");
    assert_eq!(c.send("RCPT TO:<n0sys@n0call>\r\n"), "250 2.1.5 OK\r\n");
    let third = c.send("RCPT TO:<n0usr@n0call>\r\n");
    assert!(
        third.starts_with("452 4.5.3 You have sent 2 messages"),
        "{third}"
    );
    // Put off for one recipient: refused whole, so the client sends it again whole later.
    let data = c.send("DATA\r\n");
    assert!(
        data.starts_with("452 4.5.3 A recipient cannot take it now"),
        "{data}"
    );
    assert_eq!(stored(&mut c), 3);
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nRCPT TO:<n0sys@n0call>\r\nDATA\r\n");
    let done = c.send("Subject: two\r\n\r\nhi\r\n.\r\n");
    assert_eq!(done, "250 2.0.0 Stored as #4 (4_N0CALL), #5 (5_N0CALL)\r\n");
}

#[test]
fn data_stores_every_copy_or_none() {
    let mut c = logged_in();
    let before = stored(&mut c);
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nRCPT TO:<n0sys@n0call>\r\n");
    assert_eq!(
        c.send("DATA\r\n"),
        "354 End data with <CR><LF>.<CR><LF>\r\n"
    );
    c.store.full = true;
    let out = c.send("Subject: hi\r\n\r\n..dot\r\nbody\r\n.\r\n");
    assert_eq!(out, "452 4.3.1 The message store is full\r\n");
    assert_eq!(stored(&mut c), before, "nothing stored");
    // The recipients went with the refused message.
    assert!(c.send("DATA\r\n").starts_with("503 5.5.1 RCPT first"));
    c.store.full = false;
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nRCPT TO:<n0sys@n0call>\r\nDATA\r\n");
    let out = c.send("Subject: hi\r\n\r\n..dot\r\nbody\r\n.\r\n");
    assert_eq!(out, "250 2.0.0 Stored as #4 (4_N0CALL), #5 (5_N0CALL)\r\n");
    let m = c.store.store.message(5).unwrap().unwrap();
    assert_eq!(
        (m.header.to.as_str(), m.header.from.as_str()),
        ("N0SYS", "N0USR")
    );
    assert_eq!(m.body, b".dot\r\nbody\r\n");
    assert_eq!(m.header.kind, MsgType::Personal);
}

#[test]
fn a_message_that_cannot_be_taken_is_refused_whole() {
    let mut c = logged_in();
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nDATA\r\n");
    assert!(c
        .send("From: x\r\n\r\nno subject\r\n.\r\n")
        .starts_with("554 5.6.0 the subject is empty"));
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nDATA\r\n");
    let limit = c.core.limit();
    let big = format!("Subject: big\r\n\r\n{}\r\n.\r\nNOOP\r\n", "x".repeat(limit));
    assert_eq!(
        c.send(&big),
        format!("552 5.3.4 Larger than {limit} bytes\r\n250 2.0.0 OK\r\n")
    );
}

#[test]
fn data_over_the_limit_is_not_read_for_ever() {
    let mut c = logged_in();
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\nDATA\r\n");
    let chunk = "x".repeat(64 * 1024);
    let mut out = String::new();
    for _ in 0..(c.core.limit() + crate::data::DISCARD) / chunk.len() + 2 {
        if !c.core.wants_input() {
            break;
        }
        out.push_str(&c.send(&chunk));
    }
    assert!(out.starts_with("552 5.3.4 Larger than") && out.ends_with(": closing\r\n"));
    assert!(c.state.closed);
}

#[test]
fn rset_noop_vrfy_quit_and_the_rest() {
    let mut c = logged_in();
    c.send("MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\n");
    assert_eq!(c.send("RSET\r\n"), "250 2.0.0 OK\r\n");
    assert!(
        c.send("DATA\r\n").starts_with("503"),
        "RSET forgot the recipients"
    );
    assert_eq!(c.send("NOOP\r\n"), "250 2.0.0 OK\r\n");
    assert!(c.send("VRFY n0oth\r\n").starts_with("252"));
    assert!(c.send("EXPN list\r\n").starts_with("502"));
    assert!(c.send("XYZZY\r\n").starts_with("500 5.5.1"));
    assert!(c.send("MAIL\r\n").starts_with("501 5.5.4"));
    assert!(c
        .send(&format!("NOOP {}\r\n", "x".repeat(3000)))
        .starts_with("500 5.5.2 Line too long"));
    assert_eq!(c.send("QUIT\r\n"), "221 2.0.0 73\r\n");
    assert!(c.state.closed && !c.core.wants_input());
}

#[test]
fn a_lost_store_ends_the_session() {
    let mut c = logged_in();
    c.core
        .handle_input(b"MAIL FROM:<a@b>\r\nRCPT TO:<n0oth@n0call>\r\n");
    assert!(matches!(c.core.poll_event(), Some(crate::Event::Store(_))));
    c.core.store_lost();
    assert!(c.send("").contains("421 4.3.0"));
    assert!(c.state.closed);
}
