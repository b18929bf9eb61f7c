//! Messages as the BBS keeps them.

use std::fmt;

/// Longest `to` field: a callsign or a bulletin category such as `ALL` (FBB's limit).
pub const MAX_TO_LEN: usize = 6;
/// Longest `@` field: a hierarchical address such as `N0BBS.#NCA.CA.USA.NOAM` (FBB's limit).
pub const MAX_AT_LEN: usize = 31;
/// Longest BID or MID (FBB's limit).
pub const MAX_BID_LEN: usize = 12;
/// Longest subject line, in bytes.
pub const MAX_SUBJECT_LEN: usize = 80;

/// The message type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgType {
    /// `P`: personal mail for one station.
    Personal,
    /// `B`: a bulletin, kept here and flooded to partners.
    Bulletin,
    /// `T`: NTS traffic.
    Traffic,
}

impl MsgType {
    /// The letter used on the wire and in listings.
    pub fn letter(self) -> char {
        match self {
            MsgType::Personal => 'P',
            MsgType::Bulletin => 'B',
            MsgType::Traffic => 'T',
        }
    }

    /// Parses `P`, `B` or `T` (either case).
    pub fn from_letter(c: char) -> Option<Self> {
        match c.to_ascii_uppercase() {
            'P' => Some(MsgType::Personal),
            'B' => Some(MsgType::Bulletin),
            'T' => Some(MsgType::Traffic),
            _ => None,
        }
    }
}

impl fmt::Display for MsgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// The message status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgStatus {
    /// `N`: not read yet by its addressee.
    New,
    /// `Y`: read.
    Read,
    /// `F`: forwarded to every partner it was queued for.
    Forwarded,
    /// `K`: killed; kept until housekeeping removes it.
    Killed,
    /// `H`: held for the sysop.
    Held,
}

impl MsgStatus {
    /// The letter used in listings.
    pub fn letter(self) -> char {
        match self {
            MsgStatus::New => 'N',
            MsgStatus::Read => 'Y',
            MsgStatus::Forwarded => 'F',
            MsgStatus::Killed => 'K',
            MsgStatus::Held => 'H',
        }
    }

    /// Parses a status letter.
    pub fn from_letter(c: char) -> Option<Self> {
        match c.to_ascii_uppercase() {
            'N' => Some(MsgStatus::New),
            'Y' => Some(MsgStatus::Read),
            'F' => Some(MsgStatus::Forwarded),
            'K' => Some(MsgStatus::Killed),
            'H' => Some(MsgStatus::Held),
            _ => None,
        }
    }
}

impl fmt::Display for MsgStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// True when `bid` is a usable BID/MID: 1 to 12 printable ASCII characters, no spaces.
pub fn is_valid_bid(bid: &str) -> bool {
    !bid.is_empty() && bid.len() <= MAX_BID_LEN && bid.bytes().all(|b| b.is_ascii_graphic())
}

/// What a listing shows of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageHeader {
    /// The local message number.
    pub number: u64,
    /// P, B or T.
    pub kind: MsgType,
    /// N, Y, F, K or H.
    pub status: MsgStatus,
    /// Addressee: a callsign, or a bulletin category such as `ALL`.
    pub to: String,
    /// Hierarchical `@` address; empty for local mail.
    pub at: String,
    /// Sender's callsign.
    pub from: String,
    /// Bulletin or message ID, unique network-wide.
    pub bid: String,
    /// Subject bytes as they arrived.
    pub subject: Vec<u8>,
    /// Body size in bytes.
    pub size: u64,
    /// When this BBS stored it, in seconds since the Unix epoch.
    pub created: i64,
}

/// A whole stored message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Number, addressing, subject, size and date.
    pub header: MessageHeader,
    /// The R: routing lines, CR LF ended, newest first, as they will be forwarded.
    pub rlines: Vec<u8>,
    /// The body bytes, stored exactly as they arrived (lines end in CR LF).
    pub body: Vec<u8>,
    /// How often a user has read it here.
    pub read_count: u64,
    /// Every addressee other than `to` (Winlink `To:`/`Cc:` copies), callsigns upper case.
    pub copies: Vec<String>,
    /// Of [`Message::copies`], those sent as `Cc:` (the others were further `To:`s).
    pub cc: Vec<String>,
    /// Its attachments (Winlink `File:` parts), name and size.
    pub files: Vec<FileInfo>,
    /// The body's charset as the sender declared it (Winlink `Content-Type`); empty: unknown.
    pub charset: String,
}

impl Message {
    /// The addressees after `to` that were sent as further `To:`s (not `Cc:`): addressees as
    /// much as the first, shown as such.
    pub fn further_to(&self) -> Vec<&str> {
        self.copies
            .iter()
            .filter(|c| !self.cc.contains(c))
            .map(String::as_str)
            .collect()
    }

    /// The body as text to show: in the charset the sender declared, else UTF-8 when it is
    /// valid UTF-8, else ISO-8859-1 (the stored bytes stay as they arrived).
    pub fn body_text(&self) -> String {
        crate::charset::decode_charset(&self.charset, &self.body)
    }
}

/// One attachment as a listing shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// The file name bytes as the sender wrote them.
    pub name: Vec<u8>,
    /// Its size in bytes.
    pub size: u64,
}

/// A file sent with a message by a mail client: its bytes exactly, with the type it was sent
/// with (a B2F `File:` part has none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attachment {
    /// Its file name.
    pub name: Vec<u8>,
    /// Its MIME type as sent (`text/plain; charset=utf-8`); empty when not known.
    pub mime: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// A MIME type as an attachment keeps it: `type/subtype`, with `; charset=...` when given,
/// lower case, from a `Content-Type` value (`text/plain; charset="UTF-8"; name=x`); empty
/// when it is not one, so that nothing but tokens can reach a header written from it.
pub fn mime_type(value: &str) -> String {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let mut fields = value.split(';');
    let Some((t, sub)) = fields.next().and_then(|f| f.trim().split_once('/')) else {
        return String::new();
    };
    let (t, sub) = (t.trim(), sub.trim());
    if !token(t) || !token(sub) {
        return String::new();
    }
    let mut out = format!("{t}/{sub}").to_ascii_lowercase();
    let charset = fields
        .filter_map(|f| f.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"'));
    if let Some(cs) = charset.filter(|c| token(c)) {
        out.push_str(&format!("; charset={}", cs.to_ascii_lowercase()));
    }
    out
}

/// The message ids a reply names (`In-Reply-To:`, `References:`), empty when none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    /// `In-Reply-To:`'s value.
    pub in_reply_to: String,
    /// `References:`' value.
    pub references: String,
}

/// A message about to be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewMessage {
    /// P, B or T.
    pub kind: MsgType,
    /// Initial status: New, or Held when a rule or a loop check holds it.
    pub status: MsgStatus,
    /// Addressee.
    pub to: String,
    /// `@` address, may be empty.
    pub at: String,
    /// Sender.
    pub from: String,
    /// The BID; `None` lets the store generate `<number>_<OURCALL>`.
    pub bid: Option<String>,
    /// Subject bytes.
    pub subject: Vec<u8>,
    /// R: lines, CR LF ended.
    pub rlines: Vec<u8>,
    /// Body bytes, lines ended by CR LF.
    pub body: Vec<u8>,
}

/// Which messages a listing wants. Every condition set must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only messages numbered above this.
    pub after: Option<u64>,
    /// Only messages numbered from `.0` to `.1` inclusive.
    pub range: Option<(u64, u64)>,
    /// Only this type.
    pub kind: Option<MsgType>,
    /// Only this status.
    pub status: Option<MsgStatus>,
    /// Only to this addressee (exact, upper case).
    pub to: Option<String>,
    /// Only where this callsign is the addressee or one of the other recipients (Winlink
    /// To/Cc): a user's own mail, copies included.
    pub to_or_copy: Option<String>,
    /// Only from this sender.
    pub from: Option<String>,
    /// Only where the `@` field's first element or whole value matches (upper case).
    pub at: Option<String>,
    /// Only the newest n (the oldest n with `oldest_first`).
    pub last: Option<usize>,
    /// Oldest first; newest first otherwise.
    pub oldest_first: bool,
    /// Restrict to what this user may see: bulletins, and personal mail to or from them, none
    /// of it held.
    /// `None`: everything (sysop).
    pub visible_to: Option<String>,
    /// Include killed messages (sysop `LK`); otherwise they are hidden unless `status` asks for them.
    pub include_killed: bool,
    /// Whose read marks the status column shows (and `status` is compared with): a bulletin
    /// is new for each user until they read it, a copy until its recipient reads it. `None`:
    /// the user of `to_or_copy` or `visible_to`; without those, the message's own status.
    pub reader: Option<String>,
    /// Only what this user has not read (`LN`): their own mail (addressee or copy) still new,
    /// and bulletins they have not read; never held or killed ones.
    pub unread_by: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::mime_type;

    #[test]
    fn a_mime_type_keeps_only_tokens() {
        assert_eq!(
            mime_type("Text/Plain; name=a.txt; charset=\"UTF-8\""),
            "text/plain; charset=utf-8"
        );
        assert_eq!(mime_type("application/pdf"), "application/pdf");
        assert_eq!(mime_type("text/plain\r\nX-Injected: 1"), "");
        assert_eq!(mime_type("text/plain; charset=a\r\nb"), "text/plain");
        assert_eq!(mime_type("nonsense"), "");
    }
}
