//! The sysop's Users page: the list, adding a user, and one user's page: their name and home
//! BBS (as `N` and `NH` set them; the sysop may change them), where and when they last logged
//! in with a password, the sysop and BBS flags, a new password, lock or unlock password logins,
//! or delete (asked again).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Form, Path, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};
use qtc_callsign::Callsign;
use qtc_mail::{MessageStore, StoreError, User};

use super::pages::{confirm, csrf, esc, page, result};
use super::session::WebSession;
use super::{need_sysop, need_sysop_csrf, store, store_down, ActionForm, Page, Web};

/// `GET /users`.
pub async fn list(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let (users, locked) = store(&web, |st| Ok((st.users()?, st.locked_users()?))).await?;
    Ok(Html(list_page(&s, &users, &locked)).into_response())
}

fn list_page(s: &WebSession, users: &[User], locked: &[String]) -> String {
    let mut b = String::from(
        "<table id=\"users\"><tr><th>Call</th><th>Sysop</th><th>BBS</th><th>Locked</th><th>Name</th>\
         <th>Home BBS</th></tr>",
    );
    for u in users {
        let yes = |v: bool| if v { "yes" } else { "" };
        let _ = write!(
            b,
            "<tr><td><a href=\"/users/{c}\">{c}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            yes(u.sysop),
            yes(u.bbs),
            yes(locked.contains(&u.call.to_string())),
            esc(&qtc_mail::text::visible_line(&u.name)),
            esc(&qtc_mail::text::visible_line(&u.home_bbs)),
            c = esc(&u.call.to_string()),
        );
    }
    let _ = write!(
        b,
        "</table><h2>Add a user</h2><form method=\"post\" action=\"/users\">{}\
         <p><label>Callsign <input name=\"call\" required></label> \
         <label>Password <input name=\"password\" type=\"password\" autocomplete=\"new-password\" required></label></p>\
         <p><label><input type=\"checkbox\" name=\"sysop\" value=\"1\"> sysop</label> \
         <label><input type=\"checkbox\" name=\"bbs\" value=\"1\"> BBS (forwarding partner)</label></p>\
         <p><button>Add</button></p></form>",
        csrf(s)
    );
    page(s, "Users", &b)
}

#[derive(serde::Deserialize)]
pub struct AddForm {
    csrf: String,
    call: String,
    password: String,
    #[serde(default)]
    sysop: Option<String>,
    #[serde(default)]
    bbs: Option<String>,
}

/// `POST /users`: adds a user.
pub async fn add(State(web): State<Arc<Web>>, headers: HeaderMap, Form(f): Form<AddForm>) -> Page {
    let s = need_sysop_csrf(&web, &headers, &f.csrf).await?;
    let call = match Callsign::parse_station(f.call.trim()) {
        Ok(c) => c.without_ssid(),
        Err(e) => {
            return Ok(Html(result(&s, "Users", &format!("error: {e}"), "/users")).into_response())
        }
    };
    if f.password.is_empty() {
        return Ok(Html(result(&s, "Users", "error: empty password", "/users")).into_response());
    }
    let (sysop, bbs) = (f.sysop.is_some(), f.bbs.is_some());
    let r = match web.passwords.hash(f.password).await {
        Ok(hash) => web
            .store
            .call(move |st| st.add_user_hashed(call, Some(&hash), sysop, bbs))
            .await
            .map_err(|_| store_down())?,
        Err(e) => Err(e),
    };
    let line = match r {
        Ok(()) => {
            tracing::info!(by = %s.call, %call, sysop, bbs, "web: user added");
            format!("added {call}")
        }
        Err(e) => format!("error: {e}"),
    };
    Ok(Html(result(&s, "Users", &line, "/users")).into_response())
}

/// `GET /users/{call}`: one user's settings.
pub async fn edit(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(call): Path<String>,
) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let call = call.to_ascii_uppercase();
    let c2 = call.clone();
    let found = store(&web, move |st| {
        let locked = st.locked_users()?.contains(&c2);
        let logins = match account(&c2) {
            Ok(a) => st.last_logins(a, LOGINS_SHOWN)?,
            Err(_) => Vec::new(),
        };
        Ok(user_named(st, &c2)?.map(|u| (u, locked, logins)))
    })
    .await?;
    let Some((u, locked, logins)) = found else {
        return Ok(Html(result(&s, "Users", &format!("no user {call}"), "/users")).into_response());
    };
    Ok(Html(edit_page(&s, &u, locked, &logins)).into_response())
}

/// Places of a user's last password logins shown on their page.
const LOGINS_SHOWN: usize = 5;

/// The name and home BBS a sysop may give a user, checked as safe to store and show.
fn profile(name: &str, home: &str) -> Result<(String, String), String> {
    let (name, home) = (name.trim(), home.trim().to_ascii_uppercase());
    if name.len() > 40 || name.chars().any(char::is_control) {
        return Err("error: a name is at most 40 bytes, without control characters".into());
    }
    let home_ok = home.len() <= qtc_mail::MAX_AT_LEN
        && home
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '#' | '-'));
    if !home_ok {
        return Err(format!(
            "error: a home BBS is an address such as N0BBS.#NCA.CA.USA.NOAM (at most {} \
             characters)",
            qtc_mail::MAX_AT_LEN
        ));
    }
    Ok((name.to_string(), home))
}

/// Where and when the user last logged in with a password.
fn logins_text(logins: &[(String, i64)]) -> String {
    if logins.is_empty() {
        return "none with a password in the last 30 days".into();
    }
    logins
        .iter()
        .map(|(place, at)| format!("{} from {}", crate::health::time(*at), esc(place)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The account a page's address names, upper case: text that is not a call as the store
/// keeps it names no user (the store's own answer for a call it does not know).
fn account(call: &str) -> Result<Callsign, StoreError> {
    Callsign::parse_station(call)
        .ok()
        .filter(|c| c.to_string() == call)
        .ok_or_else(|| StoreError::NoSuchUser(call.to_string()))
}

/// The user a page's address names ([`account`]), if there is one.
fn user_named(st: &mut dyn MessageStore, call: &str) -> Result<Option<User>, StoreError> {
    match account(call) {
        Ok(c) => st.user(c),
        Err(_) => Ok(None),
    }
}

fn edit_page(s: &WebSession, u: &User, locked: bool, logins: &[(String, i64)]) -> String {
    let url = format!("/users/{}", esc(&u.call.to_string()));
    let form = |action: &str, inner: &str, button: &str| {
        format!(
            "<form method=\"post\" action=\"{url}\">{}<input type=\"hidden\" name=\"action\" \
             value=\"{action}\">{inner} <button>{button}</button></form>",
            csrf(s)
        )
    };
    let checked = |v: bool| if v { " checked" } else { "" };
    let mut b = format!(
        "<p>Logins {}. Last logins: <span id=\"last-login\">{}</span>.</p><h2>Profile</h2>",
        if locked {
            "<b class=\"err\" id=\"locked\">locked</b>"
        } else {
            "allowed"
        },
        logins_text(logins)
    );
    b.push_str(&form(
        "profile",
        &format!(
            "<label>Name <input name=\"name\" id=\"name\" value=\"{}\" maxlength=\"40\"></label> \
             <label>Home BBS <input name=\"home\" id=\"home\" value=\"{}\" maxlength=\"{}\" \
             placeholder=\"N0BBS.#NCA.CA.USA.NOAM\"></label>",
            esc(&qtc_mail::text::visible_line(&u.name)),
            esc(&qtc_mail::text::visible_line(&u.home_bbs)),
            qtc_mail::MAX_AT_LEN
        ),
        "Save profile",
    ));
    b.push_str("<h2>Flags</h2>");
    b.push_str(&form(
        "flags",
        &format!(
            "<label><input type=\"checkbox\" name=\"sysop\" value=\"1\"{}> sysop</label> \
             <label><input type=\"checkbox\" name=\"bbs\" value=\"1\"{}> BBS (forwarding partner)</label>",
            checked(u.sysop),
            checked(u.bbs)
        ),
        "Save flags",
    ));
    b.push_str("<h2>Password</h2>");
    b.push_str(&form(
        "password",
        "<label>New password <input name=\"password\" type=\"password\" \
         autocomplete=\"new-password\" required></label>",
        "Set password",
    ));
    b.push_str(
        "<h2>Lock</h2><p>A locked user cannot log in with a password (telnet, \
                forwarding port, web, RF <code>SYS</code>, and mail clients: SMTP, POP3, IMAP, \
                NNTP) until unlocked; the password is kept. AX.25 logins by callsign are not \
                affected.</p>",
    );
    b.push_str(&if locked {
        form("unlock", "", "Unlock")
    } else {
        form("lock", "", "Lock")
    });
    b.push_str("<h2>Delete</h2>");
    b.push_str(&form("delete", "", "Delete…"));
    page(s, &format!("User {}", u.call), &b)
}

/// `POST /users/{call}`: flags, password, lock, unlock, delete (asked again).
pub async fn action(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(call): Path<String>,
    Form(f): Form<ActionForm>,
) -> Page {
    let s = need_sysop_csrf(&web, &headers, &f.csrf).await?;
    let call = call.to_ascii_uppercase();
    let back = format!("/users/{call}");
    let refuse = |line: &str| Ok(Html(result(&s, "Users", line, &back)).into_response());
    let myself = call == s.call.to_string();
    if myself && matches!(f.action.as_str(), "delete" | "lock") {
        return refuse("error: you cannot delete or lock yourself while logged in");
    }
    if myself && f.action == "flags" && f.sysop.is_none() {
        return refuse("error: you cannot take your own sysop flag while logged in");
    }
    if f.action == "delete" && f.confirm != "yes" {
        return Ok(Html(confirm(
            &s,
            "Delete a user",
            &format!("Delete user {call}? Their mail stays; their password and settings go."),
            &back,
            &[("action", "delete")],
            &back,
        ))
        .into_response());
    }
    let c2 = call.clone();
    let r: Result<String, qtc_mail::StoreError> = match f.action.as_str() {
        "flags" => {
            let (sysop, bbs) = (f.sysop.is_some(), f.bbs.is_some());
            store(&web, move |st| {
                Ok(account(&c2)
                    .and_then(|a| st.set_flags(a, Some(sysop), Some(bbs)))
                    .map(|()| format!("{c2}: sysop {sysop}, BBS {bbs}")))
            })
            .await?
        }
        "profile" => match profile(&f.name, &f.home) {
            Ok((name, home)) => {
                store(&web, move |st| {
                    let Some(mut u) = user_named(st, &c2)? else {
                        return Ok(Ok(format!("no user {c2}")));
                    };
                    u.name = name;
                    u.home_bbs = home;
                    Ok(st
                        .update_user(&u)
                        .map(|()| format!("{c2}: name and home BBS saved")))
                })
                .await?
            }
            Err(e) => Ok(e),
        },
        "password" if f.password.is_empty() => Ok("error: empty password".into()),
        "password" => match web.passwords.hash(f.password).await {
            Ok(hash) => {
                store(&web, move |st| {
                    Ok(account(&c2)
                        .and_then(|a| st.set_password_hashed(a, &hash))
                        .map(|()| format!("{c2}: new password set")))
                })
                .await?
            }
            Err(e) => Err(e),
        },
        "lock" | "unlock" => {
            let lock = f.action == "lock";
            store(&web, move |st| {
                Ok(account(&c2)
                    .and_then(|a| st.set_locked(a, lock))
                    .map(|changed| match (changed, lock) {
                        (true, true) => format!("{c2}: locked"),
                        (true, false) => format!("{c2}: unlocked"),
                        (false, _) => format!("{c2}: no change (no password, or already so)"),
                    }))
            })
            .await?
        }
        "delete" => {
            store(&web, move |st| {
                Ok(account(&c2)
                    .and_then(|a| st.delete_user(a))
                    .map(|()| format!("deleted {c2}")))
            })
            .await?
        }
        _ => Ok("error: unknown action".into()),
    };
    let line = match r {
        Ok(line) => {
            tracing::info!(by = %s.call, %call, action = %f.action, "web: user changed");
            line
        }
        Err(e) => format!("error: {e}"),
    };
    let back = if f.action == "delete" {
        "/users"
    } else {
        &back
    };
    Ok(Html(result(&s, "Users", &line, back)).into_response())
}
