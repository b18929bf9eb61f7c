//! Row 6: the LZHUF codec's throughput, from its criterion benchmark.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::daemon::Opts;
use crate::report::Row;
use crate::util::{now, sleep, Ctx, R};
use crate::Plan;

const HOW: &str = "`cargo bench -p qtc-lzhuf -- --quick` (criterion; middle throughput \
estimate, MiB/s converted to MB/s); inputs from crates/qtc-lzhuf/benches";

/// Longest the benchmark may take, compile included.
const LIMIT: Duration = Duration::from_secs(480);

/// One criterion result: id and MB/s.
pub type Thrpt = (String, f64);

/// Reads `group/name ... thrpt: [lo u mid u hi u]` from criterion's output.
pub fn parse(out: &str) -> Vec<Thrpt> {
    let mut id = String::new();
    let mut v = Vec::new();
    for line in out.lines() {
        if !line.starts_with(char::is_whitespace) {
            if let Some(first) = line.split_whitespace().next() {
                if first.contains('/') {
                    id = first.to_string();
                }
            }
        }
        if let Some(rest) = line.split("thrpt:").nth(1) {
            let t: Vec<&str> = rest
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split_whitespace()
                .collect();
            if t.len() == 6 && !id.is_empty() {
                if let Ok(x) = t[2].parse::<f64>() {
                    let scale = match t[3] {
                        "B/s" => 1e-6,
                        "KiB/s" => 1024.0 / 1e6,
                        "MiB/s" => 1_048_576.0 / 1e6,
                        "GiB/s" => 1_073_741_824.0 / 1e6,
                        _ => continue,
                    };
                    v.push((id.clone(), x * scale));
                }
            }
        }
    }
    v
}

fn bench() -> R<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new("cargo")
        .current_dir(&root)
        .args(["bench", "-p", "qtc-lzhuf", "--", "--quick"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ctx("cannot run cargo bench")?;
    let mut out = child.stdout.take().ctx("stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t0 = now();
    loop {
        if let Some(st) = child.try_wait().ctx("cargo bench")? {
            let text = reader.join().unwrap_or_default();
            if !st.success() {
                return Err(format!("cargo bench failed ({st})"));
            }
            return Ok(text);
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cargo bench took longer than {LIMIT:?}"));
        }
        sleep(Duration::from_millis(200));
    }
}

/// Runs row 6.
pub fn run(_o: &Opts, _p: &Plan) -> (Vec<Row>, Vec<String>) {
    let out = match bench() {
        Ok(o) => o,
        Err(e) => return (vec![Row::broken("6", "LZHUF", &e, HOW)], Vec::new()),
    };
    let all = parse(&out);
    let get = |id: &str| all.iter().find(|(i, _)| i == id).map(|(_, x)| *x);
    let mut rows = Vec::new();
    // (criterion id, row, qtc's target, the C lzhuf figure)
    for (id, what, target, c) in [
        (
            "compress/text_3m",
            "LZHUF compress, 3.1 MB English-like text",
            13.0,
            8.5,
        ),
        (
            "decompress/text_3m",
            "LZHUF decompress, 3.1 MB English-like text",
            100.0,
            55.0,
        ),
    ] {
        match get(id) {
            Some(x) => rows.push(Row::check(
                "6",
                what,
                format!("{x:.1} MB/s"),
                &format!(">= {target} MB/s (C lzhuf on 3.1 MB text: {c} MB/s)"),
                x >= target,
                HOW,
            )),
            None => rows.push(Row::broken(
                "6",
                what,
                &format!("no {id} in the output"),
                HOW,
            )),
        }
    }
    let notes = vec![format!(
        "Row 6, every input: {}.",
        all.iter()
            .map(|(i, x)| format!("{i} {x:.1} MB/s"))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    (rows, notes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_criterion() {
        let out = "Benchmarking compress/text_3m: Warming up\n\
compress/text_3m        time:   [300.00 ms 310.00 ms 320.00 ms]\n\
                        thrpt:  [9.0000 MiB/s 9.5000 MiB/s 10.000 MiB/s]\n\
decompress/random_1m\n\
                        time:   [10.0 ms 11.0 ms 12.0 ms]\n\
                        thrpt:  [90.0 MiB/s 95.367 MiB/s 100.0 MiB/s]\n";
        let v = super::parse(out);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "compress/text_3m");
        assert!((v[0].1 - 9.96).abs() < 0.01);
        assert!((v[1].1 - 100.0).abs() < 0.01);
    }
}
