//! The commands a user types (W0RLI / MBL lineage, as JNOS, LinFBB and LinBPQ take them), one
//! file each as in mini-redis's `cmd/`: how its line is parsed, its help line, the store
//! requests it makes and what it does with their answers.
//!
//! A new command is a file here (with its tests, on `crate::testing`'s harness) plus, in
//! this one, its [`Command`] variant, its word in [`parse`], its line in `Session::run` and its
//! help entry in [`HELP`]; the README's command table names it too (a test compares the two).
//! What it needs of the store is a [`crate::store::Query`] in its file: a new kind of store
//! read or write also adds a `MessageStore` method (qtc-mail, its memory store, qtc-store), and
//! a question only the daemon can answer an [`Ask`] (`ask.rs`, the daemon's `online.rs`).

use crate::ask::{Answer, Ask};
use crate::session::{Session, CTRL_Z};

mod abort;
mod bye;
mod categories;
mod conference;
mod connect;
mod expert;
mod help;
mod info;
mod kill;
pub(crate) mod list;
mod node;
mod page_length;
mod password;
mod profile;
pub(crate) mod read;
mod reply;
pub(crate) mod send;
mod sys;
mod talk;
mod white_pages;

pub use list::{ListStatus, ListWhat};
pub use send::SendCmd;

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

/// Every command's help, in the order `H` lists them.
const HELP: &[&help::Help] = &[
    &list::HELP,
    &categories::HELP,
    &read::HELP,
    &reply::HELP,
    &send::HELP,
    &kill::HELP,
    &profile::HELP,
    &white_pages::HELP,
    &page_length::HELP,
    &abort::HELP,
    &expert::HELP,
    &password::HELP,
    &node::HELP_USERS,
    &talk::HELP,
    &node::HELP_HEARD,
    &connect::HELP,
    &conference::HELP,
    &node::HELP_NODES,
    &node::HELP_ROUTES,
    &node::HELP_PORTS,
    &sys::HELP,
    &info::HELP_INFO,
    &info::HELP_VERSION,
    &help::HELP,
    &bye::HELP,
];

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
        return list::parse(word, &args).map(Command::List);
    }
    match upper.as_str() {
        "H" | "HELP" | "?" => Ok(Command::Help(args.first().map(|a| a.to_ascii_uppercase()))),
        "R" => read::parse(&args, false),
        "RM" | "RN" if args.is_empty() => Ok(Command::ReadMine),
        "SR" => optional_number(&args, reply::USAGE).map(Command::Reply),
        "OP" => optional_number(&args, page_length::USAGE).map(Command::PageLength),
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
        "C" | "CONNECT" => connect::parse(&args),
        "CONV" | "CHAT" => {
            optional_number(&args, conference::USAGE).map(|n| Command::Conv(n.unwrap_or(0)))
        }
        "T" | "TALK" if !args.is_empty() => Ok(Command::Talk(args.join(" "))),
        "T" | "TALK" => Err(CommandError::Usage(talk::USAGE)),
        "V" if args.is_empty() => Ok(Command::Version),
        "V" => read::parse(&args, true),
        "K" => numbers(&args, kill::USAGE).map(Command::Kill),
        "KM" if args.is_empty() => Ok(Command::KillMine),
        "S" | "SP" => send::parse(qtc_mail::MsgType::Personal, &args).map(Command::Send),
        "SB" => send::parse(qtc_mail::MsgType::Bulletin, &args).map(Command::Send),
        "ST" => send::parse(qtc_mail::MsgType::Traffic, &args).map(Command::Send),
        "N" if !args.is_empty() => Ok(Command::Name(args.join(" "))),
        "N" => Err(CommandError::Usage(profile::USAGE)),
        "NH" => one_arg(&args, profile::USAGE).map(Command::HomeBbs),
        "WP" | "W" => one_arg(&args, white_pages::USAGE).map(Command::WhitePages),
        "SYS" => Ok(Command::Sys),
        "I" => Ok(Command::Info),
        "B" | "BYE" => Ok(Command::Bye),
        "RM" | "RN" => Err(CommandError::Usage(read::USAGE)),
        "KM" => Err(CommandError::Usage(kill::USAGE)),
        _ => Err(CommandError::Unknown(word.to_string())),
    }
}

impl Session {
    /// Parses a command line and runs it.
    pub(crate) fn command(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        // A stray Ctrl-Z outside a message means nothing.
        let text = text.trim_matches(|c: char| c == CTRL_Z as char || c.is_whitespace());
        match parse(text) {
            Ok(cmd) => self.run(cmd),
            Err(CommandError::Unknown(w)) => {
                self.say(&format!("Unknown command {w}. Type H for help.\r"));
            }
            Err(e @ CommandError::TooLong { .. }) => self.say(&format!("*** {e}.\r")),
            Err(e) => self.say(&format!("{}\r", capitalise(&e.to_string()))),
        }
    }

    fn run(&mut self, cmd: Command) {
        match cmd {
            Command::Empty => {}
            Command::Help(None) => self.say(&help::all(HELP)),
            Command::Help(Some(c)) => self.say(&help::one(HELP, &c)),
            Command::List(what) => self.list(what),
            Command::Categories => self.categories(),
            Command::Users => self.ask(Ask::Users),
            Command::Heard => self.ask(Ask::Heard),
            Command::Ports => self.ask(Ask::Ports),
            Command::Nodes(node) => self.ask(Ask::Nodes { node }),
            Command::Routes => self.ask(Ask::Routes),
            Command::Conv(channel) => self.ask(Ask::Conv { channel }),
            Command::Connect { port, call, via } => self.ask(Ask::Connect { port, call, via }),
            Command::Talk(text) => self.page_sysop(text),
            Command::Reply(n) => self.reply(n),
            Command::PageLength(n) => self.page_length(n),
            Command::Abort => self.abort(),
            Command::Expert => self.expert(),
            Command::Password => self.change_password(),
            Command::Read { numbers, verbose } => self.read(numbers.into_iter().collect(), verbose),
            Command::ReadMine => self.read_mine(),
            Command::Kill(numbers) => self.kill(numbers.into_iter().collect()),
            Command::KillMine => self.kill_mine(),
            Command::Send(cmd) => self.start_send(cmd),
            Command::Name(name) => self.set_profile(|u| u.name = name),
            Command::HomeBbs(h) => self.set_profile(|u| u.home_bbs = h),
            Command::WhitePages(call) => self.white_pages(call),
            Command::Sys => self.sys(),
            Command::Info => self.info(),
            Command::Version => self.version(),
            Command::Bye => self.bye(),
        }
    }
}

/// Shows the daemon's answer to the question `ask` asked.
pub(crate) fn answered(s: &mut Session, ask: Ask, answer: Answer) {
    match answer {
        Answer::Users(users) => s.show_users(users),
        Answer::Ports(ports) => s.show_ports(ports),
        Answer::ConvEnded => s.conference_left(),
        Answer::Nodes(None) | Answer::Routes(None) => s.say("This BBS is no NET/ROM node.\r"),
        Answer::Nodes(Some(nodes)) => s.show_nodes(ask, &nodes),
        Answer::Routes(Some(neighbours)) => s.show_neighbours(&neighbours),
        Answer::Refused(why) => s.connect_refused(&why),
        Answer::Disconnected(result) => s.disconnected(ask, result),
    }
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

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
