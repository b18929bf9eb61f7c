//! Where the mail cores' store requests run: reads (the INBOX, a message, bulletin areas, a
//! user's folders) on the readers, through their share (however many mail clients loop, BBS
//! users keep a reader), writes (read and answered marks, kills, submissions, folders and
//! the copies kept in them) and RCPT's checks on the store thread. [`MailView`] is the store
//! as the cores' queries see it.

use std::sync::Arc;
use std::time::Instant;

use qtc_callsign::Callsign;
use qtc_email::addr::Dest;
use qtc_email::folder::{Folder, FolderMark, FolderMessage};
use qtc_email::store::{Entry, GroupInfo, MailStore, Route, Stored, Submission};
use qtc_email::{Article, Core, Reply, Request};
use qtc_mail::{ListFilter, MessageStore, MsgType, StoreError};
use qtc_store::{MailParts, Store};

use crate::read_pool::ReadPool;
use crate::store_thread::{StoreGone, StoreHandle};
use crate::user_limits::UserLimits;

/// What the requests run on.
#[derive(Clone)]
pub struct Backends {
    /// Reads: the mail clients' share of the readers.
    pub readers: ReadPool,
    /// Writes.
    pub store: StoreHandle,
    /// The per-user allowances for messages entered.
    pub user_limits: Arc<UserLimits>,
}

/// Runs one request of core `C` where it says; `Err` when the thread that runs it is gone.
pub async fn run<C: Core>(req: Request<C>, b: &Backends) -> Result<Reply<C>, StoreGone> {
    let limits = b.user_limits.clone();
    match req {
        Request::Read(job) => {
            b.readers
                .call(move |st| job.run(&mut MailView::new(st, &limits)))
                .await
        }
        Request::Write(job) => {
            b.store
                .call(move |st| job.run(&mut MailView::new(st, &limits)))
                .await
        }
    }
}

/// The store as the mail cores' queries see it.
pub struct MailView<'a> {
    store: &'a mut Store,
    limits: &'a UserLimits,
    now: Instant,
}

impl<'a> MailView<'a> {
    /// `store` with the allowances `limits`.
    pub fn new(store: &'a mut Store, limits: &'a UserLimits) -> MailView<'a> {
        MailView {
            store,
            limits,
            now: crate::clock::now(),
        }
    }
}

impl MailView<'_> {
    /// The messages `f` lists that `keep` keeps, oldest first, as `call`'s entries.
    fn entries(
        &mut self,
        f: &ListFilter,
        call: Callsign,
        keep: impl Fn(&qtc_mail::MessageHeader) -> bool,
    ) -> Result<Vec<Entry>, StoreError> {
        let mut out = Vec::new();
        for h in self.store.list(f)?.into_iter().rev().filter(|h| keep(h)) {
            let answered = self.store.answered(h.number, call)?;
            out.push(Entry::of(h, answered));
        }
        Ok(out)
    }
}

impl MailStore for MailView<'_> {
    fn mailbox(&mut self, call: Callsign, max: usize) -> Result<Vec<Entry>, StoreError> {
        let f = ListFilter {
            to_or_copy: Some(call.to_string()),
            visible_to: Some(call.to_string()),
            last: Some(max),
            ..Default::default()
        };
        self.entries(&f, call, |h| h.kind != MsgType::Bulletin)
    }

    fn bulletins(
        &mut self,
        call: Callsign,
        category: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        // By the addressee index, newest first: the newest `max`, whatever the store holds.
        let f = ListFilter {
            kind: Some(MsgType::Bulletin),
            to: Some(category.to_string()),
            visible_to: Some(call.to_string()),
            last: Some(max),
            ..Default::default()
        };
        self.entries(&f, call, |_| true)
    }

    fn folders(&mut self, call: Callsign) -> Result<Vec<Folder>, StoreError> {
        self.store.folders(call)
    }

    fn create_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        self.store.create_folder(call, name)
    }

    fn delete_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        self.store.delete_folder(call, name)
    }

    fn rename_folder(&mut self, call: Callsign, from: &str, to: &str) -> Result<(), StoreError> {
        self.store.rename_folder(call, from, to)
    }

    fn folder_entries(
        &mut self,
        call: Callsign,
        name: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let rows = self.store.folder_entries(call, name, max)?;
        Ok(rows
            .into_iter()
            .map(|(uid, size, m)| Entry::kept(uid, size, m))
            .collect())
    }

    fn folder_text(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.store.folder_text(call, name, uid)
    }

    fn keep_copies(
        &mut self,
        call: Callsign,
        name: &str,
        copies: &[FolderMessage],
    ) -> Result<Vec<u64>, StoreError> {
        // The room they may take is measured now (a quota that follows the disk).
        crate::room::refresh(self.store);
        let now = crate::clock::unix_now();
        self.store.keep_copies(call, name, copies, now)
    }

    fn set_folder_mark(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
        mark: FolderMark,
        on: bool,
    ) -> Result<(), StoreError> {
        self.store.set_folder_mark(call, name, uid, mark, on)
    }

    fn expunge_copy(&mut self, call: Callsign, name: &str, uid: u64) -> Result<bool, StoreError> {
        self.store.expunge_copy(call, name, uid)
    }

    fn stored(&mut self, number: u64) -> Result<Option<Stored>, StoreError> {
        let Some(message) = self.store.message(number)? else {
            return Ok(None);
        };
        let parts = self.store.mail_parts(number)?;
        Ok(Some(Stored {
            message,
            files: parts.files,
            thread: parts.thread,
        }))
    }

    fn set_seen(&mut self, number: u64, call: Callsign, seen: bool) -> Result<(), StoreError> {
        match seen {
            true => self.store.mark_read(number, call),
            false => self.store.mark_unread(number, call),
        }
    }

    fn set_answered(&mut self, number: u64, call: Callsign, on: bool) -> Result<(), StoreError> {
        self.store.set_answered(number, call, on)
    }

    fn kill(&mut self, number: u64, call: Callsign) -> Result<bool, StoreError> {
        let outcome = qtc_mail::kill::kill(self.store, number, &call.to_string(), false)?;
        Ok(outcome == qtc_mail::kill::KillOutcome::Killed)
    }

    fn may_send(&mut self, call: Callsign, copies: usize) -> Result<(), StoreError> {
        let n = u32::try_from(copies).unwrap_or(u32::MAX);
        crate::user_limits::may_send(self.store, self.limits, call, (n, 0), self.now)
    }

    fn route(&mut self, dest: &Dest) -> Result<Route, StoreError> {
        let (targets, local) = self.store.destination(dest.kind, &dest.to, &dest.at)?;
        Ok(Route::of(targets, local))
    }

    fn submit(&mut self, sub: &Submission) -> Result<Vec<(u64, String)>, StoreError> {
        let parts = MailParts {
            files: sub.files.clone(),
            thread: sub.thread.clone(),
        };
        let copies = sub.messages();
        let when = (self.now, crate::clock::unix_now());
        let stored = crate::submission::store(self.store, self.limits, &copies, &parts, when)?;
        for ((number, bid), m) in stored.iter().zip(&copies) {
            tracing::info!(from = %m.from, to = %m.to, number, %bid, "mail client: message stored");
        }
        Ok(stored)
    }

    fn group(&mut self, category: &str, at: &str) -> Result<Option<GroupInfo>, StoreError> {
        Ok(self.store.bulletin_area(category, at)?.map(group_info))
    }

    fn groups(&mut self) -> Result<Vec<GroupInfo>, StoreError> {
        Ok(self
            .store
            .bulletin_areas()?
            .into_iter()
            .map(group_info)
            .collect())
    }

    fn numbers(
        &mut self,
        category: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        self.store.area_numbers(category, at, range, limit)
    }

    fn articles(
        &mut self,
        category: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<Article>, StoreError> {
        Ok(self
            .store
            .area_bulletins(category, at, range, limit)?
            .into_iter()
            .map(|o| Article {
                number: o.number,
                from: o.from,
                subject: o.subject,
                created: o.created,
                bid: o.bid,
                size: o.size,
                lines: o.lines,
            })
            .collect())
    }
}

fn group_info(a: qtc_store::Area) -> GroupInfo {
    GroupInfo {
        category: a.area,
        at: a.at,
        count: a.count,
        low: a.low,
        high: a.high,
    }
}
