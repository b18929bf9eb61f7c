//! Parsing one command line (W0RLI / MBL lineage, as JNOS, LinFBB and LinBPQ take them).

use qtc_mail::{MsgType, MAX_AT_LEN, MAX_BID_LEN, MAX_TO_LEN};

/// Which messages by status a listing wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStatus {
    /// `LN`: not read by the user: their own new mail and the bulletins they have not read.
    UnreadMine,
    /// `LY`: read.
    Read,
    /// `LH`: held (sysop).
    Held,
    /// `LK`: killed (sysop).
    Killed,
}

/// What to list: the `L` family, whose letters and arguments combine as on MBL, FBB and BPQ
/// (`LB 100-200`, `LB > ALL`, `LR 3`, `L> N0CALL @ WW`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListWhat {
    /// `LM`: addressed to the user.
    pub mine: bool,
    /// `LB`, `LP`, `LT`: of one type.
    pub kind: Option<MsgType>,
    /// `LN`, `LY`, `LH`, `LK`.
    pub status: Option<ListStatus>,
    /// `LL n`: the newest n.
    pub last: Option<usize>,
    /// `L n-m`, or `L n` (from n up).
    pub range: Option<(u64, u64)>,
    /// `L< CALL`: from a sender.
    pub from: Option<String>,
    /// `L> CALL`: to an addressee.
    pub to: Option<String>,
    /// `L@ AREA`: at a BBS or distribution area.
    pub at: Option<String>,
    /// `LR`: oldest first.
    pub oldest_first: bool,
}

impl ListWhat {
    /// Plain `L`: what is new since the user's last `L`.
    pub fn is_new_since_last(&self) -> bool {
        *self == ListWhat::default()
    }
}

/// A parsed `S` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendCmd {
    /// P, B or T.
    pub kind: MsgType,
    /// Addressee, upper case.
    pub to: String,
    /// `@` address, upper case, may be empty.
    pub at: String,
    /// `< FROM`, when given.
    pub from: Option<String>,
    /// `$BID`, when given.
    pub bid: Option<String>,
}

/// A command line's meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// An empty line: show the prompt again.
    Empty,
    /// `H`, `?`, optionally for one command.
    Help(Option<String>),
    /// The `L` family.
    List(ListWhat),
    /// `LC`: the bulletin categories (addressees) and how many of each.
    Categories,
    /// `R n [n...]`, or `V n [n...]` with `verbose` (R: lines shown).
    Read {
        /// Message numbers.
        numbers: Vec<u64>,
        /// Show the R: routing lines too.
        verbose: bool,
    },
    /// `RM`, `RN`: read my unread mail.
    ReadMine,
    /// `SR [n]`: reply to message n, or to the one read last.
    Reply(Option<u64>),
    /// `OP [n]`: lines per page (0: no paging); without n, show it.
    PageLength(Option<usize>),
    /// `A`: abort output (at the command prompt there is none left).
    Abort,
    /// `X`: expert mode (short prompt) on or off.
    Expert,
    /// `PW`, `PASS`: change the telnet password.
    Password,
    /// `U`: who is online.
    Users,
    /// `J`, `MH`: stations heard on the radio ports.
    Heard,
    /// `PORTS`: the radio ports.
    Ports,
    /// `NODES [alias|call]`: the NET/ROM nodes known, or the routes to one.
    Nodes(Option<String>),
    /// `ROUTES`: the NET/ROM neighbours and their quality.
    Routes,
    /// `T text`: page the sysop.
    Talk(String),
    /// `CONV [n]`, `CHAT [n]`: the conference, channel n (0 if not given).
    Conv(u16),
    /// `C [port] call [V|VIA digi...]`: connect out through a radio port.
    Connect {
        /// The port (`None`: the first).
        port: Option<String>,
        /// Station to call, upper case.
        call: String,
        /// Digipeaters, upper case.
        via: Vec<String>,
    },
    /// `K n [n...]`.
    Kill(Vec<u64>),
    /// `KM`: kill my read mail.
    KillMine,
    /// `S`, `SP`, `SB`, `ST`.
    Send(SendCmd),
    /// `N name`.
    Name(String),
    /// `NH homebbs`.
    HomeBbs(String),
    /// `WP call`: the home BBS of a callsign (white pages).
    WhitePages(String),
    /// `SYS`: ask for sysop rights (RF sysops, with their password).
    Sys,
    /// `I`: about this BBS.
    Info,
    /// `V`: version.
    Version,
    /// `B` / `BYE`.
    Bye,
}

/// Why a line is not a command we can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// Not a command we know.
    #[error("unknown command {0:?}")]
    Unknown(String),
    /// A known command with bad arguments; holds the usage line.
    #[error("usage: {0}")]
    Usage(&'static str),
    /// A field longer than the protocol allows.
    #[error("{field} is longer than {max} characters")]
    TooLong {
        /// Which field.
        field: &'static str,
        /// The limit.
        max: usize,
    },
}

/// Usage lines, also used by the help text.
pub(crate) const USAGE_LIST: &str = "L[M|N|Y|B|P|T|R] [n[-m]] [< call] [> call] [@ area] | LL n";
pub(crate) const USAGE_READ: &str = "R n [n...] | RM | V n";
pub(crate) const USAGE_KILL: &str = "K n [n...] | KM";
pub(crate) const USAGE_SEND: &str = "S[P|B|T] to[@bbs] [< from] [$bid]";
pub(crate) const USAGE_NAME: &str = "N name | NH homebbs";
pub(crate) const USAGE_WP: &str = "WP call";
pub(crate) const USAGE_REPLY: &str = "SR [n]";
pub(crate) const USAGE_PAGE: &str = "OP [n]";
pub(crate) const USAGE_TALK: &str = "T text";
pub(crate) const USAGE_CONV: &str = "CONV [channel]";
pub(crate) const USAGE_CONNECT: &str = "C [port] call [V digi...]";

/// `C [port] call [V|VIA digi[,digi]...]`.
fn parse_connect(args: &[&str]) -> Result<Command, CommandError> {
    let usage = || CommandError::Usage(USAGE_CONNECT);
    let upper: Vec<String> = args.iter().map(|a| a.to_ascii_uppercase()).collect();
    let split = upper
        .iter()
        .position(|a| a == "V" || a == "VIA")
        .unwrap_or(upper.len());
    let via: Vec<String> = upper
        .get(split + 1..)
        .unwrap_or_default()
        .iter()
        .flat_map(|d| d.split(','))
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect();
    if split < upper.len() && via.is_empty() {
        return Err(usage());
    }
    let (port, call) = match &args[..split] {
        [call] => (None, call.to_ascii_uppercase()),
        [port, call] => (Some(port.to_string()), call.to_ascii_uppercase()),
        _ => return Err(usage()),
    };
    Ok(Command::Connect { port, call, via })
}

fn numbers(args: &[&str], usage: &'static str) -> Result<Vec<u64>, CommandError> {
    if args.is_empty() {
        return Err(CommandError::Usage(usage));
    }
    args.iter()
        .map(|a| a.parse::<u64>().map_err(|_| CommandError::Usage(usage)))
        .collect()
}

/// No argument, or one number.
fn optional_number<T: std::str::FromStr>(
    args: &[&str],
    usage: &'static str,
) -> Result<Option<T>, CommandError> {
    match args {
        [] => Ok(None),
        [n] => n.parse().map(Some).map_err(|_| CommandError::Usage(usage)),
        _ => Err(CommandError::Usage(usage)),
    }
}

fn one_arg(args: &[&str], usage: &'static str) -> Result<String, CommandError> {
    match args {
        [a] => Ok(a.to_ascii_uppercase()),
        _ => Err(CommandError::Usage(usage)),
    }
}

fn parse_list(word: &str, args: &[&str]) -> Result<ListWhat, CommandError> {
    let usage = || CommandError::Usage(USAGE_LIST);
    let upper = word.to_ascii_uppercase();
    // The letters after L, then any `<`, `>`, `@` filter attached to the word (`L<N0ABC`).
    let split = upper[1..]
        .find(['<', '>', '@'])
        .map_or(upper.len(), |i| i + 1);
    let mut w = ListWhat::default();
    let mut count_next = false;
    let set_status = |w: &mut ListWhat, s| match w.status.replace(s) {
        None => Ok(()),
        Some(_) => Err(usage()),
    };
    for letter in upper[1..split].chars() {
        match letter {
            'M' => w.mine = true,
            'B' | 'P' | 'T' if w.kind.is_none() => {
                w.kind = MsgType::from_letter(letter);
            }
            'N' => set_status(&mut w, ListStatus::UnreadMine)?,
            'Y' => set_status(&mut w, ListStatus::Read)?,
            'H' => set_status(&mut w, ListStatus::Held)?,
            'K' => set_status(&mut w, ListStatus::Killed)?,
            'R' => w.oldest_first = true,
            'L' if !count_next => count_next = true,
            _ => return Err(CommandError::Unknown(word.to_string())),
        }
    }
    let mut tokens: Vec<&str> = Vec::new();
    if split < upper.len() {
        tokens.push(&word[split..]);
    }
    tokens.extend_from_slice(args);
    let mut tokens = tokens.into_iter();
    while let Some(tok) = tokens.next() {
        let op = tok.chars().next().unwrap_or(' ');
        if matches!(op, '<' | '>' | '@') {
            let value = match &tok[1..] {
                "" => tokens.next().ok_or_else(usage)?,
                attached => attached,
            };
            let value = Some(value.to_ascii_uppercase());
            match op {
                '<' => w.from = value,
                '>' => w.to = value,
                _ => w.at = value,
            }
        } else if count_next && w.last.is_none() {
            w.last = Some(tok.parse().map_err(|_| usage())?);
        } else if w.range.is_none() {
            let num = |s: &str| s.parse::<u64>().map_err(|_| usage());
            w.range = Some(match tok.split_once('-') {
                Some((lo, hi)) => (num(lo)?, num(hi)?),
                None => (num(tok)?, u64::MAX),
            });
        } else {
            return Err(usage());
        }
    }
    if count_next && w.last.is_none() {
        return Err(usage());
    }
    Ok(w)
}

fn check_len(field: &'static str, value: &str, max: usize) -> Result<(), CommandError> {
    if value.len() > max {
        return Err(CommandError::TooLong { field, max });
    }
    Ok(())
}

fn parse_send(kind: MsgType, args: &[&str]) -> Result<SendCmd, CommandError> {
    let mut tokens = args.iter().map(|t| t.to_ascii_uppercase());
    let first = tokens.next().ok_or(CommandError::Usage(USAGE_SEND))?;
    let (to, mut at) = match first.split_once('@') {
        // `SP N0X@` names no BBS: a typo, not local mail.
        Some((_, "")) => return Err(CommandError::Usage(USAGE_SEND)),
        Some((to, at)) => (to.to_string(), at.to_string()),
        None => (first.clone(), String::new()),
    };
    let mut from = None;
    let mut bid = None;
    // Each marker may stand alone (`@ N0BBS`) or be attached (`@N0BBS`).
    while let Some(tok) = tokens.next() {
        let first = tok.chars().next().unwrap_or(' ');
        let (marker, attached) = tok.split_at(first.len_utf8());
        let value = if attached.is_empty() {
            tokens.next().ok_or(CommandError::Usage(USAGE_SEND))?
        } else {
            attached.to_string()
        };
        match marker {
            "@" => at = value,
            "<" => from = Some(value),
            "$" => bid = Some(value),
            _ => return Err(CommandError::Usage(USAGE_SEND)),
        }
    }
    if to.is_empty() || !to.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(CommandError::Usage(USAGE_SEND));
    }
    // A hierarchical address is ASCII: calls, `#REGION`, dots.
    if !at
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'#' | b'-' | b'_'))
    {
        return Err(CommandError::Usage(USAGE_SEND));
    }
    check_len("the addressee", &to, MAX_TO_LEN)?;
    check_len("the @ address", &at, MAX_AT_LEN)?;
    if let Some(bid) = &bid {
        check_len("the BID", bid, MAX_BID_LEN)?;
        if !qtc_mail::is_valid_bid(bid) {
            return Err(CommandError::Usage(USAGE_SEND));
        }
    }
    Ok(SendCmd {
        kind,
        to,
        at,
        from,
        bid,
    })
}

/// Parses one command line (already without its line end).
pub fn parse(line: &str) -> Result<Command, CommandError> {
    let mut words = line.split_whitespace();
    let Some(word) = words.next() else {
        return Ok(Command::Empty);
    };
    let args: Vec<&str> = words.collect();
    let upper = word.to_ascii_uppercase();
    if upper == "LC" && args.is_empty() {
        return Ok(Command::Categories);
    }
    if upper.starts_with('L') {
        return parse_list(word, &args).map(Command::List);
    }
    match upper.as_str() {
        "H" | "HELP" | "?" => Ok(Command::Help(args.first().map(|a| a.to_ascii_uppercase()))),
        "R" => numbers(&args, USAGE_READ).map(|numbers| Command::Read {
            numbers,
            verbose: false,
        }),
        "RM" | "RN" if args.is_empty() => Ok(Command::ReadMine),
        "SR" => optional_number(&args, USAGE_REPLY).map(Command::Reply),
        "OP" => optional_number(&args, USAGE_PAGE).map(Command::PageLength),
        "A" | "ABORT" => Ok(Command::Abort),
        "X" => Ok(Command::Expert),
        "PW" | "PASS" => Ok(Command::Password),
        "U" | "USERS" => Ok(Command::Users),
        "J" | "MH" => Ok(Command::Heard),
        "PORTS" => Ok(Command::Ports),
        "NODES" if args.len() <= 1 => {
            Ok(Command::Nodes(args.first().map(|a| a.to_ascii_uppercase())))
        }
        "ROUTES" if args.is_empty() => Ok(Command::Routes),
        "C" | "CONNECT" => parse_connect(&args),
        "CONV" | "CHAT" => {
            optional_number(&args, USAGE_CONV).map(|n| Command::Conv(n.unwrap_or(0)))
        }
        "T" | "TALK" if !args.is_empty() => Ok(Command::Talk(args.join(" "))),
        "T" | "TALK" => Err(CommandError::Usage(USAGE_TALK)),
        "V" if args.is_empty() => Ok(Command::Version),
        "V" => numbers(&args, USAGE_READ).map(|numbers| Command::Read {
            numbers,
            verbose: true,
        }),
        "K" => numbers(&args, USAGE_KILL).map(Command::Kill),
        "KM" if args.is_empty() => Ok(Command::KillMine),
        "S" | "SP" => parse_send(MsgType::Personal, &args).map(Command::Send),
        "SB" => parse_send(MsgType::Bulletin, &args).map(Command::Send),
        "ST" => parse_send(MsgType::Traffic, &args).map(Command::Send),
        "N" if !args.is_empty() => Ok(Command::Name(args.join(" "))),
        "N" => Err(CommandError::Usage(USAGE_NAME)),
        "NH" => one_arg(&args, USAGE_NAME).map(Command::HomeBbs),
        "WP" | "W" => one_arg(&args, USAGE_WP).map(Command::WhitePages),
        "SYS" => Ok(Command::Sys),
        "I" => Ok(Command::Info),
        "B" | "BYE" => Ok(Command::Bye),
        "RM" | "RN" | "KM" => Err(CommandError::Usage(if upper != "KM" {
            USAGE_READ
        } else {
            USAGE_KILL
        })),
        _ => Err(CommandError::Unknown(word.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(line: &str) -> ListWhat {
        match parse(line) {
            Ok(Command::List(w)) => w,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn list_forms() {
        assert!(list("l").is_new_since_last());
        assert_eq!(list("LL 20").last, Some(20));
        assert_eq!(list("L 5-9").range, Some((5, 9)));
        assert_eq!(list("L 5").range, Some((5, u64::MAX)));
        for l in ["L< n0abc", "L<N0ABC", "L < N0ABC", "l <n0abc"] {
            assert_eq!(list(l).from.as_deref(), Some("N0ABC"), "{l}");
        }
        assert_eq!(list("L> N0X").to.as_deref(), Some("N0X"));
        assert_eq!(list("L@ ww").at.as_deref(), Some("WW"));
        assert_eq!(list("LB").kind, Some(MsgType::Bulletin));
        assert!(list("LM").mine);
        assert_eq!(list("LN").status, Some(ListStatus::UnreadMine));
        assert_eq!(list("LY").status, Some(ListStatus::Read));
        assert_eq!(list("LK").status, Some(ListStatus::Killed));
        assert!(list("LR").oldest_first);
        assert_eq!(parse("LC"), Ok(Command::Categories));
        assert!(matches!(parse("LL x"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LL"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("L<"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("L 1 2"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LNY"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LQ"), Err(CommandError::Unknown(_))));
    }

    #[test]
    fn list_filters_combine() {
        let w = list("LB 100-200 > ALL @WW");
        assert_eq!(w.kind, Some(MsgType::Bulletin));
        assert_eq!(w.range, Some((100, 200)));
        assert_eq!(w.to.as_deref(), Some("ALL"));
        assert_eq!(w.at.as_deref(), Some("WW"));
        let w = list("LBR 3");
        assert!(w.oldest_first && w.range == Some((3, u64::MAX)));
        let w = list("LL 5 < N0ABC");
        assert_eq!((w.last, w.from.as_deref()), (Some(5), Some("N0ABC")));
        let w = list("L>N0X 7");
        assert_eq!(
            (w.to.as_deref(), w.range),
            (Some("N0X"), Some((7, u64::MAX)))
        );
    }

    #[test]
    fn send_forms() {
        let s = |l| match parse(l).unwrap() {
            Command::Send(s) => s,
            other => panic!("{other:?}"),
        };
        let a = s("SP n0usr@n0bbs.#nca.ca.usa.noam < N0ABC $123_N0ABC");
        assert_eq!(a.kind, MsgType::Personal);
        assert_eq!(a.to, "N0USR");
        assert_eq!(a.at, "N0BBS.#NCA.CA.USA.NOAM");
        assert_eq!(a.from.as_deref(), Some("N0ABC"));
        assert_eq!(a.bid.as_deref(), Some("123_N0ABC"));
        let b = s("SB ALL @ WW $X1");
        assert_eq!(
            (b.kind, b.to.as_str(), b.at.as_str()),
            (MsgType::Bulletin, "ALL", "WW")
        );
        assert_eq!(s("S N0USR").kind, MsgType::Personal);
        assert_eq!(s("ST 12345 @ NTSCA").kind, MsgType::Traffic);
        assert!(matches!(parse("SP"), Err(CommandError::Usage(_))));
        // Found by fuzzing: a non-ASCII word after the addressee, and a non-ASCII @.
        assert!(matches!(
            parse("SP N0XYZ \u{e9}"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(
            parse("SP N0XYZ @ A\u{e9}\u{e9}"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(parse("SP N0USR @"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("SP N0X@"), Err(CommandError::Usage(_))));
        assert!(matches!(
            parse("SP N0X@ < N0Y"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(
            parse("SP N0USRXX"),
            Err(CommandError::TooLong { max: 6, .. })
        ));
        assert!(matches!(
            parse("SB ALL $1234567890123"),
            Err(CommandError::TooLong { max: 12, .. })
        ));
    }

    #[test]
    fn other_commands() {
        assert_eq!(parse("  ").unwrap(), Command::Empty);
        assert_eq!(parse("? l").unwrap(), Command::Help(Some("L".into())));
        assert_eq!(parse("V").unwrap(), Command::Version);
        assert_eq!(
            parse("V 3").unwrap(),
            Command::Read {
                numbers: vec![3],
                verbose: true
            }
        );
        assert_eq!(parse("K 1 2").unwrap(), Command::Kill(vec![1, 2]));
        assert_eq!(parse("n Ann Lee").unwrap(), Command::Name("Ann Lee".into()));
        assert_eq!(parse("bye").unwrap(), Command::Bye);
        assert_eq!(
            parse("wp n0xyz").unwrap(),
            Command::WhitePages("N0XYZ".into())
        );
        assert!(matches!(parse("WP"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("R x"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("XYZZY"), Err(CommandError::Unknown(_))));
        assert_eq!(parse("rn").unwrap(), Command::ReadMine);
        assert_eq!(parse("SR").unwrap(), Command::Reply(None));
        assert_eq!(parse("SR 7").unwrap(), Command::Reply(Some(7)));
        assert_eq!(parse("OP 5").unwrap(), Command::PageLength(Some(5)));
        assert_eq!(parse("op").unwrap(), Command::PageLength(None));
        assert!(matches!(parse("OP x"), Err(CommandError::Usage(_))));
        assert_eq!(parse("a").unwrap(), Command::Abort);
        assert_eq!(parse("X").unwrap(), Command::Expert);
        assert_eq!(parse("PASS").unwrap(), Command::Password);
        assert_eq!(parse("u").unwrap(), Command::Users);
        assert_eq!(parse("MH").unwrap(), Command::Heard);
        assert_eq!(parse("ports").unwrap(), Command::Ports);
        assert_eq!(parse("nodes").unwrap(), Command::Nodes(None));
        assert_eq!(
            parse("NODES ccc").unwrap(),
            Command::Nodes(Some("CCC".into()))
        );
        assert_eq!(parse("routes").unwrap(), Command::Routes);
        assert_eq!(
            parse("T are you there").unwrap(),
            Command::Talk("are you there".into())
        );
        assert!(matches!(parse("T"), Err(CommandError::Usage(_))));
        assert_eq!(
            parse("c vhf n0bbb v wide1-1,n0dig").unwrap(),
            Command::Connect {
                port: Some("vhf".into()),
                call: "N0BBB".into(),
                via: vec!["WIDE1-1".into(), "N0DIG".into()]
            }
        );
        assert_eq!(
            parse("C N0BBB").unwrap(),
            Command::Connect {
                port: None,
                call: "N0BBB".into(),
                via: Vec::new()
            }
        );
        assert!(matches!(parse("C"), Err(CommandError::Usage(_))));
        assert_eq!(parse("conv").unwrap(), Command::Conv(0));
        assert_eq!(parse("CHAT 5").unwrap(), Command::Conv(5));
        assert!(matches!(parse("CONV x"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("C N0BBB V"), Err(CommandError::Usage(_))));
    }
}
