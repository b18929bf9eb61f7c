//! Link options for the `qtc` binary that cut the daemon's resident memory (docs/performance.md,
//! "The receiver's peak memory"): the functions a daemon runs are laid side by side
//! (`link-order.ld`, a linker script written by `scripts/link-order.sh`, which names them with
//! the wildcard `*` for each crate's hash, so a dependency change does not lose them) so that the
//! kernel, which maps a binary's code in 64 KB windows around each page touched, maps 2-3 MB of
//! it instead of 7-8;
//! and the start-up relocations are packed (`DT_RELR`): 543 KB read at every start become
//! 11 KB. A binary with packed relocations needs glibc >= 2.36, so they are packed only when the
//! building system has it (Debian 12, Raspberry Pi OS bookworm; not Ubuntu 22.04's 2.35).
//!
//! Only where rustc links with its own lld (x86_64 Linux with glibc, rustc >= 1.90) and nobody
//! chose another linker, and the order in release builds only; elsewhere (a Pi's aarch64, older
//! compilers) the binary is linked as before. `QTC_PLAIN_LINK=1` turns both off.

use std::env;
use std::process::Command;

/// The first rustc that links x86_64-unknown-linux-gnu with its own lld.
const LLD_SINCE: (u32, u32) = (1, 90);

fn main() {
    // Not link-order.ld: a new list only needs the binary relinked, which
    // scripts/link-order.sh does itself (rerunning this script would recompile the crate).
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=QTC_PLAIN_LINK");
    if env::var_os("QTC_PLAIN_LINK").is_some_and(|v| !v.is_empty()) || !links_with_lld() {
        return;
    }
    // Release builds only (and profiles made from release): a debug binary's link (the tests')
    // has far more sections for the script's patterns to be tried against (88 s against 2).
    if env::var("PROFILE").as_deref() == Ok("release") {
        let order = format!(
            "{}/link-order.ld",
            env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")
        );
        // A script with INSERT adds its sections to the linker's own layout, which it keeps.
        // Listed functions this build lacks (another compiler, changed code) match nothing.
        println!("cargo::rustc-link-arg-bin=qtc=-Wl,-T,{order}");
    }
    if glibc().is_some_and(|v| v >= RELR_SINCE) {
        println!("cargo::rustc-link-arg-bin=qtc=-Wl,-z,pack-relative-relocs");
    }
}

/// The first glibc that loads packed relocations.
const RELR_SINCE: (u32, u32) = (2, 36);

/// The building system's glibc ("glibc 2.36"), where the binary usually runs.
fn glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    version(
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .strip_prefix("glibc ")?,
    )
}

/// Whether the binary is linked by rustc's own lld: the target's default linker since 1.90,
/// unless a linker or link flags were configured.
fn links_with_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if env::var_os("RUSTC_LINKER").is_some() || flags.contains("link") {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("release: "))
        .and_then(version)
        .is_some_and(|v| v >= LLD_SINCE)
}

/// "1.95.0" (or "1.96.0-nightly", "2.36") as (1, 95).
fn version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
