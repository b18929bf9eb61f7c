//! Row 3: a user pastes a long message over telnet; time from its first byte to "stored".

use std::time::Duration;

use crate::client::Client;
use crate::daemon::{Daemon, Opts, Spec};
use crate::report::Row;
use crate::util::{median, now, Text, R};
use crate::{or_broken, Plan};

const HOW: &str = "`SP N0XYZ`, subject, then body (60-char CR LF lines) + `/EX` in one \
write; first body byte written to \"stored\" read; median";

/// One paste of `bytes`; returns seconds.
fn paste(d: &Daemon, c: &mut Client, bytes: usize, seed: u64) -> R<f64> {
    let mut body = Vec::with_capacity(bytes + 100);
    Text::new(seed).body(bytes, b"\r\n", &mut body);
    body.extend_from_slice(b"/EX\r\n");
    c.line("SP N0XYZ")?;
    c.expect("Subject:")?;
    c.line(&format!("paste of {bytes} bytes"))?;
    c.expect("^Z:")?;
    let t0 = now();
    c.raw(&body)?;
    let reply = c.expect_within("stored", Duration::from_secs(120))?;
    let took = t0.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&reply);
    if text.contains("not be stored") || text.contains("not stored") || text.contains("***") {
        return Err(format!("the paste was refused: {text:?}"));
    }
    c.expect(&d.prompt())?;
    Ok(took)
}

fn measure(o: &Opts, p: &Plan) -> R<Vec<Row>> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0TEL",
            ..Spec::default()
        },
    )?;
    let mut c = d.login("N0USR", "pw")?;
    let mut rows = Vec::new();
    for (size, runs, label) in [
        (64 * 1024, p.paste_small_runs, "64 KB"),
        (1024 * 1024, p.paste_large_runs, "1 MB"),
    ] {
        let mut times = Vec::new();
        for i in 0..runs {
            times.push(paste(&d, &mut c, size, 100 + i as u64)?);
        }
        let all: Vec<String> = times.iter().map(|t| format!("{:.1}", t * 1e3)).collect();
        let t = median(times);
        let rate = size as f64 / 1000.0 / t;
        let figure = format!(
            "{:.1} ms = {:.0} kB/s (runs: {} ms)",
            t * 1e3,
            rate,
            all.join(", ")
        );
        rows.push(if size == 64 * 1024 {
            Row::check(
                "3a",
                &format!("telnet paste {label}: first byte to \"stored\""),
                figure,
                "<= 5 ms (LinFBB 2.6 s = 25 kB/s, LinBPQ 0.42 s)",
                t <= 0.005,
                HOW,
            )
        } else {
            Row::info(
                "3b",
                &format!("telnet paste {label}: first byte to \"stored\""),
                figure,
                "none set (the 64 KB rate would give 80 ms; LinFBB's 25 kB/s 42 s)",
                HOW,
            )
        });
    }
    Ok(rows)
}

/// Runs row 3.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    (
        or_broken("3", "telnet paste", HOW, measure(o, p)),
        Vec::new(),
    )
}
