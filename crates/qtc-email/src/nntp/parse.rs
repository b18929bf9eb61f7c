//! NNTP's command lines (RFC 3977, RFC 4643 AUTHINFO, RFC 4642 STARTTLS).

/// A command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// CAPABILITIES.
    Capabilities,
    /// MODE READER.
    Mode,
    /// QUIT.
    Quit,
    /// DATE.
    Date,
    /// HELP.
    Help,
    /// STARTTLS.
    StartTls,
    /// AUTHINFO USER: the rest of the line.
    AuthUser(String),
    /// AUTHINFO PASS: the rest of the line (a password may hold spaces).
    AuthPass(String),
    /// LIST [ACTIVE | NEWSGROUPS | OVERVIEW.FMT].
    List(ListWhat),
    /// GROUP name.
    Group(String),
    /// LISTGROUP [name [range]].
    ListGroup(Option<String>, Option<Range>),
    /// ARTICLE, HEAD, BODY or STAT, with an article number, a message id or neither (the
    /// current article).
    Article(Part, Option<ArticleId>),
    /// OVER / XOVER [range].
    Over(Option<Range>),
    /// NEWGROUPS.
    NewGroups,
    /// NEWNEWS.
    NewNews,
    /// POST.
    Post,
    /// NEXT or LAST.
    NextOrLast,
}

/// What LIST lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListWhat {
    /// ACTIVE (the default).
    Active,
    /// NEWSGROUPS: the descriptions.
    Newsgroups,
    /// OVERVIEW.FMT.
    OverviewFmt,
}

/// Which part of an article.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// ARTICLE.
    Article,
    /// HEAD.
    Head,
    /// BODY.
    Body,
    /// STAT.
    Stat,
}

/// An article named by number or by message id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArticleId {
    /// Its number.
    Number(u64),
    /// `<id>`.
    MessageId(String),
}

/// `n`, `n-` or `n-m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// One article.
    One(u64),
    /// From `n` up.
    From(u64),
    /// `n` to `m`.
    Between(u64, u64),
}

impl Range {
    /// The numbers it names, `None` (no range) being the whole group `low..=high`.
    pub fn bounds(range: Option<Range>, low: u64, high: u64) -> (u64, u64) {
        match range {
            None => (low, high),
            Some(Range::One(n)) => (n, n),
            Some(Range::From(n)) => (n, u64::MAX),
            Some(Range::Between(a, b)) => (a, b),
        }
    }
}

pub use crate::lines::ParseError;

/// One command line (without its line end).
pub fn command(line: &str) -> Result<Command, ParseError> {
    let mut words = line.split_whitespace();
    let cmd = words.next().unwrap_or("").to_ascii_uppercase();
    let args: Vec<&str> = words.collect();
    let arg = |i: usize| args.get(i).map(|a| a.to_string());
    let range = |i: usize, usage| args.get(i).map(|a| range(a).ok_or(usage)).transpose();
    Ok(match cmd.as_str() {
        "CAPABILITIES" => Command::Capabilities,
        "MODE" => Command::Mode,
        "QUIT" => Command::Quit,
        "DATE" => Command::Date,
        "HELP" => Command::Help,
        "STARTTLS" => Command::StartTls,
        "AUTHINFO" => authinfo(line)?,
        "LIST" => Command::List(list(args.first().copied())?),
        "GROUP" => Command::Group(arg(0).ok_or(ParseError::Usage("GROUP name"))?),
        "LISTGROUP" => Command::ListGroup(
            arg(0),
            range(1, ParseError::Usage("LISTGROUP [name [range]]"))?,
        ),
        "ARTICLE" => Command::Article(Part::Article, article_id(args.first().copied())?),
        "HEAD" => Command::Article(Part::Head, article_id(args.first().copied())?),
        "BODY" => Command::Article(Part::Body, article_id(args.first().copied())?),
        "STAT" => Command::Article(Part::Stat, article_id(args.first().copied())?),
        "OVER" | "XOVER" => Command::Over(range(0, ParseError::Usage("OVER [range]"))?),
        "NEWGROUPS" => Command::NewGroups,
        "NEWNEWS" => Command::NewNews,
        "POST" => Command::Post,
        "NEXT" | "LAST" => Command::NextOrLast,
        _ => return Err(ParseError::Unknown),
    })
}

/// `AUTHINFO USER|PASS value`: the value is the rest of the line.
fn authinfo(line: &str) -> Result<Command, ParseError> {
    let mut parts = line.trim_start().splitn(3, ' ');
    let _ = parts.next();
    let what = parts.next().unwrap_or("").to_ascii_uppercase();
    let value = parts.next().unwrap_or("").to_string();
    match what.as_str() {
        "USER" => Ok(Command::AuthUser(value)),
        "PASS" => Ok(Command::AuthPass(value)),
        _ => Err(ParseError::Usage(
            "AUTHINFO USER name | AUTHINFO PASS password",
        )),
    }
}

fn list(what: Option<&str>) -> Result<ListWhat, ParseError> {
    match what.map(str::to_ascii_uppercase).as_deref() {
        None | Some("ACTIVE") => Ok(ListWhat::Active),
        Some("NEWSGROUPS") => Ok(ListWhat::Newsgroups),
        Some("OVERVIEW.FMT") => Ok(ListWhat::OverviewFmt),
        _ => Err(ParseError::Usage(
            "LIST [ACTIVE | NEWSGROUPS | OVERVIEW.FMT]",
        )),
    }
}

fn article_id(arg: Option<&str>) -> Result<Option<ArticleId>, ParseError> {
    match arg {
        None => Ok(None),
        Some(a) if a.starts_with('<') => Ok(Some(ArticleId::MessageId(a.to_string()))),
        Some(a) => a
            .parse()
            .map(|n| Some(ArticleId::Number(n)))
            .map_err(|_| ParseError::Usage("ARTICLE [number | <message-id>]")),
    }
}

fn range(a: &str) -> Option<Range> {
    let n = |v: &str| v.parse::<u64>().ok();
    match a.split_once('-') {
        None => n(a).map(Range::One),
        Some((f, "")) => n(f).map(Range::From),
        Some((f, t)) => Some(Range::Between(n(f)?, n(t)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(command("group wx.ww"), Ok(Command::Group("wx.ww".into())));
        assert_eq!(command("GROUP"), Err(ParseError::Usage("GROUP name")));
        assert_eq!(
            command("LISTGROUP wx.ww 3-"),
            Ok(Command::ListGroup(
                Some("wx.ww".into()),
                Some(Range::From(3))
            ))
        );
        assert_eq!(command("LISTGROUP"), Ok(Command::ListGroup(None, None)));
        assert_eq!(
            command("ARTICLE 9"),
            Ok(Command::Article(Part::Article, Some(ArticleId::Number(9))))
        );
        assert_eq!(
            command("HEAD <9_N0CALL@x>"),
            Ok(Command::Article(
                Part::Head,
                Some(ArticleId::MessageId("<9_N0CALL@x>".into()))
            ))
        );
        assert!(matches!(command("BODY x"), Err(ParseError::Usage(_))));
        assert_eq!(command("STAT"), Ok(Command::Article(Part::Stat, None)));
        assert_eq!(
            command("XOVER 4-9"),
            Ok(Command::Over(Some(Range::Between(4, 9))))
        );
        assert!(matches!(command("OVER 4-x"), Err(ParseError::Usage(_))));
        assert_eq!(
            command("AUTHINFO PASS a b"),
            Ok(Command::AuthPass("a b".into()))
        );
        assert!(matches!(
            command("AUTHINFO SASL"),
            Err(ParseError::Usage(_))
        ));
        assert_eq!(
            command("LIST newsgroups"),
            Ok(Command::List(ListWhat::Newsgroups))
        );
        assert!(matches!(
            command("LIST DISTRIBUTIONS"),
            Err(ParseError::Usage(_))
        ));
        assert_eq!(command("IHAVE <x>"), Err(ParseError::Unknown));
        assert_eq!(Range::bounds(None, 3, 9), (3, 9));
        assert_eq!(Range::bounds(Some(Range::One(5)), 3, 9), (5, 5));
    }
}
