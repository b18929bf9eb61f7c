//! The crate reads as layers: a module of `src/` may use (`crate::x`) only modules of the
//! layers before its own, so the module graph has no cycles. A new module goes into
//! [`LAYERS`]; docs/architecture.md ("Layers") says what each layer is for.

use std::collections::BTreeMap;
use std::path::Path;

/// Bottom first. Within a layer, modules do not use each other.
const LAYERS: &[&[&str]] = &[
    // The radio devices and the byte-stream trait: what a `[[port]]` kind is, checked from
    // its keys, and the device it opens.
    &["phy"],
    // Values and plumbing, using nothing else here: the checked config, the store thread,
    // the clock, the byte-stream codecs, the CPU pool, the data directory's lock.
    &[
        "clock",
        "dir_lock",
        "out",
        "config",
        "tls",
        "room",
        "cpu_pool",
        "link",
        "store_thread",
        "import",
        "prefix",
    ],
    // Counters, limits, finding the config file, the store's readers.
    &[
        "metrics",
        "user_limits",
        "config_file",
        "read_pool",
        "stream_io",
        "log_limit",
    ],
    // Login throttling; password checks (they read stored hashes on the readers); the one
    // way a user's message is stored (room, allowances, rules).
    &["throttle", "passwords", "submission"],
    // Admission to the ports; where a BBS session's store requests run.
    &["admission", "session_store"],
    // The login path every port shares (places at connect, the counted password check).
    &["login"],
    // The one connection driver every door runs its protocol on (places, timers, TLS,
    // shutdown, the login-failure policy) and the listeners' accept loop.
    &["connection"],
    // Services: radio ports, housekeeping, forwarding, who is online.
    &["radio", "housekeeping"],
    &["forward", "online", "downlink"],
    // Who may be a forwarding partner over the air (forwarding's partners, the NET/ROM tables).
    &["health", "conference", "partner_trust"],
    // What the sysop and the users reach: the control socket, the web, the BBS ports, the
    // CLI, the systemd glue.
    &["ctl", "reload"],
    &["web", "bbs_port", "service", "cli", "mail"],
    // Creates every service and wires them together.
    &["daemon"],
];

/// The top-level module a file of `src/` belongs to (`None`: the crate root or the binary).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

/// `text` without its comment lines.
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `text` uses through `crate::` (comments skipped).
fn uses(text: &str) -> Vec<String> {
    let code = code_of(text);
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        } else {
            out.push(
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut wrong = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let Some(module) = module_of(rel) else {
            continue;
        };
        let Some(&own) = layer_of.get(module.as_str()) else {
            wrong.push(format!("{}: module {module} is in no layer", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for used in uses(&text) {
            if used == module {
                continue;
            }
            match layer_of.get(used.as_str()) {
                Some(&l) if l < own => {}
                Some(_) => wrong.push(format!(
                    "{}: {module} uses {used}, which is not in a layer below it",
                    rel.display()
                )),
                // Items of the crate root (lib.rs), not modules.
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn grouped_and_inline_uses_are_seen() {
    let text = "use crate::{metrics::Metrics, throttle};\n// crate::web in a comment\nlet x = crate::clock::now();";
    assert_eq!(uses(text), ["metrics", "throttle", "clock"]);
}

/// The module path of a file of `src/`: `a/b.rs` and `a/b/mod.rs` are `[a, b]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The paths `text` names through `crate::`, `super::` or `self::`, made absolute for a file
/// whose module path is `own` (a group `{a, b::c}` gives one path each).
fn paths_used(text: &str, own: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let code = code_of(text);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some((off, start)) = ["crate::", "super::", "self::"]
        .iter()
        .filter_map(|p| code[i..].find(p).map(|o| (o, *p)))
        .min_by_key(|(o, _)| *o)
    {
        let at_start = i + off;
        // Part of a longer path or name (`a::super::`, `myself::`): not a path of its own.
        let glued = at_start > 0
            && (bytes[at_start - 1].is_ascii_alphanumeric()
                || bytes[at_start - 1] == b'_'
                || bytes[at_start - 1] == b':');
        if glued {
            i = at_start + 1;
            continue;
        }
        let i_start = at_start;
        // The module the path starts from: a `mod.rs` file is its directory's module.
        let mut base: Vec<String> = match start {
            "crate::" => Vec::new(),
            _ => own.to_vec(),
        };
        let mut at = i_start;
        loop {
            let r = &code[at..];
            if let Some(r2) = r.strip_prefix("super::") {
                base.pop();
                at = code.len() - r2.len();
            } else if let Some(r2) = r.strip_prefix("self::") {
                at = code.len() - r2.len();
            } else if let Some(r2) = r.strip_prefix("crate::") {
                at = code.len() - r2.len();
            } else {
                break;
            }
        }
        let mut path = base;
        let mut r = &code[at..];
        loop {
            if let Some(group) = r.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let mut p = path.clone();
                    for seg in item.trim().split("::") {
                        let s = ident(seg.trim());
                        if s.is_empty() || s == "self" {
                            break;
                        }
                        p.push(s);
                    }
                    out.push(p);
                }
                path.clear();
                break;
            }
            let s = ident(r);
            if s.is_empty() {
                break;
            }
            r = &r[s.len()..];
            path.push(s);
            match r.strip_prefix("::") {
                Some(r2) => r = r2,
                None => break,
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
        i = at.max(i_start + 1);
    }
    out
}

/// No two files of `src/` use each other, however far round: a file's module reaches another
/// file through `crate::`, `super::` or `self::` paths (a module's own children, named by
/// their relative paths, are part of it). Issue 39 found two such cycles between sibling
/// files (`config/forward.rs` with `config/radio.rs`, `radio/port.rs` with
/// `radio/to_session.rs`).
#[test]
fn no_file_uses_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let module_of_file: BTreeMap<Vec<String>, String> = all
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            (module_path(rel), rel.display().to_string())
        })
        .collect();
    let mut edges: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let own = module_path(rel);
        let text = std::fs::read_to_string(f).unwrap();
        let me = rel.display().to_string();
        for mut path in paths_used(&text, &own) {
            // The file the path lands in: its longest prefix that is a file's module.
            while !path.is_empty() && !module_of_file.contains_key(&path) {
                path.pop();
            }
            if path.is_empty() {
                continue;
            }
            let target = &module_of_file[&path];
            if *target != me {
                edges.entry(me.clone()).or_default().insert(target.clone());
            }
        }
    }
    let mut cycles = Vec::new();
    for start in edges.keys() {
        // Walks from `start`; a way back to it is a cycle (reported once, from its least file).
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((at, trail)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    if trail.iter().all(|t| t >= start) {
                        cycles.push(format!("{} -> {start}", trail.join(" -> ")));
                    }
                } else if seen.insert(next.clone()) {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push((next.clone(), t));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files that use each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn paths_are_made_absolute() {
    let own = vec!["config".to_string(), "forward".to_string()];
    let text = "use super::radio::RadioPort;\nuse super::{parse_addrs, error::KeyError};\nlet c = crate::clock::now();";
    assert_eq!(
        paths_used(text, &own),
        [
            vec!["config", "radio", "RadioPort"],
            vec!["config", "parse_addrs"],
            vec!["config", "error", "KeyError"],
            vec!["clock", "now"],
        ]
    );
}
