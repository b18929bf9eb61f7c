//! FETCH: which items a request names, and each item of one message written out (FLAGS, UID,
//! sizes, dates, ENVELOPE, BODY/BODYSTRUCTURE from the rendered parts, BODY[section]).

use imap_codec::imap_types::fetch::{
    Macro, MacroOrMessageDataItemNames, MessageDataItemName, Part, Section,
};

use super::Msg;
use crate::render::{imap_date, rfc5322_date, Rendered};
use crate::Settings;

/// A FETCH item, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// FLAGS.
    Flags,
    /// UID.
    Uid,
    /// RFC822.SIZE.
    Size,
    /// INTERNALDATE.
    Date,
    /// ENVELOPE.
    Envelope,
    /// BODY (false) or BODYSTRUCTURE (true).
    Structure(bool),
    /// BODY[...] and RFC822*: the name to answer with, what, from where, peek.
    Section {
        /// The item name as answered (`BODY[HEADER.FIELDS (FROM)]`, `RFC822`).
        name: String,
        /// The bytes asked for.
        what: Want,
        /// `<origin.count>`.
        partial: Option<(u32, u32)>,
        /// Does not set `\Seen`.
        peek: bool,
    },
}

/// Which bytes of a message a section names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// All of it.
    All,
    /// The top header.
    Header,
    /// The top header's lines for these fields (`not`: all but these).
    Fields(Vec<String>, bool),
    /// The body after the top header.
    Text,
    /// The body of the part at this path (`1.2`: the second part of the first).
    Part(Vec<usize>),
    /// That part's MIME header.
    Mime(Vec<usize>),
    /// The header of the message in that `message/rfc822` part.
    MsgHeader(Vec<usize>),
    /// The body of the message in that `message/rfc822` part.
    MsgText(Vec<usize>),
    /// Nothing this server has (a nested part's header fields).
    Empty,
}

impl Item {
    /// Whether the message must be rendered for it.
    pub fn needs_render(&self) -> bool {
        matches!(
            self,
            Item::Envelope | Item::Structure(_) | Item::Section { .. }
        )
    }
}

/// The items a FETCH names; UID first for a UID FETCH.
pub fn items(names: &MacroOrMessageDataItemNames<'_>, uid: bool) -> Vec<Item> {
    let mut out = Vec::new();
    if uid {
        out.push(Item::Uid);
    }
    let list: Vec<MessageDataItemName<'_>> = match names {
        MacroOrMessageDataItemNames::Macro(m) => {
            let mut l = vec![
                MessageDataItemName::Flags,
                MessageDataItemName::InternalDate,
                MessageDataItemName::Rfc822Size,
            ];
            if matches!(m, Macro::All | Macro::Full) {
                l.push(MessageDataItemName::Envelope);
            }
            if matches!(m, Macro::Full) {
                l.push(MessageDataItemName::Body);
            }
            l
        }
        MacroOrMessageDataItemNames::MessageDataItemNames(l) => l.clone(),
    };
    for n in &list {
        let item = match n {
            MessageDataItemName::Flags => Item::Flags,
            MessageDataItemName::Uid => Item::Uid,
            MessageDataItemName::Rfc822Size => Item::Size,
            MessageDataItemName::InternalDate => Item::Date,
            MessageDataItemName::Envelope => Item::Envelope,
            MessageDataItemName::Body => Item::Structure(false),
            MessageDataItemName::BodyStructure => Item::Structure(true),
            MessageDataItemName::Rfc822 => section_item("RFC822", Want::All, None, false),
            MessageDataItemName::Rfc822Header => {
                section_item("RFC822.HEADER", Want::Header, None, true)
            }
            MessageDataItemName::Rfc822Text => section_item("RFC822.TEXT", Want::Text, None, false),
            MessageDataItemName::BodyExt {
                section,
                partial,
                peek,
            } => {
                let (spec, want) = section_of(section.as_ref());
                let partial = partial.map(|(o, c)| (o, c.get()));
                section_item(&format!("BODY[{spec}]"), want, partial, *peek)
            }
            _ => continue,
        };
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn section_item(name: &str, what: Want, partial: Option<(u32, u32)>, peek: bool) -> Item {
    Item::Section {
        name: name.to_string(),
        what,
        partial,
        peek,
    }
}

fn part_path(p: &Part) -> String {
    p.0.as_ref()
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

fn numbers(p: &Part) -> Vec<usize> {
    p.0.as_ref().iter().map(|n| n.get() as usize).collect()
}

/// The section as written back, and what it wants.
fn section_of(s: Option<&Section<'_>>) -> (String, Want) {
    let fields =
        |f: &imap_codec::imap_types::core::Vec1<imap_codec::imap_types::core::AString<'_>>| {
            f.as_ref()
                .iter()
                .map(|a| String::from_utf8_lossy(a.as_ref()).to_ascii_uppercase())
                .collect::<Vec<_>>()
        };
    let top = |p: &Option<Part>| p.is_none();
    match s {
        None => (String::new(), Want::All),
        Some(Section::Header(p)) if top(p) => ("HEADER".into(), Want::Header),
        Some(Section::Text(p)) if top(p) => ("TEXT".into(), Want::Text),
        Some(Section::HeaderFields(p, f)) if top(p) => {
            let f = fields(f);
            (
                format!("HEADER.FIELDS ({})", f.join(" ")),
                Want::Fields(f, false),
            )
        }
        Some(Section::HeaderFieldsNot(p, f)) if top(p) => {
            let f = fields(f);
            (
                format!("HEADER.FIELDS.NOT ({})", f.join(" ")),
                Want::Fields(f, true),
            )
        }
        Some(Section::Header(Some(p))) => (
            format!("{}.HEADER", part_path(p)),
            Want::MsgHeader(numbers(p)),
        ),
        Some(Section::Text(Some(p))) => {
            (format!("{}.TEXT", part_path(p)), Want::MsgText(numbers(p)))
        }
        Some(Section::Part(p)) => (part_path(p), Want::Part(numbers(p))),
        Some(Section::Mime(p)) => (format!("{}.MIME", part_path(p)), Want::Mime(numbers(p))),
        Some(other) => (spec_text(other), Want::Empty),
    }
}

fn spec_text(s: &Section<'_>) -> String {
    let (p, what) = match s {
        Section::Header(p) => (p, "HEADER"),
        Section::Text(p) => (p, "TEXT"),
        Section::HeaderFields(p, _) => (p, "HEADER"),
        Section::HeaderFieldsNot(p, _) => (p, "HEADER"),
        Section::Part(p) | Section::Mime(p) => (&Some(p.clone()), "MIME"),
    };
    match p {
        Some(p) => format!("{}.{what}", part_path(p)),
        None => what.to_string(),
    }
}

/// An IMAP string: quoted when it can be, else a literal.
pub fn string(v: &[u8]) -> String {
    if v.iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        format!("\"{}\"", String::from_utf8_lossy(v))
    } else {
        format!("{{{}}}\r\n{}", v.len(), String::from_utf8_lossy(v))
    }
}

/// The flags of a message.
pub fn flags(m: &Msg) -> String {
    let mut f = Vec::new();
    if m.entry.seen {
        f.push("\\Seen");
    }
    if m.entry.answered {
        f.push("\\Answered");
    }
    if m.deleted {
        f.push("\\Deleted");
    }
    format!("FLAGS ({})", f.join(" "))
}

/// Writes one FETCH item of message `m` to `out` (raw bytes: sections go as literals).
pub fn write_item(item: &Item, m: &Msg, r: Option<&Rendered>, s: &Settings, out: &mut Vec<u8>) {
    match item {
        Item::Flags => out.extend_from_slice(flags(m).as_bytes()),
        Item::Uid => out.extend_from_slice(format!("UID {}", m.entry.number).as_bytes()),
        Item::Size => {
            let size = r.map_or(m.entry.size, |r| r.bytes.len() as u64);
            out.extend_from_slice(format!("RFC822.SIZE {size}").as_bytes())
        }
        Item::Date => out.extend_from_slice(
            format!("INTERNALDATE \"{}\"", imap_date(m.entry.created)).as_bytes(),
        ),
        Item::Envelope => {
            out.extend_from_slice(format!("ENVELOPE {}", envelope(m, r, s)).as_bytes())
        }
        Item::Structure(ext) => {
            let name = if *ext { "BODYSTRUCTURE" } else { "BODY" };
            let st = r
                .map(|r| structure(r, *ext))
                .unwrap_or_else(|| "NIL".into());
            out.extend_from_slice(format!("{name} {st}").as_bytes())
        }
        Item::Section {
            name,
            what,
            partial,
            ..
        } => {
            let bytes = r.map(|r| section_bytes(r, what)).unwrap_or_default();
            let (bytes, name) = match partial {
                Some((o, c)) => {
                    let from = (*o as usize).min(bytes.len());
                    let to = from.saturating_add(*c as usize).min(bytes.len());
                    (bytes[from..to].to_vec(), format!("{name}<{o}>"))
                }
                None => (bytes, name.clone()),
            };
            out.extend_from_slice(format!("{name} {{{}}}\r\n", bytes.len()).as_bytes());
            out.extend_from_slice(&bytes);
        }
    }
}

/// The bytes a section names.
fn section_bytes(r: &Rendered, what: &Want) -> Vec<u8> {
    let range = match what {
        Want::All => Some(0..r.bytes.len()),
        Want::Header => Some(0..r.header_len),
        Want::Text => Some(r.header_len..r.bytes.len()),
        Want::Fields(names, not) => {
            return header_fields(&r.bytes[..r.header_len], names, *not);
        }
        Want::Part(path) => find(r, path).map(|p| p.body.clone()),
        // A single-part message's part 1 is its body; its header is no MIME header.
        Want::Mime(path) => find(r, path)
            .filter(|_| r.multipart || path.len() > 1)
            .map(|p| p.mime.clone()),
        Want::MsgHeader(path) => message_in(r, path).map(|m| m.mime.clone()),
        Want::MsgText(path) => message_in(r, path).map(|m| m.body.clone()),
        Want::Empty => None,
    };
    range.map(|x| r.bytes[x].to_vec()).unwrap_or_default()
}

/// The part a section's numbers name (RFC 3501 6.4.5): each number picks a part of a
/// multipart; in a `message/rfc822` part the numbers go on in the message inside it, whose
/// part 1 is its body when it is not a multipart.
fn find<'r>(r: &'r Rendered, path: &[usize]) -> Option<&'r crate::render::Part> {
    let (&first, rest) = path.split_first()?;
    let mut part = match (r.multipart, first) {
        (true, n) => r.parts.get(n.checked_sub(1)?)?,
        (false, 1) => r.parts.first()?,
        (false, _) => return None,
    };
    for &n in rest {
        let inside = match part.media.0.as_str() {
            "MESSAGE" => part.inner.first()?,
            "MULTIPART" => part,
            _ => return None,
        };
        part = match (inside.media.0.as_str(), n) {
            ("MULTIPART", n) => inside.inner.get(n.checked_sub(1)?)?,
            (_, 1) if !std::ptr::eq(inside, part) => inside,
            _ => return None,
        };
    }
    Some(part)
}

/// The message inside the `message/rfc822` part at `path`.
fn message_in<'r>(r: &'r Rendered, path: &[usize]) -> Option<&'r crate::render::Part> {
    find(r, path)
        .filter(|p| p.media == ("MESSAGE".into(), "RFC822".into()))
        .and_then(|p| p.inner.first())
}

/// The header lines (with their continuations) whose names are (or are not) in `names`,
/// then the blank line.
fn header_fields(header: &[u8], names: &[String], not: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut keep = false;
    for line in header.split_inclusive(|&b| b == b'\n') {
        if line == b"\r\n" {
            break;
        }
        if !line.starts_with(b" ") && !line.starts_with(b"\t") {
            let name = line.split(|&b| b == b':').next().unwrap_or_default();
            let name = String::from_utf8_lossy(name).to_ascii_uppercase();
            keep = names.contains(&name) != not;
        }
        if keep {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn nstring(v: Option<&str>) -> String {
    v.map_or_else(|| "NIL".into(), |v| string(v.as_bytes()))
}

fn address(email: &str) -> String {
    let (user, host) = email.split_once('@').unwrap_or((email, ""));
    format!(
        "((NIL NIL {} {}))",
        string(user.as_bytes()),
        string(host.as_bytes())
    )
}

/// The ENVELOPE from the rendered header's fields.
fn envelope(m: &Msg, r: Option<&Rendered>, s: &Settings) -> String {
    let header = r.map(|r| &r.bytes[..r.header_len]).unwrap_or_default();
    let from =
        header_field(header, "From").unwrap_or_else(|| crate::addr::email(&m.entry.from, "", s));
    envelope_of(header, Some(&rfc5322_date(m.entry.created)), Some(&from))
}

/// The value of a header field, unfolded.
fn header_field(header: &[u8], name: &str) -> Option<String> {
    let f = header_fields(header, &[name.to_ascii_uppercase()], false);
    let text = String::from_utf8_lossy(&f).into_owned();
    let value = text.split_once(':')?.1.replace("\r\n ", " ");
    Some(value.trim().to_string())
}

/// An ENVELOPE from `header`'s fields, with this date and sender.
fn envelope_of(header: &[u8], date: Option<&str>, from: Option<&str>) -> String {
    let field = |name: &str| header_field(header, name);
    let to = field("To").map_or_else(|| "NIL".into(), |t| address(&t));
    let cc = field("Cc").map_or_else(
        || "NIL".into(),
        |c| {
            let list: Vec<String> = c
                .split(',')
                .map(|a| address(a.trim()).trim_matches(['(', ')']).to_string())
                .collect();
            format!("(({}))", list.join(")("))
        },
    );
    format!(
        "({} {} {f} {f} {f} {to} {cc} NIL {} {})",
        nstring(date),
        nstring(field("Subject").as_deref()),
        nstring(field("In-Reply-To").as_deref()),
        nstring(field("Message-ID").as_deref()),
        f = from.map_or_else(|| "NIL".into(), address),
    )
}

/// BODY or BODYSTRUCTURE (`ext`: with the extension data, attachments' disposition).
pub fn structure(r: &Rendered, ext: bool) -> String {
    if !r.multipart {
        return r
            .parts
            .first()
            .map_or_else(|| "NIL".into(), |p| body(r, p, ext));
    }
    multipart(
        r,
        &r.parts,
        &r.subtype,
        &[("BOUNDARY".into(), r.boundary.clone())],
        ext,
    )
}

/// A multipart's `body-type-mpart` (RFC 3501 9): each part, then the subtype.
fn multipart(
    r: &Rendered,
    parts: &[crate::render::Part],
    subtype: &str,
    params: &[(String, String)],
    ext: bool,
) -> String {
    let mut s = String::from("(");
    for p in parts {
        s.push_str(&body(r, p, ext));
    }
    s.push(' ');
    s.push_str(&string(subtype.as_bytes()));
    if ext {
        s.push_str(&format!(" {} NIL NIL", param_list(params)));
    }
    s.push(')');
    s
}

/// One part's `body`: a multipart's parts, else its type and fields, and for a
/// `message/rfc822` the ENVELOPE and structure of the message inside.
fn body(r: &Rendered, p: &crate::render::Part, ext: bool) -> String {
    if p.media.0 == "MULTIPART" && !p.inner.is_empty() {
        return multipart(r, &p.inner, &p.media.1, &p.params, ext);
    }
    let params: Vec<(String, String)> = p
        .params
        .iter()
        .filter(|(k, _)| k != "BOUNDARY")
        .cloned()
        .collect();
    // A multipart or message not read (past the depth or part limit, or without a boundary)
    // is offered as the bytes it is: the grammar gives a message/rfc822 an ENVELOPE.
    let unread = p.inner.is_empty()
        && (p.media.0 == "MULTIPART" || p.media == ("MESSAGE".into(), "RFC822".into()));
    let (kind, subtype) = match unread {
        true => ("APPLICATION", "OCTET-STREAM"),
        false => (p.media.0.as_str(), p.media.1.as_str()),
    };
    let mut s = format!(
        "({} {} {} NIL NIL {} {}",
        string(kind.as_bytes()),
        string(subtype.as_bytes()),
        param_list(&params),
        string(p.encoding.as_bytes()),
        p.body.len(),
    );
    match (kind, p.inner.first()) {
        ("MESSAGE", Some(m)) => {
            let header = &r.bytes[m.mime.clone()];
            let date = header_field(header, "Date");
            let from = header_field(header, "From");
            let env = envelope_of(header, date.as_deref(), from.as_deref());
            s.push_str(&format!(" {env} {} {}", body(r, m, ext), p.lines));
        }
        ("TEXT", _) => s.push_str(&format!(" {}", p.lines)),
        _ => {}
    }
    if ext {
        match &p.name {
            Some(n) => s.push_str(&format!(
                " NIL (\"ATTACHMENT\" (\"FILENAME\" {})) NIL",
                string(n.as_bytes())
            )),
            None => s.push_str(" NIL NIL NIL"),
        }
    }
    s.push(')');
    s
}

/// A `body-fld-param`: NIL when there are none (an empty list is not in the grammar).
fn param_list(params: &[(String, String)]) -> String {
    if params.is_empty() {
        return "NIL".into();
    }
    let list: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{} {}", string(k.as_bytes()), string(v.as_bytes())))
        .collect();
    format!("({})", list.join(" "))
}
