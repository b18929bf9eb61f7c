//! Store work as data, each request typed with its answer: the shape every sans-IO session of
//! qtc uses (the BBS interpreter, the mail clients' cores). A session never calls a store: a
//! command names what it needs as a [`Query`] and hands it out in a [`Job`] together with what
//! it does with the answer ([`Then`]), so the compiler pairs the two: an answer that does not
//! fit its request cannot be written, and no `match` on a pair of enums is needed to find out
//! what an answer was for. The daemon runs a job where [`Job::writes`] says (a read-only
//! connection, or the one writer) and gives the [`Reply`] back to the session; tests and fuzz
//! targets run it in place against a memory store. One code path for both.
//!
//! A family of sessions names the store its queries run against with a [`StoreKind`]: the BBS
//! interpreter's is `dyn qtc_mail::MessageStore`, the mail clients' `dyn qtc_email::MailStore`.

use std::marker::PhantomData;

use crate::StoreError;

/// The store a family of queries runs against (a trait object, borrowed for `'a`).
pub trait StoreKind: 'static {
    /// The store.
    type Store<'a>: ?Sized;
}

/// One store operation and what it answers.
pub trait Query<K: StoreKind>: std::fmt::Debug + Send + 'static {
    /// What it answers.
    type Answer: Send + 'static;
    /// It writes: it runs on the one writer; otherwise on any read-only connection.
    const WRITES: bool;
    /// Runs it against `store`.
    fn run<'a>(self, store: &'a mut K::Store<'a>) -> Result<Self::Answer, StoreError>;
}

/// What session `S` does with an answer of type `A`.
pub type Then<S, A> = Box<dyn FnOnce(&mut S, Result<A, StoreError>) + Send>;

/// A query of session `S` against stores of kind `K`, with its answer's way back to the
/// session.
pub struct Job<S, K: StoreKind> {
    job: Box<dyn Erased<S, K>>,
    writes: bool,
}

impl<S: 'static, K: StoreKind> Job<S, K> {
    /// `query`, whose answer goes to `then`; `awaited`: the user waits for it (a silent save
    /// does not count).
    pub fn new<Q: Query<K>>(query: Q, then: Then<S, Q::Answer>, awaited: bool) -> Job<S, K> {
        Job {
            job: Box::new(Typed {
                query,
                then,
                awaited,
                kind: PhantomData,
            }),
            writes: Q::WRITES,
        }
    }

    /// Whether it must run on the one writer.
    pub fn writes(&self) -> bool {
        self.writes
    }

    /// Runs it against `store`; the answer for the session.
    pub fn run<'a>(self, store: &'a mut K::Store<'a>) -> Reply<S> {
        self.job.run(store)
    }
}

impl<S, K: StoreKind> std::fmt::Debug for Job<S, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.job.describe(f)
    }
}

/// A query together with what follows its answer, its types erased only here.
trait Erased<S, K: StoreKind>: Send {
    fn run<'a>(self: Box<Self>, store: &'a mut K::Store<'a>) -> Reply<S>;
    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;
}

struct Typed<Q: Query<K>, S, K: StoreKind> {
    query: Q,
    then: Then<S, Q::Answer>,
    awaited: bool,
    kind: PhantomData<fn() -> K>,
}

impl<Q: Query<K>, S: 'static, K: StoreKind> Erased<S, K> for Typed<Q, S, K> {
    fn run<'a>(self: Box<Self>, store: &'a mut K::Store<'a>) -> Reply<S> {
        let Typed {
            query,
            then,
            awaited,
            ..
        } = *self;
        let answer = query.run(store);
        Reply::new(awaited, move |s| then(s, answer))
    }

    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.query.fmt(f)
    }
}

/// The answer to a [`Job`]: what session `S` does next. Give it back with
/// [`Reply::apply`] (the session's own `answered` call does).
pub struct Reply<S> {
    awaited: bool,
    then: Box<dyn FnOnce(&mut S) + Send>,
}

impl<S> Reply<S> {
    /// An answer that runs `then` on the session; `awaited`: the user waited for it.
    pub fn new(awaited: bool, then: impl FnOnce(&mut S) + Send + 'static) -> Reply<S> {
        Reply {
            awaited,
            then: Box::new(then),
        }
    }

    /// The user waited for it (a silent save did not count).
    pub fn awaited(&self) -> bool {
        self.awaited
    }

    /// Goes on in `session` with the answer.
    pub fn apply(self, session: &mut S) {
        (self.then)(session)
    }
}

impl<S> std::fmt::Debug for Reply<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;
    use crate::MessageStore;

    struct Bbs;
    impl StoreKind for Bbs {
        type Store<'a> = dyn MessageStore + 'a;
    }

    #[derive(Debug)]
    struct Counts;
    impl Query<Bbs> for Counts {
        type Answer = (u64, u64);
        const WRITES: bool = false;
        fn run(self, store: &mut dyn MessageStore) -> Result<(u64, u64), StoreError> {
            store.counts()
        }
    }

    #[test]
    fn an_answer_goes_to_what_asked_for_it() {
        let mut heard = Vec::new();
        let job: Job<Vec<u64>, Bbs> = Job::new(
            Counts,
            Box::new(|s: &mut Vec<u64>, a| s.push(a.unwrap().1)),
            true,
        );
        assert!(!job.writes());
        assert_eq!(format!("{job:?}"), "Counts");
        let mut store = MemoryStore::new();
        let reply = job.run(&mut store);
        assert!(reply.awaited());
        reply.apply(&mut heard);
        assert_eq!(heard, vec![0]);
    }
}
