//! A few threads, each owning a read-only connection to the store, for the interpreter's
//! queries. In WAL mode they read the last commit beside the one writer (the store thread), so
//! a user's listing neither waits for a forwarded block's write nor makes anyone else wait.
//! Idle threads sleep in a channel receive with no timeout: no wake-ups.
//!
//! A [`ReadPool::share`] handle holds at most its share of the threads at once: the mail
//! clients read through one, so however many of them loop on their queries, BBS users always
//! find a reader free.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};

use qtc_store::Store;
use tokio::sync::{oneshot, Semaphore};

use crate::store_thread::StoreGone;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// A cloneable handle to the readers.
#[derive(Clone)]
pub struct ReadPool {
    jobs: mpsc::Sender<Job>,
    threads: usize,
    /// A share's places: jobs of this handle (and its clones) at once at most.
    share: Option<Arc<Semaphore>>,
}

impl ReadPool {
    /// Opens `threads` (at least one) read-only connections to the store in `dir` (opened and
    /// migrated by the writer first) and starts a thread for each. They end when the last
    /// handle is dropped.
    pub fn spawn(dir: &Path, threads: usize) -> anyhow::Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = threads.max(1);
        for i in 0..threads {
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
        Ok(ReadPool {
            jobs: tx,
            threads,
            share: None,
        })
    }

    /// A handle to the same readers whose calls (its clones' too) hold all the threads but
    /// one at most (one, with a single thread): the others' calls always find one free.
    pub fn share(&self) -> ReadPool {
        let places = self.threads.saturating_sub(1).max(1);
        ReadPool {
            jobs: self.jobs.clone(),
            threads: self.threads,
            share: Some(Arc::new(Semaphore::new(places))),
        }
    }

    /// Runs `f` on a reader and returns its result.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        // A share's call waits for one of its places (held until the answer is back).
        let _place = match &self.share {
            Some(places) => Some(places.acquire().await.map_err(|_| StoreGone)?),
            None => None,
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_share_never_holds_every_reader() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path(), qtc_store::Durability::Normal).unwrap());
        let pool = ReadPool::spawn(dir.path(), 2).unwrap();
        let mail = pool.share();
        // Two mail calls that block their reader until released: only one gets a reader.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let (started, mut first) = tokio::sync::mpsc::unbounded_channel();
        let block = |n: u32| {
            let (held, started, mail) = (held.clone(), started.clone(), mail.clone());
            tokio::spawn(async move {
                mail.call(move |_| {
                    let _ = started.send(n);
                    let _ = held.lock().unwrap().recv();
                })
                .await
            })
        };
        let (a, b) = (block(1), block(2));
        assert!(first.recv().await.is_some(), "one mail call runs");
        // A BBS user's query still finds the other reader.
        assert_eq!(pool.call(|_| 7).await.unwrap(), 7);
        assert!(
            first.try_recv().is_err(),
            "the second mail call waits for the first"
        );
        release.send(()).unwrap();
        assert!(first.recv().await.is_some(), "then it runs");
        release.send(()).unwrap();
        a.await.unwrap().unwrap();
        b.await.unwrap().unwrap();
    }
}
