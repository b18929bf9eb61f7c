//! Row 8f: a big mailbox on a big store. N0USR holds 5,000 personal messages; `LM` and `LP`
//! (and `LN`, `L`, `LL 20`) are timed on a store of those 5,000 alone and on a store where
//! they are among 100,000. Both answers are the same (1,000 lines at most, the listing cap):
//! what the bigger store adds is its own cost. Issue 29's bar: `LM` and `LP` at most twice
//! their time on the mailbox alone, or under 10 ms. Issue 38's: on the mailbox alone, `LM`,
//! `LP` and `LN` in at most 15 ms. Each store has had a housekeeping run first (its
//! statistics change the planner's choices).

use crate::bigstore::timed;
use crate::daemon::Opts;
use crate::genstore;
use crate::report::Row;
use crate::util::{median, thousands, R};

/// N0USR's personal messages.
const MAILBOX: usize = 5_000;
/// Messages in the big store.
const BIG: usize = 100_000;
/// Timed repetitions per command (the median is reported).
const REPEAT: usize = 7;
/// The commands timed; the first two are the bar's.
const COMMANDS: &[&str] = &["LM", "LP", "LN", "L", "LL 20"];

/// Each command's median time on a store of `n` messages where every `mine_every`th is N0USR's.
fn times(o: &Opts, n: usize, mine_every: usize) -> R<Vec<f64>> {
    let (d, _) = genstore::daemon_with(o, n, mine_every, 10)?;
    d.ctl(&["housekeep"])?;
    let prompt = d.prompt();
    let mut u = d.login("N0USR", "pw")?;
    timed(&mut u, &prompt, "OP 0")?;
    let mut out = Vec::new();
    for cmd in COMMANDS {
        // The first plain `L` lists everything new; the ones after it nothing: time the first.
        let reps = if *cmd == "L" { 1 } else { REPEAT };
        let mut t = Vec::new();
        for _ in 0..reps {
            t.push(timed(&mut u, &prompt, cmd)?.0);
        }
        out.push(median(t));
    }
    Ok(out)
}

/// Row 8f for the qtc in `o` (`tag` names a baseline).
pub fn row(o: &Opts, tag: &str) -> Row {
    let what = format!(
        "{} of a user's {} messages: alone vs among {}{tag}",
        "LM, LP",
        thousands(MAILBOX as u64),
        thousands(BIG as u64)
    );
    let got = times(o, MAILBOX, 1).and_then(|alone| Ok((alone, times(o, BIG, BIG / MAILBOX)?)));
    let (alone, big) = match got {
        Ok(t) => t,
        Err(e) => return Row::broken("8f", &what, &e, ""),
    };
    let within = |i: usize| big[i] <= 2.0 * alone[i] || big[i] < 0.010;
    let quick_alone = (0..3).all(|i| alone[i] <= 0.015);
    let figure = COMMANDS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "`{c}` {:.2} vs {:.2} ms ({:.1}x)",
                alone[i] * 1e3,
                big[i] * 1e3,
                big[i] / alone[i].max(1e-9)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Row::check(
        "8f",
        &what,
        figure,
        "`LM`, `LP` ≤ 2x alone or < 10 ms; alone `LM`, `LP`, `LN` ≤ 15 ms",
        within(0) && within(1) && quick_alone,
        &format!(
            "N0USR's {} personal messages alone (the store holds nothing else) and the same \
             number among {} generated messages (bench/src/genstore.rs), each after \
             `qtc ctl housekeep`; each command typed after `OP 0`, line sent to prompt read, \
             median of {REPEAT} (`L`: its first run, which lists up to the cap)",
            thousands(MAILBOX as u64),
            thousands(BIG as u64)
        ),
    )
}

/// Row 8f alone (`--only mailbox`), for the measured qtc and the baseline in turn.
pub fn run(o: &Opts, p: &crate::Plan) -> (Vec<Row>, Vec<String>) {
    let rows = crate::binaries(o, p)
        .iter()
        .map(|(tag, ob)| row(ob, tag))
        .collect();
    let note = format!(
        "Row 8f: load average at the start {}.",
        crate::forward::load()
    );
    (rows, vec![note])
}
