//! The places an IMAP client opens beside its INBOX, and their store work: each user's own
//! folders (Sent, Drafts, Trash and whatever the client makes) and the bulletins, one folder
//! per category.
//!
//! A message in a user's folder is that user's copy, kept as the client sent it (APPEND,
//! COPY): it is no BBS message, so it is never forwarded, listed at the prompt or delivered
//! to anyone. A bulletin folder shows the newest [`MAX_MAILBOX`] bulletins of its category;
//! a user's `\Seen` there is their BBS read mark (the one `LN` reads), and nothing else they
//! do changes a bulletin.
//!
//! The limits are here so both stores keep them alike: [`MAX_FOLDERS`] folders and
//! [`MAX_FOLDER_BYTES`] bytes of copies per user, a folder name of at most
//! [`MAX_FOLDER_NAME`] bytes. The store's own quota (`[store] max_mb`) holds as for any write.

use qtc_callsign::Callsign;
pub use qtc_mail::folder::{Folder, FolderMark, FolderMessage};
use qtc_mail::request::Query;
use qtc_mail::StoreError;

use crate::render::Rendered;
use crate::store::{readable, Entry, MailKind, MailStore, Mailbox, MAX_MAILBOX};
use crate::Settings;

/// The most folders of their own a user may keep.
pub const MAX_FOLDERS: usize = 100;
/// The most bytes of copies a user may keep in their folders.
pub const MAX_FOLDER_BYTES: u64 = 50 * 1024 * 1024;
/// The longest folder name, in bytes.
pub const MAX_FOLDER_NAME: usize = 100;
/// The name of the bulletins' hierarchy: `Bulletins/WX` is category WX.
pub const BULLETINS: &str = "Bulletins";

/// Where a selected mailbox's messages come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The user's personal BBS mail.
    Inbox,
    /// A folder of the user's own, by name.
    Folder(String),
    /// The bulletins of a category (upper case).
    Bulletins(String),
}

impl Place {
    /// The place a mailbox name names (INBOX in any case, `Bulletins/CAT`, else a folder).
    pub fn of(name: &str) -> Place {
        if name.eq_ignore_ascii_case("INBOX") {
            return Place::Inbox;
        }
        match name.split_once('/') {
            Some((top, cat)) if top.eq_ignore_ascii_case(BULLETINS) => {
                Place::Bulletins(cat.to_ascii_uppercase())
            }
            _ => Place::Folder(name.to_string()),
        }
    }
}

/// Why a folder could not be made, renamed, kept in or deleted: the words for the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No folder of that name (APPEND and COPY say TRYCREATE).
    Missing,
    /// It cannot be done: why.
    Cannot(String),
    /// A per-user limit: why.
    OverQuota(String),
}

/// Whether `name` may name a folder of the user's own; why not.
pub fn check_name(name: &str) -> Result<(), Refused> {
    let cannot = |why: &str| Err(Refused::Cannot(why.to_string()));
    if name.is_empty() || name.len() > MAX_FOLDER_NAME {
        return cannot("a folder name is 1 to 100 characters");
    }
    if name.chars().any(|c| c.is_control() || c == '*' || c == '%') {
        return cannot("a folder name has no control characters, * or %");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return cannot("a folder name has no empty level");
    }
    let top = name.split('/').next().unwrap_or("");
    if top.eq_ignore_ascii_case("INBOX") {
        return cannot("INBOX is the BBS's personal mail");
    }
    if top.eq_ignore_ascii_case(BULLETINS) {
        return cannot("Bulletins holds the BBS's bulletins");
    }
    Ok(())
}

/// The SPECIAL-USE attribute (RFC 6154) a folder's name gives it, if any.
pub fn special_use(name: &str) -> Option<&'static str> {
    let uses = [
        ("Sent", "\\Sent"),
        ("Sent Messages", "\\Sent"),
        ("Drafts", "\\Drafts"),
        ("Trash", "\\Trash"),
        ("Deleted Messages", "\\Trash"),
        ("Junk", "\\Junk"),
        ("Archive", "\\Archive"),
    ];
    uses.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, u)| u)
}

/// A selected place's messages: its UIDVALIDITY (0: the INBOX's, the store's), its next UID
/// (0: past the last), and its messages oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// UIDVALIDITY; 0 for the INBOX and bulletins (the store's).
    pub validity: u32,
    /// The next UID; 0 when it is the last message's number plus one.
    pub uid_next: u64,
    /// The messages, oldest first, the newest [`MAX_MAILBOX`] at most.
    pub entries: Vec<Entry>,
}

/// A place's messages (SELECT, EXAMINE, STATUS, NOOP, IDLE); sizes only for messages
/// numbered above `sized_after`, as [`Mailbox`]. `None`: no such folder.
#[derive(Debug)]
pub struct List {
    pub(crate) call: Callsign,
    pub(crate) place: Place,
    pub(crate) sized_after: u64,
    pub(crate) settings: Settings,
}

impl Query<MailKind> for List {
    type Answer = Option<Listing>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let listing = |entries| Listing {
            validity: 0,
            uid_next: 0,
            entries,
        };
        match self.place {
            Place::Inbox => {
                let m = Mailbox {
                    call: self.call,
                    sized_after: self.sized_after,
                    settings: self.settings,
                };
                Ok(Some(listing(m.run(store)?)))
            }
            Place::Bulletins(cat) => {
                let mut entries = store.bulletins(self.call, &cat, MAX_MAILBOX)?;
                for e in entries.iter_mut().filter(|e| e.number > self.sized_after) {
                    let r = readable(store, e.number, Some(self.call), &self.settings)?;
                    e.size = r.map_or(0, |r| r.bytes.len() as u64);
                }
                Ok(Some(listing(entries)))
            }
            Place::Folder(name) => {
                let Some(f) = find(store, self.call, &name)? else {
                    return Ok(None);
                };
                Ok(Some(Listing {
                    validity: f.validity,
                    uid_next: f.uid_next,
                    entries: store.folder_entries(self.call, &name, MAX_MAILBOX)?,
                }))
            }
        }
    }
}

fn find(
    store: &mut dyn MailStore,
    call: Callsign,
    name: &str,
) -> Result<Option<Folder>, StoreError> {
    Ok(store.folders(call)?.into_iter().find(|f| f.name == name))
}

/// The user's folders (LIST).
#[derive(Debug)]
pub struct Folders {
    pub(crate) call: Callsign,
}

impl Query<MailKind> for Folders {
    /// Their folders, and the bulletin categories.
    type Answer = (Vec<Folder>, Vec<String>);
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let folders = store.folders(self.call)?;
        let mut cats: Vec<String> = store.groups()?.into_iter().map(|g| g.category).collect();
        cats.dedup();
        Ok((folders, cats))
    }
}

/// Message `number` of a place rendered for FETCH, if the user may read it.
#[derive(Debug)]
pub struct Text {
    pub(crate) call: Callsign,
    pub(crate) place: Place,
    pub(crate) number: u64,
    pub(crate) settings: Settings,
}

impl Query<MailKind> for Text {
    type Answer = Option<Box<Rendered>>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        match self.place {
            Place::Folder(name) => Ok(store
                .folder_text(self.call, &name, self.number)?
                .map(|b| Box::new(crate::kept::rendered(b)))),
            _ => Ok(readable(store, self.number, Some(self.call), &self.settings)?.map(Box::new)),
        }
    }
}

/// Sets or clears a user's mark on a message of a place: in the INBOX and the bulletins the
/// BBS's read mark (`\Seen`) and their own `\Answered`; in a folder the copy's.
#[derive(Debug)]
pub struct SetMark {
    pub(crate) call: Callsign,
    pub(crate) place: Place,
    pub(crate) number: u64,
    pub(crate) mark: FolderMark,
    pub(crate) on: bool,
}

impl Query<MailKind> for SetMark {
    type Answer = ();
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<(), StoreError> {
        let (n, call, on) = (self.number, self.call, self.on);
        match (self.place, self.mark) {
            (Place::Folder(name), mark) => store.set_folder_mark(call, &name, n, mark, on),
            (_, FolderMark::Seen) => store.set_seen(n, call, on),
            (_, FolderMark::Answered) => store.set_answered(n, call, on),
        }
    }
}

/// EXPUNGE of one message: a kill as `K` in the INBOX, the copy gone in a folder, nothing
/// in the bulletins (the core never asks). True when it went now.
#[derive(Debug)]
pub struct Expunge {
    pub(crate) call: Callsign,
    pub(crate) place: Place,
    pub(crate) number: u64,
}

impl Query<MailKind> for Expunge {
    type Answer = bool;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<bool, StoreError> {
        match self.place {
            Place::Inbox => store.kill(self.number, self.call),
            Place::Folder(name) => store.expunge_copy(self.call, &name, self.number),
            Place::Bulletins(_) => Ok(false),
        }
    }
}

/// CREATE, DELETE and RENAME of a user's folder.
#[derive(Debug)]
pub enum Change {
    /// Makes a folder.
    Create(String),
    /// Deletes a folder and what it holds.
    Delete(String),
    /// Renames a folder (from, to).
    Rename(String, String),
}

/// A change to a user's folders, under the limits.
#[derive(Debug)]
pub struct ChangeFolders {
    pub(crate) call: Callsign,
    pub(crate) change: Change,
}

impl Query<MailKind> for ChangeFolders {
    type Answer = Result<(), Refused>;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let call = self.call;
        let folders = store.folders(call)?;
        let exists = |n: &str| folders.iter().any(|f| f.name == n);
        let taken = Refused::Cannot("a folder of that name exists".into());
        match self.change {
            Change::Create(name) => {
                if let Err(why) = check_name(&name) {
                    return Ok(Err(why));
                }
                if exists(&name) {
                    return Ok(Err(taken));
                }
                if folders.len() >= MAX_FOLDERS {
                    let why = format!("{MAX_FOLDERS} folders is the most kept here per user");
                    return Ok(Err(Refused::OverQuota(why)));
                }
                store.create_folder(call, &name).map(Ok)
            }
            Change::Delete(name) if exists(&name) => store.delete_folder(call, &name).map(Ok),
            Change::Rename(from, to) if exists(&from) => {
                if let Err(why) = check_name(&to) {
                    return Ok(Err(why));
                }
                if exists(&to) {
                    return Ok(Err(taken));
                }
                store.rename_folder(call, &from, &to).map(Ok)
            }
            Change::Delete(_) | Change::Rename(..) => Ok(Err(Refused::Missing)),
        }
    }
}

/// Keeps copies in a user's folder (APPEND, and COPY and MOVE once their messages are read):
/// all of them or none, within [`MAX_FOLDER_BYTES`]. The folder's UIDVALIDITY and the new
/// UIDs, in order.
#[derive(Debug)]
pub struct Keep {
    pub(crate) call: Callsign,
    pub(crate) folder: String,
    pub(crate) copies: Vec<FolderMessage>,
}

impl Query<MailKind> for Keep {
    type Answer = Result<(u32, Vec<u64>), Refused>;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let folders = store.folders(self.call)?;
        let Some(f) = folders.iter().find(|f| f.name == self.folder) else {
            return Ok(Err(Refused::Missing));
        };
        let kept: u64 = folders.iter().map(|f| f.bytes).sum();
        let adding: u64 = self.copies.iter().map(|c| c.bytes.len() as u64).sum();
        if kept.saturating_add(adding) > MAX_FOLDER_BYTES {
            let why = format!(
                "your folders may hold {} MB here: delete some messages first",
                MAX_FOLDER_BYTES / (1024 * 1024)
            );
            return Ok(Err(Refused::OverQuota(why)));
        }
        let uids = store.keep_copies(self.call, &self.folder, &self.copies)?;
        Ok(Ok((f.validity, uids)))
    }
}

/// Reads messages of a place as copies for a folder (COPY, MOVE): each readable one, with its
/// marks, in order of `numbers`.
#[derive(Debug)]
pub struct Copies {
    pub(crate) call: Callsign,
    pub(crate) place: Place,
    /// Each message's number, `\Seen`, `\Answered`, date, sender and subject as listed.
    pub(crate) of: Vec<(u64, FolderMessage)>,
    pub(crate) settings: Settings,
}

impl Query<MailKind> for Copies {
    type Answer = Vec<(u64, FolderMessage)>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let mut out = Vec::with_capacity(self.of.len());
        let mut bytes_read = 0u64;
        for (number, mut copy) in self.of {
            // Past what a user's folders may hold, Keep refuses them all: read no more.
            if bytes_read > MAX_FOLDER_BYTES {
                break;
            }
            let bytes = match &self.place {
                Place::Folder(name) => store.folder_text(self.call, name, number)?,
                _ => readable(store, number, Some(self.call), &self.settings)?.map(|r| r.bytes),
            };
            if let Some(bytes) = bytes {
                bytes_read += bytes.len() as u64;
                copy.bytes = bytes;
                out.push((number, copy));
            }
        }
        Ok(out)
    }
}
