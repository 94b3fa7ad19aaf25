//! The canary sink: an HTTP endpoint on loopback playing the attacker's server. Any
//! method, any path under a call's token (`/t/<token>/…`, see [`crate::token`]); every
//! request under the token of a call open now is filed as that call's evidence
//! (method, path after the token, query, body), and answered `200 ok`.
//!
//! What it keeps is bounded: the method to [`MAX_METHOD`] bytes, the path to
//! [`crate::token::MAX_REST`] (longer is 414), the query and the body to the per-attribute
//! cap (cut, marked), and a body over the body cap is not read past the cap (the hit
//! still counts, its body recorded as not kept). A request naming no open call is
//! counted and answered 404 without reading its body. It executes nothing.

use crate::collector::Collector;
use crate::spans::CUT_MARK;
use crate::token::{TokenError, parse};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use gauntlet_core::evidence::EvidenceEvent;
use std::sync::Arc;

/// Longest method kept, in bytes.
pub const MAX_METHOD: usize = 16;

/// The sink's routes over `collector`.
pub fn router(collector: Arc<Collector>) -> Router {
    Router::new().fallback(hit).with_state(collector)
}

/// `s` cut to `cap` bytes on a character boundary, marked when cut.
pub(crate) fn capped(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_string();
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARK}", &s[..end])
}

fn text(status: StatusCode, msg: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

async fn hit(State(c): State<Arc<Collector>>, method: Method, uri: Uri, body: Body) -> Response {
    let (id, rest) = match parse(uri.path()) {
        Ok(x) => x,
        Err(e) => {
            c.unknown_sink();
            return match e {
                TokenError::TooLong => text(StatusCode::URI_TOO_LONG, "path too long\n"),
                TokenError::NoToken => text(StatusCode::NOT_FOUND, "no such call\n"),
            };
        }
    };
    if !c.is_open(&id) {
        c.unknown_sink();
        return text(StatusCode::NOT_FOUND, "no such call\n");
    }
    let caps = *c.caps();
    let keep = caps.max_attribute_bytes;
    let body = match axum::body::to_bytes(body, caps.max_body_bytes).await {
        Ok(b) => capped(&String::from_utf8_lossy(&b), keep),
        Err(_) => format!(
            "[body over {} bytes or broken: not kept]",
            caps.max_body_bytes
        ),
    };
    let path = if rest.is_empty() { "/" } else { rest };
    let event = EvidenceEvent::SinkHit {
        method: capped(method.as_str(), MAX_METHOD),
        path: path.to_string(),
        query: capped(uri.query().unwrap_or(""), keep),
        body,
    };
    if c.sink_hit(id, event) {
        text(StatusCode::OK, "ok\n")
    } else {
        // The call closed while the body was read.
        text(StatusCode::NOT_FOUND, "no such call\n")
    }
}
