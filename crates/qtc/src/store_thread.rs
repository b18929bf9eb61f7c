//! The store runs on one dedicated thread that owns the SQLite connection. Async tasks send it
//! closures and await the answer, so no SQLite call ever blocks a runtime worker. While no job
//! arrives the thread sleeps in a channel receive with no timeout: no wake-ups when idle.
//! Background jobs (housekeeping's steps) run only when no other job waits.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use qtc_store::{QueueMarks, Store};
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// A cloneable handle to the store thread.
#[derive(Clone)]
pub struct StoreHandle {
    jobs: mpsc::Sender<Job>,
    /// Jobs that wait while `jobs` holds any.
    background: Arc<Mutex<VecDeque<Job>>>,
    /// Jobs other than background ones sent so far: how background work sees that others
    /// are writing.
    sent: Arc<AtomicU64>,
    queued: QueueMarks,
    /// Moves after every job that wrote something: what IMAP IDLE waits on.
    changed: tokio::sync::watch::Receiver<u64>,
}

/// The store thread went away (it only does at shutdown, or if a job panicked).
#[derive(Debug, thiserror::Error)]
#[error("the message store thread has stopped")]
pub struct StoreGone;

impl StoreHandle {
    /// Starts the thread with an open store. Join the returned handle after the last
    /// `StoreHandle` is dropped to be sure every write is finished.
    pub fn spawn(mut store: Store) -> std::io::Result<(StoreHandle, JoinHandle<()>)> {
        let queued = store.queue_marks();
        let (tx, rx) = mpsc::channel::<Job>();
        let (changes, changed) = tokio::sync::watch::channel(0u64);
        let mut seen = store.changes();
        let background = Arc::new(Mutex::new(VecDeque::<Job>::new()));
        let later = background.clone();
        let thread = std::thread::Builder::new()
            .name("qtc-store".into())
            .spawn(move || loop {
                let job = match rx.try_recv() {
                    Ok(job) => job,
                    Err(TryRecvError::Disconnected) => return,
                    Err(TryRecvError::Empty) => {
                        let next = later.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                        match next {
                            Some(job) => job,
                            None => match rx.recv() {
                                Ok(job) => job,
                                Err(_) => return,
                            },
                        }
                    }
                };
                job(&mut store);
                // A counter in memory: no system call unless a task waits on it.
                if store.changes() != seen {
                    seen = store.changes();
                    changes.send_modify(|n| *n += 1);
                }
            })?;
        Ok((
            StoreHandle {
                jobs: tx,
                background,
                sent: Arc::new(AtomicU64::new(0)),
                queued,
                changed,
            },
            thread,
        ))
    }

    /// A receiver that hears of every job that wrote to the store (IMAP IDLE).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.clone()
    }

    /// The store's queue marks, readable without a call to the store thread.
    pub fn queue_marks(&self) -> &QueueMarks {
        &self.queued
    }

    /// Queues `f` to run on the store thread without waiting for it: for writes nobody waits
    /// on (jobs run in order, so a later `call` sees its effect). Saves the wake-up that
    /// returns a result.
    pub fn submit(&self, f: impl FnOnce(&mut Store) + Send + 'static) -> Result<(), StoreGone> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let span = tracing::Span::current();
        self.jobs
            .send(Box::new(move |s| span.in_scope(|| f(s))))
            .map_err(|_| StoreGone)
    }

    /// Runs `f` on the store thread and returns its result.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        self.start(f).await
    }

    /// How many jobs other than background ones were sent so far: unchanged across a span of
    /// time, nobody else used the store thread meanwhile.
    pub fn others_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Queues `f` now to run on the store thread once no other job waits; the returned future
    /// gives its result. For long work in steps (housekeeping) that sessions and forwarding
    /// must not queue behind.
    pub fn call_background<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R, StoreGone>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let span = tracing::Span::current();
        self.background
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Box::new(move |s| {
                let _ = tx.send(span.in_scope(|| f(s)));
            }));
        // Wakes the thread if it sleeps; it then finds the job.
        if self.jobs.send(Box::new(|_| ())).is_err() {
            // The thread has stopped (a job panicked): dropping the queued jobs ends their
            // futures with `StoreGone` instead of leaving them waiting.
            self.background
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
        async move { rx.await.map_err(|_| StoreGone) }
    }

    /// Queues `f` on the store thread now; the returned future gives its result. Work can so
    /// run on the store thread while the caller goes on.
    pub fn start<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R, StoreGone>> + Send + 'static {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        // Log lines from the job belong to the caller's session.
        let span = tracing::Span::current();
        let sent = self
            .jobs
            .send(Box::new(move |s| {
                let _ = tx.send(span.in_scope(|| f(s)));
            }))
            .is_ok();
        async move {
            if !sent {
                return Err(StoreGone);
            }
            rx.await.map_err(|_| StoreGone)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_jobs_wait_for_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), qtc_store::Durability::Normal).unwrap();
        let (handle, thread) = StoreHandle::spawn(store).unwrap();
        // Holds the thread until everything below is queued.
        let (open, gate) = std::sync::mpsc::channel::<()>();
        handle
            .submit(move |_| {
                let _ = gate.recv();
            })
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let log = |tag: &'static str| {
            let order = order.clone();
            move |_: &mut Store| order.lock().unwrap().push(tag)
        };
        let sent = handle.others_sent();
        let background = handle.call_background(log("background"));
        let first = handle.start(log("first"));
        let second = handle.start(log("second"));
        assert_eq!(
            handle.others_sent(),
            sent + 2,
            "background jobs are not counted"
        );
        open.send(()).unwrap();
        let (b, f, s) = tokio::join!(background, first, second);
        b.unwrap();
        f.unwrap();
        s.unwrap();
        assert_eq!(*order.lock().unwrap(), ["first", "second", "background"]);
        drop(handle);
        thread.join().unwrap();
    }
}
