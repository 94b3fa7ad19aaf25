//! A computed answer (status, JSON body, `Retry-After`) and how it goes out, with the
//! providers' error bodies.

use crate::script::{Api, RetryAfter};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A computed answer: status, body text (JSON unless `content_type` says otherwise),
/// extra headers and an optional `Retry-After`.
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: String,
    pub retry_after: Option<RetryAfter>,
    /// `None`: `application/json`.
    pub content_type: Option<String>,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub(crate) fn into_response(self) -> Response {
        let mut r = match &self.content_type {
            None => json_response(self.status, &self.body),
            Some(ct) => {
                let mut r = (self.status, self.body).into_response();
                if let Ok(v) = HeaderValue::from_str(ct) {
                    r.headers_mut().insert(header::CONTENT_TYPE, v);
                }
                r
            }
        };
        for (k, v) in &self.headers {
            if let (Ok(k), Ok(v)) = (
                header::HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                r.headers_mut().insert(k, v);
            }
        }
        add_retry_after(&mut r, self.retry_after);
        r
    }
}

pub(crate) fn reply_json(status: StatusCode, body: &str) -> Reply {
    Reply {
        status,
        body: body.to_string(),
        retry_after: None,
        content_type: None,
        headers: Vec::new(),
    }
}

pub(crate) fn json_response(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(crate) fn reply_error(api: Api, code: u16, kind: &str, message: &str) -> Reply {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let v = match api {
        Api::Openai => json!({"error": {"message": message, "type": kind, "code": null}}),
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
    };
    reply_json(status, &v.to_string())
}

/// An authentication error that, like some real providers, quotes the key it was given.
pub(crate) fn reply_auth(api: Api, code: u16, presented: Option<&str>) -> Reply {
    let msg = match presented {
        Some(k) => format!("Incorrect API key provided: {k}"),
        None => "No API key provided".to_string(),
    };
    let kind = if code == 403 {
        "permission_error"
    } else {
        "authentication_error"
    };
    reply_error(api, code, kind, &msg)
}

pub(crate) fn add_retry_after(r: &mut Response, ra: Option<RetryAfter>) {
    let value = match ra {
        None => return,
        Some(RetryAfter::Seconds(n)) => n.to_string(),
        Some(RetryAfter::HttpDateIn(n)) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(now + 1 + n))
        }
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
}
