//! Users who stop reading: six sessions ask for thirty reads of a large bulletin each and then
//! read nothing. The daemon makes their output a piece at a time as it goes out, so they hold a
//! piece of memory each, and it goes on serving everyone else; `A` stops such an output.

mod common;

use std::io::{Read, Write};

use common::{Client, Daemon};

/// The bulletin's body: about 1.5 MB.
const BODY_LINES: usize = 20_000;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Reads until the prompt ends what came; returns how many bytes that took.
fn drain_to_prompt(c: &mut Client) -> usize {
    let prompt = b"de N0CALL>\r";
    let mut tail: Vec<u8> = std::mem::take(&mut c.seen);
    let mut total = tail.len();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if common::find(&tail, prompt).is_some() {
            return total;
        }
        let keep = tail.len().saturating_sub(prompt.len());
        tail.drain(..keep);
        match c.stream.read(&mut buf) {
            Ok(0) => panic!("closed before the prompt"),
            Ok(n) => {
                total += n;
                tail.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[test]
fn readers_who_stop_cost_a_piece_of_memory_and_nobody_waits_for_them() {
    let d = Daemon::start("");
    let mut import = b"SB ALL @ WW < N0SYS $BIG1\nA big bulletin\n".to_vec();
    for i in 0..BODY_LINES {
        writeln!(
            import,
            "{i:06} the quick brown fox jumps over the lazy dog, 73"
        )
        .unwrap();
    }
    import.extend_from_slice(b"/EX\n");
    let file = d.dir.path().join("big.txt");
    std::fs::write(&file, import).unwrap();
    d.import(&file, 1);

    let mut watcher = d.login("N0OTH", "x");
    let before = rss_kib(d.child.id());
    let reads = format!("R{}", " 1".repeat(30));
    let mut stalled: Vec<Client> = (0..6)
        .map(|_| {
            let mut c = d.login("N0USR", "pw");
            c.send(&reads);
            c
        })
        .collect();
    // Everyone else is still served at once.
    watcher.send("LL 1");
    let out = watcher.expect("de N0CALL>");
    assert!(out.contains("A big bulletin"), "{out}");
    watcher.send("I");
    watcher.expect("active messages");
    let after = rss_kib(d.child.id());
    // Thirty reads of 1.5 MB for six users would be 270 MB made at once; a piece each is
    // well under a megabyte per user (the bar is 1 MB; SQLite's caches and the allocator's
    // slack get the rest of the margin).
    assert!(
        after.saturating_sub(before) < 6 * 4 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
    // `A` stops a stalled output: what comes before the prompt is what was already on its way
    // (socket buffers), not the thirty reads.
    let first = &mut stalled[0];
    first.send("A");
    let got = drain_to_prompt(first);
    assert!(got < 15 * BODY_LINES * 60, "{got} bytes before the prompt");
    first.send("LL 1");
    assert!(first.expect("de N0CALL>").contains("A big bulletin"));
    let _ = first.stream.flush();
}
