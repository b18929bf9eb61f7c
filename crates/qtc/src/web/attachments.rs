//! Downloading a message's attachments (Winlink `File:` parts) from the sysop's dashboard:
//! `GET /messages/{n}/files/{i}` gives attachment `i` (from 0) of message `n`, bytes as received.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse};

use super::{need_login, pages, store_down, Page, Web};

/// The download: `application/octet-stream`, offered under its own (sanitised) file name.
pub(super) async fn download(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path((n, i)): Path<(u64, usize)>,
) -> Page {
    let s = need_login(&web, &headers).await?;
    // Only from a message this user may read.
    super::mail::readable(&web, &s, n, false).await?;
    let file = web
        .store
        .call(move |s| s.attachment(n, i))
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    let Some(qtc_store::Attachment { name, data }) = file else {
        return Err((
            StatusCode::NOT_FOUND,
            Html(pages::error_page(&format!(
                "Message #{n} has no attachment {i}."
            ))),
        )
            .into_response());
    };
    let disposition = format!("attachment; filename=\"{}\"", safe_name(&name));
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_str(&disposition)
                    .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
            ),
        ],
        data,
    )
        .into_response())
}

/// The sender's file name reduced to what is safe in a header and on a disk: printable ASCII
/// without quotes, slashes or backslashes (others become `_`).
fn safe_name(name: &[u8]) -> String {
    let s: String = name
        .iter()
        .map(|&b| match b {
            b'"' | b'/' | b'\\' => '_',
            b if b.is_ascii_graphic() || b == b' ' => char::from(b),
            _ => '_',
        })
        .collect();
    if s.trim().is_empty() {
        "attachment".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_made_safe() {
        assert_eq!(super::safe_name(b"../a\"b\\c.jpg"), ".._a_b_c.jpg");
        assert_eq!(super::safe_name(b"K\xf6ln.txt"), "K_ln.txt");
        assert_eq!(super::safe_name(b""), "attachment");
    }
}
