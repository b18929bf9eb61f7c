//! POP3, command by command, against the memory store (N0OTH has message 1, 100 bytes or
//! so, with an attachment).

use qtc_mail::{MessageStore, MsgStatus, MsgType, NewMessage};

use super::*;
use crate::testing::{settings, Client};

fn logged_in() -> Client<Pop3> {
    let mut c = Client::new(Pop3::new(settings()));
    assert!(c.send("").starts_with("+OK qtc test POP3 server ready"));
    assert_eq!(c.send("USER n0oth@n0call\r\n"), "+OK send PASS\r\n");
    let opened = c.send("PASS x\r\n");
    assert!(opened.starts_with("+OK 1 messages ("), "{opened}");
    c
}

#[test]
fn capa_and_stls() {
    let mut c = Client::new(Pop3::new(settings()));
    c.send("");
    let capa = c.send("CAPA\r\n");
    assert!(
        capa.starts_with("+OK capabilities follow\r\nTOP\r\nUIDL\r\n"),
        "{capa}"
    );
    assert!(capa.contains("USER\r\n") && capa.ends_with("IMPLEMENTATION qtc-test\r\n.\r\n"));
    assert_eq!(c.send("STLS\r\n"), "-ERR TLS not available\r\n");
    let mut set = settings();
    set.plain_auth = false;
    set.starttls = true;
    let mut c = Client::new(Pop3::new(set));
    c.send("");
    assert!(c.send("CAPA\r\n").contains("STLS\r\n"));
    assert!(c
        .send("USER n0oth\r\n")
        .starts_with("-ERR [AUTH] STLS first"));
    assert_eq!(
        c.send("STLS\r\nUSER injected\r\n"),
        "+OK begin TLS negotiation\r\n"
    );
    assert_eq!(c.send("USER n0oth\r\n"), "+OK send PASS\r\n");
}

#[test]
fn user_and_pass() {
    let mut c = Client::new(Pop3::new(settings()));
    c.send("");
    assert_eq!(c.send("PASS x\r\n"), "-ERR USER first\r\n");
    assert_eq!(c.send("STAT\r\n"), "-ERR log in first (USER, PASS)\r\n");
    assert_eq!(c.send("USER\r\n"), "-ERR usage: USER callsign\r\n");
    c.send("USER n0oth\r\n");
    assert_eq!(
        c.send("PASS wrong\r\n"),
        "-ERR [AUTH] wrong callsign or password\r\n"
    );
    assert_eq!(c.send("PASS x\r\n"), "-ERR USER first\r\n");
    c.send("USER n0oth\r\n");
    assert!(c.send("PASS x\r\n").starts_with("+OK 1 messages"));
    assert_eq!(c.send("USER n0usr\r\n"), "-ERR already logged in\r\n");
}

#[test]
fn stat_list_and_uidl() {
    let mut c = logged_in();
    let stat = c.send("STAT\r\n");
    let size: u64 = stat.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(stat.starts_with("+OK 1 ") && size > 100, "{stat}");
    assert_eq!(c.send("LIST\r\n"), format!("+OK\r\n1 {size}\r\n.\r\n"));
    assert_eq!(c.send("LIST 1\r\n"), format!("+OK 1 {size}\r\n"));
    assert_eq!(c.send("LIST 2\r\n"), "-ERR no such message\r\n");
    assert_eq!(c.send("UIDL\r\n"), "+OK\r\n1 1_N0CALL\r\n.\r\n");
    assert_eq!(c.send("UIDL 1\r\n"), "+OK 1 1_N0CALL\r\n");
    assert_eq!(c.send("UIDL x\r\n"), "-ERR usage: UIDL [msg]\r\n");
}

#[test]
fn retr_reads_top_does_not() {
    let mut c = logged_in();
    let top = c.send("TOP 1 1\r\n");
    assert!(top.contains("\r\n\r\nThis is a multi-part") && top.ends_with("\r\n.\r\n"));
    assert_eq!(c.status(1), MsgStatus::New, "TOP leaves it unread");
    let retr = c.send("RETR 1\r\n");
    assert!(
        retr.starts_with("+OK ") && retr.contains("\r\n..dot\r\n"),
        "{retr}"
    );
    assert!(retr.contains("filename=\"a.bin\"") && retr.ends_with("\r\n.\r\n"));
    assert_eq!(c.status(1), MsgStatus::Read, "RETR reads it, as R");
    assert_eq!(c.send("RETR 9\r\n"), "-ERR no such message\r\n");
    assert_eq!(c.send("TOP 1\r\n"), "-ERR usage: TOP msg n\r\n");
}

#[test]
fn a_message_gone_meanwhile() {
    let mut c = logged_in();
    c.store.store.set_status(1, MsgStatus::Killed).unwrap();
    assert_eq!(c.send("RETR 1\r\n"), "-ERR that message is gone\r\n");
}

#[test]
fn dele_rset_and_quit_kill_at_the_end() {
    let mut c = logged_in();
    assert_eq!(c.send("DELE 1\r\n"), "+OK message 1 deleted\r\n");
    assert_eq!(c.send("DELE 1\r\n"), "-ERR no such message\r\n");
    assert_eq!(c.send("STAT\r\n"), "+OK 0 0\r\n");
    assert_eq!(c.send("RSET\r\n"), "+OK\r\n");
    assert!(c.send("STAT\r\n").starts_with("+OK 1 "));
    c.send("DELE 1\r\n");
    assert_eq!(c.status(1), MsgStatus::New, "nothing killed before QUIT");
    assert_eq!(c.send("QUIT\r\n"), "+OK 73\r\n");
    assert_eq!(c.status(1), MsgStatus::Killed);
    assert!(c.state.closed);
}

#[test]
fn another_users_drop_and_noop_and_unknown() {
    let mut c = Client::new(Pop3::new(settings()));
    let msg = NewMessage {
        kind: MsgType::Personal,
        status: MsgStatus::New,
        to: "N0USR".into(),
        at: String::new(),
        from: "N0OTH".into(),
        bid: None,
        subject: b"x".to_vec(),
        rlines: Vec::new(),
        body: b"y\r\n".to_vec(),
    };
    c.store
        .insert(&msg, Vec::new(), Default::default())
        .unwrap();
    c.send("");
    c.send("USER n0usr\r\n");
    assert!(c.send("PASS pw\r\n").starts_with("+OK 1 messages"));
    assert_eq!(c.send("NOOP\r\n"), "+OK\r\n");
    assert_eq!(c.send("APOP a b\r\n"), "-ERR unknown command\r\n");
    assert!(c
        .send(&format!("{}\r\n", "x".repeat(600)))
        .starts_with("-ERR line too long"));
}
