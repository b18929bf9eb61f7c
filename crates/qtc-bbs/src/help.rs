//! Terse help, one line per command, as BBS users expect; `? CMD` adds an example.
//!
//! This table is the list of commands: `H` shows exactly these, and a test checks that the
//! README's command table names the same ones.

/// One command (with its aliases and variants), as help shows it.
struct Entry {
    /// Every word that runs it, the first being the one listed.
    names: &'static [&'static str],
    /// How it is typed.
    usage: &'static str,
    /// What it does, short enough that `usage` and this fit 79 columns.
    what: &'static str,
    /// A line a user could type.
    example: &'static str,
}

const COMMANDS: &[Entry] = &[
    Entry {
        names: &[
            "L", "LM", "LN", "LY", "LB", "LP", "LT", "LR", "LL", "LH", "LK", "L<", "L>", "L@",
        ],
        usage: "L[M|N|Y|B|P|T|R] [n[-m]] [<|>|@ x]",
        what: "list: new since last L; filters combine",
        example: "LB 100-200 > ALL",
    },
    Entry {
        names: &["LC"],
        usage: "LC",
        what: "bulletin categories and counts",
        example: "LC",
    },
    Entry {
        names: &["R", "RM", "RN", "V"],
        usage: "R n [n..] | RM | RN | V n",
        what: "read; your unread; V with R: lines",
        example: "R 12 13",
    },
    Entry {
        names: &["SR"],
        usage: "SR [n]",
        what: "reply to the message read last (or n)",
        example: "SR",
    },
    Entry {
        names: &["S", "SP", "SB", "ST"],
        usage: "S[P|B|T] to[@bbs] [< from] [$bid]",
        what: "send personal, bulletin, NTS",
        example: "SP N0XYZ @ N0BBS",
    },
    Entry {
        names: &["K", "KM"],
        usage: "K n [n..] | KM",
        what: "kill messages; KM: your read mail",
        example: "K 12",
    },
    Entry {
        names: &["N", "NH"],
        usage: "N name | NH homebbs",
        what: "set your name or home BBS",
        example: "NH N0BBS.#NCA.CA.USA.NOAM",
    },
    Entry {
        names: &["WP", "W"],
        usage: "WP call",
        what: "white pages: home BBS of a call",
        example: "WP N0XYZ",
    },
    Entry {
        names: &["OP"],
        usage: "OP [n]",
        what: "lines per page, 0 = no paging",
        example: "OP 20",
    },
    Entry {
        names: &["A", "ABORT"],
        usage: "A",
        what: "abort output (also at More?)",
        example: "A",
    },
    Entry {
        names: &["X"],
        usage: "X",
        what: "expert mode: short prompt on/off",
        example: "X",
    },
    Entry {
        names: &["PW", "PASS"],
        usage: "PW | PASS",
        what: "change your telnet password",
        example: "PW",
    },
    Entry {
        names: &["U", "USERS"],
        usage: "U",
        what: "users online, and how they came in",
        example: "U",
    },
    Entry {
        names: &["T", "TALK"],
        usage: "T text",
        what: "page the sysop",
        example: "T are you around?",
    },
    Entry {
        names: &["J", "MH"],
        usage: "J | MH",
        what: "stations heard on each radio port",
        example: "J",
    },
    Entry {
        names: &["C", "CONNECT"],
        usage: "C [port] call [V digi,...]",
        what: "connect out on a radio port",
        example: "C vhf N0BBB V N0DIG",
    },
    Entry {
        names: &["CONV", "CHAT"],
        usage: "CONV [n] | CHAT [n]",
        what: "conference, channel n; /W who, /Q quit",
        example: "CONV 1",
    },
    Entry {
        names: &["NODES"],
        usage: "NODES [alias|call]",
        what: "NET/ROM nodes known; routes to one",
        example: "NODES BBSB",
    },
    Entry {
        names: &["ROUTES"],
        usage: "ROUTES",
        what: "NET/ROM neighbours and their quality",
        example: "ROUTES",
    },
    Entry {
        names: &["PORTS"],
        usage: "PORTS",
        what: "the radio ports",
        example: "PORTS",
    },
    Entry {
        names: &["SYS"],
        usage: "SYS",
        what: "sysop rights over RF (password)",
        example: "SYS",
    },
    Entry {
        names: &["I"],
        usage: "I",
        what: "about this BBS",
        example: "I",
    },
    Entry {
        names: &["V"],
        usage: "V",
        what: "software version",
        example: "V",
    },
    Entry {
        names: &["H", "HELP", "?"],
        usage: "H | ? [command]",
        what: "this list; help on one command",
        example: "? L",
    },
    Entry {
        names: &["B", "BYE"],
        usage: "B | BYE",
        what: "log off",
        example: "B",
    },
];

/// The full help text.
pub(crate) fn all() -> String {
    let mut s = String::from("Commands:\r");
    for e in COMMANDS {
        s.push_str(&format!("{:<36} {}\r", e.usage, e.what));
    }
    s.push_str("? and a command for more, e.g. ? L\r");
    s
}

/// Help for one command, by any of its names (`? LB` finds `L`).
pub(crate) fn one(cmd: &str) -> String {
    let cmd = cmd.to_ascii_uppercase();
    // `V n` reads and plain `V` is the version: both entries show.
    let found: Vec<&Entry> = COMMANDS
        .iter()
        .filter(|e| e.names.contains(&cmd.as_str()))
        .collect();
    if found.is_empty() {
        return format!("No command {cmd}. H lists them.\r");
    }
    found
        .iter()
        .map(|e| format!("{}: {}\rExample: {}\r", e.usage, e.what, e.example))
        .collect()
}

/// Every command word help knows (for the README check).
#[cfg(test)]
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().flat_map(|e| e.names.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{parse, CommandError};

    #[test]
    fn every_line_fits_80_columns() {
        for line in all().split('\r').chain(
            COMMANDS
                .iter()
                .flat_map(|e| e.names)
                .flat_map(|n| one(n).split('\r').map(str::to_string).collect::<Vec<_>>())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        ) {
            assert!(line.chars().count() < 80, "{line:?}");
        }
    }

    #[test]
    fn every_name_and_example_is_a_command() {
        for e in COMMANDS {
            assert!(
                !matches!(parse(e.example), Err(CommandError::Unknown(_))),
                "{}",
                e.example
            );
            for n in e.names {
                assert!(
                    !matches!(parse(n), Err(CommandError::Unknown(_))),
                    "{n} is in help but not a command"
                );
                assert!(one(n).contains("Example: "), "{n}");
            }
        }
    }

    #[test]
    fn help_and_the_readme_table_agree() {
        let readme = include_str!("../../../README.md");
        let start = readme.find("## Users' commands").unwrap();
        let table: Vec<&str> = readme[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .collect();
        // The first column's `code` spans, first word of each.
        let mut in_readme = std::collections::BTreeSet::new();
        for row in &table {
            let first = row.split('|').nth(1).unwrap();
            for (i, span) in first.split('`').enumerate() {
                if i % 2 == 1 {
                    in_readme.insert(span.split_whitespace().next().unwrap().to_string());
                }
            }
        }
        let in_help: std::collections::BTreeSet<String> = names().map(str::to_string).collect();
        assert_eq!(in_readme, in_help, "README table vs H");
    }
}
