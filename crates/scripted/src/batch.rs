//! The two providers' batch APIs, as the test server speaks them: OpenAI's Batch API
//! (`POST /v1/files` with `purpose=batch`, `POST /v1/batches`, `GET /v1/batches/{id}`,
//! `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content`) and Anthropic's Message
//! Batches API (`POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
//! `GET /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel`).
//!
//! Each request of a batch is answered exactly as the same request sent on its own
//! would be ([`crate::answer`]: the script's rules, refusals, error statuses), so a
//! batch run and a call-by-call run against one server see the same answers. A batch
//! moves through its provider's statuses one poll at a time (OpenAI: `validating`, then
//! `in_progress`, `finalizing`, and `completed` / `expired` / `cancelled` / `failed`;
//! Anthropic: `in_progress`, `canceling`, `ended`), and its results come back in reverse
//! order, as both providers warn that order is not kept. [`BatchRule`]s in the script
//! add faults per batch: a slow batch, an expired or provider-cancelled one with only
//! some requests done, a batch that fails validation, and damaged result lines.
//!
//! Every batch created is logged with the custom ids it carried
//! ([`crate::ScriptedServer::batches`], `GET /batches`), so a test can assert that no request
//! was ever submitted twice.

use crate::answer::{answer, header_str};
use crate::batch_store::{Batch, BatchRecord, End, Store};
use crate::reply::{Reply, reply_error};
use crate::script::{Api, BatchFault, DEFAULT_POLLS, Damage};
use crate::state::Shared;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

/// The API's 404 reply for a batch it does not hold.
fn no_batch(api: Api, id: &str) -> Response {
    error(api, 404, &format!("no batch `{id}`"))
}

fn json_reply(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn error(api: Api, code: u16, msg: &str) -> Response {
    let kind = match code {
        404 => "not_found_error",
        401 => "authentication_error",
        _ => "invalid_request_error",
    };
    reply_error(api, code, kind, msg).into_response()
}

/// The script's key check, for the batch endpoints.
fn unauthorized(s: &Shared, api: Api, headers: &HeaderMap) -> Option<Response> {
    let want = s.lock().script.require_key.clone()?;
    let presented = match api {
        Api::Openai => header_str(headers, "authorization")
            .and_then(|a| a.strip_prefix("Bearer ").map(str::to_string)),
        Api::Anthropic => header_str(headers, "x-api-key"),
    };
    (presented.as_deref() != Some(want.as_str()))
        .then(|| error(api, 401, "invalid or missing API key (test server)"))
}

/// Runs the batch's requests (up to where it expires or is cancelled) through the
/// ordinary answer path and stores it.
fn create(
    s: &Shared,
    api: Api,
    headers: &HeaderMap,
    requests: Vec<(String, Value)>,
    input_file_id: Option<String>,
    invalid: Option<String>,
) -> String {
    let (n, rules) = {
        let mut st = s.batches();
        st.created += 1;
        (st.created, s.lock().script.batch_rules.clone())
    };
    let mut slow_polls = DEFAULT_POLLS;
    let mut end = End::Completed;
    let mut failed = invalid;
    let mut damage = Vec::new();
    for r in rules.iter().filter(|r| {
        r.batches.as_ref().is_none_or(|b| b.contains(&n)) && r.api.is_none_or(|a| a == api)
    }) {
        match &r.then {
            BatchFault::Slow { polls } => slow_polls = *polls,
            BatchFault::Expire { completed } => end = End::Expired(*completed),
            BatchFault::Cancel { completed } => end = End::Cancelled(*completed),
            BatchFault::Fail { message } => failed = Some(message.clone()),
            BatchFault::Malformed { lines, how } => {
                damage.extend(lines.iter().map(|l| (*l, *how)));
            }
        }
    }
    let id = match api {
        Api::Openai => format!("batch_ts_{n}"),
        Api::Anthropic => format!("msgbatch_ts_{n}"),
    };
    let runs = match end {
        _ if failed.is_some() => 0,
        End::Completed => requests.len(),
        End::Expired(k) | End::Cancelled(k) => (k as usize).min(requests.len()),
    };
    let custom_ids: Vec<String> = requests.iter().map(|(c, _)| c.clone()).collect();
    let mut results = Vec::with_capacity(requests.len());
    for (i, (custom_id, body)) in requests.into_iter().enumerate() {
        let reply = (i < runs).then(|| {
            answer(s, api, None, headers, body, 1).0.unwrap_or_else(|| {
                reply_error(api, 500, "api_error", "the request hung inside the batch")
            })
        });
        results.push((custom_id, reply));
    }
    let mut st = s.batches();
    st.log.push(BatchRecord {
        id: id.clone(),
        api,
        n,
        custom_ids,
    });
    st.batches.insert(
        id.clone(),
        Batch {
            api,
            n,
            input_file_id,
            polls: 0,
            slow_polls,
            end,
            failed,
            cancel_requested: false,
            results,
            damage,
            files: None,
        },
    );
    id
}

/// Has the batch ended, given the polls it has answered?
fn ended(b: &Batch) -> bool {
    b.failed.is_some() || b.cancel_requested || b.polls > b.slow_polls
}

fn counts(b: &Batch) -> (u64, u64, u64) {
    let total = b.results.len() as u64;
    let ran: Vec<&Reply> = b.results.iter().filter_map(|(_, r)| r.as_ref()).collect();
    let ok = ran.iter().filter(|r| r.status == StatusCode::OK).count() as u64;
    let failed = ran.len() as u64 - ok;
    if ended(b) {
        (total, ok, failed)
    } else {
        // Partway: a share of the work done so far.
        let share = |x: u64| x * b.polls.min(b.slow_polls) / (b.slow_polls + 1);
        (total, share(ok), share(failed))
    }
}

/// Applies the batch's damage to one 1-based result line.
fn damaged(line: String, at: u64, damage: &[(u64, Damage)]) -> String {
    let Some((_, how)) = damage.iter().find(|(l, _)| *l == at) else {
        return line;
    };
    match how {
        Damage::NotJson => format!("{{\"custom_id\": <<{at}>> {}", &line[..line.len() / 3]),
        Damage::NoCustomId => {
            let mut v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.remove("custom_id");
            }
            v.to_string()
        }
        Damage::UnknownCustomId => {
            let mut v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            v["custom_id"] = json!(format!("never-submitted-{at}"));
            v.to_string()
        }
        Damage::BadBody => {
            let mut v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if let Some(b) = v.pointer_mut("/response/body") {
                b["choices"] = json!([{"index": 0, "finish_reason": "stop"}]);
            }
            if let Some(m) = v.pointer_mut("/result/message")
                && let Some(o) = m.as_object_mut()
            {
                o.remove("content");
            }
            v.to_string()
        }
    }
}

fn body_json(reply: &Reply) -> Value {
    serde_json::from_str(&reply.body).unwrap_or_else(|_| json!(reply.body))
}

/// OpenAI: writes the output and error files of an ended batch (results in reverse
/// submission order) and returns their ids.
fn openai_files(st: &mut Store, id: &str) -> (Option<String>, Option<String>) {
    let b = &st.batches[id];
    if let Some(f) = &b.files {
        return f.clone();
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    for (i, (custom_id, reply)) in b.results.iter().enumerate().rev() {
        let req_id = format!("batch_req_ts_{}_{i}", b.n);
        match reply {
            Some(r) => {
                let line = json!({
                    "id": req_id, "custom_id": custom_id,
                    "response": {"status_code": r.status.as_u16(), "request_id": format!("req_ts_{}_{i}", b.n), "body": body_json(r)},
                    "error": null,
                })
                .to_string();
                if r.status == StatusCode::OK {
                    out.push(line);
                } else {
                    err.push(line);
                }
            }
            None => {
                let (code, message) = match b.end {
                    End::Cancelled(_) => (
                        "batch_cancelled",
                        "This request was cancelled before it was executed.",
                    ),
                    _ if b.cancel_requested => (
                        "batch_cancelled",
                        "This request was cancelled before it was executed.",
                    ),
                    _ => (
                        "batch_expired",
                        "This request could not be executed before the completion window expired.",
                    ),
                };
                err.push(
                    json!({"id": req_id, "custom_id": custom_id, "response": null,
                        "error": {"code": code, "message": message}})
                    .to_string(),
                );
            }
        }
    }
    let out: Vec<String> = out
        .into_iter()
        .enumerate()
        .map(|(i, l)| damaged(l, i as u64 + 1, &b.damage))
        .collect();
    let n = b.n;
    let mut file = |name: &str, lines: Vec<String>| {
        (!lines.is_empty()).then(|| {
            let fid = format!("file-ts-{name}-{n}");
            let mut text = lines.join("\n");
            text.push('\n');
            st.files.insert(fid.clone(), text);
            fid
        })
    };
    let ids = (file("output", out), file("errors", err));
    st.batches.get_mut(id).expect("present").files = Some(ids.clone());
    ids
}

fn openai_status(b: &Batch) -> &'static str {
    if b.failed.is_some() {
        return if b.polls == 0 { "validating" } else { "failed" };
    }
    if b.cancel_requested {
        return if b.polls == 0 {
            "cancelling"
        } else {
            "cancelled"
        };
    }
    if !ended(b) {
        return match b.polls {
            0 => "validating",
            p if p == b.slow_polls => "finalizing",
            _ => "in_progress",
        };
    }
    match b.end {
        End::Completed => "completed",
        End::Expired(_) => "expired",
        End::Cancelled(_) => "cancelled",
    }
}

fn openai_object(st: &mut Store, id: &str) -> Value {
    let (status, b_failed, ended_now) = {
        let b = &st.batches[id];
        (openai_status(b), b.failed.clone(), ended(b) && b.polls > 0)
    };
    let files = if ended_now && b_failed.is_none() {
        openai_files(st, id)
    } else {
        (None, None)
    };
    let b = &st.batches[id];
    let (total, completed, failed) = counts(b);
    let errors = match (&b.failed, b.polls) {
        (Some(m), p) if p > 0 => {
            json!({"object": "list", "data": [{"code": "invalid_request", "message": m, "param": null, "line": null}]})
        }
        _ => Value::Null,
    };
    json!({
        "id": id, "object": "batch", "endpoint": "/v1/chat/completions",
        "errors": errors, "input_file_id": b.input_file_id, "completion_window": "24h",
        "status": status, "output_file_id": files.0, "error_file_id": files.1,
        "created_at": 1_700_000_000u64 + b.n, "request_counts": {"total": total, "completed": completed, "failed": failed},
        "metadata": null,
    })
}

fn anthropic_object(s_url: &str, id: &str, b: &Batch) -> Value {
    let done = ended(b) && b.polls > 0;
    let status = if done {
        "ended"
    } else if b.cancel_requested {
        "canceling"
    } else {
        "in_progress"
    };
    let (total, ok, errored) = counts(b);
    let (canceled, expired) = if done {
        let missing = b.results.iter().filter(|(_, r)| r.is_none()).count() as u64;
        match b.end {
            _ if b.cancel_requested => (missing, 0),
            End::Cancelled(_) => (missing, 0),
            _ => (0, missing),
        }
    } else {
        (0, 0)
    };
    let processing = total - ok - errored - canceled - expired;
    json!({
        "id": id, "type": "message_batch", "processing_status": status,
        "request_counts": {"processing": processing, "succeeded": ok, "errored": errored, "canceled": canceled, "expired": expired},
        "ended_at": if done { json!("2026-11-02T00:00:00Z") } else { Value::Null },
        "created_at": "2026-11-01T00:00:00Z", "expires_at": "2026-11-02T00:00:00Z",
        "archived_at": null, "cancel_initiated_at": if b.cancel_requested { json!("2026-11-01T00:00:01Z") } else { Value::Null },
        "results_url": if done { json!(format!("{s_url}/v1/messages/batches/{id}/results")) } else { Value::Null },
    })
}

// ----- OpenAI -----

/// Splits a multipart/form-data body into (name, content) parts.
fn multipart(headers: &HeaderMap, body: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let ct = header_str(headers, "content-type")?;
    let boundary = ct
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?
        .trim_matches('"')
        .to_string();
    let delim = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut rest = body;
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let start = find(rest, &delim)?;
    rest = &rest[start + delim.len()..];
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&rest[..head_end]).to_string();
        rest = &rest[head_end + 4..];
        let end = find(rest, &[b"\r\n".as_slice(), &delim].concat())?;
        let content = rest[..end].to_vec();
        rest = &rest[end + 2 + delim.len()..];
        let name = head
            .split(';')
            .find_map(|p| p.trim().strip_prefix("name="))
            .map(|n| n.trim_matches('"').to_string())
            .unwrap_or_default();
        parts.push((name, content));
    }
}

pub(crate) async fn upload(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Openai, &headers) {
        return r;
    }
    let Some(parts) = multipart(&headers, &body) else {
        return error(Api::Openai, 400, "expected a multipart/form-data body");
    };
    let get = |n: &str| parts.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    if get("purpose").as_deref() != Some(b"batch".as_slice()) {
        return error(Api::Openai, 400, "`purpose` must be `batch`");
    }
    let Some(file) = get("file") else {
        return error(Api::Openai, 400, "a `file` part is required");
    };
    let Ok(text) = String::from_utf8(file) else {
        return error(Api::Openai, 400, "the file is not UTF-8");
    };
    let mut st = s.batches();
    let id = format!("file-ts-input-{}", st.files.len() + 1);
    let bytes = text.len();
    st.files.insert(id.clone(), text);
    json_reply(
        StatusCode::OK,
        &json!({"id": id, "object": "file", "bytes": bytes, "created_at": 1_700_000_000u64, "filename": "batch.jsonl", "purpose": "batch"}),
    )
}

pub(crate) async fn file_content(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Openai, &headers) {
        return r;
    }
    match s.batches().files.get(&id) {
        Some(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/octet-stream")],
            text.clone(),
        )
            .into_response(),
        None => error(Api::Openai, 404, &format!("no file `{id}`")),
    }
}

/// The first problem the Batch API finds in an input file; `line` is 1-based.
#[derive(Debug, thiserror::Error)]
enum InputFileError {
    #[error("line {line}: not valid JSON: {cause}")]
    NotJson {
        line: usize,
        #[source]
        cause: serde_json::Error,
    },
    #[error("line {line}: `custom_id` must be a string")]
    CustomId { line: usize },
    #[error("line {line}: duplicate custom_id `{custom_id}`")]
    Duplicate { line: usize, custom_id: String },
    #[error("line {line}: `method` must be POST and `url` /v1/chat/completions")]
    Endpoint { line: usize },
    #[error("line {line}: `body` must be an object")]
    Body { line: usize },
    #[error("the input file holds no requests")]
    Empty,
}

/// Checks the input file the way the Batch API does; the first problem, with its line.
fn openai_lines(text: &str) -> Result<Vec<(String, Value)>, InputFileError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line_no = i + 1;
        let v: Value = serde_json::from_str(line).map_err(|cause| InputFileError::NotJson {
            line: line_no,
            cause,
        })?;
        let custom_id = v["custom_id"]
            .as_str()
            .ok_or(InputFileError::CustomId { line: line_no })?;
        if !seen.insert(custom_id.to_string()) {
            return Err(InputFileError::Duplicate {
                line: line_no,
                custom_id: custom_id.to_string(),
            });
        }
        if v["method"] != "POST" || v["url"] != "/v1/chat/completions" {
            return Err(InputFileError::Endpoint { line: line_no });
        }
        if !v["body"].is_object() {
            return Err(InputFileError::Body { line: line_no });
        }
        out.push((custom_id.to_string(), v["body"].clone()));
    }
    if out.is_empty() {
        return Err(InputFileError::Empty);
    }
    Ok(out)
}

pub(crate) async fn openai_create(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Openai, &headers) {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(file_id) = v["input_file_id"].as_str() else {
        return error(Api::Openai, 400, "`input_file_id` is required");
    };
    if v["endpoint"] != "/v1/chat/completions" || v["completion_window"] != "24h" {
        return error(
            Api::Openai,
            400,
            "`endpoint` must be /v1/chat/completions and `completion_window` 24h",
        );
    }
    let Some(text) = s.batches().files.get(file_id).cloned() else {
        return error(Api::Openai, 404, &format!("no file `{file_id}`"));
    };
    let (requests, invalid) = match openai_lines(&text) {
        Ok(r) => (r, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let id = create(
        &s,
        Api::Openai,
        &headers,
        requests,
        Some(file_id.to_string()),
        invalid,
    );
    let mut st = s.batches();
    let obj = openai_object(&mut st, &id);
    json_reply(StatusCode::OK, &obj)
}

pub(crate) async fn openai_get(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Openai, &headers) {
        return r;
    }
    let mut st = s.batches();
    let Some(b) = st.batch(Api::Openai, &id) else {
        return no_batch(Api::Openai, &id);
    };
    b.polls += 1;
    let obj = openai_object(&mut st, &id);
    json_reply(StatusCode::OK, &obj)
}

pub(crate) async fn openai_cancel(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Openai, &headers) {
        return r;
    }
    let mut st = s.batches();
    let Some(b) = st.batch(Api::Openai, &id) else {
        return no_batch(Api::Openai, &id);
    };
    request_cancel(b);
    let obj = openai_object(&mut st, &id);
    json_reply(StatusCode::OK, &obj)
}

/// A client's cancel of a batch that has not ended: it is marked cancelling, its poll
/// count restarts and every result it held is dropped; an ended batch is left as it is.
fn request_cancel(b: &mut Batch) {
    if !ended(b) {
        b.cancel_requested = true;
        b.polls = 0;
        for r in &mut b.results {
            r.1 = None;
        }
    }
}

// ----- Anthropic -----

fn valid_custom_id(c: &str) -> bool {
    (1..=64).contains(&c.len())
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub(crate) async fn anthropic_create(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Anthropic, &headers) {
        return r;
    }
    if headers.get("anthropic-version").is_none() {
        return error(
            Api::Anthropic,
            400,
            "the anthropic-version header is required",
        );
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(reqs) = v["requests"].as_array().filter(|r| !r.is_empty()) else {
        return error(Api::Anthropic, 400, "`requests` must be a non-empty array");
    };
    let mut requests = Vec::with_capacity(reqs.len());
    let mut seen = HashSet::new();
    for (i, r) in reqs.iter().enumerate() {
        let Some(c) = r["custom_id"].as_str().filter(|c| valid_custom_id(c)) else {
            return error(
                Api::Anthropic,
                400,
                &format!("requests[{i}].custom_id must match ^[a-zA-Z0-9_-]{{1,64}}$"),
            );
        };
        if !seen.insert(c) {
            return error(
                Api::Anthropic,
                400,
                &format!("requests[{i}]: duplicate custom_id `{c}`"),
            );
        }
        if !r["params"].is_object() {
            return error(
                Api::Anthropic,
                400,
                &format!("requests[{i}].params must be an object"),
            );
        }
        requests.push((c.to_string(), r["params"].clone()));
    }
    // A batch the script makes fail is refused at creation (Anthropic validates the
    // envelope synchronously).
    let n = s.batches().created + 1;
    let fail = s
        .lock()
        .script
        .batch_rules
        .iter()
        .find_map(|r| match &r.then {
            BatchFault::Fail { message }
                if r.batches.as_ref().is_none_or(|b| b.contains(&n))
                    && r.api.is_none_or(|a| a == Api::Anthropic) =>
            {
                Some(message.clone())
            }
            _ => None,
        });
    if let Some(m) = fail {
        s.batches().created += 1;
        return error(Api::Anthropic, 400, &m);
    }
    let id = create(&s, Api::Anthropic, &headers, requests, None, None);
    let st = s.batches();
    json_reply(
        StatusCode::OK,
        &anthropic_object(&s.url(), &id, &st.batches[&id]),
    )
}

pub(crate) async fn anthropic_get(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Anthropic, &headers) {
        return r;
    }
    let mut st = s.batches();
    let Some(b) = st.batch(Api::Anthropic, &id) else {
        return no_batch(Api::Anthropic, &id);
    };
    b.polls += 1;
    json_reply(StatusCode::OK, &anthropic_object(&s.url(), &id, b))
}

pub(crate) async fn anthropic_cancel(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Anthropic, &headers) {
        return r;
    }
    let mut st = s.batches();
    let Some(b) = st.batch(Api::Anthropic, &id) else {
        return no_batch(Api::Anthropic, &id);
    };
    request_cancel(b);
    json_reply(StatusCode::OK, &anthropic_object(&s.url(), &id, b))
}

pub(crate) async fn anthropic_results(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = unauthorized(&s, Api::Anthropic, &headers) {
        return r;
    }
    let mut st = s.batches();
    let Some(b) = st.batch(Api::Anthropic, &id) else {
        return no_batch(Api::Anthropic, &id);
    };
    if !(ended(b) && b.polls > 0) {
        return error(
            Api::Anthropic,
            400,
            &format!("batch `{id}` has not ended yet"),
        );
    }
    let mut text = String::new();
    for (i, (custom_id, reply)) in b.results.iter().rev().enumerate() {
        let result = match reply {
            Some(r) if r.status == StatusCode::OK => {
                json!({"type": "succeeded", "message": body_json(r)})
            }
            Some(r) => json!({"type": "errored", "error": body_json(r)}),
            None if b.cancel_requested || matches!(b.end, End::Cancelled(_)) => {
                json!({"type": "canceled"})
            }
            None => json!({"type": "expired"}),
        };
        let line = json!({"custom_id": custom_id, "result": result}).to_string();
        text.push_str(&damaged(line, i as u64 + 1, &b.damage));
        text.push('\n');
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/binary")],
        text,
    )
        .into_response()
}

pub(crate) async fn log(State(s): State<Arc<Shared>>) -> Response {
    let log = s.batches().log.clone();
    json_reply(StatusCode::OK, &json!(log))
}
