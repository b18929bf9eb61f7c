//! Changing the config file the way the web's `/config` page does: one table at a time (a
//! partner, a radio port, a rule, `[housekeeping]`, `[limits]`), as written in the file. A
//! form's keys are set in the file's own document (toml_edit), so every comment, the order of
//! keys and tables and their spacing stay as the sysop wrote them, and a key the form left as
//! it was is not touched at all (not even re-quoted). The result is checked by the caller with
//! [`super::parse`], the checker `qtc check` runs.

use std::collections::BTreeMap;

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, Value};

use super::KeyError;

/// How a key is edited on the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A string; blank: the key is removed (its default applies).
    Text,
    /// A whole number; blank: the key is removed.
    Number,
    /// A checkbox: true or false.
    Flag,
    /// A list of strings, written on the form separated by commas or spaces.
    List,
    /// A password or secret: never shown; blank keeps it as it is.
    Secret,
    /// One of a few words (`choices`).
    Choice(&'static [&'static str]),
}

/// One key a form edits.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    /// Its name in the file.
    pub name: &'static str,
    /// How it is edited.
    pub field: Field,
    /// What applies when the file does not set it, for the form to show.
    pub default: &'static str,
}

const fn key(name: &'static str, field: Field, default: &'static str) -> Key {
    Key {
        name,
        field,
        default,
    }
}

/// The tables the page edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// `[[partner]]`
    Partner,
    /// `[[port]]`
    Port,
    /// `[[rule]]`
    Rule,
    /// `[housekeeping]`
    Housekeeping,
    /// `[limits]`
    Limits,
}

const PROTOCOLS: &[&str] = &["mbl", "fbb", "b0", "b1", "b2"];
const KINDS: &[&str] = &["kiss-tcp", "axudp", "kiss-pty", "kiss-serial"];

const PARTNER: &[Key] = &[
    key("callsign", Field::Text, ""),
    key("connect", Field::Text, "only calls us"),
    key("protocol", Field::Choice(PROTOCOLS), "b1"),
    key("routes", Field::List, "none"),
    key("interval", Field::Text, "0 (only on demand)"),
    key("poll", Field::Text, "the interval"),
    key("login", Field::Text, "our callsign"),
    key("password", Field::Secret, ""),
    key("secret", Field::Secret, "the password"),
    key("telnet", Field::Flag, "false"),
    key("iac_escaped", Field::Flag, "false"),
    key("trace", Field::Flag, "false"),
];

const PORT: &[Key] = &[
    key("name", Field::Text, ""),
    key("kind", Field::Choice(KINDS), ""),
    key("address", Field::Text, "kiss-tcp: HOST:PORT"),
    key("listen", Field::Text, "axudp: IP:PORT"),
    key("device", Field::Text, "kiss-pty, kiss-serial: a tty"),
    key("create", Field::Text, "kiss-pty: a link to make"),
    key("baud", Field::Number, "9600 (kiss-serial)"),
    key("modem_baud", Field::Number, "1200 on KISS, 0 on AXUDP"),
    key("netrom_quality", Field::Number, "0 (no NET/ROM)"),
];

const RULE: &[Key] = &[
    key("action", Field::Choice(&["hold", "reject"]), ""),
    key(
        "field",
        Field::Choice(&["from", "to", "at", "bid", "subject"]),
        "",
    ),
    key("pattern", Field::Text, ""),
];

/// `[housekeeping]`; the defaults are `HousekeepingCfg::default()`'s (a test holds them so).
const HOUSEKEEPING: &[Key] = &[
    key("hour", Field::Number, "3"),
    key("personal_read", Field::Number, "30"),
    key("personal_unread", Field::Number, "90"),
    key("bulletin", Field::Number, "14"),
    key("killed", Field::Number, "2"),
    key("bid", Field::Number, "180"),
    key("partial", Field::Number, "15"),
];

/// `[limits]`; the defaults are `LimitsCfg::default()`'s (a test holds them so).
const LIMITS: &[Key] = &[
    key("max_line", Field::Number, "255"),
    key("max_message", Field::Number, "2097152"),
    key("login_attempts", Field::Number, "3"),
    key("lockout_after", Field::Number, "10"),
    key("idle_timeout", Field::Text, "30m"),
    key("login_timeout", Field::Text, "60s"),
    key("password_checks", Field::Number, "0"),
    key("messages_per_hour", Field::Number, "30"),
    key("kb_per_day", Field::Number, "10240"),
];

impl Section {
    /// Every section, in the page's order.
    pub const ALL: [Section; 5] = [
        Section::Partner,
        Section::Port,
        Section::Rule,
        Section::Housekeeping,
        Section::Limits,
    ];

    /// The keys its form edits.
    pub fn keys(self) -> &'static [Key] {
        match self {
            Section::Partner => PARTNER,
            Section::Port => PORT,
            Section::Rule => RULE,
            Section::Housekeeping => HOUSEKEEPING,
            Section::Limits => LIMITS,
        }
    }

    /// Its table's name in the file, which is also its name on the form.
    pub fn name(self) -> &'static str {
        match self {
            Section::Partner => "partner",
            Section::Port => "port",
            Section::Rule => "rule",
            Section::Housekeeping => "housekeeping",
            Section::Limits => "limits",
        }
    }

    /// From its name on the form.
    pub fn from_name(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    /// One table per thing (`[[partner]]`), or one table (`[limits]`).
    pub fn is_list(self) -> bool {
        matches!(self, Section::Partner | Section::Port | Section::Rule)
    }

    /// The key that names one of its tables (the partner's callsign, the port's name).
    pub fn ident(self) -> &'static str {
        match self {
            Section::Partner => "callsign",
            Section::Port => "name",
            Section::Rule => "pattern",
            Section::Housekeeping | Section::Limits => "",
        }
    }

    /// How the checker names table `index` (from 0) named `ident`: `[[partner]] #2 (N0BBB)`.
    pub fn key_of(self, index: usize, ident: &str) -> String {
        match self {
            Section::Partner | Section::Port => {
                format!("[[{}]] #{} ({ident})", self.name(), index + 1)
            }
            Section::Rule => format!("[[rule]] #{}", index + 1),
            Section::Housekeeping | Section::Limits => format!("[{}]", self.name()),
        }
    }
}

/// A table's keys as the file writes them: text for the form (a list joined with ", ", a flag
/// `true` or `false`); a secret only says whether it is set. A key the file does not set is
/// not here.
pub type Values = BTreeMap<String, String>;

/// The file as the page shows it.
#[derive(Debug, Default)]
pub struct Shown {
    /// A digest of the text the page was made from: a form made from another text is stale.
    pub version: String,
    /// Each section's tables (one for `[housekeeping]` and `[limits]`).
    pub tables: BTreeMap<&'static str, Vec<Values>>,
}

/// A digest of the file's text, to tell a form made from another text.
pub fn version(text: &str) -> String {
    // FNV-1a: not a secret, only a change detector.
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// Reads what the page shows from the file's text.
pub fn show(text: &str) -> Result<Shown, String> {
    let doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let mut tables = BTreeMap::new();
    for s in Section::ALL {
        let list = match doc.get(s.name()) {
            Some(Item::ArrayOfTables(a)) => a.iter().map(|t| values(s, t)).collect(),
            Some(Item::Table(t)) => vec![values(s, t)],
            _ if s.is_list() => Vec::new(),
            _ => vec![Values::new()],
        };
        tables.insert(s.name(), list);
    }
    Ok(Shown {
        version: version(text),
        tables,
    })
}

fn values(s: Section, t: &Table) -> Values {
    let mut v = Values::new();
    for k in s.keys() {
        let Some(value) = t.get(k.name).and_then(Item::as_value) else {
            continue;
        };
        let text = match (k.field, value) {
            (Field::Secret, Value::String(s)) if s.value().is_empty() => continue,
            (Field::Secret, _) => "set".to_string(),
            (_, Value::String(s)) => s.value().clone(),
            (_, Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", "),
            (_, other) => other.to_string().trim().to_string(),
        };
        v.insert(k.name.to_string(), text);
    }
    v
}

/// What a form asks of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Change table `index` (from 0), which the form knew as `ident`.
    Table {
        /// Which one.
        index: usize,
        /// Its callsign, name or pattern when the page was made.
        ident: String,
    },
    /// Add a table of a list section.
    New,
    /// Remove table `index`, known as `ident`.
    Remove {
        /// Which one.
        index: usize,
        /// Its callsign, name or pattern when the page was made.
        ident: String,
    },
}

/// One form's change: which table, and the fields as posted (a flag present when ticked).
#[derive(Debug, Clone)]
pub struct Change {
    /// The section.
    pub section: Section,
    /// Which table, or a new one, or one to remove.
    pub target: Target,
    /// The posted fields, by key name.
    pub fields: BTreeMap<String, String>,
}

/// The file's text with `change` made; errors name the key as the checker does.
pub fn apply(text: &str, change: &Change) -> Result<String, KeyError> {
    let s = change.section;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| KeyError::new("the file", format!("{e}")))?;
    if !s.is_list() {
        let table = doc
            .entry(s.name())
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_mut()
            .ok_or_else(|| KeyError::new(s.key_of(0, ""), "expected a table"))?;
        set_fields(table, s, &change.fields).map_err(|e| e.within(&s.key_of(0, "")))?;
        return Ok(doc.to_string());
    }
    let list = doc
        .entry(s.name())
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(|| KeyError::new(format!("[[{}]]", s.name()), "expected [[tables]]"))?;
    match &change.target {
        Target::New => {
            let mut t = Table::new();
            set_fields(&mut t, s, &change.fields)
                .map_err(|e| e.within(&format!("[[{}]] (new)", s.name())))?;
            list.push(t);
        }
        Target::Table { index, ident } | Target::Remove { index, ident } => {
            let key = s.key_of(*index, ident);
            let t = list
                .get_mut(*index)
                .filter(|t| t.get(s.ident()).and_then(Item::as_str).unwrap_or("") == ident)
                .ok_or_else(|| {
                    KeyError::new(
                        key.clone(),
                        "not in the file any more (changed meanwhile): load the page again",
                    )
                })?;
            if matches!(change.target, Target::Remove { .. }) {
                list.remove(*index);
            } else {
                set_fields(t, s, &change.fields).map_err(|e| e.within(&key))?;
            }
        }
    }
    Ok(doc.to_string())
}

/// Sets each key of `s` in `table` from `posted`; a key whose value is the same as the file's
/// is left exactly as written.
fn set_fields(
    table: &mut Table,
    s: Section,
    posted: &BTreeMap<String, String>,
) -> Result<(), KeyError> {
    for k in s.keys() {
        let v = posted.get(k.name).map_or("", |v| v.trim());
        // A key with no default is required (a partner's callsign, a rule's action).
        if v.is_empty() && k.default.is_empty() && !matches!(k.field, Field::Flag | Field::Secret) {
            let what = match k.field {
                Field::Choice(words) => format!("choose one of {}", words.join(", ")),
                _ => "required".to_string(),
            };
            return Err(KeyError::new(k.name, what));
        }
        let new = match k.field {
            Field::Secret if v.is_empty() => continue,
            Field::Flag => Some(Value::from(!v.is_empty() && v != "false")),
            Field::Number if !v.is_empty() => {
                Some(Value::from(v.parse::<i64>().map_err(|_| {
                    KeyError::new(k.name, format!("expected a whole number, got {v:?}"))
                })?))
            }
            Field::List => {
                let items: Vec<&str> = v
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|x| !x.is_empty())
                    .collect();
                (!items.is_empty()).then(|| Value::Array(items.into_iter().collect::<Array>()))
            }
            Field::Choice(words) if !v.is_empty() && !words.contains(&v) => {
                return Err(KeyError::new(
                    k.name,
                    format!("expected one of {}, got {v:?}", words.join(", ")),
                ))
            }
            _ if v.is_empty() => None,
            _ => Some(Value::from(v)),
        };
        set(table, k, new);
    }
    Ok(())
}

/// Puts `new` under `k` (`None`: removes it), keeping the old value's comments and spacing; a
/// value equal to the old one (and a flag absent and false) leaves the file as it was.
fn set(table: &mut Table, k: &Key, new: Option<Value>) {
    let old = table.get_mut(k.name).and_then(Item::as_value_mut);
    match (old, new) {
        (None, None) => {}
        (None, Some(Value::Boolean(b))) if !*b.value() => {}
        (None, Some(v)) => {
            table.insert(k.name, Item::Value(v));
        }
        (Some(_), None) => {
            table.remove(k.name);
        }
        (Some(old), Some(v)) if same(old, &v) => {}
        (Some(old), Some(mut v)) => {
            *v.decor_mut() = old.decor().clone();
            *old = v;
        }
    }
}

/// Whether two values are the same value, however written.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        (Value::Boolean(x), Value::Boolean(y)) => x.value() == y.value(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# my BBS\n[station]\ncallsign = \"N0ABC\"\n\n\
        # the neighbour up the hill\n[[partner]]\ncallsign = \"N0BBB\"\n\
        # call it often\ninterval = \"10m\"   # keep in step with N0BBB's sysop\n\
        routes = [ \"N0BBB\", \"WW\" ]\npassword = \"s3cret\"\n\n\
        [[partner]]\ncallsign = \"N0CCC\"\n\n[limits]\n# be generous\nmax_message = 4096\n";

    fn change(section: Section, target: Target, fields: &[(&str, &str)]) -> Change {
        Change {
            section,
            target,
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn partner(index: usize, ident: &str) -> Target {
        Target::Table {
            index,
            ident: ident.into(),
        }
    }

    #[test]
    fn a_changed_interval_keeps_every_comment_and_the_rest_as_written() {
        let f = [
            ("callsign", "N0BBB"),
            ("interval", "5m"),
            ("routes", "N0BBB, WW"),
            ("password", ""),
        ];
        let out = apply(FILE, &change(Section::Partner, partner(0, "N0BBB"), &f)).unwrap();
        assert_eq!(
            out,
            FILE.replace("interval = \"10m\"", "interval = \"5m\""),
            "{out}"
        );
        // The checker reads it; the blank password kept the password.
        let l = super::super::parse(&out, "t.toml", std::path::Path::new(".")).unwrap();
        assert_eq!(
            l.partners[0].interval,
            Some(std::time::Duration::from_secs(300))
        );
        assert_eq!(l.partners[0].secret.as_deref(), Some("s3cret"));
    }

    #[test]
    fn blank_removes_flags_set_and_lists_replace() {
        let f = [
            ("callsign", "N0CCC"),
            ("connect", "tcp:ccc.example:6300"),
            ("routes", "n0ccc #nca"),
            ("telnet", "on"),
            ("password", "pw"),
        ];
        let out = apply(FILE, &change(Section::Partner, partner(1, "N0CCC"), &f)).unwrap();
        assert!(
            out.ends_with(
                "[[partner]]\ncallsign = \"N0CCC\"\nconnect = \"tcp:ccc.example:6300\"\n\
                 routes = [\"n0ccc\", \"#nca\"]\npassword = \"pw\"\ntelnet = true\n\n\
                 [limits]\n# be generous\nmax_message = 4096\n"
            ),
            "{out}"
        );
        // Blank: the key goes (its default applies); its neighbours' comments stay.
        let f = [("callsign", "N0BBB"), ("routes", "N0BBB WW")];
        let out = apply(FILE, &change(Section::Partner, partner(0, "N0BBB"), &f)).unwrap();
        assert!(!out.contains("interval"), "{out}");
        assert!(
            out.contains("# the neighbour up the hill\n[[partner]]"),
            "{out}"
        );
    }

    #[test]
    fn tables_are_added_and_removed_and_a_stale_form_is_refused() {
        let f = [("callsign", "N0DDD"), ("interval", "1h")];
        let out = apply(FILE, &change(Section::Partner, Target::New, &f)).unwrap();
        let at = out.find("callsign = \"N0DDD\"").unwrap();
        assert!(
            at < out.find("[limits]").unwrap(),
            "after the others: {out}"
        );
        let gone = Target::Remove {
            index: 0,
            ident: "N0BBB".into(),
        };
        let out = apply(FILE, &change(Section::Partner, gone, &[])).unwrap();
        assert!(!out.contains("N0BBB") && out.contains("N0CCC"), "{out}");
        let e = apply(FILE, &change(Section::Partner, partner(0, "N0CCC"), &[])).unwrap_err();
        assert!(e.key.starts_with("[[partner]] #1 (N0CCC)"), "{e}");
        // A new [housekeeping] table, and a number that is not one.
        let out = apply(
            FILE,
            &change(Section::Housekeeping, Target::New, &[("hour", "4")]),
        )
        .unwrap();
        assert!(out.ends_with("[housekeeping]\nhour = 4\n"), "{out}");
        let e = apply(
            FILE,
            &change(Section::Limits, Target::New, &[("max_message", "lots")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "[limits] max_message");
    }

    #[test]
    fn the_page_shows_what_the_file_says_and_never_a_secret() {
        let s = show(FILE).unwrap();
        let p = &s.tables["partner"][0];
        assert_eq!(p["interval"], "10m");
        assert_eq!(p["routes"], "N0BBB, WW");
        assert_eq!(p["password"], "set");
        assert!(!p.contains_key("connect"));
        assert_eq!(s.tables["limits"][0]["max_message"], "4096");
        assert_eq!(s.tables["housekeeping"][0].len(), 0);
        assert_ne!(
            s.version,
            show(&FILE.replace("10m", "11m")).unwrap().version
        );
    }

    #[test]
    fn the_defaults_shown_are_the_defaults() {
        let h = super::super::housekeeping::HousekeepingCfg::default();
        let l = super::super::LimitsCfg::default();
        let shown = |keys: &[Key], name: &str| {
            keys.iter()
                .find(|k| k.name == name)
                .unwrap()
                .default
                .to_string()
        };
        for (name, v) in [
            ("hour", h.hour),
            ("personal_read", h.personal_read),
            ("personal_unread", h.personal_unread),
            ("bulletin", h.bulletin),
            ("killed", h.killed),
            ("bid", h.bid),
            ("partial", h.partial),
        ] {
            assert_eq!(shown(HOUSEKEEPING, name), v.to_string(), "{name}");
        }
        for (name, v) in [
            ("max_line", l.max_line.to_string()),
            ("max_message", l.max_message.to_string()),
            ("login_attempts", l.login_attempts.to_string()),
            ("lockout_after", l.lockout_after.to_string()),
            ("idle_timeout", l.idle_timeout.clone()),
            ("login_timeout", l.login_timeout.clone()),
            ("password_checks", l.password_checks.to_string()),
            ("messages_per_hour", l.messages_per_hour.to_string()),
            ("kb_per_day", l.kb_per_day.to_string()),
        ] {
            assert_eq!(shown(LIMITS, name), v, "{name}");
        }
    }
}
