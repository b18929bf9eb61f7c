//! The mailboxes beside the INBOX: LIST (with SPECIAL-USE, RFC 6154), CREATE, DELETE, RENAME,
//! APPEND, and COPY and MOVE (RFC 6851) into a user's own folders; the places themselves are
//! [`crate::folder`]'s.

use imap_codec::imap_types::datetime::DateTime;

use super::*;
use crate::folder::{
    self, Change, ChangeFolders, Copies, Folder, FolderMessage, Folders, Keep, Place, Refused,
    BULLETINS,
};
use qtc_mail::StoreError;

/// The largest message APPEND takes (a literal): a message with its attachments, base64.
pub(super) const MAX_APPEND: usize = 8 * 1024 * 1024;

/// A mailbox's name as the client gave it.
pub(super) fn name_of(m: &Mailbox<'_>) -> String {
    match m {
        Mailbox::Inbox => "INBOX".to_string(),
        Mailbox::Other(o) => String::from_utf8_lossy(o.as_ref()).into_owned(),
    }
}

impl Imap {
    /// LIST and LSUB: INBOX, the user's folders (with their special use), `Bulletins` and a
    /// folder per bulletin category, those the pattern matches.
    pub(super) fn list(&mut self, tag: String, what: &'static str, reference: &str, pattern: &str) {
        if pattern.is_empty() {
            self.x.say(&format!("* {what} (\\Noselect) \"/\" \"\""));
            return self.x.say(&format!("{tag} OK {what} completed"));
        }
        let pattern = format!("{reference}{pattern}");
        let Some(call) = self.user_for(&tag) else {
            return;
        };
        let query = Folders { call };
        self.x.ask(query, move |i: &mut Imap, r| match r {
            Ok((folders, cats)) => {
                for (name, attrs) in listed(&folders, &cats) {
                    if wildmat(&pattern, &name) {
                        let name = quoted(&name);
                        i.x.say(&format!("* {what} ({attrs}) \"/\" {name}"));
                    }
                }
                i.x.say(&format!("{tag} OK {what} completed"));
            }
            Err(_) => i.unavailable(&tag),
        });
    }

    /// CREATE, DELETE, RENAME of a folder of the user's own.
    pub(super) fn change(&mut self, tag: String, change: Change, cmd: &'static str) {
        let (Change::Create(name) | Change::Delete(name) | Change::Rename(name, _)) = &change;
        let why = match Place::of(name) {
            Place::Folder(_) => None,
            Place::Inbox => Some("INBOX is the BBS's personal mail: it stays"),
            Place::Bulletins(_) => {
                Some("the bulletin folders are the BBS's: they come and go with the bulletins")
            }
        };
        if let Some(why) = why {
            return self.x.say(&format!("{tag} NO [CANNOT] {why}"));
        }
        let deleting_selected =
            matches!((&change, &self.place), (Change::Delete(n), Place::Folder(s)) if n == s);
        let Some(call) = self.user_for(&tag) else {
            return;
        };
        let query = ChangeFolders { call, change };
        self.x.ask(query, move |i: &mut Imap, r| {
            if matches!(r, Ok(Ok(()))) && deleting_selected {
                i.unselect_quietly();
            }
            i.said(&tag, cmd, r)
        });
    }

    /// The refusal of a change of folders or of copies to keep, or OK.
    fn said(&mut self, tag: &str, cmd: &str, r: Result<Result<(), Refused>, StoreError>) {
        let line = match r {
            Ok(Ok(())) => format!("{tag} OK {cmd} completed"),
            Ok(Err(Refused::Missing)) if matches!(cmd, "DELETE" | "RENAME") => {
                format!("{tag} NO [NONEXISTENT] no such folder")
            }
            Ok(Err(Refused::Missing)) => {
                format!("{tag} NO [TRYCREATE] no such folder: CREATE it first")
            }
            Ok(Err(Refused::Cannot(why))) => format!("{tag} NO [CANNOT] {why}"),
            Ok(Err(Refused::OverQuota(why))) | Err(StoreError::OverLimit(why)) => {
                format!("{tag} NO [OVERQUOTA] {why}")
            }
            Err(StoreError::Full) => format!("{tag} NO [OVERQUOTA] the message store is full"),
            Err(_) => return self.unavailable(tag),
        };
        self.x.say(&line);
    }

    /// APPEND: the message kept, as sent, in a folder of the user's own.
    pub(super) fn append(
        &mut self,
        tag: String,
        mailbox: &Mailbox<'_>,
        flags: &[Flag<'_>],
        date: Option<&DateTime>,
        bytes: Vec<u8>,
    ) {
        let Some(name) = self.own_folder(&tag, mailbox) else {
            return;
        };
        let header = &bytes[..crate::kept::header_end(&bytes, 0)];
        let copy = FolderMessage {
            seen: flags.contains(&Flag::Seen),
            answered: flags.contains(&Flag::Answered),
            created: date.map_or(0, |d| d.as_ref().timestamp()),
            from: crate::kept::field(header, "From").unwrap_or_default(),
            subject: crate::kept::field(header, "Subject")
                .unwrap_or_default()
                .into_bytes(),
            bytes,
        };
        let shown = self.place == Place::Folder(name.clone());
        self.keep(tag, "APPEND", name, vec![copy], move |i, tag, v, uids| {
            let uid = uids.first().copied().unwrap_or(0);
            i.done(
                tag,
                shown,
                format!("[APPENDUID {v} {uid}] APPEND completed"),
            )
        });
    }

    /// The folder of the user's own a command names; `None` (the client told) for INBOX and
    /// the bulletins, which take no copies.
    fn own_folder(&mut self, tag: &str, mailbox: &Mailbox<'_>) -> Option<String> {
        let why = match Place::of(&name_of(mailbox)) {
            Place::Folder(name) => return Some(name),
            Place::Inbox => "INBOX holds mail sent to you: send messages over SMTP",
            Place::Bulletins(_) => "bulletins are sent over SMTP or posted over NNTP",
        };
        self.x.say(&format!("{tag} NO [CANNOT] {why}"));
        None
    }

    /// COPY and MOVE into a folder of the user's own: the messages read (the INBOX's and the
    /// bulletins' rendered), kept there, and for MOVE expunged here (a kill in the INBOX).
    pub(super) fn copy(&mut self, tag: String, set: &SequenceSet, to: &Mailbox<'_>, uid: bool) {
        self.copy_or_move(tag, set, to, uid, false)
    }

    /// MOVE (RFC 6851): COPY, then EXPUNGE of the messages copied.
    pub(super) fn move_to(&mut self, tag: String, set: &SequenceSet, to: &Mailbox<'_>, uid: bool) {
        if let Place::Bulletins(_) = self.place {
            return self.x.say(&format!(
                "{tag} NO [CANNOT] bulletins stay where they are: COPY them"
            ));
        }
        self.copy_or_move(tag, set, to, uid, true)
    }

    fn copy_or_move(
        &mut self,
        tag: String,
        set: &SequenceSet,
        to: &Mailbox<'_>,
        uid: bool,
        moving: bool,
    ) {
        let cmd = if moving { "MOVE" } else { "COPY" };
        let Some(name) = self.own_folder(&tag, to) else {
            return;
        };
        let of: Vec<(u64, FolderMessage)> = search::select(set, &self.msgs, uid)
            .into_iter()
            .map(|i| {
                let e = &self.msgs[i].entry;
                let copy = FolderMessage {
                    seen: e.seen,
                    answered: e.answered,
                    created: e.created,
                    from: e.from.clone(),
                    subject: e.subject.clone(),
                    bytes: Vec::new(),
                };
                (e.number, copy)
            })
            .collect();
        if of.is_empty() {
            return self.x.say(&format!("{tag} OK {cmd} completed"));
        }
        let Some(call) = self.user_for(&tag) else {
            return;
        };
        let query = Copies {
            call,
            place: self.place.clone(),
            of,
            settings: self.s.clone(),
        };
        let shown = self.place == Place::Folder(name.clone());
        self.x.ask(query, move |i: &mut Imap, r| match r {
            Ok(read) => {
                let (from, copies): (Vec<u64>, Vec<FolderMessage>) = read.into_iter().unzip();
                i.keep(tag, cmd, name, copies, move |i, tag, v, uids| {
                    let code = format!("COPYUID {v} {} {}", joined(&from), joined(&uids));
                    match moving {
                        true => {
                            i.x.say(&format!("* OK [{code}] moved"));
                            i.expunge_next(tag, "MOVE", from.into())
                        }
                        false => i.done(tag, shown, format!("[{code}] COPY completed")),
                    }
                })
            }
            Err(_) => i.unavailable(&tag),
        });
    }

    /// Keeps `copies` in folder `name`, then `then` with the folder's UIDVALIDITY and the
    /// new UIDs; or the client is told why not.
    fn keep(
        &mut self,
        tag: String,
        cmd: &'static str,
        name: String,
        copies: Vec<FolderMessage>,
        then: impl FnOnce(&mut Imap, String, u32, Vec<u64>) + Send + 'static,
    ) {
        let Some(call) = self.user_for(&tag) else {
            return;
        };
        let query = Keep {
            call,
            folder: name,
            copies,
        };
        self.x.ask(query, move |i: &mut Imap, r| match r {
            Ok(Ok((validity, uids))) => then(i, tag, validity, uids),
            Ok(Err(why)) => i.said(&tag, cmd, Ok(Err(why))),
            Err(e) => i.said(&tag, cmd, Err(e)),
        });
    }

    /// The tagged OK; the selected folder read again first when it took new messages.
    fn done(&mut self, tag: String, shown: bool, text: String) {
        match shown && matches!(self.state, State::Selected { .. }) {
            true => self.refresh(Some(tag), &text),
            false => self.x.say(&format!("{tag} OK {text}")),
        }
    }
}

/// A mailbox name as a response gives it: INBOX as an atom, any other as a string.
pub(super) fn quoted(name: &str) -> String {
    match name {
        "INBOX" => name.to_string(),
        _ => fetch::string(name.as_bytes()),
    }
}

fn joined(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Every mailbox LIST may name, with its attributes: INBOX, the user's folders (a special
/// use by name), then `Bulletins` and a folder per category.
fn listed(folders: &[Folder], cats: &[String]) -> Vec<(String, String)> {
    let mut out = vec![("INBOX".to_string(), "\\HasNoChildren".to_string())];
    for f in folders {
        let parent = format!("{}/", f.name);
        let children = match folders.iter().any(|o| o.name.starts_with(&parent)) {
            true => "\\HasChildren",
            false => "\\HasNoChildren",
        };
        let attrs = match folder::special_use(&f.name) {
            Some(u) => format!("{children} {u}"),
            None => children.to_string(),
        };
        out.push((f.name.clone(), attrs));
    }
    let children = match cats.is_empty() {
        true => "\\HasNoChildren",
        false => "\\HasChildren",
    };
    out.push((BULLETINS.to_string(), format!("\\Noselect {children}")));
    for c in cats {
        out.push((format!("{BULLETINS}/{c}"), "\\HasNoChildren".to_string()));
    }
    out
}
