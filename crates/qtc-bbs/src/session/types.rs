//! What every session shares ([`Config`]), how its user came in ([`Access`]) and what it asks
//! of the transport ([`Event`]).

use qtc_callsign::Callsign;

/// What every session of one BBS shares.
#[derive(Clone, Debug)]
pub struct Config {
    /// This BBS's callsign, e.g. `N0CALL`.
    pub callsign: Callsign,
    /// Its hierarchical address, e.g. `N0CALL.#NCA.CA.USA.NOAM` (may equal the callsign).
    pub haddr: String,
    /// The longest input line accepted, in bytes.
    pub max_line: usize,
    /// The largest message body accepted, in bytes.
    pub max_message: usize,
    /// Wrong logins before the connection is closed.
    pub max_login_attempts: u32,
    /// Extra lines shown by `I` (the sysop's text), CR separated.
    pub info: String,
    /// Software version shown by `V`.
    pub version: String,
    /// Lines per page before `More?` for telnet users (0: no paging); `OP n` changes it.
    pub page_len_telnet: usize,
    /// Lines per page for AX.25 users, where a long listing takes minutes at 1200 baud.
    pub page_len_radio: usize,
    /// Message bodies go out as stored, escape sequences included (ANSI art); otherwise their
    /// control characters are shown as visible escapes like every other field.
    pub raw_bodies: bool,
}

impl Config {
    /// Defaults for a BBS with this callsign.
    pub fn new(callsign: Callsign) -> Config {
        Config {
            callsign,
            haddr: callsign.to_string(),
            max_line: 255,
            max_message: 2 * 1024 * 1024,
            max_login_attempts: 3,
            info: String::new(),
            version: String::from("qtc"),
            page_len_telnet: 0,
            page_len_radio: 20,
            raw_bodies: false,
        }
    }

    pub(super) fn prompt(&self) -> String {
        format!("de {}>\r", self.callsign)
    }
}

/// How the user on this session is identified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Telnet: ask for callsign and password.
    Password,
    /// AX.25: the link's source callsign, without its SSID, is the identity (no password on
    /// RF).
    Callsign(Callsign),
    /// Over the air as [`Access::Callsign`], but by a way the sysop did not give for the
    /// forwarding partner of that callsign (another port, another NET/ROM node): the callsign
    /// is only a claim there, so a BBS account gets a user's session, without its partner
    /// rights (no forwarding, no sending as someone else).
    Claimed(Callsign),
    /// The transport has checked the password already (the web terminal, after the web's own
    /// login): no prompt, and the account's rights as they are (a sysop needs no `SYS`).
    Verified(Callsign),
}

/// What the transport must do, besides sending the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Ask the client to stop (true) or resume (false) echoing what is typed (telnet ECHO).
    HideInput(bool),
    /// A login failed; the daemon slows down this source address.
    LoginFailed {
        /// The callsign that was tried; `None` when what was typed is not a callsign (it may
        /// be a password typed at `Callsign:`, so it is never shown or logged).
        call: Option<Callsign>,
    },
    /// Check `call`'s password (argon2: tens of milliseconds, so the transport does it off its
    /// threads, with a dummy check for an unknown callsign so both take as long) and answer
    /// with [`crate::Session::password_checked`]. Input meanwhile waits in the session.
    CheckPassword {
        /// The callsign (base call).
        call: Callsign,
        /// What was typed.
        password: String,
        /// What it is for: a login and `SYS` count as login attempts, `PW`'s current password
        /// (the user is logged in already) does not.
        purpose: Checking,
    },
    /// A user is in. When `bbs` is true the session stops interpreting: the transport hands the
    /// connection to the forwarding session, with [`crate::Session::take_unconsumed`].
    LoggedIn {
        /// The user's callsign.
        call: Callsign,
        /// Whether the user is a BBS.
        bbs: bool,
    },
    /// `T`: the user pages the sysop; the daemon shows it on every sysop session and logs it.
    PageSysop {
        /// Who pages.
        from: Callsign,
        /// What they said (bounded).
        text: String,
    },
    /// Close the connection once the output is sent.
    Close,
}

/// What a password check is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checking {
    /// A telnet login.
    Login,
    /// `SYS` on RF: sysop rights.
    Sys,
    /// `PW`: the current password of a user logged in already.
    Current,
}

/// Why the daemon did not check a password ([`crate::Session::password_refused`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Repeated failures locked the account or the address out for a while.
    Locked,
    /// Too many logins to the account are being checked at once.
    Busy,
}
