//! A command line: parsed, then handed to the family that does it.

use qtc_mail::text::visible_line;
use qtc_mail::{MessageStore, StoreError};

use super::{Session, State, CTRL_Z};
use crate::ask::Ask;
use crate::command::{self, Command, CommandError};
use crate::help;
use crate::store::Query;

impl Session {
    pub(super) fn command(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        // A stray Ctrl-Z outside a message means nothing.
        let text = text.trim_matches(|c: char| c == CTRL_Z as char || c.is_whitespace());
        let cmd = match command::parse(text) {
            Ok(c) => c,
            Err(CommandError::Unknown(w)) => {
                self.say(&format!("Unknown command {w}. Type H for help.\r"));
                return;
            }
            Err(e @ CommandError::TooLong { .. }) => {
                self.say(&format!("*** {e}.\r"));
                return;
            }
            Err(e) => {
                self.say(&format!("{}\r", capitalise(&e.to_string())));
                return;
            }
        };
        match cmd {
            Command::Empty => {}
            Command::Help(None) => self.say(&help::all()),
            Command::Help(Some(c)) => self.say(&help::one(&c)),
            Command::List(what) => self.list(what),
            Command::Categories => self.request(super::list::Categories, Session::show_categories),
            Command::Users => self.ask(Ask::Users),
            Command::Heard => self.ask(Ask::Heard),
            Command::Ports => self.ask(Ask::Ports),
            Command::Nodes(node) => self.ask(Ask::Nodes { node }),
            Command::Routes => self.ask(Ask::Routes),
            Command::Conv(channel) => self.ask(Ask::Conv { channel }),
            Command::Connect { port, call, via } => self.connect(port, call, via),
            Command::Talk(text) => self.page_sysop(text),
            Command::Reply(n) => self.reply(n),
            Command::PageLength(n) => self.page_length(n),
            Command::Abort => self.say("Nothing to abort.\r"),
            Command::Expert => {
                self.expert = !self.expert;
                self.say(if self.expert {
                    "Expert mode: short prompts.\r"
                } else {
                    "Expert mode off.\r"
                });
            }
            Command::Password => {
                self.ask_hidden("Old password: ");
                self.state = State::PwOld;
            }
            Command::Read { numbers, verbose } => self.read(numbers.into_iter().collect(), verbose),
            Command::ReadMine => self.read_mine(),
            Command::Kill(numbers) => self.kill(numbers.into_iter().collect()),
            Command::KillMine => self.kill_mine(),
            Command::Send(cmd) => self.start_send(cmd),
            Command::Name(name) => self.set_profile(|u| u.name = name),
            Command::HomeBbs(h) => self.set_profile(|u| u.home_bbs = h),
            Command::WhitePages(call) => {
                let query = HomeBbs { call: call.clone() };
                self.request(query, move |s, home| s.show_home(&call, home));
            }
            Command::Sys => {
                if self.sysop_pending {
                    self.state = State::SysPassword;
                    self.say("Password:\r");
                } else if self.me().1 {
                    self.say("You have sysop rights already.\r");
                } else {
                    self.say("*** Only a sysop may use SYS.\r");
                }
            }
            Command::Info => {
                self.request(Counts, |s, (active, latest)| s.show_info(active, latest))
            }
            Command::Version => self.say(&format!("qtc {}\r", self.cfg.version)),
            Command::Bye => {
                let (call, _, _) = self.me();
                self.say(&format!("73 {call}, de {}. Goodbye.\r", self.cfg.callsign));
                self.close();
            }
        }
    }

    fn page_length(&mut self, n: Option<usize>) {
        if let Some(n) = n {
            self.page_len = n;
            if let Some(user) = self.user.as_mut() {
                user.page_len = Some(n);
                self.save_user();
            }
        }
        match self.page_len {
            0 => self.say("Paging off.\r"),
            n => self.say(&format!("{n} lines per page.\r")),
        }
    }

    fn show_info(&mut self, active: u64, latest: u64) {
        self.say(&format!(
            "{} BBS, {} - qtc {}.\r{active} active messages, latest #{latest}.\r",
            self.cfg.callsign, self.cfg.haddr, self.cfg.version
        ));
        if !self.cfg.info.is_empty() {
            let info = self.cfg.info.clone();
            self.say(&info);
            if !info.ends_with('\r') && !info.ends_with('\n') {
                self.say("\r");
            }
        }
    }

    fn show_home(&mut self, call: &str, home: Option<String>) {
        match home {
            Some(h) => self.say(&format!("{call}: home BBS {}\r", visible_line(&h))),
            None => self.say(&format!("No white pages entry for {call}.\r")),
        }
    }
}

/// `I`: active messages and the latest number.
#[derive(Debug)]
struct Counts;

impl Query for Counts {
    type Answer = (u64, u64);
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<(u64, u64), StoreError> {
        store.counts()
    }
}

/// `WP`: the home BBS the white pages know.
#[derive(Debug)]
struct HomeBbs {
    call: String,
}

impl Query for HomeBbs {
    type Answer = Option<String>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Option<String>, StoreError> {
        store.home_bbs(&self.call)
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
