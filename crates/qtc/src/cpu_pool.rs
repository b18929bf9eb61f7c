//! A bounded pool of threads for CPU-bound jobs (password hashing, LZHUF compression), so that
//! neither the one event thread nor the store thread ever runs them: a job costs its own time
//! and delays nobody else's socket or query. At most `threads` jobs run at once; more wait in
//! the queue, in order. Idle threads sleep in a channel receive with no timeout (no wake-ups).

use std::sync::{mpsc, Arc, Mutex};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// A cloneable handle to a pool of threads.
#[derive(Clone)]
pub struct CpuPool {
    jobs: mpsc::Sender<Job>,
}

/// The pool's threads went away (they only do at shutdown, or if a job panicked).
#[derive(Debug, thiserror::Error)]
#[error("the worker threads have stopped")]
pub struct PoolGone;

impl CpuPool {
    /// Starts `threads` (at least one) threads named `name-N`. They end when the last handle
    /// is dropped.
    pub fn new(name: &'static str, threads: usize) -> std::io::Result<CpuPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                // The jobs need little stack: argon2's memory is on the heap (or in a helper
                // process), LZHUF's tables too.
                .stack_size(256 * 1024)
                .spawn(move || loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                })?;
        }
        Ok(CpuPool { jobs: tx })
    }

    /// Queues `f` now (it starts when a thread is free); the returned future gives its result.
    pub fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R, PoolGone>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        // Log lines from the job belong to the caller's session.
        let span = tracing::Span::current();
        let sent = self
            .jobs
            .send(Box::new(move || {
                let _ = tx.send(span.in_scope(f));
            }))
            .is_ok();
        async move {
            if !sent {
                return Err(PoolGone);
            }
            rx.await.map_err(|_| PoolGone)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_on_its_threads_in_order() {
        let pool = CpuPool::new("test", 2).unwrap();
        let me = std::thread::current().id();
        let jobs: Vec<_> = (0..8)
            .map(|i| pool.run(move || (i, std::thread::current().id())))
            .collect();
        for (want, job) in jobs.into_iter().enumerate() {
            let (i, thread) = job.await.unwrap();
            assert_eq!(i, want);
            assert_ne!(thread, me);
        }
    }
}
