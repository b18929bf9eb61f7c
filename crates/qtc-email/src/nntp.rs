//! NNTP (RFC 3977, RFC 4643 AUTHINFO, RFC 4642 STARTTLS) for bulletins. Each bulletin area is
//! a newsgroup named `category.at` in lower case (`SB WX @ WW` is in `wx.ww`, `SB ALL` in
//! `all`); an article's number is its BBS message number in every group. Reading needs no
//! login (bulletins are broadcast on the air); POST needs AUTHINFO and stores a bulletin with
//! the rules and limits of `SB`. LIST, GROUP, LISTGROUP, ARTICLE/HEAD/BODY/STAT, OVER/XOVER,
//! NEWGROUPS, NEWNEWS, POST, DATE, MODE READER, CAPABILITIES, QUIT.

use std::collections::VecDeque;

use qtc_mail::{MsgType, StoreError};
use smtp_proto::request::receiver::DataReceiver;

use crate::{Article, Core, Event, GroupInfo, LineBuffer, LoginRefused, Reply, Request, Settings};

/// Longest command line (RFC 3977 §3.1: 512 octets).
const MAX_LINE: usize = 512;
/// Articles listed per OVER or LISTGROUP command at most.
pub const MAX_LIST: usize = 5000;

/// The newsgroup name of a bulletin area.
pub fn group_name(category: &str, at: &str) -> String {
    match at {
        "" => category.to_ascii_lowercase(),
        at => format!("{}.{}", category, at).to_ascii_lowercase(),
    }
}

/// The bulletin area of a newsgroup name: (category, at), upper case.
pub fn area_of(name: &str) -> (String, String) {
    let (c, at) = name.split_once('.').unwrap_or((name, ""));
    (c.to_ascii_uppercase(), at.to_ascii_uppercase())
}

enum State {
    Command,
    /// AUTHINFO USER given.
    Pass(String),
    Post(DataReceiver),
    Waiting(Wait),
    Closed,
}

enum Wait {
    Login,
    Tls,
    /// The group list, for a command.
    Groups(GroupsFor),
    Article {
        number: u64,
        what: Part,
    },
    Over {
        listgroup: bool,
    },
    Post,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Article,
    Head,
    Body,
    Stat,
}

enum GroupsFor {
    /// LIST ACTIVE (false) or LIST NEWSGROUPS (true).
    List(bool),
    Group(String),
    ListGroup(String, Option<String>),
}

/// One NNTP session.
pub struct Nntp {
    s: Settings,
    lines: LineBuffer,
    out: Vec<u8>,
    events: VecDeque<Event>,
    state: State,
    user: Option<String>,
    group: Option<GroupInfo>,
    current: Option<u64>,
    post: Vec<u8>,
}

impl Nntp {
    /// A session; the greeting (posting allowed after AUTHINFO) is the first output.
    pub fn new(s: Settings) -> Nntp {
        let mut n = Nntp {
            lines: LineBuffer::new(MAX_LINE),
            out: Vec::new(),
            events: VecDeque::new(),
            state: State::Command,
            user: None,
            group: None,
            current: None,
            post: Vec::new(),
            s,
        };
        let hello = format!("200 {} qtc {} bulletins as news", n.s.domain, n.s.version);
        n.reply(&hello);
        n
    }

    fn reply(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn wait(&mut self, w: Wait, r: Request) {
        self.state = State::Waiting(w);
        self.events.push_back(Event::Store(r));
    }

    fn run(&mut self) {
        loop {
            match &mut self.state {
                State::Post(_) => {
                    if !self.take_post() {
                        return;
                    }
                }
                State::Command | State::Pass(_) => {
                    let Some(line) = self.lines.next_line() else {
                        return;
                    };
                    match line {
                        Err(_) => self.reply("501 line too long"),
                        Ok(l) => self.line(&String::from_utf8_lossy(&l)),
                    }
                }
                _ => return,
            }
        }
    }

    fn line(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("").to_ascii_uppercase();
        let args: Vec<String> = words.map(str::to_string).collect();
        let arg = |i: usize| args.get(i).cloned();
        match cmd.as_str() {
            "CAPABILITIES" => self.capabilities(),
            "MODE" => self.reply("200 posting allowed after AUTHINFO"),
            "QUIT" => {
                self.reply("205 73");
                self.state = State::Closed;
                self.events.push_back(Event::Close);
            }
            "DATE" => self.reply("111 19700101000000"),
            "HELP" => {
                self.reply("100 help follows");
                self.reply("LIST GROUP LISTGROUP ARTICLE HEAD BODY STAT OVER POST AUTHINFO QUIT");
                self.reply(".");
            }
            "STARTTLS" => self.starttls(),
            "AUTHINFO" => self.authinfo(arg(0), line),
            "LIST" => self.list(arg(0)),
            "GROUP" => match arg(0) {
                Some(g) => self.wait(Wait::Groups(GroupsFor::Group(g)), Request::Groups),
                None => self.reply("501 GROUP name"),
            },
            "LISTGROUP" => match arg(0).or_else(|| self.current_name()) {
                Some(g) => self.wait(
                    Wait::Groups(GroupsFor::ListGroup(g, arg(1))),
                    Request::Groups,
                ),
                None => self.reply("412 no newsgroup selected"),
            },
            "ARTICLE" => self.article(arg(0), Part::Article),
            "HEAD" => self.article(arg(0), Part::Head),
            "BODY" => self.article(arg(0), Part::Body),
            "STAT" => self.article(arg(0), Part::Stat),
            "OVER" | "XOVER" => self.over(arg(0), false),
            "NEWGROUPS" => {
                // Areas come and go with their bulletins; none is announced as new.
                self.reply("231 no new newsgroups");
                self.reply(".");
            }
            "NEWNEWS" => {
                self.reply("230 list of new articles follows (ask GROUP and OVER)");
                self.reply(".");
            }
            "POST" => self.post(),
            "NEXT" | "LAST" => self.reply("421 use OVER for the article numbers"),
            _ => self.reply("500 unknown command"),
        }
    }

    fn current_name(&self) -> Option<String> {
        self.group.as_ref().map(|g| group_name(&g.category, &g.at))
    }

    fn capabilities(&mut self) {
        self.reply("101 capabilities");
        let mut caps = vec![
            "VERSION 2",
            "READER",
            "POST",
            "OVER",
            "LIST ACTIVE NEWSGROUPS OVERVIEW.FMT",
        ];
        if self.user.is_none() && self.s.plain_auth {
            caps.push("AUTHINFO USER");
        }
        if self.s.starttls {
            caps.push("STARTTLS");
        }
        for c in caps {
            self.reply(c);
        }
        self.reply(".");
    }

    fn starttls(&mut self) {
        if !self.s.starttls {
            return self.reply("580 TLS not available");
        }
        self.reply("382 continue with TLS negotiation");
        self.lines.clear();
        self.state = State::Waiting(Wait::Tls);
        self.events.push_back(Event::StartTls);
    }

    fn authinfo(&mut self, what: Option<String>, line: &str) {
        if self.user.is_some() {
            return self.reply("502 already authenticated");
        }
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STARTTLS");
            return self.reply(&format!("483 {why}"));
        }
        // The argument is the rest of the line after `AUTHINFO USER|PASS `: a password may
        // hold spaces.
        let arg = line
            .trim_start()
            .splitn(3, ' ')
            .nth(2)
            .unwrap_or("")
            .to_string();
        let rest = |_: &str| arg.clone();
        match what.map(|w| w.to_ascii_uppercase()).as_deref() {
            Some("USER") => {
                let call = rest("USER")
                    .split('@')
                    .next()
                    .unwrap_or("")
                    .to_ascii_uppercase();
                self.state = State::Pass(call);
                self.reply("381 password required");
            }
            Some("PASS") => {
                let State::Pass(call) = std::mem::replace(&mut self.state, State::Command) else {
                    return self.reply("482 AUTHINFO USER first");
                };
                self.state = State::Waiting(Wait::Login);
                self.events.push_back(Event::Login {
                    call,
                    password: rest("PASS"),
                });
            }
            _ => self.reply("501 AUTHINFO USER or PASS"),
        }
    }

    fn list(&mut self, what: Option<String>) {
        match what.map(|w| w.to_ascii_uppercase()).as_deref() {
            None | Some("ACTIVE") => {
                self.wait(Wait::Groups(GroupsFor::List(false)), Request::Groups)
            }
            Some("NEWSGROUPS") => self.wait(Wait::Groups(GroupsFor::List(true)), Request::Groups),
            Some("OVERVIEW.FMT") => {
                self.reply("215 order of fields in overview database");
                for f in [
                    "Subject:",
                    "From:",
                    "Date:",
                    "Message-ID:",
                    "References:",
                    ":bytes",
                    ":lines",
                ] {
                    self.reply(f);
                }
                self.reply(".");
            }
            _ => self.reply("501 LIST ACTIVE, NEWSGROUPS or OVERVIEW.FMT"),
        }
    }

    fn groups(&mut self, groups: Vec<GroupInfo>, why: GroupsFor) {
        match why {
            GroupsFor::List(descriptions) => {
                self.reply("215 list of newsgroups follows");
                for g in &groups {
                    let name = group_name(&g.category, &g.at);
                    let line = match descriptions {
                        true => format!("{name}\tBulletins {} @ {}", g.category, g.at),
                        false => format!("{name} {} {} y", g.high, g.low.max(1)),
                    };
                    self.reply(&line);
                }
                self.reply(".");
            }
            GroupsFor::Group(name) => {
                let Some(g) = find(groups, &name) else {
                    return self.reply("411 no such newsgroup");
                };
                let line = format!("211 {} {} {} {name}", g.count, g.low, g.high);
                self.current = (g.count > 0).then_some(g.low);
                self.group = Some(g);
                self.reply(&line);
            }
            GroupsFor::ListGroup(name, range) => {
                let Some(g) = find(groups, &name) else {
                    return self.reply("411 no such newsgroup");
                };
                let (from, to) = parse_range(range.as_deref(), g.low, g.high);
                self.current = (g.count > 0).then_some(g.low);
                let req = Request::Articles {
                    category: g.category.clone(),
                    at: g.at.clone(),
                    from,
                    to,
                    limit: MAX_LIST,
                };
                let line = format!("211 {} {} {} {name} list follows", g.count, g.low, g.high);
                self.reply(&line);
                self.group = Some(g);
                self.wait(Wait::Over { listgroup: true }, req);
            }
        }
    }

    fn article(&mut self, arg: Option<String>, what: Part) {
        let number = match arg {
            Some(a) if a.starts_with('<') => return self.reply("430 ask by article number"),
            Some(a) => match a.parse::<u64>() {
                Ok(n) => n,
                Err(_) => return self.reply("501 article number"),
            },
            None => match (&self.group, self.current) {
                (None, _) => return self.reply("412 no newsgroup selected"),
                (_, None) => return self.reply("420 no current article"),
                (_, Some(n)) => n,
            },
        };
        // Only bulletins: the render is asked for as an anonymous reader.
        self.wait(
            Wait::Article { number, what },
            Request::Render { number, call: None },
        );
    }

    fn over(&mut self, arg: Option<String>, listgroup: bool) {
        let Some(g) = &self.group else {
            return self.reply("412 no newsgroup selected");
        };
        let (from, to) = match arg {
            Some(a) => parse_range(Some(&a), g.low, g.high),
            None => match self.current {
                Some(n) => (n, n),
                None => return self.reply("420 no current article"),
            },
        };
        let req = Request::Articles {
            category: g.category.clone(),
            at: g.at.clone(),
            from,
            to,
            limit: MAX_LIST,
        };
        self.reply("224 overview information follows");
        self.wait(Wait::Over { listgroup }, req);
    }

    fn over_lines(&mut self, articles: &[Article], listgroup: bool) {
        for a in articles {
            let line = match listgroup {
                true => a.number.to_string(),
                false => {
                    let subject =
                        crate::render::encode_header(&a.subject).replace(['\t', '\r', '\n'], " ");
                    format!(
                        "{}\t{subject}\t{}\t{}\t<{}@{}>\t\t{}\t{}",
                        a.number,
                        crate::addr::email(&a.from, "", &self.s),
                        crate::render::rfc5322_date(a.created),
                        a.bid,
                        self.s.domain,
                        a.size,
                        0
                    )
                }
            };
            self.reply(&line);
        }
        self.reply(".");
    }

    fn send_article(&mut self, number: u64, what: Part, r: &crate::render::Rendered) {
        self.current = Some(number);
        let id = format!("<{number}@{}>", self.s.domain);
        let (code, range) = match what {
            Part::Article => (220, 0..r.bytes.len()),
            Part::Head => (221, 0..r.header_len.saturating_sub(2)),
            Part::Body => (222, r.header_len..r.bytes.len()),
            Part::Stat => return self.reply(&format!("223 {number} {id}")),
        };
        self.reply(&format!("{code} {number} {id}"));
        let mut out = std::mem::take(&mut self.out);
        crate::pop3::dot_stuff(&r.bytes[range], &mut out);
        self.out = out;
        self.reply(".");
    }

    fn post(&mut self) {
        if self.user.is_none() {
            return self.reply("480 AUTHINFO first: posting needs your BBS login");
        }
        self.reply("340 send the article; end with a line holding a single .");
        self.post.clear();
        self.state = State::Post(DataReceiver::new());
    }

    /// Feeds buffered bytes to a POST; true when it ended.
    fn take_post(&mut self) -> bool {
        let rest = self.lines.take_rest();
        let State::Post(receiver) = &mut self.state else {
            return false;
        };
        let mut iter = rest.iter();
        let mut chunk = Vec::new();
        let done = receiver.ingest(&mut iter, &mut chunk);
        let left = iter.as_slice().to_vec();
        if self.post.len() + chunk.len() <= self.s.max_message / 3 * 4 + 64 * 1024 {
            self.post.extend_from_slice(&chunk);
        }
        self.lines.push(&left);
        if done {
            self.state = State::Command;
            self.posted();
        }
        done
    }

    fn posted(&mut self) {
        let raw = std::mem::take(&mut self.post);
        let parsed = match crate::submit::parse(&raw, self.s.max_message) {
            Ok(p) => p,
            Err(e) => return self.reply(&format!("441 {e}")),
        };
        let first = parsed
            .newsgroups
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        if first.is_empty() {
            return self.reply("441 no Newsgroups: header");
        }
        let (category, at) = area_of(&first);
        let dest = match crate::addr::check(MsgType::Bulletin, &category, &at) {
            Ok(d) => d,
            Err(e) => return self.reply(&format!("441 {e}")),
        };
        let from = self.user.clone().unwrap_or_default();
        let sub = crate::submit::submission(&parsed, &dest, &from);
        self.wait(Wait::Post, Request::Submit(Box::new(sub)));
    }
}

fn find(groups: Vec<GroupInfo>, name: &str) -> Option<GroupInfo> {
    groups
        .into_iter()
        .find(|g| group_name(&g.category, &g.at).eq_ignore_ascii_case(name))
}

/// `n`, `n-`, `n-m` within a group's numbers.
fn parse_range(arg: Option<&str>, low: u64, high: u64) -> (u64, u64) {
    let Some(a) = arg else {
        return (low, high);
    };
    match a.split_once('-') {
        None => a.parse().map_or((low, high), |n| (n, n)),
        Some((f, "")) => (f.parse().unwrap_or(low), u64::MAX),
        Some((f, t)) => (f.parse().unwrap_or(low), t.parse().unwrap_or(high)),
    }
}

impl Core for Nntp {
    fn handle_input(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
        self.run();
    }

    fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out);
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn login_done(&mut self, result: Result<String, LoginRefused>) {
        self.state = State::Command;
        match result {
            Ok(call) => {
                self.reply("281 authentication accepted");
                self.user = Some(call);
            }
            Err(LoginRefused::Wrong) => self.reply("481 wrong callsign or password"),
            Err(LoginRefused::Full(why)) => self.reply(&format!("400 {why}")),
            Err(LoginRefused::Unavailable) => self.reply("403 try again later"),
        }
        self.run();
    }

    fn answered(&mut self, reply: Result<Reply, StoreError>) {
        let State::Waiting(wait) = std::mem::replace(&mut self.state, State::Command) else {
            return;
        };
        match (wait, reply) {
            (Wait::Groups(why), Ok(Reply::Groups(g))) => self.groups(g, why),
            (Wait::Article { number, what }, Ok(Reply::Rendered(Some(r)))) => {
                self.send_article(number, what, &r)
            }
            (Wait::Article { .. }, Ok(_)) => self.reply("423 no such article"),
            (Wait::Over { listgroup }, Ok(Reply::Articles(a))) => self.over_lines(&a, listgroup),
            (Wait::Post, Ok(Reply::Stored { number, bid })) => {
                self.reply(&format!("240 article posted as #{number} ({bid})"))
            }
            (Wait::Post, Err(StoreError::OverLimit(why))) => self.reply(&format!("441 {why}")),
            (Wait::Post, Err(StoreError::Full)) => self.reply("441 the message store is full"),
            (Wait::Post, Err(_)) => self.reply("441 not stored"),
            (Wait::Over { .. }, _) => self.reply("."),
            (_, _) => self.reply("403 the message store is not available"),
        }
        self.run();
    }

    fn tls_started(&mut self) {
        self.s.starttls = false;
        self.s.plain_auth = true;
        self.state = State::Command;
        self.run();
    }

    fn changed(&mut self) {}

    fn wants_input(&self) -> bool {
        matches!(self.state, State::Command | State::Pass(_) | State::Post(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(n: &mut Nntp, input: &[u8]) -> String {
        n.handle_input(input);
        let mut out = Vec::new();
        n.take_output(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn groups_articles_and_posting() {
        assert_eq!(group_name("WX", "WW"), "wx.ww");
        assert_eq!(area_of("all.gbr.euro"), ("ALL".into(), "GBR.EURO".into()));
        let mut n = Nntp::new(crate::addr::tests::settings());
        assert!(drive(&mut n, b"").starts_with("200"));
        drive(&mut n, b"GROUP wx.ww\r\n");
        assert_eq!(n.poll_event(), Some(Event::Store(Request::Groups)));
        let g = GroupInfo {
            category: "WX".into(),
            at: "WW".into(),
            count: 2,
            low: 4,
            high: 9,
        };
        n.answered(Ok(Reply::Groups(vec![g])));
        assert_eq!(drive(&mut n, b""), "211 2 4 9 wx.ww\r\n");
        drive(&mut n, b"ARTICLE 9\r\n");
        assert!(matches!(
            n.poll_event(),
            Some(Event::Store(Request::Render {
                number: 9,
                call: None
            }))
        ));
        n.answered(Ok(Reply::Rendered(None)));
        assert!(drive(&mut n, b"").starts_with("423"));
        assert!(drive(&mut n, b"POST\r\n").starts_with("480"));
        drive(&mut n, b"AUTHINFO USER n0usr\r\nAUTHINFO PASS pw\r\n");
        assert!(matches!(n.poll_event(), Some(Event::Login { .. })));
        n.login_done(Ok("N0USR".into()));
        drive(
            &mut n,
            b"POST\r\nNewsgroups: wx.ww\r\nSubject: rain\r\n\r\nwet\r\n.\r\n",
        );
        let Some(Event::Store(Request::Submit(sub))) = n.poll_event() else {
            panic!("no post");
        };
        assert_eq!(
            (sub.msg.kind, sub.msg.to.as_str(), sub.msg.at.as_str()),
            (MsgType::Bulletin, "WX", "WW")
        );
    }
}
