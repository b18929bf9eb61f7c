//! Password checks and hashes for every login path (telnet, forwarding port, RF `SYS`, web),
//! off the event and store threads.
//!
//! argon2 takes tens of milliseconds and 19 MiB per run. Here at most `workers` runs go at once
//! (the rest wait their turn), each in a short-lived helper process (`qtc password-helper`):
//! its 19 MiB are the helper's and go back to the system when it exits, so the daemon's own
//! memory never grows by them. Users' checks run at the lowest CPU priority, so a burst of
//! logins takes only the CPU that sessions, forwarding and queries leave. A forwarding
//! partner's check has a worker of its own at normal priority: it neither queues behind a
//! burst of users' logins nor waits for their CPU. A login for a
//! callsign with no password checks [`qtc_store::DUMMY_HASH`] instead, so it takes as long as
//! one for a real user: timing tells nobody which callsigns exist.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use qtc_callsign::Callsign;
use qtc_mail::StoreError;

use crate::cpu_pool::{CpuPool, Priority};
use crate::read_pool::ReadPool;

/// The hidden subcommand the helper runs as.
pub const HELPER_COMMAND: &str = "password-helper";

/// A cloneable handle to the password workers.
#[derive(Clone)]
pub struct Passwords {
    /// Users' checks and every new hash.
    users: CpuPool,
    /// Configured forwarding partners' checks.
    partners: CpuPool,
    /// The qtc binary, run as the helper.
    helper: PathBuf,
    /// Where stored hashes are read: a login never waits for the writer.
    readers: ReadPool,
}

/// Whose password is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Login {
    /// A user's (telnet, web, RF `SYS`): queued with every other user's, in the background.
    User,
    /// A configured forwarding partner's: on its own worker, at normal priority.
    Partner,
}

/// One request to the helper, as its standard input carries it.
enum Job {
    /// `verify\n<PHC>\n<password>`: answers `1` or `0`.
    Verify { phc: String, password: String },
    /// `hash\n<password>`: answers the PHC string.
    Hash { password: String },
}

impl Passwords {
    /// `workers` threads (0: one per core), each running one helper at a time; stored hashes
    /// are read on `readers`.
    pub fn new(workers: usize, readers: ReadPool) -> std::io::Result<Passwords> {
        let workers = match workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        Ok(Passwords {
            users: CpuPool::new("qtc-argon2", workers, Priority::Background)?,
            partners: CpuPool::new("qtc-argon2-partner", 1, Priority::Normal)?,
            helper: std::env::current_exe()?,
            readers,
        })
    }

    /// Whether `password` is `call`'s. An unknown callsign, one without a password, or a name
    /// that is not a callsign (`None`: no account has it) costs the same check and is refused.
    pub async fn check(
        &self,
        call: Option<Callsign>,
        password: String,
        login: Login,
    ) -> Result<bool, StoreError> {
        let hash = match call {
            Some(c) => self
                .readers
                .call(move |s| s.password_hash(c))
                .await
                .map_err(|e| StoreError::Database(e.to_string()))??,
            None => None,
        };
        let known = hash.is_some();
        let phc = hash.unwrap_or_else(|| qtc_store::DUMMY_HASH.to_string());
        let answer = self.run(Job::Verify { phc, password }, login).await?;
        Ok(known && answer == "1")
    }

    /// A new hash of `password`, for storing.
    pub async fn hash(&self, password: String) -> Result<String, StoreError> {
        self.run(Job::Hash { password }, Login::User).await
    }

    async fn run(&self, job: Job, login: Login) -> Result<String, StoreError> {
        let helper = self.helper.clone();
        let pool = match login {
            Login::User => &self.users,
            Login::Partner => &self.partners,
        };
        pool.run(move || in_helper(&helper, &job))
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?
    }
}

/// Runs `job` in a helper process and returns its answer; in this process if none can start
/// (the binary was removed by an upgrade, say).
fn in_helper(helper: &PathBuf, job: &Job) -> Result<String, StoreError> {
    let request = match job {
        Job::Verify { phc, password } => format!("verify\n{phc}\n{password}"),
        Job::Hash { password } => format!("hash\n{password}"),
    };
    let run = || -> std::io::Result<String> {
        let mut child = Command::new(helper)
            .arg(HELPER_COMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env(
                TUNABLES,
                helper_tunables(std::env::var(TUNABLES).ok().as_deref()),
            )
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(request.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() || out.stdout.is_empty() {
            return Err(std::io::Error::other(format!("helper: {}", out.status)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match run() {
        Ok(answer) => Ok(answer),
        Err(e) => {
            tracing::warn!(error = %e, helper = %helper.display(), "password helper failed; hashing in the daemon");
            answer(&request)
        }
    }
}

/// glibc's start-up settings, read from the environment.
const TUNABLES: &str = "GLIBC_TUNABLES";

/// The helper's glibc settings: the sysop's, and transparent huge pages for argon2's 19 MiB
/// (`glibc.malloc.hugetlb=1`: malloc advises them on the block it maps). Faulted in 4 KB
/// pages, the fresh block was a third of a check's CPU: 5,160 page faults and 30 ms a check
/// against 560 and 21 ms (docs/performance.md, row 2f). Where the kernel has no huge pages
/// the setting changes nothing; other C libraries ignore the variable.
fn helper_tunables(sysop: Option<&str>) -> String {
    const HUGE_PAGES: &str = "glibc.malloc.hugetlb";
    match sysop {
        None | Some("") => format!("{HUGE_PAGES}=1"),
        Some(own) if own.contains(HUGE_PAGES) => own.to_string(),
        Some(own) => format!("{own}:{HUGE_PAGES}=1"),
    }
}

/// The helper's work: one request in, one answer out.
fn answer(request: &str) -> Result<String, StoreError> {
    let (op, rest) = request.split_once('\n').unwrap_or((request, ""));
    match op {
        "verify" => {
            let (phc, password) = rest.split_once('\n').unwrap_or((rest, ""));
            let ok = qtc_store::verify_password(phc, password);
            Ok(if ok { "1" } else { "0" }.to_string())
        }
        "hash" => qtc_store::hash_password(rest),
        _ => Err(StoreError::Database(format!("unknown password job {op:?}"))),
    }
}

/// `qtc password-helper`: reads one request from standard input, writes the answer.
pub fn helper_main() -> anyhow::Result<()> {
    let mut request = String::new();
    std::io::stdin().read_to_string(&mut request)?;
    let out = answer(&request)?;
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_gets_huge_pages_and_keeps_the_sysops_tunables() {
        assert_eq!(helper_tunables(None), "glibc.malloc.hugetlb=1");
        assert_eq!(helper_tunables(Some("")), "glibc.malloc.hugetlb=1");
        assert_eq!(
            helper_tunables(Some("glibc.malloc.arena_max=2")),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
        );
        // A sysop's own choice wins, huge pages off included.
        assert_eq!(
            helper_tunables(Some("glibc.malloc.hugetlb=0")),
            "glibc.malloc.hugetlb=0"
        );
    }

    #[test]
    fn the_helper_protocol_verifies_and_hashes() {
        let phc = answer("hash\nsecret\nwith newline").unwrap();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert_eq!(
            answer(&format!("verify\n{phc}\nsecret\nwith newline")).unwrap(),
            "1"
        );
        assert_eq!(answer(&format!("verify\n{phc}\nsecret")).unwrap(), "0");
        let dummy = qtc_store::DUMMY_HASH;
        assert_eq!(answer(&format!("verify\n{dummy}\n")).unwrap(), "0");
        assert!(answer("frobnicate\n").is_err());
    }
}
