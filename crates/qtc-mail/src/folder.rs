//! What a user's own IMAP folders hold: folders, the messages kept in them (the user's
//! copies, as their client sent them: no BBS message), their marks. The stores keep them;
//! qtc-email's IMAP reads and writes them.

/// A user's folder as LIST and STATUS see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folder {
    /// Its name.
    pub name: String,
    /// Its UIDVALIDITY: drawn when it was made, never given to another folder.
    pub validity: u32,
    /// The UID its next message takes.
    pub uid_next: u64,
    /// Messages in it.
    pub messages: u64,
    /// Those without `\Seen`.
    pub unseen: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A message to keep in a user's folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderMessage {
    /// `\Seen`.
    pub seen: bool,
    /// `\Answered`.
    pub answered: bool,
    /// INTERNALDATE, Unix seconds (0: when it is kept).
    pub created: i64,
    /// The sender, as its `From:` names it (for SEARCH and listings).
    pub from: String,
    /// Its subject bytes.
    pub subject: Vec<u8>,
    /// The message as the client sent it.
    pub bytes: Vec<u8>,
}

/// Which mark of a message in a folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolderMark {
    /// `\Seen`.
    Seen,
    /// `\Answered`.
    Answered,
}
