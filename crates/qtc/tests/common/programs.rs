//! The real client programs the tests drive (mutt, fetchmail, curl, python3...): whether one
//! is installed, and what it said.

use std::process::{Command, Output, Stdio};

/// A required client program; missing in CI (`QTC_REQUIRE_PEERS`) is a failure, here a skip
/// with a note.
pub fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("QTC_REQUIRE_PEERS").is_some() {
        panic!("{program} is required (QTC_REQUIRE_PEERS): apt-get install it");
    }
    if !found {
        eprintln!("{program} not installed: skipped");
    }
    found
}

/// A finished program's standard output then its standard error, as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a Python script (nntplib is in the standard library up to 3.12).
pub fn python(script: &str) -> Output {
    Command::new("python3")
        .args(["-W", "ignore", "-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("run python3")
}
