//! Row 11: forwarding over a real-time 1200-baud radio channel. Two qtc daemons on their default
//! `[[port]]` settings, each on a Direwolf soundcard modem, the two modems joined by the
//! real-time half-duplex channel (`crates/qtc/tests/data/afsk/`: `pair.py` starts `chan.py` and
//! the modems): A forwards 20 × 2 KB bulletins to B, in B1 and in MBL, on a clean channel and on
//! one that spoils frames now and then. Wall time is given as a multiple of the channel's limit
//! (the formula of the channel's README), and the frames each side put on the air, from each
//! Direwolf's own log of what it transmitted.
//!
//! Passes run only when named (`--air`, [`MORE_PASSES`]): JNOS 2.0o.2 as it comes on the same
//! channel (sending to qtc, to another JNOS, and qtc sending to it), and two qtc on a 300-baud
//! channel with and without `modem_baud`.
//!
//! Real time: about 20 minutes for the four default passes, so `--quick` leaves it out.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, Opts, Spec};
use crate::forward::{load, BODY};
use crate::jnos::{self, Jnos};
use crate::measure::bulletins;
use crate::monitor::Monitor;
use crate::report::Row;
use crate::util::{now, wait_for, Ctx, TempDir, Text, R};
use crate::Plan;

/// Row 11's passes run by default: the mode, and `-lossy` for the lossy channel.
pub const PASSES: &[&str] = &["b1", "mbl", "b1-lossy", "mbl-lossy"];

/// Passes run only when `--air` names them: JNOS as it comes sending to qtc, to JNOS, and qtc
/// sending to JNOS (20 × 2 KB personal messages in B1 each); two qtc at 300 baud (5 × 2 KB in
/// B1) without `modem_baud` (timed as 1200 bit/s) and with `modem_baud = 300`.
pub const MORE_PASSES: &[&str] = &[
    "jnos-qtc",
    "jnos-jnos",
    "qtc-jnos",
    "b1-300",
    "b1-300-modem",
];

/// Whether `--air` may name `pass`.
pub fn known(pass: &str) -> bool {
    PASSES.contains(&pass) || MORE_PASSES.contains(&pass)
}

/// Bulletins per pass.
const MESSAGES: usize = 20;
/// Bulletins per 300-baud pass (four times the air time of each).
const MESSAGES_300: usize = 5;
/// The lossy channel: the chance that a 10 ms tick of a transmission is blanked (chan.py LOSS):
/// about 9 % of 256-byte frames and 0.7 % of RRs at 1200 baud.
const LOSS: &str = "0.0005";
/// The modems' TXDELAY and TXTAIL (pair.py gives them the README's 30 and 10), in seconds.
const TXDELAY: f64 = 0.30;
const TXTAIL: f64 = 0.10;
/// The seed of the bodies' text (the same bodies in every pass).
const SEED: u64 = 7;

/// How row 11's default passes are set up.
const HOW: &str = "pair.py: chan.py (real time, SCHED_FIFO) + two Direwolf 1.6 at 1200 baud, \
                   TXDELAY 30, TXTAIL 10, PERSIST 63, SLOTTIME 10; qtc `[[port]]` kiss-tcp with \
                   no other key; `qtc ctl forward N0BBB` wall time; frames from each Direwolf's log";

/// Runs row 11.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    if p.quick {
        return (
            vec![Row::info(
                "11",
                "forwarding over the real-time 1200-baud channel",
                "not run with --quick (real time: about 20 minutes)".into(),
                "",
                HOW,
            )],
            Vec::new(),
        );
    }
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "Row 11 machine: load average {} at the start.",
        load()
    )];
    for name in &p.air {
        let (what, how, bar, result) = run_pass(o, name);
        eprintln!("  air: {what}: {}", load());
        match result {
            Ok(r) => {
                notes.push(format!("Row 11 {what}: {} (load {})", r.details(), load()));
                rows.push(r.row(&what, bar, how));
            }
            Err(e) => rows.push(Row::broken("11", &what, &e, how)),
        }
    }
    notes.push(format!(
        "Row 11 machine: load average {} at the end. The channel's limit: for each direction's \
         I-frame payload N (first transmissions) at PACLEN P and window K, F = ceil(N/P) frames \
         of (P + 14 + control + 1 + 2) × 8 × 1.03 + 8 bits at the modem's bit rate, plus \
         TXDELAY + TXTAIL for each of ceil(F/K) transmissions and one RR transmission per \
         window; both directions added. Protocol turns and p-persistence waits come on top.",
        load()
    ));
    (rows, notes)
}

/// One pass by name: what it is, how it is set up, whether it is the row's bar, its figures.
fn run_pass(o: &Opts, name: &str) -> (String, &'static str, bool, R<Pass>) {
    const HOW_JNOS: &str = "pair.py at 1200 baud as for B1; JNOS 2.0o.2 as built and set up \
        by crates/qtc/tests/peers/jnos (run.sh --kiss: ax25 defaults, maxframe 1), its KISS pty \
        joined to the modem by socat; 20 × 2 KB personal messages (the B1 pass's bodies), \
        posted on JNOS's telnet BBS or imported at qtc; wall time from `mbox kick` or `qtc \
        ctl forward` to the link's DISC on the air";
    const HOW_300: &str = "pair.py --baud 300 (Direwolf's 300-baud AFSK), otherwise as B1; \
        5 × 2 KB";
    if let Some((from, to)) = name.split_once('-').filter(|_| name.contains("jnos")) {
        let what = format!(
            "{MESSAGES} × 2 KB B1, {} → {}, clean channel",
            station(from),
            station(to)
        );
        return (what, HOW_JNOS, false, jnos_pass(o, name));
    }
    if let Some(rest) = name.strip_prefix("b1-300") {
        let modem = rest == "-modem";
        let what = format!(
            "{MESSAGES_300} × 2 KB B1 at 300 baud, {}",
            if modem {
                "modem_baud = 300"
            } else {
                "no modem_baud (timed as 1200)"
            }
        );
        let setup = QtcPass {
            mode: "b1",
            lossy: false,
            baud: 300,
            modem_baud: modem,
            messages: MESSAGES_300,
        };
        return (what, HOW_300, false, pass(o, &setup));
    }
    let (mode, lossy) = match name.strip_suffix("-lossy") {
        Some(m) => (m, true),
        None => (name, false),
    };
    let what = format!(
        "{} × 2 KB {}, {} channel",
        MESSAGES,
        mode.to_ascii_uppercase(),
        if lossy { "lossy" } else { "clean" }
    );
    let setup = QtcPass {
        mode,
        lossy,
        baud: 1200,
        modem_baud: false,
        messages: MESSAGES,
    };
    (what, HOW, mode == "b1" && !lossy, pass(o, &setup))
}

/// `jnos` or `qtc` as a row names it.
fn station(name: &str) -> &'static str {
    if name == "jnos" {
        "JNOS"
    } else {
        "qtc"
    }
}

/// Two modems on the real-time channel (`pair.py`), stopped when dropped.
pub struct Channel {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    /// KISS TCP port of modem A and of modem B.
    pub kiss: (u16, u16),
    /// How chan.py runs: `fifo`, `nice` or `none`.
    pub priority: String,
    /// Where the modems' logs are.
    pub dir: PathBuf,
}

impl Channel {
    /// Starts the channel and both modems (at `baud`, 1200 or 300) in `dir`; `loss` is
    /// chan.py's LOSS.
    pub fn start(root: &Path, dir: &Path, loss: &str, baud: u32) -> R<Channel> {
        let script = root.join("crates/qtc/tests/data/afsk/pair.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(dir)
            .args(["--loss", loss, "--baud", &baud.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .ctx(format!("python3 {}", script.display()))?;
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().ctx("pair.py stdout")?);
        let mut line = String::new();
        out.read_line(&mut line).ctx("pair.py")?;
        let port = |k: &str| json_number(&line, k).map(|v| v as u16);
        let (Some(a), Some(b)) = (port("kiss_a"), port("kiss_b")) else {
            return Err(format!("pair.py did not start: {line:?}"));
        };
        let priority = json_string(&line, "priority").unwrap_or_default();
        Ok(Channel {
            child,
            stdin,
            out,
            kiss: (a, b),
            priority,
            dir: dir.to_path_buf(),
        })
    }

    /// Stops everything; chan.py's statistics (its JSON line).
    pub fn stop(mut self) -> R<String> {
        drop(self.stdin.take());
        let mut line = String::new();
        self.out.read_line(&mut line).ctx("pair.py")?;
        let _ = self.child.wait();
        Ok(line.trim().to_string())
    }

    /// The lines modem `name` ("a" or "b") logged.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number after `"key":` in a one-line JSON object.
pub fn json_number(line: &str, key: &str) -> Option<f64> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = line[at..].trim_start();
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

fn json_string(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = line[at..].trim_start().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

/// What one station put on the air, from its modem's log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sent {
    /// I frames transmitted, repeats included.
    pub i_frames: usize,
    /// Of those, repeats (the same N(S) and information field again).
    pub i_resent: usize,
    /// Information bytes of the distinct I frames.
    pub payload: usize,
    /// RR, RNR, REJ and SREJ frames.
    pub supervisory: usize,
    /// Of those, polls (P=1 commands).
    pub polls: usize,
    /// The link was modulo 128 (two control bytes).
    pub modulo128: bool,
    /// U frames (SABM(E), UA, DISC, DM, XID...).
    pub unnumbered: usize,
}

/// One transmitted frame of a Direwolf log: its description and information field, as in
/// `[0L] SRC>DEST:(I cmd, n(s)=3, n(r)=5, p=0, pid=0xf0)info`.
fn tx_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("[0L] ").or(line.strip_prefix("[0H] "))?;
    let open = rest.find(":(")? + 2;
    // The description holds "n(s)" and "n(r)": its end is the parenthesis that balances.
    let mut depth = 1;
    let close = rest[open..].char_indices().find_map(|(i, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        (depth == 0).then_some(open + i)
    })?;
    Some((&rest[open..close], &rest[close + 1..]))
}

/// Reads a Direwolf log's transmitted frames: `[0L] SRC>DEST:(I cmd, n(s)=3, n(r)=5, p=0,
/// pid=0xf0)info`, `[0L] SRC>DEST:(RR cmd, n(r)=5, p=1)`, `[0L] SRC>DEST:(SABME cmd, p=1)`.
/// Direwolf 1.6 keeps no link state for KISS traffic and reads modulo-128 frames with a
/// one-byte control field: their second control byte shows as an S frame's "information"
/// and the PID as the first byte of an I frame's; such a log's I fields count one byte less.
pub fn transmitted(log: &str) -> Sent {
    let mut seen = std::collections::HashSet::new();
    let mod128 = log.lines().filter_map(tx_line).any(|(d, info)| {
        ["RR", "RNR", "REJ", "SREJ"].contains(&d.split([' ', ',']).next().unwrap_or(""))
            && !info.is_empty()
    });
    let mut s = Sent {
        modulo128: mod128,
        ..Sent::default()
    };
    for (desc, info) in log.lines().filter_map(tx_line) {
        let kind = desc.split([' ', ',']).next().unwrap_or("");
        match kind {
            "I" => {
                s.i_frames += 1;
                let ns = desc
                    .split("n(s)=")
                    .nth(1)
                    .and_then(|v| v.split(',').next())
                    .unwrap_or("");
                if seen.insert((ns.to_string(), info.to_string())) {
                    let len = info_len(info).saturating_sub(usize::from(mod128));
                    s.payload += len;
                } else {
                    s.i_resent += 1;
                }
            }
            "RR" | "RNR" | "REJ" | "SREJ" => {
                s.supervisory += 1;
                if desc.contains("cmd") && desc.contains("p=1") {
                    s.polls += 1;
                }
            }
            _ => s.unnumbered += 1,
        }
    }
    s
}

/// Bytes of an information field as Direwolf prints it: `<0xNN>` is one byte.
fn info_len(printed: &str) -> usize {
    let b = printed.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        if b[i] == b'<' && b.len() >= i + 6 && &b[i + 1..i + 3] == b"0x" && b[i + 5] == b'>' {
            i += 6;
        } else {
            i += 1;
        }
        n += 1;
    }
    n
}

/// Seconds of air the channel's README counts for `n` payload bytes at PACLEN `p` and window
/// `k` in one direction (two control bytes: modulo 128), at `baud` bit/s.
pub fn limit(n: usize, p: usize, k: usize, control: usize, baud: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let frames = n.div_ceil(p.max(1));
    let frame = ((p + 14 + control + 1 + 2) as f64 * 8.0 * 1.03 + 8.0) / baud;
    let windows = frames.div_ceil(k.max(1)) as f64;
    let rr = ((14 + control + 2) as f64 * 8.0 * 1.03 + 8.0) / baud;
    frames as f64 * frame + windows * (TXDELAY + TXTAIL) + windows * (TXDELAY + rr + TXTAIL)
}

/// One pass's figures.
struct Pass {
    wall: f64,
    limit: f64,
    window: usize,
    a: Sent,
    b: Sent,
    chan: String,
    priority: String,
    /// B's answers to A's runs of I frames: median seconds from the end of A's last frame
    /// to the end of B's answer, and how many.
    answer: Option<(f64, usize)>,
    /// The longest time the channel carried no frame, seconds.
    quiet: f64,
}

impl Pass {
    fn row(&self, what: &str, bar: bool, how: &str) -> Row {
        let ratio = self.wall / self.limit;
        let figure = format!(
            "{:.0} s = {ratio:.2} × the limit ({:.0} s); I frames A→B {} sent, {} resent; \
             B→A {} sent, {} resent; B's answer {}",
            self.wall,
            self.limit,
            self.a.i_frames,
            self.a.i_resent,
            self.b.i_frames,
            self.b.i_resent,
            self.answer.map_or("not heard".into(), |(s, n)| format!(
                "{s:.2} s (median of {n})"
            ))
        );
        if bar {
            Row::check(
                "11",
                what,
                figure,
                "exactly once, <= 1.3 × the channel's limit (goal 1.2)",
                ratio <= 1.3,
                how,
            )
        } else {
            Row::info("11", what, figure, "exactly once", how)
        }
    }

    fn details(&self) -> String {
        let side = |s: &Sent| {
            format!(
                "{} I frames ({} again), {} S frames ({} polls), {} U frames",
                s.i_frames, s.i_resent, s.supervisory, s.polls, s.unnumbered
            )
        };
        format!(
            "A sent {}; B sent {}; window {}; longest time without a frame {:.1} s; chan.py \
             ({}): {}",
            side(&self.a),
            side(&self.b),
            self.window,
            self.quiet,
            self.priority,
            self.chan
        )
    }
}

/// The `[[port]]` of a station on modem port `kiss`: nothing but what it is attached to, and
/// the modem's speed when `modem_baud` is given.
fn port(kiss: u16, modem_baud: Option<u32>) -> String {
    let speed = modem_baud.map_or(String::new(), |b| format!("modem_baud = {b}\n"));
    format!(
        "[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:{kiss}\"\n{speed}"
    )
}

/// A `[[partner]]` reached on the port as `way`.
fn partner(call: &str, way: &str, mode: &str) -> String {
    format!(
        "[[partner]]\ncallsign = \"{call}\"\nconnect = \"ax25:vhf:{way}\"\n\
         protocol = \"{mode}\"\nroutes = [\"{call}\", \"WW\"]\n"
    )
}

/// The checkout this driver was built in (it may measure a qtc built elsewhere).
fn root() -> R<&'static Path> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ctx("the bench crate has no parent directory")
}

/// A qtc-to-qtc pass.
struct QtcPass<'a> {
    mode: &'a str,
    lossy: bool,
    /// The modems' bit rate.
    baud: u32,
    /// `modem_baud` set to it in both ports (else left to qtc's guess).
    modem_baud: bool,
    messages: usize,
}

fn pass(o: &Opts, q: &QtcPass<'_>) -> R<Pass> {
    let dir = TempDir::new("air")?;
    let loss = if q.lossy { LOSS } else { "0" };
    let chan = Channel::start(root()?, &dir.path().join("channel"), loss, q.baud)?;
    let monitor = Monitor::start(chan.kiss)?;
    let speed = q.modem_baud.then_some(q.baud);
    let b = Daemon::create(
        o,
        &Spec {
            call: "N0BBB",
            users: &[("N0AAA", "x", "--bbs")],
            // A's way: over the air a partner's call is its partner only by its own way.
            extra: partner("N0AAA", "N0AAA", q.mode) + &port(chan.kiss.1, speed),
            ..Spec::default()
        },
    )?;
    let a = Daemon::create(
        o,
        &Spec {
            call: "N0AAA",
            users: &[],
            extra: partner("N0BBB", "N0BBB", q.mode) + &port(chan.kiss.0, speed),
            ..Spec::default()
        },
    )?;
    a.import(&bulletins(q.messages, BODY, SEED, |i| {
        format!("AIR{i}_N0AAA")
    }))?;
    let t0 = now();
    let out = a.ctl(&["forward", "N0BBB"]);
    let wall = t0.elapsed().as_secs_f64();
    let out = out.map_err(|e| format!("{e}\nA: {}\nB: {}", a.log_tail(), b.log_tail()))?;
    let want = format!("0 received, {} sent", q.messages);
    if !out.contains(&want) {
        return Err(format!("forward: {} (wanted {want:?})", out.trim()));
    }
    let got = b.count()?;
    if got != q.messages {
        return Err(format!("B holds {got} messages, not {}", q.messages));
    }
    // The link's last frames (DISC, UA) go out after the session's end: both have logged the
    // link down once they are through.
    a.wait_log("link down", 0)?;
    b.wait_log("link down", 0)?;
    figures(
        chan,
        &monitor,
        wall,
        [Some(a.log_tail_all()), Some(b.log_tail_all())],
        f64::from(q.baud),
    )
}

/// The figures of a pass that took `wall` seconds on `chan` (at `baud`), from the modems'
/// logs and the `link down` lines of the stations that are qtc (`logs`: A's and B's, `None`
/// for JNOS). The link's own counters where qtc logs them (exact; Direwolf's log shows most
/// but not all information bytes); else what the modems' logs give, and for JNOS its window
/// as it comes (`ax25 maxframe 1`).
fn figures(
    chan: Channel,
    monitor: &Monitor,
    wall: f64,
    logs: [Option<String>; 2],
    baud: f64,
) -> R<Pass> {
    let sent = [transmitted(&chan.log("a")), transmitted(&chan.log("b"))];
    let priority = chan.priority.clone();
    let stats = chan.stop()?;
    let mut total = 0.0;
    let mut windows = [1; 2];
    for ((log, s), window) in logs.iter().zip(&sent).zip(&mut windows) {
        let log = log.as_deref().unwrap_or("");
        *window = link_down(log, "window").unwrap_or(if log.is_empty() { 1 } else { 32 });
        let p = link_down(log, "paclen").unwrap_or(256);
        let n = link_down(log, "i_bytes").unwrap_or(s.payload);
        total += limit(n, p, *window, if s.modulo128 { 2 } else { 1 }, baud);
    }
    let [a, b] = sent;
    Ok(Pass {
        wall,
        limit: total,
        window: windows[0],
        a,
        b,
        chan: stats,
        priority,
        answer: monitor.answer_median(),
        quiet: monitor.longest_quiet(),
    })
}

/// 20 × 2 KB personal messages to N0ABC @ `at`: (command, subject, body), the bodies those of
/// the B1 pass's bulletins.
fn personal(at: &str) -> Vec<(String, String, String)> {
    let mut text = Text::new(SEED);
    (0..MESSAGES)
        .map(|i| {
            let mut body = Vec::new();
            text.body(BODY, b"\n", &mut body);
            (
                format!("SP N0ABC @ {at}"),
                format!("Bench message {i}"),
                String::from_utf8_lossy(&body).into_owned(),
            )
        })
        .collect()
}

/// Waits for the link's end on the air: the first DISC either modem sent (a session on the
/// air takes minutes; its end comes once).
fn disc_seen(chan: &Channel) -> R<Instant> {
    let seen = || {
        ["a", "b"]
            .iter()
            .any(|m| {
                chan.log(m)
                    .lines()
                    .filter_map(tx_line)
                    .any(|(d, _)| d.starts_with("DISC"))
            })
            .then(now)
    };
    wait_for(Duration::from_secs(3600), Duration::from_millis(100), seen)
        .ctx("no DISC on the air within an hour")
}

/// A JNOS pass (`jnos-qtc`, `jnos-jnos`, `qtc-jnos`): station A sends [`personal`] messages to
/// B in B1. JNOS is N0JNA (A) or N0JNB (B), BBS call SSID 1; qtc is N0AAA or N0BBB.
fn jnos_pass(o: &Opts, name: &str) -> R<Pass> {
    let root = root()?;
    let bin = jnos::build(root)?;
    let dir = TempDir::new("air-jnos")?;
    let chan = Channel::start(root, &dir.path().join("channel"), "0", 1200)?;
    let monitor = Monitor::start(chan.kiss)?;
    let (wall, logs) = match name {
        "jnos-qtc" => {
            let b = Daemon::create(
                o,
                &Spec {
                    call: "N0BBB",
                    users: &[("N0JNA", "x", "--bbs")],
                    extra: partner("N0JNA", "N0JNA-1", "b1") + &port(chan.kiss.1, None),
                    ..Spec::default()
                },
            )?;
            let opts = ["--partner", "n0bbb:pw", "--connect", "connect ax0 n0bbb"];
            let a = jnos_sender(root, &bin, &dir, &chan, &opts, "N0BBB")?;
            let wall = kick(&a, &chan, "n0bbb")?;
            b.wait_log("forwarding session ended", 0)?;
            let got = b.count()?;
            if got != MESSAGES {
                return Err(format!("qtc holds {got} messages, not {MESSAGES}"));
            }
            b.wait_log("link down", 0)?;
            (wall, [None, Some(b.log_tail_all())])
        }
        "jnos-jnos" => {
            let b = Jnos::start(
                root,
                &bin,
                dir.path(),
                "N0JNB",
                &["--partner", "n0jna:pw"],
                chan.kiss.1,
            )?;
            let opts = ["--partner", "n0jnb:pw", "--connect", "connect ax0 n0jnb-1"];
            let a = jnos_sender(root, &bin, &dir, &chan, &opts, "N0JNB")?;
            let wall = kick(&a, &chan, "n0jnb")?;
            jnos_holds(&b)?;
            (wall, [None, None])
        }
        _ => {
            let b = Jnos::start(
                root,
                &bin,
                dir.path(),
                "N0JNB",
                &["--partner", "n0aaa:pw"],
                chan.kiss.1,
            )?;
            let a = Daemon::create(
                o,
                &Spec {
                    call: "N0AAA",
                    users: &[],
                    extra: partner("N0JNB", "N0JNB-1", "b1") + &port(chan.kiss.0, None),
                    ..Spec::default()
                },
            )?;
            let mut import = String::new();
            for (i, (cmd, subject, body)) in personal("N0JNB").iter().enumerate() {
                import += &format!("{cmd} < N0USR $AIRJ{i}_N0AAA\n{subject}\n{body}/EX\n");
            }
            a.import(import.as_bytes())?;
            let t0 = now();
            let (out, end) = std::thread::scope(|s| {
                let call = s.spawn(|| a.ctl(&["forward", "N0JNB"]));
                let end = disc_seen(&chan);
                (
                    call.join().unwrap_or_else(|_| Err("ctl panicked".into())),
                    end,
                )
            });
            let out = out?;
            if !out.contains(&format!("{MESSAGES} sent")) {
                return Err(format!("forward: {} ({})", out.trim(), a.log_tail()));
            }
            let wall = (end? - t0).as_secs_f64();
            jnos_holds(&b)?;
            a.wait_log("link down", 0)?;
            (wall, [Some(a.log_tail_all()), None])
        }
    };
    figures(chan, &monitor, wall, logs, 1200.0)
}

/// JNOS N0JNA on modem A with run.sh's `opts` (its partner), holding [`personal`] messages
/// `@ to` posted by its user N0USR, filed for the partner.
fn jnos_sender(
    root: &Path,
    bin: &Path,
    dir: &TempDir,
    chan: &Channel,
    opts: &[&str],
    to: &str,
) -> R<Jnos> {
    let mut all = vec!["--user", "n0usr:pw"];
    all.extend_from_slice(opts);
    let a = Jnos::start(root, bin, dir.path(), "N0JNA", &all, chan.kiss.0)?;
    a.post("n0usr", "pw", &personal(to))?;
    let area = to.to_ascii_lowercase();
    wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
        (a.held(&area) >= MESSAGES).then_some(())
    })
    .ctx(format!(
        "JNOS filed {} of {MESSAGES} for {to}",
        a.held(&area)
    ))?;
    Ok(a)
}

/// `mbox kick PARTNER` on JNOS `a`; the seconds to the link's DISC.
fn kick(a: &Jnos, chan: &Channel, partner: &str) -> R<f64> {
    let t0 = now();
    a.console(&[&format!("mbox kick {partner}")])?;
    Ok((disc_seen(chan)? - t0).as_secs_f64())
}

/// Waits until JNOS `b` has filed the [`personal`] messages (area n0abc).
fn jnos_holds(b: &Jnos) -> R<()> {
    wait_for(Duration::from_secs(120), Duration::from_millis(200), || {
        (b.held("n0abc") >= MESSAGES).then_some(())
    })
    .ctx(format!(
        "JNOS B filed {} of {MESSAGES}: {}",
        b.held("n0abc"),
        b.console_tail()
    ))?;
    let n = b.held("n0abc");
    if n != MESSAGES {
        return Err(format!("JNOS B holds {n} messages, not {MESSAGES}"));
    }
    Ok(())
}

/// A figure of the link from qtc's `link down` log line (`window=10 paclen=256 i_bytes=...`).
fn link_down(log: &str, key: &str) -> Option<usize> {
    log.lines()
        .filter(|l| l.contains("link down"))
        .find_map(|l| l.split(&format!(" {key}=")).nth(1))
        .and_then(|v| v.split([' ', ',']).next())
        .and_then(|v| v.parse().ok())
}

impl Daemon {
    /// Its whole log.
    pub fn log_tail_all(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_direwolf_transmit_lines() {
        let log = "[0L] N0AAA>N0BBB:(SABME cmd, p=1)\n\
                   [0L] N0AAA>N0BBB:(I cmd, n(s)=0, n(r)=0, p=0, pid=0xf0)[QTC-1-B1FHM$]<0x0d>\n\
                   [0L] N0AAA>N0BBB:(I cmd, n(s)=0, n(r)=0, p=0, pid=0xf0)[QTC-1-B1FHM$]<0x0d>\n\
                   [0L] N0AAA>N0BBB:(RR cmd, n(r)=2, p=1)\n\
                   [0.3] N0BBB>N0AAA:(RR res, n(r)=1, f=0)\n";
        let s = transmitted(log);
        assert_eq!(s.i_frames, 2);
        assert_eq!(s.i_resent, 1);
        assert_eq!(s.payload, 15);
        assert_eq!(s.supervisory, 1);
        assert_eq!(s.polls, 1);
        assert_eq!(s.unnumbered, 1);
    }

    #[test]
    fn modulo_128_frames_as_direwolf_prints_them() {
        let log = "[0L] N0AAA>N0BBB:(I cmd, n(s)=0, n(r)=1, p=0, pid=0xf0)<0xf0>FS +<0x0d>\n\
                   [0L] N0AAA>N0BBB:(RR res, n(r)=2, f=1)<0x05>\n";
        let s = transmitted(log);
        assert_eq!((s.payload, s.supervisory), (5, 1));
    }

    #[test]
    fn reads_pair_json() {
        let l = r#"{"kiss_a": 4001, "kiss_b": 4002, "priority": "fifo"}"#;
        assert_eq!(json_number(l, "kiss_b"), Some(4002.0));
        assert_eq!(json_string(l, "priority").as_deref(), Some("fifo"));
    }

    #[test]
    fn the_limit_of_the_readme() {
        // 256 bytes at P = 256, K = 1: one frame of 2,274 bits, one transmission, one RR.
        let l = limit(256, 256, 1, 2, 1200.0);
        assert!(
            (l - (2274.0 / 1200.0 + 0.4 + 0.4 + 156.3 / 1200.0)).abs() < 0.01,
            "{l}"
        );
    }
}
