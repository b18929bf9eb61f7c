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
    // the clock, the byte-stream codecs, the CPU pool.
    &[
        "clock",
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
    ],
    // Login throttling; password checks (they read stored hashes on the readers).
    &["throttle", "passwords"],
    // Admission to the ports; where a BBS session's store requests run.
    &["admission", "session_store"],
    // The login path every port shares (places at connect, the counted password check).
    &["login"],
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

/// The top-level modules `text` uses through `crate::` (comments skipped).
fn uses(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
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
