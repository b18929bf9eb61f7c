//! A bounded pool of threads for CPU-bound jobs (password hashing, LZHUF compression), so that
//! neither the one event thread nor the store thread ever runs them: a job costs its own time
//! and delays nobody else's socket or query. At most `threads` jobs run at once; more wait in
//! the queue, in order. Idle threads sleep in a channel receive with no timeout (no wake-ups).

use std::sync::{mpsc, Arc, Mutex};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// How the pool's threads compete for the CPU with the rest of the daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// Like every other thread: for work someone is waiting on at once (a partner's session
    /// waits for its compressed forms).
    Normal,
    /// The lowest (nice 19): the threads, and the processes they start, run when sessions,
    /// forwarding and queries leave a core free. For a burst of logins' argon2 hashes, which
    /// would otherwise take both cores of a small machine from everyone logged in.
    Background,
}

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
    /// Starts `threads` (at least one) threads named `name-N` at `priority`. They end when the
    /// last handle is dropped.
    pub fn new(name: &'static str, threads: usize, priority: Priority) -> std::io::Result<CpuPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                // The jobs need little stack: argon2's memory is on the heap (or in a helper
                // process), LZHUF's tables too.
                .stack_size(256 * 1024)
                .spawn(move || {
                    if priority == Priority::Background {
                        lower_priority();
                    }
                    loop {
                        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
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

/// Lowers the calling thread to the lowest CPU priority (nice 19). Linux keeps the nice value
/// per thread and a process started from the thread inherits it. Elsewhere, and where the
/// system refuses, the thread keeps its priority: only latency under load is at stake.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_on_its_threads_in_order() {
        let pool = CpuPool::new("test", 2, Priority::Normal).unwrap();
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

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn background_threads_and_their_children_run_at_the_lowest_priority() {
        let nice = || rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let normal = CpuPool::new("test", 1, Priority::Normal).unwrap();
        let background = CpuPool::new("test", 1, Priority::Background).unwrap();
        assert_eq!(normal.run(nice).await.unwrap(), nice());
        assert_eq!(background.run(nice).await.unwrap(), 19);
        // A process started from a background thread inherits its priority.
        let child = background
            .run(|| std::process::Command::new("nice").output().unwrap())
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&child.stdout).trim(), "19");
    }
}
