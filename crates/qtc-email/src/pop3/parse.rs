//! POP3's command lines (RFC 1939, RFC 2449, RFC 2595).

/// A command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// CAPA.
    Capa,
    /// NOOP.
    Noop,
    /// QUIT.
    Quit,
    /// STLS.
    Stls,
    /// USER name.
    User(String),
    /// PASS: the rest of the line (a password may hold spaces).
    Pass(String),
    /// STAT.
    Stat,
    /// LIST [msg].
    List(Option<usize>),
    /// UIDL [msg].
    Uidl(Option<usize>),
    /// RETR msg.
    Retr(usize),
    /// TOP msg n.
    Top(usize, usize),
    /// DELE msg.
    Dele(usize),
    /// RSET.
    Rset,
}

pub use crate::lines::ParseError;

/// One command line (without its line end).
pub fn command(line: &str) -> Result<Command, ParseError> {
    let mut words = line.split_whitespace();
    let cmd = words.next().unwrap_or("").to_ascii_uppercase();
    let args: Vec<&str> = words.collect();
    let number = |i: usize, usage| {
        args.get(i)
            .and_then(|a| a.parse::<usize>().ok())
            .ok_or(ParseError::Usage(usage))
    };
    let optional = |usage| match args.first() {
        None => Ok(None),
        Some(_) => number(0, usage).map(Some),
    };
    Ok(match cmd.as_str() {
        "CAPA" => Command::Capa,
        "NOOP" => Command::Noop,
        "QUIT" => Command::Quit,
        "STLS" => Command::Stls,
        "USER" => match args.first() {
            Some(name) => Command::User(name.to_string()),
            None => return Err(ParseError::Usage("USER callsign")),
        },
        "PASS" => Command::Pass(line.get(5..).unwrap_or("").to_string()),
        "STAT" => Command::Stat,
        "LIST" => Command::List(optional("LIST [msg]")?),
        "UIDL" => Command::Uidl(optional("UIDL [msg]")?),
        "RETR" => Command::Retr(number(0, "RETR msg")?),
        "TOP" => Command::Top(number(0, "TOP msg n")?, number(1, "TOP msg n")?),
        "DELE" => Command::Dele(number(0, "DELE msg")?),
        "RSET" => Command::Rset,
        _ => return Err(ParseError::Unknown),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(command("capa"), Ok(Command::Capa));
        assert_eq!(command("USER n0oth"), Ok(Command::User("n0oth".into())));
        assert_eq!(command("PASS x y "), Ok(Command::Pass("x y ".into())));
        assert_eq!(command("LIST"), Ok(Command::List(None)));
        assert_eq!(command("UIDL 2"), Ok(Command::Uidl(Some(2))));
        assert_eq!(command("TOP 1 10"), Ok(Command::Top(1, 10)));
        assert_eq!(command("TOP 1"), Err(ParseError::Usage("TOP msg n")));
        assert_eq!(command("RETR x"), Err(ParseError::Usage("RETR msg")));
        assert_eq!(command("DELE -1"), Err(ParseError::Usage("DELE msg")));
        assert_eq!(command("USER"), Err(ParseError::Usage("USER callsign")));
        assert_eq!(command("APOP a b"), Err(ParseError::Unknown));
    }
}
