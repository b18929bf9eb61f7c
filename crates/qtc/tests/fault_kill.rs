//! Fault injection: two instances forwarding 500 messages while one or the other is killed
//! with SIGKILL at seeded random moments and restarted. At the end every message is at the
//! receiver exactly once, byte-identical, and the sender's queue is empty.
//!
//! `QTC_FAULT_SEED` and `QTC_FAULT_KILLS` (default 1 and 50) reproduce or lengthen a run:
//!     QTC_FAULT_SEED=7 QTC_FAULT_KILLS=200 cargo test -p qtc --test fault_kill -- --nocapture

// The test picks its kill moments by sleeping; that is the fault, not a wait for an event.
#![allow(clippy::disallowed_methods)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{check_arrived, config_path, free_port, gen_messages, qtc, write_import, Daemon, Rng};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn receiver(port: u16) -> Daemon {
    Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        &format!(
            "[forward]\nlisten = [\"127.0.0.1:{port}\"]\n[[partner]]\ncallsign = \"N0AAA\"\n\
             protocol = \"b1\"\nroutes = [\"N0AAA\", \"WW\"]\n"
        ),
    )
}

#[test]
fn sigkill_at_random_moments_loses_and_duplicates_nothing() {
    let seed = env_or("QTC_FAULT_SEED", 1);
    let wanted = env_or("QTC_FAULT_KILLS", 50);
    let mut rng = Rng(seed);
    let port = free_port();
    let mut b = receiver(port);
    let mut a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             password = \"fwdpw\"\nprotocol = \"b1\"\nroutes = [\"N0BBB\", \"WW\"]\n"
        ),
    );
    let msgs = gen_messages(&mut rng, 500, "K", "N0AAA", "N0BBB");
    // The 500 go in as one batch before each kill, until all are in: forwarding 500 takes well
    // under a second, so with all of them queued at the start most kills would find nothing
    // moving.
    let batch = msgs.len().div_ceil(wanted as usize).max(1);
    let batches: Vec<_> = msgs.chunks(batch).collect();
    let (mut kills_a, mut kills_b, mut imported, mut in_flight) = (0, 0, 0, 0);
    while kills_a + kills_b < wanted || imported < msgs.len() {
        if let Some(next) = batches.get(imported / batch) {
            let file = write_import(a.dir.path(), &format!("a{imported}.txt"), next, &mut rng);
            a.import(&file, next.len());
            imported += next.len();
        }
        // A forwarding session in flight...
        let mut call = qtc()
            .arg("-c")
            .arg(config_path(a.dir.path()))
            .args(["ctl", "forward", "N0BBB"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // ...and a kill at a seeded moment in it (this sleep is the fault's timing under test,
        // not a wait for something).
        std::thread::sleep(Duration::from_millis(rng.range(2, 40) as u64));
        if rng.chance(50) {
            a = a.sigkill_restart();
            kills_a += 1;
        } else {
            b = b.sigkill_restart();
            kills_b += 1;
        }
        let _ = call.wait();
        // Reported, not asserted (it depends on timing): how many kills found messages still
        // on their way.
        let arrived = b.listed().len();
        if arrived < imported {
            in_flight += 1;
        }
        if (kills_a + kills_b) % 10 == 0 {
            println!(
                "after {} kills: {arrived} of {imported} imported at the receiver",
                kills_a + kills_b,
            );
        }
    }
    let during = b.listed().len();
    println!(
        "seed {seed}: {kills_a} kills of the sender, {kills_b} of the receiver, {in_flight} of \
         them with messages still on their way; {during} of 500 arrived while killing"
    );

    // Now let forwarding finish undisturbed.
    for _ in 0..20 {
        if a.fwd_queue(Some("N0BBB")).contains("\n0 queued") {
            break;
        }
        let _ = a.try_ctl(&["forward", "N0BBB"]);
    }
    let queue = a.fwd_queue(Some("N0BBB"));
    assert!(
        queue.contains("\n0 queued"),
        "sender still has: {queue}\n{}",
        a.log()
    );
    let sent: Vec<_> = msgs.iter().collect();
    let checked = check_arrived(&b, &sent, "N0BBB", Some("N0AAA"), 1);
    assert_eq!(checked, 500);
    assert_eq!(b.listed().len(), 500, "nothing extra at the receiver");
    // The sender's own records agree: each message once, and a new call finds nothing to do.
    assert_eq!(a.listed().len(), 500);
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains("0 received, 0 sent"), "{out}");
}
