//! NNTP (RFC 3977, RFC 4643 AUTHINFO, RFC 4642 STARTTLS) for bulletins. Each bulletin area is
//! a newsgroup named `category.at` in lower case (`SB WX @ WW` is in `wx.ww`, `SB ALL` in
//! `all`); an article's number is its BBS message number in every group. Reading needs the
//! BBS login, as LinBPQ's NNTP does, unless the sysop opens it
//! ([`Settings::news_without_login`]); POST always needs it and stores a bulletin with the
//! rules and limits of `SB`. LIST, GROUP, LISTGROUP, ARTICLE/HEAD/BODY/STAT, OVER/XOVER,
//! NEWGROUPS, NEWNEWS, POST, DATE, MODE READER, CAPABILITIES, QUIT; parsed in [`parse`].

pub mod parse;
#[cfg(test)]
mod tests;

use qtc_callsign::Callsign;
use qtc_mail::{MsgType, StoreError};

use crate::core::{account, Exchange};
use crate::data::{Body, Taken};
use crate::render::Rendered;
use crate::store::{
    Article, Articles, Group, GroupInfo, Groups, Numbers, Render, Submission, Submit,
};
use crate::{Core, LineBuffer, LoginRefused, Settings};
use parse::{ArticleId, Command, ListWhat, ParseError, Part, Range};

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

#[derive(Debug)]
enum State {
    Command,
    /// AUTHINFO USER given.
    Pass(String),
    Post(Body),
}

/// One NNTP session.
pub struct Nntp {
    x: Exchange<Nntp>,
    s: Settings,
    lines: LineBuffer,
    state: State,
    user: Option<Callsign>,
    group: Option<GroupInfo>,
    current: Option<u64>,
}

impl Nntp {
    /// A session; the greeting (posting allowed after AUTHINFO) is the first output.
    pub fn new(s: Settings) -> Nntp {
        let mut n = Nntp {
            x: Exchange::new(),
            lines: LineBuffer::new(MAX_LINE),
            state: State::Command,
            user: None,
            group: None,
            current: None,
            s,
        };
        let hello = format!("200 {} qtc {} bulletins as news", n.s.domain, n.s.version);
        n.x.say(&hello);
        n
    }

    fn run(&mut self) {
        while !self.x.busy() {
            if let State::Post(body) = &mut self.state {
                match body.take(&mut self.lines) {
                    Taken::More => return,
                    Taken::Done(raw) => self.posted(&raw),
                    Taken::TooBig => self.too_big(false),
                    Taken::Endless => self.too_big(true),
                }
                continue;
            }
            match self.lines.next_line() {
                None => return,
                Some(Err(_)) => self.x.say("501 line too long"),
                Some(Ok(l)) => match parse::command(&String::from_utf8_lossy(&l)) {
                    Ok(cmd) => self.command(cmd),
                    Err(ParseError::Unknown) => self.x.say("500 unknown command"),
                    Err(ParseError::Usage(u)) => self.x.say(&format!("501 usage: {u}")),
                },
            }
        }
    }

    /// Whether the client may read now.
    fn may_read(&self) -> bool {
        self.user.is_some() || self.s.news_without_login
    }

    fn command(&mut self, cmd: Command) {
        // AUTHINFO PASS goes with the USER just before it; any other command forgets it.
        let after_user = std::mem::replace(&mut self.state, State::Command);
        match cmd {
            Command::Capabilities => self.capabilities(),
            Command::Mode => self.x.say("200 posting allowed after AUTHINFO"),
            Command::Quit => {
                self.x.say("205 73");
                self.x.close();
            }
            Command::Date => self.x.say("111 19700101000000"),
            Command::Help => {
                self.x.say("100 help follows");
                self.x
                    .say("LIST GROUP LISTGROUP ARTICLE HEAD BODY STAT OVER POST AUTHINFO QUIT");
                self.x.say(".");
            }
            Command::StartTls => self.starttls(),
            Command::AuthUser(name) => self.auth_user(&name),
            Command::AuthPass(password) => self.auth_pass(after_user, password),
            Command::Post => self.post(),
            _ if !self.may_read() => self
                .x
                .say("480 authentication required: AUTHINFO USER and PASS (your BBS login)"),
            read => self.read(read),
        }
    }

    /// The commands that read bulletins.
    fn read(&mut self, cmd: Command) {
        match cmd {
            Command::List(what) => self.list(what),
            Command::Group(name) => self.group(name),
            Command::ListGroup(name, range) => match name.or_else(|| self.current_name()) {
                Some(name) => self.listgroup(name, range),
                None => self.x.say("412 no newsgroup selected"),
            },
            Command::Article(part, id) => self.article(part, id),
            Command::Over(range) => self.over(range),
            Command::NewGroups => {
                // Areas come and go with their bulletins; none is announced as new.
                self.x.say("231 no new newsgroups");
                self.x.say(".");
            }
            Command::NewNews => {
                self.x
                    .say("230 list of new articles follows (ask GROUP and OVER)");
                self.x.say(".");
            }
            Command::NextOrLast => self.x.say("421 use OVER for the article numbers"),
            _ => self.x.say("500 unknown command"),
        }
    }

    fn current_name(&self) -> Option<String> {
        self.group.as_ref().map(|g| group_name(&g.category, &g.at))
    }

    fn capabilities(&mut self) {
        self.x.say("101 capabilities");
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
            self.x.say(c);
        }
        self.x.say(".");
    }

    fn starttls(&mut self) {
        if !self.s.starttls {
            return self.x.say("580 TLS not available");
        }
        self.x.say("382 continue with TLS negotiation");
        self.lines.clear();
        self.x.start_tls();
    }

    fn auth_user(&mut self, name: &str) {
        if self.user.is_some() {
            return self.x.say("502 already authenticated");
        }
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STARTTLS");
            return self.x.say(&format!("483 {why}"));
        }
        self.state = State::Pass(account(name));
        self.x.say("381 password required");
    }

    fn auth_pass(&mut self, after_user: State, password: String) {
        if self.user.is_some() {
            return self.x.say("502 already authenticated");
        }
        let State::Pass(call) = after_user else {
            return self.x.say("482 AUTHINFO USER first");
        };
        self.x.login(call, password);
    }

    fn list(&mut self, what: ListWhat) {
        if what == ListWhat::OverviewFmt {
            self.x.say("215 order of fields in overview database");
            for f in [
                "Subject:",
                "From:",
                "Date:",
                "Message-ID:",
                "References:",
                ":bytes",
                ":lines",
            ] {
                self.x.say(f);
            }
            return self.x.say(".");
        }
        self.x
            .ask(Groups, move |n: &mut Nntp, groups| match groups {
                Ok(groups) => n.list_groups(&groups, what == ListWhat::Newsgroups),
                Err(_) => n.unavailable(),
            });
    }

    fn list_groups(&mut self, groups: &[GroupInfo], descriptions: bool) {
        self.x.say("215 list of newsgroups follows");
        for g in groups {
            let name = group_name(&g.category, &g.at);
            let line = match descriptions {
                true => format!("{name}\tBulletins {} @ {}", g.category, g.at),
                false => format!("{name} {} {} y", g.high, g.low.max(1)),
            };
            self.x.say(&line);
        }
        self.x.say(".");
    }

    /// Asks for group `name`; `then` goes on with it (`None`: no such group, said already).
    fn find_group(
        &mut self,
        name: String,
        then: impl FnOnce(&mut Nntp, GroupInfo) + Send + 'static,
    ) {
        let (category, at) = area_of(&name);
        self.x
            .ask(Group { category, at }, move |n: &mut Nntp, g| match g {
                Ok(Some(g)) => then(n, g),
                Ok(None) => n.x.say("411 no such newsgroup"),
                Err(_) => n.unavailable(),
            });
    }

    fn group(&mut self, name: String) {
        self.find_group(name.clone(), move |n, g| {
            let line = format!("211 {} {} {} {name}", g.count, g.low, g.high);
            n.select(g);
            n.x.say(&line);
        });
    }

    fn select(&mut self, g: GroupInfo) {
        self.current = (g.count > 0).then_some(g.low);
        self.group = Some(g);
    }

    fn listgroup(&mut self, name: String, range: Option<Range>) {
        self.find_group(name.clone(), move |n, g| {
            let line = format!("211 {} {} {} {name} list follows", g.count, g.low, g.high);
            n.x.say(&line);
            let range = Range::bounds(range, g.low, g.high);
            n.select(g);
            n.numbers(range);
        });
    }

    fn article(&mut self, what: Part, id: Option<ArticleId>) {
        let number = match id {
            Some(ArticleId::MessageId(_)) => return self.x.say("430 ask by article number"),
            Some(ArticleId::Number(n)) => n,
            None => match (&self.group, self.current) {
                (None, _) => return self.x.say("412 no newsgroup selected"),
                (_, None) => return self.x.say("420 no current article"),
                (_, Some(n)) => n,
            },
        };
        // Only bulletins: the render is asked for as an anonymous reader.
        let query = Render {
            number,
            reader: None,
            settings: self.s.clone(),
        };
        self.x.ask(query, move |n: &mut Nntp, r| match r {
            Ok(Some(r)) => n.send_article(number, what, &r),
            Ok(None) => n.x.say("423 no such article"),
            Err(_) => n.unavailable(),
        });
    }

    fn over(&mut self, range: Option<Range>) {
        let Some(g) = &self.group else {
            return self.x.say("412 no newsgroup selected");
        };
        let range = match (range, self.current) {
            (Some(r), _) => Range::bounds(Some(r), g.low, g.high),
            (None, Some(n)) => (n, n),
            (None, None) => return self.x.say("420 no current article"),
        };
        self.x.say("224 overview information follows");
        self.overviews(range);
    }

    /// The selected group's overviews in `range`, then `.`.
    fn overviews(&mut self, range: (u64, u64)) {
        let Some(g) = &self.group else {
            return self.x.say(".");
        };
        let query = Articles {
            category: g.category.clone(),
            at: g.at.clone(),
            range,
            limit: MAX_LIST,
        };
        self.x.ask(query, |n: &mut Nntp, a| {
            for a in a.unwrap_or_default() {
                let line = n.over_line(&a);
                n.x.say(&line);
            }
            n.x.say(".");
        });
    }

    /// The selected group's article numbers in `range` (LISTGROUP), then `.`.
    fn numbers(&mut self, range: (u64, u64)) {
        let Some(g) = &self.group else {
            return self.x.say(".");
        };
        let query = Numbers {
            category: g.category.clone(),
            at: g.at.clone(),
            range,
            limit: MAX_LIST,
        };
        self.x.ask(query, |n: &mut Nntp, numbers| {
            for number in numbers.unwrap_or_default() {
                n.x.say(&number.to_string());
            }
            n.x.say(".");
        });
    }

    fn over_line(&self, a: &Article) -> String {
        let subject = crate::render::encode_header(&a.subject).replace(['\t', '\r', '\n'], " ");
        format!(
            "{}\t{subject}\t{}\t{}\t<{}@{}>\t\t{}\t{}",
            a.number,
            crate::addr::email(&a.from, "", &self.s),
            crate::render::rfc5322_date(a.created),
            a.bid,
            self.s.domain,
            a.size,
            a.lines
        )
    }

    fn send_article(&mut self, number: u64, what: Part, r: &Rendered) {
        self.current = Some(number);
        let id = format!("<{number}@{}>", self.s.domain);
        let (code, range) = match what {
            Part::Article => (220, 0..r.bytes.len()),
            Part::Head => (221, 0..r.header_len.saturating_sub(2)),
            Part::Body => (222, r.header_len..r.bytes.len()),
            Part::Stat => return self.x.say(&format!("223 {number} {id}")),
        };
        self.x.say(&format!("{code} {number} {id}"));
        crate::pop3::dot_stuff(&r.bytes[range], self.x.out());
        self.x.say(".");
    }

    fn post(&mut self) {
        if self.user.is_none() {
            return self
                .x
                .say("480 AUTHINFO first: posting needs your BBS login");
        }
        self.x
            .say("340 send the article; end with a line holding a single .");
        self.state = State::Post(Body::new(self.s.max_message / 3 * 4 + 64 * 1024));
    }

    fn too_big(&mut self, endless: bool) {
        self.state = State::Command;
        let max = self.s.max_message;
        match endless {
            false => self.x.say(&format!(
                "441 the article is larger than the {max} bytes this BBS takes"
            )),
            true => {
                self.x.say(&format!(
                    "441 the article is larger than the {max} bytes this BBS takes: closing"
                ));
                self.x.close();
            }
        }
    }

    fn posted(&mut self, raw: &[u8]) {
        self.state = State::Command;
        let Some(from) = self.user else {
            return self
                .x
                .say("480 AUTHINFO first: posting needs your BBS login");
        };
        let parsed = match crate::submit::parse(raw, self.s.max_message) {
            Ok(p) => p,
            Err(e) => return self.x.say(&format!("441 {e}")),
        };
        let first = parsed.newsgroups.split(',').next().unwrap_or("").trim();
        if first.is_empty() {
            return self.x.say("441 no Newsgroups: header");
        }
        let (category, at) = area_of(first);
        let dest = match crate::addr::check(MsgType::Bulletin, &category, &at) {
            Ok(d) => d,
            Err(e) => return self.x.say(&format!("441 {e}")),
        };
        let sub = Submission {
            from,
            dests: vec![dest],
            subject: parsed.subject,
            body: parsed.body,
            files: parsed.files,
            thread: parsed.thread,
        };
        self.x.ask(Submit(Box::new(sub)), Nntp::stored);
    }

    fn stored(&mut self, stored: Result<Vec<(u64, String)>, StoreError>) {
        match stored {
            Ok(copies) => {
                let (number, bid) = copies.into_iter().next().unwrap_or_default();
                self.x
                    .say(&format!("240 article posted as #{number} ({bid})"))
            }
            Err(StoreError::OverLimit(why)) => self.x.say(&format!("441 {why}")),
            Err(StoreError::Full) => self.x.say("441 the message store is full"),
            Err(StoreError::Rejected(_)) => self.x.say("441 this BBS does not accept that article"),
            Err(_) => self.x.say("441 not stored"),
        }
    }

    fn unavailable(&mut self) {
        self.x.say("403 the message store is not available");
    }
}

impl Core for Nntp {
    const STORE_LOST: &'static str = "400 the message store is not available: closing";

    fn exchange(&self) -> &Exchange<Nntp> {
        &self.x
    }

    fn exchange_mut(&mut self) -> &mut Exchange<Nntp> {
        &mut self.x
    }

    fn handle_input(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
        self.run();
    }

    fn logged_in(&mut self, result: Result<Callsign, LoginRefused>) {
        match result {
            Ok(call) => {
                self.x.say("281 authentication accepted");
                self.user = Some(call);
            }
            Err(LoginRefused::Wrong) => self.x.say("481 wrong callsign or password"),
            Err(LoginRefused::Full(why)) => self.x.say(&format!("400 {why}")),
            Err(LoginRefused::Unavailable) => self.x.say("403 try again later"),
        }
    }

    fn tls_running(&mut self) {
        self.s.tls_started();
        self.state = State::Command;
    }

    fn resume(&mut self) {
        self.run();
    }
}
