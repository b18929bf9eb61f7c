//! The sysop's `/config` page: the partners, radio ports, hold/reject rules, housekeeping and
//! limits of the config file as forms, one per table. Saving changes only that table's keys in
//! the file (comments and layout stay: `config::edit`), checks the whole file as `qtc check`
//! does (an error names the key and nothing is written), writes it in one step, and applies it
//! as a reload (SIGHUP) does, saying what needs a restart. Each change is logged with who made
//! it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};

use super::pages::{confirm, csrf, esc, page};
use super::session::WebSession;
use super::{need_sysop, need_sysop_csrf, Page, Web};
use crate::config::edit::{self, Change, Field, Section, Shown, Target, Values};
use crate::reload::SaveError;

/// What the last post did, shown at the top (and its form filled in as posted if it failed).
struct Note {
    change: Change,
    line: String,
    ok: bool,
}

/// `GET /config`.
pub async fn show(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_sysop(&web, &headers).await?;
    Ok(Html(render(&web, &s, None)).into_response())
}

/// `POST /config`: one form's change (save, add, remove after a confirmation).
pub async fn save(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Form(posted): Form<Vec<(String, String)>>,
) -> Page {
    let fields: BTreeMap<String, String> = posted.into_iter().collect();
    let get = |k: &str| fields.get(k).map_or("", String::as_str);
    let s = need_sysop_csrf(&web, &headers, get("csrf")).await?;
    let Some(section) = Section::from_name(get("section")) else {
        return Ok((StatusCode::BAD_REQUEST, Html(render(&web, &s, None))).into_response());
    };
    let (index, ident) = (get("index").parse().unwrap_or(0), get("ident").to_string());
    // `do` is the button; `action` is a rule's key.
    let target = match get("do") {
        "add" => Target::New,
        "remove" => Target::Remove { index, ident },
        _ => Target::Table { index, ident },
    };
    if let (Target::Remove { index, ident }, false) = (&target, get("confirm") == "yes") {
        let what = section.key_of(*index, ident);
        let index = index.to_string();
        return Ok(Html(confirm(
            &s,
            "Remove from the configuration",
            &format!("Remove {what} from the config file?"),
            "/config",
            &[
                ("section", section.name()),
                ("index", &index),
                ("ident", ident),
                ("version", get("version")),
                ("do", "remove"),
            ],
            "/config",
        ))
        .into_response());
    }
    let version = get("version").to_string();
    let change = Change {
        section,
        target,
        fields,
    };
    let edit = {
        let change = change.clone();
        move |text: &str| {
            if edit::version(text) != version {
                return Err(
                    "the file changed since this page was loaded (someone else edited \
                            it): nothing was saved; here it is as it is now"
                        .to_string(),
                );
            }
            edit::apply(text, &change).map_err(|e| e.to_string())
        }
    };
    let saved = web.reloader.save(&s.call.to_string(), edit).await;
    let (line, ok) = match &saved {
        Ok(applied) => (format!("Saved. {}", capital(&applied.line())), true),
        Err(e) => (format!("Not saved: {e}"), false),
    };
    tracing::info!(by = %s.call, section = section.name(), ok, outcome = %line, "web: configuration form");
    let status = match saved {
        Ok(_) => StatusCode::OK,
        Err(SaveError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let note = Note { change, line, ok };
    Ok((status, Html(render(&web, &s, Some(&note)))).into_response())
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The page: the file as it is now, with `note` (the last post's outcome) first.
fn render(web: &Web, s: &WebSession, note: Option<&Note>) -> String {
    let mut b = String::new();
    if let Some(n) = note {
        let (id, class) = if n.ok {
            ("result", "msg")
        } else {
            ("error", "err")
        };
        let _ = write!(b, "<p id=\"{id}\" class=\"{class}\">{}</p>", esc(&n.line));
    }
    let Some(path) = web.reloader.path() else {
        b.push_str(
            "<p>qtc runs on the built-in defaults: there is no config file to change. \
             Write one with <code>qtc init FILE</code> and start qtc with <code>-c FILE</code>.</p>",
        );
        return page(s, "Configuration", &b);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            let _ = write!(
                b,
                "<p class=\"err\">Cannot read {}: {}</p>",
                esc(&path.display().to_string()),
                esc(&e.to_string())
            );
            return page(s, "Configuration", &b);
        }
    };
    let _ = write!(
        b,
        "<p>The file <code>{}</code>. Saving a form changes only its table (comments and \
         layout stay), checks the file as <code>qtc check</code> does, and applies it as a \
         reload does: partners, rules and housekeeping at once; the rest says it needs a \
         restart. Blank: the default (shown greyed); a blank password keeps the password.</p>",
        esc(&path.display().to_string())
    );
    if !writable(path) {
        b.push_str(
            "<p class=\"err\" id=\"readonly\">The daemon cannot write this file or its \
             directory, so saving will fail: see docs/operating.md, \"Configuration on the \
             web\".</p>",
        );
    }
    match edit::show(&text) {
        Ok(shown) => b.push_str(&sections(s, &shown, note)),
        Err(e) => {
            let _ = write!(
                b,
                "<p class=\"err\">The file is not valid TOML: {}</p>",
                esc(&e)
            );
        }
    }
    page(s, "Configuration", &b)
}

/// Whether the daemon may replace the file (write it, and make a file beside it).
fn writable(path: &std::path::Path) -> bool {
    use nix::unistd::{access, AccessFlags};
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    access(path, AccessFlags::W_OK).is_ok()
        && access(dir.unwrap_or(std::path::Path::new(".")), AccessFlags::W_OK).is_ok()
}

/// A section's title and what the page says about it.
fn heading(section: Section) -> (&'static str, &'static str) {
    match section {
        Section::Partner => (
            "Partners",
            "Neighbour BBSes (<code>[[partner]]</code>): how qtc calls each, up to which \
             protocol and the <code>@</code> routes it takes. With an <code>interval</code> \
             (e.g. <code>30m</code>; <code>0</code>: only on demand) new mail for it goes at \
             once and mail left is tried again that much later; <code>poll</code> (e.g. \
             <code>2h</code>; <code>0</code>: never; empty: the interval) calls it with \
             nothing to send, to collect its mail. Applied at once; a session in progress \
             keeps its settings.",
        ),
        Section::Port => (
            "Radio ports",
            "<code>[[port]]</code>: the device (the key its kind uses), the modem's speed \
             and the NET/ROM quality of neighbours heard there (0: no NET/ROM). Other keys \
             (AX.25 timers, AXUDP peers) are kept as written. Needs a restart.",
        ),
        Section::Rule => (
            "Hold and reject rules",
            "<code>[[rule]]</code>: mail whose field matches the pattern (<code>*</code>, \
             <code>?</code>) is held for the sysop or rejected. Applied at once.",
        ),
        Section::Housekeeping => (
            "Housekeeping",
            "<code>[housekeeping]</code>: the UTC hour of the daily run and lifetimes in days \
             (0: forever). Applied at once.",
        ),
        Section::Limits => (
            "Limits",
            "<code>[limits]</code>: sizes, logins, time limits and users' allowances. Needs a \
             restart.",
        ),
    }
}

/// Every section's forms.
fn sections(s: &WebSession, shown: &Shown, note: Option<&Note>) -> String {
    let mut b = String::new();
    for section in Section::ALL {
        let (title, about) = heading(section);
        let _ = write!(
            b,
            "<h2 id=\"{}\">{title}</h2><p>{about}</p>",
            section.name()
        );
        let tables = shown
            .tables
            .get(section.name())
            .map_or(&[][..], Vec::as_slice);
        for (i, values) in tables.iter().enumerate() {
            let ident = values.get(section.ident()).cloned().unwrap_or_default();
            let target = Target::Table { index: i, ident };
            b.push_str(&table_form(s, shown, section, &target, values, note));
        }
        if section.is_list() {
            let one = match section {
                Section::Partner => "a partner",
                Section::Port => "a radio port",
                _ => "a rule",
            };
            let _ = write!(b, "<h3>Add {one}</h3>");
            b.push_str(&table_form(
                s,
                shown,
                section,
                &Target::New,
                &Values::new(),
                note,
            ));
        }
    }
    b
}

/// One table's form; filled in as posted when `note` is this form's failed post.
fn table_form(
    s: &WebSession,
    shown: &Shown,
    section: Section,
    target: &Target,
    values: &Values,
    note: Option<&Note>,
) -> String {
    let failed = note
        .filter(|n| !n.ok && n.change.section == section && same_form(&n.change.target, target));
    let (index, ident) = match target {
        Target::Table { index, ident } | Target::Remove { index, ident } => {
            (*index, ident.as_str())
        }
        Target::New => (0, ""),
    };
    let id = match target {
        Target::New => format!("{}-new", section.name()),
        _ => format!("{}-{}", section.name(), index + 1),
    };
    let mut b = format!(
        "<form method=\"post\" action=\"/config\" class=\"config\" id=\"{id}\">{}\
         <input type=\"hidden\" name=\"section\" value=\"{}\">\
         <input type=\"hidden\" name=\"index\" value=\"{index}\">\
         <input type=\"hidden\" name=\"ident\" value=\"{}\">\
         <input type=\"hidden\" name=\"version\" value=\"{}\">",
        csrf(s),
        section.name(),
        esc(ident),
        esc(&shown.version)
    );
    if let Some(n) = failed {
        let _ = write!(b, "<p class=\"err\">{}</p>", esc(&n.line));
    }
    b.push_str("<div class=\"fields\">");
    for k in section.keys() {
        let now = match failed {
            Some(n) => n.change.fields.get(k.name).cloned(),
            None => values.get(k.name).cloned(),
        };
        b.push_str(&field(k, now.as_deref()));
    }
    b.push_str("</div><p>");
    match target {
        Target::New => b.push_str("<button name=\"do\" value=\"add\">Add</button>"),
        _ => {
            b.push_str("<button name=\"do\" value=\"save\">Save</button>");
            if section.is_list() {
                b.push_str(" <button name=\"do\" value=\"remove\">Remove…</button>");
            }
        }
    }
    b.push_str("</p></form>");
    b
}

fn same_form(posted: &Target, form: &Target) -> bool {
    match (posted, form) {
        (Target::New, Target::New) => true,
        (Target::Table { index: a, .. }, Target::Table { index: b, .. }) => a == b,
        _ => false,
    }
}

/// One key's input, labelled with its name in the file; `now` is the file's value (or what
/// was posted), `None` when the file does not set it.
fn field(k: &edit::Key, now: Option<&str>) -> String {
    let name = k.name;
    let hint = if k.default.is_empty() {
        String::new()
    } else {
        format!(" placeholder=\"{}\"", esc(k.default))
    };
    let input = match k.field {
        Field::Flag => {
            let on = now.is_some_and(|v| v == "true" || v == "on");
            let checked = if on { " checked" } else { "" };
            return format!(
                "<label class=\"flag\"><input type=\"checkbox\" name=\"{name}\" value=\"true\"{checked}> {name}</label>"
            );
        }
        Field::Secret => {
            let said = if now.is_some() {
                "set: blank keeps it"
            } else {
                "not set"
            };
            format!(
                "<input type=\"password\" name=\"{name}\" autocomplete=\"new-password\" placeholder=\"{said}\">"
            )
        }
        Field::Choice(words) => {
            let now = now.unwrap_or("");
            let mut o = format!("<select name=\"{name}\">");
            let blank = if k.default.is_empty() {
                "choose".to_string()
            } else {
                format!("default: {}", k.default)
            };
            let _ = write!(o, "<option value=\"\">{}</option>", esc(&blank));
            let mut found = now.is_empty();
            for w in words.iter() {
                let sel = if w.eq_ignore_ascii_case(now) {
                    found = true;
                    " selected"
                } else {
                    ""
                };
                let _ = write!(o, "<option{sel}>{w}</option>");
            }
            if !found {
                // A value the form does not know is kept as written, not silently changed.
                let _ = write!(o, "<option selected>{}</option>", esc(now));
            }
            o.push_str("</select>");
            o
        }
        Field::Number => format!(
            "<input name=\"{name}\" inputmode=\"numeric\" value=\"{}\"{hint}>",
            esc(now.unwrap_or(""))
        ),
        Field::Text | Field::List => format!(
            "<input name=\"{name}\" value=\"{}\"{hint}>",
            esc(now.unwrap_or(""))
        ),
    };
    format!("<label>{name}{input}</label>")
}
