//! A few threads, each owning a read-only connection to the store, for the interpreter's
//! queries. In WAL mode they read the last commit beside the one writer (the store thread), so
//! a user's listing neither waits for a forwarded block's write nor makes anyone else wait.
//! Idle threads sleep in a channel receive with no timeout: no wake-ups.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};

use qtc_store::Store;
use tokio::sync::oneshot;

use crate::store_thread::StoreGone;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// A cloneable handle to the readers.
#[derive(Clone)]
pub struct ReadPool {
    jobs: mpsc::Sender<Job>,
}

impl ReadPool {
    /// Opens `threads` (at least one) read-only connections to the store in `dir` (opened and
    /// migrated by the writer first) and starts a thread for each. They end when the last
    /// handle is dropped.
    pub fn spawn(dir: &Path, threads: usize) -> anyhow::Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let mut store = Store::open_read_only(dir)?;
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("qtc-read-{i}"))
                .spawn(move || loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match job {
                        Ok(job) => job(&mut store),
                        Err(_) => return,
                    }
                })?;
        }
        Ok(ReadPool { jobs: tx })
    }

    /// Runs `f` on a reader and returns its result.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        let (tx, rx) = oneshot::channel();
        // Log lines from the job belong to the caller's session.
        let span = tracing::Span::current();
        self.jobs
            .send(Box::new(move |s| {
                let _ = tx.send(span.in_scope(|| f(s)));
            }))
            .map_err(|_| StoreGone)?;
        rx.await.map_err(|_| StoreGone)
    }
}
