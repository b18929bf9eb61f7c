//! Terse help, one line per command, as BBS users expect.

use crate::command::{USAGE_KILL, USAGE_LIST, USAGE_NAME, USAGE_READ, USAGE_SEND, USAGE_WP};

/// (command letters, usage, what it does)
const COMMANDS: &[(&str, &str, &str)] = &[
    ("L", USAGE_LIST, "list messages (L = new since your last L)"),
    (
        "R",
        USAGE_READ,
        "read messages (V shows the routing lines too)",
    ),
    ("K", USAGE_KILL, "kill messages"),
    (
        "S",
        USAGE_SEND,
        "send a message (P personal, B bulletin, T NTS)",
    ),
    ("N", USAGE_NAME, "set your name or your home BBS"),
    ("W", USAGE_WP, "white pages: the home BBS of a callsign"),
    ("I", "I", "information about this BBS"),
    ("V", "V", "version of the BBS software"),
    ("H", "H | ? [command]", "this help"),
    ("B", "B | BYE", "log off"),
];

/// The full help text.
pub(crate) fn all() -> String {
    let mut s = String::from("Commands:\r");
    for (_, usage, what) in COMMANDS {
        s.push_str(&format!("  {usage:<38} {what}\r"));
    }
    s.push_str("Type ? and a command letter for help on one command.\r");
    s
}

/// Help for one command, by its first letter.
pub(crate) fn one(cmd: &str) -> String {
    let letter = cmd.chars().next().map(|c| c.to_ascii_uppercase());
    let letter = match letter {
        Some('?') => Some('H'),
        other => other,
    };
    match COMMANDS
        .iter()
        .find(|(l, _, _)| Some(l.chars().next().unwrap_or(' ')) == letter)
    {
        Some((_, usage, what)) => format!("{usage}: {what}\r"),
        None => format!("No help for {cmd}. Type H for the list of commands.\r"),
    }
}
