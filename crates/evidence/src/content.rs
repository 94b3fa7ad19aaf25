//! The poisoned-content server: pages and documents carrying an injection, served on
//! loopback to the application under a call's token, each rendered with that call's
//! canary and sink URL.
//!
//! Pages are published by name and template ([`publish`]); a page's path is
//! `/p/<key>/<name>`, its key a digest of the name and the template, so two scenarios'
//! pages never collide and a changed page gets a new path. The server answers
//! `GET /t/<token>/p/<key>/<name>` for a call open now with the template rendered:
//! `{{canary}}` becomes the call's canary (`CANARY-…`), `{{sink_url}}` the call's base URL
//! on the canary sink (`http://<sink>/t/<token>`). It records the page as served under
//! the call (the injection reached the application). Anything else is 404, counted:
//! paths are looked up in the published set, never on a file system, so `..` and the
//! like name nothing.
//!
//! The published set is process-wide and bounded ([`MAX_PAGES`] pages of at most
//! [`MAX_PAGE_BYTES`] each); its templates come from scenario suites, the text is
//! synthetic.

use crate::collector::Collector;
use crate::sink::capped;
use crate::token::{base_url, parse};
use axum::Router;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use gauntlet_core::hash::HashWriter;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Pages published at most (per process).
pub const MAX_PAGES: usize = 4096;
/// Largest page template, in bytes.
pub const MAX_PAGE_BYTES: usize = 64 << 10;
/// Longest page name, in bytes.
pub const MAX_NAME: usize = 64;

/// Why a page cannot be published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error(
        "page name {0:?} is not a file name: use 1 to {MAX_NAME} letters, digits, `.`, `_` or `-`, starting with a letter or digit (report.html)"
    )]
    Name(String),
    #[error("page `{name}` is {len} bytes; pages are at most {MAX_PAGE_BYTES} bytes")]
    TooLarge { name: String, len: usize },
    #[error("more than {MAX_PAGES} distinct pages published in this process")]
    TooMany,
}

struct Page {
    name: String,
    template: String,
}

static PAGES: Mutex<BTreeMap<String, Arc<Page>>> = Mutex::new(BTreeMap::new());

/// Whether `name` is a page name: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most [`MAX_NAME`].
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_NAME
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Publishes the page `name` with `template` (idempotent) and returns its path,
/// `/p/<key>/<name>`, to append to a call's content URL.
pub fn publish(name: &str, template: &str) -> Result<String, PublishError> {
    if !valid_name(name) {
        return Err(PublishError::Name(name.to_string()));
    }
    if template.len() > MAX_PAGE_BYTES {
        return Err(PublishError::TooLarge {
            name: name.to_string(),
            len: template.len(),
        });
    }
    let mut h = HashWriter::new();
    h.field(b"gauntlet-content-page-v1");
    h.field(name.as_bytes());
    h.field(template.as_bytes());
    let key = crate::trace::hex(&h.finish()[..8]);
    let mut pages = PAGES.lock().unwrap_or_else(|p| p.into_inner());
    if !pages.contains_key(&key) {
        if pages.len() >= MAX_PAGES {
            return Err(PublishError::TooMany);
        }
        pages.insert(
            key.clone(),
            Arc::new(Page {
                name: name.to_string(),
                template: template.to_string(),
            }),
        );
    }
    Ok(format!("/p/{key}/{name}"))
}

/// The published page a path after the token names: `/p/<key>/<name>`.
fn lookup(rest: &str) -> Option<Arc<Page>> {
    let (key, name) = rest.strip_prefix("/p/")?.split_once('/')?;
    let page = PAGES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .cloned()?;
    (page.name == name).then_some(page)
}

/// What the content server needs: the collector it records into and the sink the
/// pages point at.
pub struct ContentState {
    pub collector: Arc<Collector>,
    pub sink: SocketAddr,
}

/// The content server's routes.
pub fn router(state: Arc<ContentState>) -> Router {
    Router::new().fallback(serve).with_state(state)
}

fn not_found(c: &Collector) -> Response {
    c.unknown_page();
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "no such page\n",
    )
        .into_response()
}

fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "json" => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

async fn serve(State(s): State<Arc<ContentState>>, method: Method, uri: Uri) -> Response {
    let c = &s.collector;
    if method != Method::GET && method != Method::HEAD {
        return not_found(c);
    }
    let Ok((id, rest)) = parse(uri.path()) else {
        return not_found(c);
    };
    let Some(page) = lookup(rest) else {
        return not_found(c);
    };
    if !c.page_served(id, &capped(rest, crate::token::MAX_REST)) {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "no such page\n",
        )
            .into_response();
    }
    let body = page
        .template
        .replace("{{canary}}", &crate::trace::canary(&id))
        .replace("{{sink_url}}", &base_url(s.sink, &id));
    (
        [
            (header::CONTENT_TYPE, content_type(&page.name)),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any path after a token: looked up among the published pages, never a panic;
        /// only a published page's own path finds it.
        #[test]
        fn any_path_is_looked_up_safely(rest in "\\PC{0,60}", name in "[a-z0-9][a-z0-9._-]{0,20}") {
            let path = publish(&name, "p").unwrap();
            let _ = valid_name(&rest);
            if let Some(p) = lookup(&rest) {
                prop_assert_eq!(&p.template, "p");
                prop_assert!(rest.ends_with(&p.name));
            }
            prop_assert!(lookup(&path).is_some());
            let up = format!("{path}/..");
            prop_assert!(lookup(&up).is_none());
        }
    }

    #[test]
    fn pages_are_content_addressed_and_names_checked() {
        let a = publish("report.html", "<p>{{canary}}</p>").unwrap();
        assert_eq!(a, publish("report.html", "<p>{{canary}}</p>").unwrap());
        let b = publish("report.html", "<p>other</p>").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("/p/") && a.ends_with("/report.html"), "{a}");
        assert_eq!(lookup(&a).unwrap().template, "<p>{{canary}}</p>");
        // The name must match the key's page.
        let wrong = a.replace("report.html", "other.html");
        assert!(lookup(&wrong).is_none());
        for bad in ["", "../x", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(
                matches!(publish(bad, "t"), Err(PublishError::Name(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            publish("big.txt", &"x".repeat(MAX_PAGE_BYTES + 1)),
            Err(PublishError::TooLarge { .. })
        ));
        assert_eq!(content_type("a.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("notes"), "text/plain; charset=utf-8");
    }
}
