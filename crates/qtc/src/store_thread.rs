//! The store runs on one dedicated thread that owns the SQLite connection. Async tasks send it
//! closures and await the answer, so no SQLite call ever blocks a runtime worker. While no job
//! arrives the thread sleeps in a channel receive with no timeout: no wake-ups when idle.

use std::sync::mpsc;
use std::thread::JoinHandle;

use qtc_store::{QueueMarks, Store};
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// A cloneable handle to the store thread.
#[derive(Clone)]
pub struct StoreHandle {
    jobs: mpsc::Sender<Job>,
    queued: QueueMarks,
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
        let thread = std::thread::Builder::new()
            .name("qtc-store".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job(&mut store);
                }
            })?;
        Ok((StoreHandle { jobs: tx, queued }, thread))
    }

    /// The store's queue marks, readable without a call to the store thread.
    pub fn queue_marks(&self) -> &QueueMarks {
        &self.queued
    }

    /// Queues `f` to run on the store thread without waiting for it: for writes nobody waits
    /// on (jobs run in order, so a later `call` sees its effect). Saves the wake-up that
    /// returns a result.
    pub fn submit(&self, f: impl FnOnce(&mut Store) + Send + 'static) -> Result<(), StoreGone> {
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

    /// Queues `f` on the store thread now; the returned future gives its result. Work can so
    /// run on the store thread while the caller goes on.
    pub fn start<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R, StoreGone>> + Send + 'static {
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
