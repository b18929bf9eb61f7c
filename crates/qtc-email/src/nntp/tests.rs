//! NNTP, command by command, against the memory store (bulletins 2 and 3 in `wx.ww`).

use qtc_mail::{MessageStore, MsgType};

use super::*;
use crate::testing::{settings, Client};

fn reader() -> Client<Nntp> {
    let mut c = Client::new(Nntp::new(settings()));
    assert!(c.send("").starts_with("200 bbs.example.org qtc test"));
    assert_eq!(
        c.send("AUTHINFO USER n0oth\r\n"),
        "381 password required\r\n"
    );
    assert_eq!(
        c.send("AUTHINFO PASS x\r\n"),
        "281 authentication accepted\r\n"
    );
    c
}

#[test]
fn names_of_groups() {
    assert_eq!(group_name("WX", "WW"), "wx.ww");
    assert_eq!(group_name("ALL", ""), "all");
    assert_eq!(area_of("all.gbr.euro"), ("ALL".into(), "GBR.EURO".into()));
}

#[test]
fn reading_needs_a_login_unless_the_sysop_opens_it() {
    let mut c = Client::new(Nntp::new(settings()));
    c.send("");
    for cmd in [
        "LIST",
        "GROUP wx.ww",
        "ARTICLE 2",
        "OVER",
        "LISTGROUP wx.ww",
    ] {
        assert!(
            c.send(&format!("{cmd}\r\n"))
                .starts_with("480 authentication required"),
            "{cmd}"
        );
    }
    assert!(c.send("CAPABILITIES\r\n").contains("AUTHINFO USER\r\n"));
    let mut open = settings();
    open.news_without_login = true;
    let mut c = Client::new(Nntp::new(open));
    c.send("");
    assert_eq!(c.send("GROUP wx.ww\r\n"), "211 2 2 3 wx.ww\r\n");
    assert!(c.send("POST\r\n").starts_with("480 AUTHINFO first"));
}

#[test]
fn authinfo() {
    let mut c = Client::new(Nntp::new(settings()));
    c.send("");
    assert_eq!(c.send("AUTHINFO PASS x\r\n"), "482 AUTHINFO USER first\r\n");
    c.send("AUTHINFO USER n0oth\r\n");
    assert_eq!(
        c.send("AUTHINFO PASS y\r\n"),
        "481 wrong callsign or password\r\n"
    );
    c.send("AUTHINFO USER n0oth\r\n");
    c.send("AUTHINFO PASS x\r\n");
    assert_eq!(
        c.send("AUTHINFO USER n0oth\r\n"),
        "502 already authenticated\r\n"
    );
    let mut set = settings();
    set.plain_auth = false;
    set.starttls = true;
    let mut c = Client::new(Nntp::new(set));
    c.send("");
    assert!(c
        .send("AUTHINFO USER n0oth\r\n")
        .starts_with("483 STARTTLS first"));
    assert_eq!(
        c.send("STARTTLS\r\n"),
        "382 continue with TLS negotiation\r\n"
    );
    assert_eq!(
        c.send("AUTHINFO USER n0oth\r\n"),
        "381 password required\r\n"
    );
}

#[test]
fn list_group_and_listgroup() {
    let mut c = reader();
    assert_eq!(
        c.send("LIST\r\n"),
        "215 list of newsgroups follows\r\nwx.ww 3 2 y\r\n.\r\n"
    );
    assert_eq!(
        c.send("LIST NEWSGROUPS\r\n"),
        "215 list of newsgroups follows\r\nwx.ww\tBulletins WX @ WW\r\n.\r\n"
    );
    assert!(c.send("LIST OVERVIEW.FMT\r\n").contains(":lines\r\n.\r\n"));
    assert_eq!(
        c.send("GROUP nothing.here\r\n"),
        "411 no such newsgroup\r\n"
    );
    assert_eq!(c.send("GROUP WX.WW\r\n"), "211 2 2 3 WX.WW\r\n");
    assert_eq!(
        c.send("LISTGROUP\r\n"),
        "211 2 2 3 wx.ww list follows\r\n2\r\n3\r\n.\r\n"
    );
    assert_eq!(
        c.send("LISTGROUP wx.ww 3-\r\n"),
        "211 2 2 3 wx.ww list follows\r\n3\r\n.\r\n"
    );
}

#[test]
fn article_head_body_stat() {
    let mut c = reader();
    assert_eq!(c.send("ARTICLE\r\n"), "412 no newsgroup selected\r\n");
    c.send("GROUP wx.ww\r\n");
    let a = c.send("ARTICLE\r\n");
    assert!(a.starts_with("220 2 <2@bbs.example.org>\r\n"), "{a}");
    assert!(
        a.contains("\r\n..dot\r\n") && a.ends_with("\r\n.\r\n"),
        "{a}"
    );
    let head = c.send("HEAD 3\r\n");
    assert!(
        head.starts_with("221 3 ") && head.contains("Subject: "),
        "{head}"
    );
    assert!(!head.contains("hi\r\n"), "{head}");
    let body = c.send("BODY 3\r\n");
    assert!(
        body.starts_with("222 3 ") && !body.contains("Subject:"),
        "{body}"
    );
    assert_eq!(c.send("STAT 3\r\n"), "223 3 <3@bbs.example.org>\r\n");
    // Personal mail is not news, even for its addressee.
    assert_eq!(c.send("ARTICLE 1\r\n"), "423 no such article\r\n");
    assert_eq!(c.send("ARTICLE <x@y>\r\n"), "430 ask by article number\r\n");
    assert!(c.send("ARTICLE x\r\n").starts_with("501 usage"));
}

#[test]
fn over_counts_lines() {
    let mut c = reader();
    assert_eq!(c.send("OVER\r\n"), "412 no newsgroup selected\r\n");
    c.send("GROUP wx.ww\r\n");
    let over = c.send("XOVER 2-3\r\n");
    let lines: Vec<&str> = over.split("\r\n").collect();
    assert_eq!(lines[0], "224 overview information follows");
    let fields: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(fields[0], "2");
    assert_eq!(fields[4], "<2_N0CALL@bbs.example.org>");
    assert_eq!((fields[6], fields[7]), ("10", "2"), "bytes and lines");
    assert_eq!(lines[3], ".");
    assert!(c.send("OVER\r\n").starts_with("224"), "the current article");
}

#[test]
fn post_stores_a_bulletin() {
    let mut c = reader();
    assert_eq!(
        c.send("POST\r\n"),
        "340 send the article; end with a line holding a single .\r\n"
    );
    let out = c.send("Newsgroups: wx.ww\r\nSubject: rain\r\n\r\nwet\r\n.\r\n");
    assert_eq!(out, "240 article posted as #4 (4_N0CALL)\r\n");
    let m = c.store.store.message(4).unwrap().unwrap();
    assert_eq!(
        (m.header.kind, m.header.to.as_str(), m.header.at.as_str()),
        (MsgType::Bulletin, "WX", "WW")
    );
    assert_eq!(m.header.from, "N0OTH");
    c.send("POST\r\n");
    assert_eq!(
        c.send("Subject: x\r\n\r\nno group\r\n.\r\n"),
        "441 no Newsgroups: header\r\n"
    );
    c.send("POST\r\n");
    assert!(c
        .send("Newsgroups: toolongcat.ww\r\nSubject: x\r\n\r\ny\r\n.\r\n")
        .starts_with("441 TOOLONGCAT@WW"));
    c.store.full = true;
    c.send("POST\r\n");
    assert_eq!(
        c.send("Newsgroups: wx.ww\r\nSubject: x\r\n\r\ny\r\n.\r\n"),
        "441 the message store is full\r\n"
    );
}

#[test]
fn a_post_over_the_allowance_is_refused_in_its_words() {
    let mut c = reader();
    c.store.per_user = 1;
    let article = "Newsgroups: wx.ww\r\nSubject: one\r\n\r\ny\r\n.\r\n";
    c.send("POST\r\n");
    assert!(c.send(article).starts_with("240 "));
    c.send("POST\r\n");
    assert_eq!(
        c.send(article),
        "441 You have sent 1 messages this hour, the most allowed here\r\n"
    );
    // Refused whole: the session goes on and nothing more was stored.
    assert_eq!(c.send("GROUP wx.ww\r\n"), "211 3 2 4 wx.ww\r\n");
}

#[test]
fn a_post_over_the_limit_is_not_read_for_ever() {
    let mut c = reader();
    c.send("POST\r\n");
    let chunk = "x".repeat(64 * 1024);
    let mut out = String::new();
    while c.core.wants_input() {
        out.push_str(&c.send(&chunk));
    }
    assert!(out.starts_with("441 the article is larger") && out.ends_with(": closing\r\n"));
    assert!(c.state.closed);
}

#[test]
fn the_other_commands() {
    let mut c = reader();
    let caps = c.send("CAPABILITIES\r\n");
    assert!(
        caps.starts_with("101 capabilities\r\nVERSION 2\r\nREADER\r\n"),
        "{caps}"
    );
    assert!(!caps.contains("AUTHINFO"), "logged in already: {caps}");
    assert!(c.send("MODE READER\r\n").starts_with("200"));
    assert!(c.send("DATE\r\n").starts_with("111 "));
    assert!(c.send("HELP\r\n").ends_with("\r\n.\r\n"));
    assert_eq!(
        c.send("NEWGROUPS 20260101 000000\r\n"),
        "231 no new newsgroups\r\n.\r\n"
    );
    assert!(c.send("NEWNEWS * 20260101 000000\r\n").starts_with("230"));
    assert!(c.send("NEXT\r\n").starts_with("421"));
    assert!(c.send("LAST\r\n").starts_with("421"));
    assert_eq!(c.send("IHAVE <x>\r\n"), "500 unknown command\r\n");
    assert_eq!(c.send("QUIT\r\n"), "205 73\r\n");
    assert!(c.state.closed);
    assert!(c.store.store.message(2).unwrap().is_some());
}
