//! `C [port] CALL [V DIGI,...]`, `CONNECT`: the user connects out through a radio port (or a
//! NET/ROM circuit); the daemon checks the port, says what it calls, links the user through
//! and answers when the link is over.

use super::help::Help;
use super::{Command, CommandError};
use crate::ask::Ask;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["C", "CONNECT"],
    usage: "C [port] call [V digi,...]",
    what: "connect out on a radio port",
    example: "C vhf N0BBB V N0DIG",
};

const USAGE: &str = "C [port] call [V digi...]";

/// `C [port] call [V|VIA digi[,digi]...]`.
pub(super) fn parse(args: &[&str]) -> Result<Command, CommandError> {
    let usage = || CommandError::Usage(USAGE);
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

impl Session {
    /// The link is over, or never came up (`Err` says why).
    pub(super) fn disconnected(&mut self, ask: Ask, result: Result<(), String>) {
        let call = match ask {
            Ask::Connect { call, .. } => call,
            _ => String::new(),
        };
        match result {
            Ok(()) => self.say(&format!(
                "*** Disconnected from {call}. Back at {}.\r",
                self.cfg.callsign
            )),
            Err(why) => self.say(&format!("*** Failure with {call}: {why}\r")),
        }
    }

    /// Nothing was called; `why` says why.
    pub(super) fn connect_refused(&mut self, why: &str) {
        self.say(&format!("*** {why}\r"));
    }
}
