//! SMTP's client lines: commands (parsed by `smtp-proto`, which knows every command and its
//! parameters) and AUTH's base64 answers.

use base64::Engine as _;
use smtp_proto::{Request as Proto, AUTH_LOGIN, AUTH_PLAIN};

/// A command this server acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// EHLO (`extended`) or HELO / LHLO.
    Hello {
        /// EHLO: the extensions are listed.
        extended: bool,
    },
    /// STARTTLS.
    StartTls,
    /// AUTH with a mechanism and maybe its first answer (base64, as sent).
    Auth(Mechanism, Option<String>),
    /// MAIL FROM (the sender is the logged-in call, whatever it says).
    Mail,
    /// RCPT TO: the address.
    Rcpt(String),
    /// DATA.
    Data,
    /// RSET.
    Rset,
    /// NOOP.
    Noop,
    /// VRFY.
    Vrfy,
    /// QUIT.
    Quit,
    /// A command SMTP knows that this server does not do (BDAT, EXPN, ETRN...).
    NotHere,
}

/// An AUTH mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// PLAIN (RFC 4616).
    Plain,
    /// LOGIN: the user name, then the password, each asked for.
    Login,
    /// Another.
    Other,
}

/// Why a line is not a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not a command SMTP has.
    Unknown,
    /// A command with bad arguments.
    Syntax,
}

/// One command line (without its line end).
pub fn command(line: &[u8]) -> Result<Command, ParseError> {
    let mut with_end = line.to_vec();
    with_end.extend_from_slice(b"\r\n");
    let cmd = match Proto::parse(&mut with_end.iter()) {
        Ok(c) => c,
        Err(smtp_proto::Error::UnknownCommand) => return Err(ParseError::Unknown),
        Err(_) => return Err(ParseError::Syntax),
    };
    Ok(match cmd {
        Proto::Ehlo { .. } => Command::Hello { extended: true },
        Proto::Helo { .. } | Proto::Lhlo { .. } => Command::Hello { extended: false },
        Proto::StartTls => Command::StartTls,
        Proto::Auth {
            mechanism,
            initial_response,
        } => {
            let m = match mechanism {
                AUTH_PLAIN => Mechanism::Plain,
                AUTH_LOGIN => Mechanism::Login,
                _ => Mechanism::Other,
            };
            let first = (!initial_response.is_empty()).then(|| initial_response.into_owned());
            Command::Auth(m, first)
        }
        Proto::Mail { .. } => Command::Mail,
        Proto::Rcpt { to } => Command::Rcpt(to.address.into_owned()),
        Proto::Data => Command::Data,
        Proto::Rset => Command::Rset,
        Proto::Noop { .. } => Command::Noop,
        Proto::Vrfy { .. } => Command::Vrfy,
        Proto::Quit => Command::Quit,
        _ => Command::NotHere,
    })
}

/// A client's answer to an AUTH challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthAnswer {
    /// `*`: the client gives up (RFC 4954 §4).
    Cancel,
    /// The decoded bytes.
    Data(Vec<u8>),
    /// Not base64.
    Bad,
}

/// A line answering an AUTH challenge (or an AUTH command's first answer).
pub fn auth_answer(line: &[u8]) -> AuthAnswer {
    let line = line.trim_ascii();
    if line == b"*" {
        return AuthAnswer::Cancel;
    }
    match base64::engine::general_purpose::STANDARD.decode(line) {
        Ok(d) => AuthAnswer::Data(d),
        Err(_) => AuthAnswer::Bad,
    }
}

/// `authzid NUL authcid NUL password` (RFC 4616): (authcid, password).
pub fn split_plain(data: &[u8]) -> Option<(String, String)> {
    let mut it = data.split(|&b| b == 0);
    let (_authz, user, pass) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    Some((
        String::from_utf8_lossy(user).into_owned(),
        String::from_utf8_lossy(pass).into_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(command(b"EHLO me"), Ok(Command::Hello { extended: true }));
        assert_eq!(command(b"helo me"), Ok(Command::Hello { extended: false }));
        assert_eq!(
            command(b"AUTH PLAIN AE4wVVNSAHB3"),
            Ok(Command::Auth(Mechanism::Plain, Some("AE4wVVNSAHB3".into())))
        );
        assert_eq!(
            command(b"AUTH LOGIN"),
            Ok(Command::Auth(Mechanism::Login, None))
        );
        assert_eq!(
            command(b"AUTH CRAM-MD5"),
            Ok(Command::Auth(Mechanism::Other, None))
        );
        assert_eq!(
            command(b"RCPT TO:<n0oth@n0call> NOTIFY=NEVER"),
            Ok(Command::Rcpt("n0oth@n0call".into()))
        );
        assert_eq!(command(b"MAIL FROM:<a@b> SIZE=10"), Ok(Command::Mail));
        assert_eq!(command(b"EXPN list"), Ok(Command::NotHere));
        assert_eq!(command(b"XYZZY"), Err(ParseError::Unknown));
        assert_eq!(command(b"RCPT TO:"), Err(ParseError::Syntax));
    }

    #[test]
    fn auth_answers() {
        assert_eq!(auth_answer(b" * "), AuthAnswer::Cancel);
        assert_eq!(
            auth_answer(b"AE4wVVNSAHB3"),
            AuthAnswer::Data(b"\0N0USR\0pw".to_vec())
        );
        assert_eq!(auth_answer(b"!!"), AuthAnswer::Bad);
        assert_eq!(
            split_plain(b"\0N0USR\0pw"),
            Some(("N0USR".into(), "pw".into()))
        );
        assert_eq!(split_plain(b"a\0b"), None);
        assert_eq!(split_plain(b"a\0b\0c\0d"), None);
    }
}
