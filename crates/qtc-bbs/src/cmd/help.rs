//! `H`, `HELP`, `?`: terse help, one line per command, as BBS users expect; `? CMD` adds an
//! example. Each command's entry is in its own file; [`super::HELP`] lists them in the order
//! `H` shows them, and a test checks that the README's command table names the same ones.

/// One command (with its aliases and variants), as help shows it.
pub(crate) struct Help {
    /// Every word that runs it, the first being the one listed.
    pub(crate) names: &'static [&'static str],
    /// How it is typed.
    pub(crate) usage: &'static str,
    /// What it does, short enough that `usage` and this fit 79 columns.
    pub(crate) what: &'static str,
    /// A line a user could type.
    pub(crate) example: &'static str,
}

pub(super) const HELP: Help = Help {
    names: &["H", "HELP", "?"],
    usage: "H | ? [command]",
    what: "this list; help on one command",
    example: "? L",
};

/// The full help text.
pub(super) fn all(commands: &[&Help]) -> String {
    let mut s = String::from("Commands:\r");
    for e in commands {
        s.push_str(&format!("{:<36} {}\r", e.usage, e.what));
    }
    s.push_str("? and a command for more, e.g. ? L\r");
    s
}

/// Help for one command, by any of its names (`? LB` finds `L`).
pub(super) fn one(commands: &[&Help], cmd: &str) -> String {
    let cmd = cmd.to_ascii_uppercase();
    // `V n` reads and plain `V` is the version: both entries show.
    let found: Vec<&&Help> = commands
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::{parse, CommandError, HELP};

    #[test]
    fn every_line_fits_80_columns() {
        for line in all(HELP).split('\r').chain(
            HELP.iter()
                .flat_map(|e| e.names)
                .flat_map(|n| {
                    one(HELP, n)
                        .split('\r')
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        ) {
            assert!(line.chars().count() < 80, "{line:?}");
        }
    }

    #[test]
    fn every_name_and_example_is_a_command() {
        for e in HELP {
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
                assert!(one(HELP, n).contains("Example: "), "{n}");
            }
        }
    }

    #[test]
    fn help_and_the_readme_table_agree() {
        let readme = include_str!("../../../../README.md");
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
        let in_help: std::collections::BTreeSet<String> = HELP
            .iter()
            .flat_map(|e| e.names.iter().map(|n| n.to_string()))
            .collect();
        assert_eq!(in_readme, in_help, "README table vs H");
    }
}
