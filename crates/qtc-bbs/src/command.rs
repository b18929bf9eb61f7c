//! Parsing one command line (W0RLI / MBL lineage, as JNOS, LinFBB and LinBPQ take them).

use qtc_mail::{MsgType, MAX_AT_LEN, MAX_BID_LEN, MAX_TO_LEN};

/// What to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListWhat {
    /// `L`: new since the user's last `L`.
    New,
    /// `LM`: addressed to the user.
    Mine,
    /// `LB`, `LP`, `LT`: of one type.
    Kind(MsgType),
    /// `LL n`: the newest n.
    Last(usize),
    /// `L n-m`, or `L n` (from n up).
    Range(u64, u64),
    /// `L< CALL`: from a sender.
    From(String),
    /// `L> CALL`: to an addressee.
    To(String),
    /// `L@ AREA`: at a BBS or distribution area.
    At(String),
    /// `LH`: held (sysop).
    Held,
    /// `LK`: killed (sysop).
    Killed,
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
    /// `R n [n...]`, or `V n [n...]` with `verbose` (R: lines shown).
    Read {
        /// Message numbers.
        numbers: Vec<u64>,
        /// Show the R: routing lines too.
        verbose: bool,
    },
    /// `RM`: read my unread mail.
    ReadMine,
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
pub(crate) const USAGE_LIST: &str =
    "L | LM | LB | LP | LT | LL n | L n[-m] | L< call | L> call | L@ area";
pub(crate) const USAGE_READ: &str = "R n [n...] | RM | V n";
pub(crate) const USAGE_KILL: &str = "K n [n...] | KM";
pub(crate) const USAGE_SEND: &str = "S[P|B|T] to[@bbs] [< from] [$bid]";
pub(crate) const USAGE_NAME: &str = "N name | NH homebbs";
pub(crate) const USAGE_WP: &str = "WP call";

fn numbers(args: &[&str], usage: &'static str) -> Result<Vec<u64>, CommandError> {
    if args.is_empty() {
        return Err(CommandError::Usage(usage));
    }
    args.iter()
        .map(|a| a.parse::<u64>().map_err(|_| CommandError::Usage(usage)))
        .collect()
}

fn one_arg(args: &[&str], usage: &'static str) -> Result<String, CommandError> {
    match args {
        [a] => Ok(a.to_ascii_uppercase()),
        _ => Err(CommandError::Usage(usage)),
    }
}

fn parse_list(word: &str, args: &[&str]) -> Result<ListWhat, CommandError> {
    // `L<CALL`, `L< CALL` and `L < CALL` all mean the same.
    let (op, rest): (Option<char>, Vec<&str>) = match word[1..].chars().next() {
        Some(c @ ('<' | '>' | '@')) => {
            let attached = &word[2..];
            let mut rest = Vec::new();
            if !attached.is_empty() {
                rest.push(attached);
            }
            rest.extend_from_slice(args);
            (Some(c), rest)
        }
        None => match args.first().and_then(|a| a.chars().next()) {
            Some(c @ ('<' | '>' | '@')) => {
                let attached = &args[0][1..];
                let mut rest = Vec::new();
                if !attached.is_empty() {
                    rest.push(attached);
                }
                rest.extend_from_slice(&args[1..]);
                (Some(c), rest)
            }
            _ => (None, args.to_vec()),
        },
        _ => (None, args.to_vec()),
    };
    if let Some(op) = op {
        let arg = one_arg(&rest, USAGE_LIST)?;
        return Ok(match op {
            '<' => ListWhat::From(arg),
            '>' => ListWhat::To(arg),
            _ => ListWhat::At(arg),
        });
    }
    let upper = word.to_ascii_uppercase();
    match (upper.as_str(), rest.as_slice()) {
        ("L", []) => Ok(ListWhat::New),
        ("L", [range]) => {
            let parse = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| CommandError::Usage(USAGE_LIST))
            };
            match range.split_once('-') {
                Some((lo, hi)) => Ok(ListWhat::Range(parse(lo)?, parse(hi)?)),
                None => Ok(ListWhat::Range(parse(range)?, u64::MAX)),
            }
        }
        ("LM", []) => Ok(ListWhat::Mine),
        ("LB", []) => Ok(ListWhat::Kind(MsgType::Bulletin)),
        ("LP", []) => Ok(ListWhat::Kind(MsgType::Personal)),
        ("LT", []) => Ok(ListWhat::Kind(MsgType::Traffic)),
        ("LH", []) => Ok(ListWhat::Held),
        ("LK", []) => Ok(ListWhat::Killed),
        ("LL", [n]) => n
            .parse::<usize>()
            .map(ListWhat::Last)
            .map_err(|_| CommandError::Usage(USAGE_LIST)),
        _ => Err(CommandError::Usage(USAGE_LIST)),
    }
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
    let list_word = upper.len() <= 2 || matches!(upper.as_bytes()[1], b'<' | b'>' | b'@');
    if upper.starts_with('L') && list_word {
        return parse_list(word, &args).map(Command::List);
    }
    match upper.as_str() {
        "H" | "HELP" | "?" => Ok(Command::Help(args.first().map(|a| a.to_ascii_uppercase()))),
        "R" => numbers(&args, USAGE_READ).map(|numbers| Command::Read {
            numbers,
            verbose: false,
        }),
        "RM" if args.is_empty() => Ok(Command::ReadMine),
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
        "RM" | "KM" => Err(CommandError::Usage(if upper == "RM" {
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

    #[test]
    fn list_forms() {
        assert_eq!(parse("l").unwrap(), Command::List(ListWhat::New));
        assert_eq!(parse("LL 20").unwrap(), Command::List(ListWhat::Last(20)));
        assert_eq!(
            parse("L 5-9").unwrap(),
            Command::List(ListWhat::Range(5, 9))
        );
        assert_eq!(
            parse("L 5").unwrap(),
            Command::List(ListWhat::Range(5, u64::MAX))
        );
        for l in ["L< n0abc", "L<N0ABC", "L < N0ABC", "l <n0abc"] {
            assert_eq!(
                parse(l).unwrap(),
                Command::List(ListWhat::From("N0ABC".into())),
                "{l}"
            );
        }
        assert_eq!(
            parse("L> N0X").unwrap(),
            Command::List(ListWhat::To("N0X".into()))
        );
        assert_eq!(
            parse("L@ ww").unwrap(),
            Command::List(ListWhat::At("WW".into()))
        );
        assert_eq!(
            parse("LB").unwrap(),
            Command::List(ListWhat::Kind(MsgType::Bulletin))
        );
        assert!(matches!(parse("LL x"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("L<"), Err(CommandError::Usage(_))));
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
    }
}
