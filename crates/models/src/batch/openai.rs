//! OpenAI's Batch API for the `openai_compat` target: the requests go up as a JSONL file
//! (`POST {base}/files`, `purpose=batch`, one line per request:
//! `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`), a batch is
//! created over it (`POST {base}/batches`, 24 h window) and polled
//! (`GET {base}/batches/{id}`: `validating`, `in_progress`, `finalizing`, then
//! `completed`, `failed`, `expired` or `cancelled`); once it has ended, the output file
//! (succeeded requests) and the error file (failed, expired or cancelled ones) are read
//! from `GET {base}/files/{id}/content`.
//!
//! A result line is `{"custom_id", "response": {"status_code", "body"}, "error"}`; a
//! 200's body is a chat completion read by the target's own [`parse_response`], so a
//! batched call gives exactly the response the same call made alone gives. A
//! `batch_expired` / `batch_cancelled` error means the request never ran.

use super::{BadLine, BatchApi, BatchOptions, Ingested, Outcome, ParsedLine, Polled, ResultError};
use crate::targets::openai_compat::{OpenAiCompatTarget, parse_capped, parse_response};
use crate::transport::Payload;
use crate::{BoxFuture, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use reqwest::{Method, Url};
use serde_json::{Value, json};

const ENDPOINT: &str = "/v1/chat/completions";

impl OpenAiCompatTarget {
    /// `{base}/{path}` (the base is the chat endpoint without `/chat/completions`).
    fn api_url(&self, path: &str) -> Result<Url, ModelError> {
        let chat = self.transport.url().as_str();
        let base = chat.strip_suffix("/chat/completions").unwrap_or(chat);
        Url::parse(&format!("{base}/{path}")).map_err(|e| {
            ModelError::Config(format!("cannot form the batch URL {base}/{path}: {e}"))
        })
    }
}

impl BatchApi for OpenAiCompatTarget {
    fn provider(&self) -> &'static str {
        "openai"
    }
    fn options(&self) -> &BatchOptions {
        self.batch
            .as_ref()
            .expect("batch_api is offered only with batch options")
    }
    fn body(&self, req: &ChatRequest) -> Result<Value, ModelError> {
        self.request_body(req)
    }
    fn submit<'a>(
        &'a self,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        Box::pin(async move {
            let mut file = Vec::with_capacity(requests.len() * 512);
            for (custom_id, body) in requests {
                serde_json::to_writer(
                    &mut file,
                    &json!({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}),
                )
                .map_err(|e| ModelError::Call(format!("cannot encode a batch line: {e}")))?;
                file.push(b'\n');
            }
            let uploaded = self
                .transport
                .plumbing(
                    Method::POST,
                    &self.api_url("files")?,
                    &Payload::File {
                        purpose: "batch",
                        filename: "gauntlet-batch.jsonl".into(),
                        bytes: file,
                    },
                    true,
                )
                .await?;
            let file_id = uploaded["id"].as_str().ok_or_else(|| {
                ModelError::Call(format!(
                    "the file upload to {} answered without an `id`",
                    self.api_url("files")
                        .map_or_else(|_| String::new(), |u| u.to_string())
                ))
            })?;
            let body =
                json!({"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h"});
            let created = self
                .transport
                .plumbing(
                    Method::POST,
                    &self.api_url("batches")?,
                    &Payload::Json(body.to_string().into_bytes()),
                    false,
                )
                .await?;
            created["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    ModelError::Call(format!(
                        "creating a batch over file {file_id} answered without an `id`"
                    ))
                })
        })
    }
    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Polled, ModelError>> {
        Box::pin(async move {
            let url = self.api_url(&format!("batches/{id}"))?;
            let v = self
                .transport
                .plumbing(Method::GET, &url, &Payload::Empty, true)
                .await?;
            polled(&v, id, |fid| self.api_url(&format!("files/{fid}/content")))
        })
    }
    fn results<'a>(
        &'a self,
        id: &'a str,
        polled: &'a Polled,
        sink: &'a mut (dyn FnMut(Result<Ingested, BadLine>) + Send),
    ) -> BoxFuture<'a, Result<(), ModelError>> {
        Box::pin(async move {
            for (name, url) in &polled.results {
                let cap = self.limits.max_tool_calls;
                let parse = move |l: &[u8]| parse_line_capped(l, cap);
                super::stream_lines(&self.transport, id, name, url, &parse, sink).await?;
            }
            Ok(())
        })
    }
}

/// Reads a batch object.
fn polled(
    v: &Value,
    id: &str,
    file_url: impl Fn(&str) -> Result<Url, ModelError>,
) -> Result<Polled, ModelError> {
    let status = v["status"].as_str().ok_or_else(|| {
        ModelError::Call(format!(
            "batch {id}: the batch object has no `status`; body starts: {}",
            crate::transport::excerpt(v.to_string().as_bytes())
        ))
    })?;
    let ended = matches!(status, "completed" | "failed" | "expired" | "cancelled");
    let counts = &v["request_counts"];
    let done = counts["completed"].as_u64().unwrap_or(0) + counts["failed"].as_u64().unwrap_or(0);
    let total = counts["total"].as_u64().unwrap_or(0);
    let failure = (status == "failed").then(|| {
        let msgs: Vec<String> = v["errors"]["data"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let m = e["message"].as_str().unwrap_or("(no message)");
                        match e["line"].as_u64() {
                            Some(l) => format!("input line {l}: {m}"),
                            None => m.to_string(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        if msgs.is_empty() {
            "the provider gave no reason".to_string()
        } else {
            msgs.join("; ")
        }
    });
    let mut results = Vec::new();
    if ended {
        for (field, what) in [
            ("output_file_id", "output file"),
            ("error_file_id", "error file"),
        ] {
            if let Some(fid) = v[field].as_str().filter(|s| !s.is_empty()) {
                results.push((format!("{what} {fid}"), file_url(fid)?));
            }
        }
    }
    Ok(Polled {
        status: status.to_string(),
        ended,
        done,
        total,
        failure,
        results,
    })
}

/// [`parse_line`] with at most `max_tool_calls` tool calls per reply (the target's cap).
pub fn parse_line_capped(line: &[u8], max_tool_calls: usize) -> ParsedLine {
    parse_line_with(line, &|v, url| parse_capped(v, url, max_tool_calls))
}

/// Reads one line of an output or error file.
pub fn parse_line(line: &[u8]) -> ParsedLine {
    parse_line_with(line, &parse_response)
}

fn parse_line_with(
    line: &[u8],
    parse_response: &dyn Fn(&serde_json::Value, &str) -> Result<ChatResponse, ModelError>,
) -> ParsedLine {
    let v = super::line_json(line)?;
    let id = super::custom_id(&v)?;
    let outcome = match (v.get("response"), v.get("error")) {
        (Some(r), _) if !r.is_null() => match r["status_code"].as_u64() {
            Some(200) => match r.get("body") {
                Some(b) if b.is_object() => parse_response(b, "the batch output")
                    .map(Outcome::Response)
                    .map_err(ResultError::Response),
                _ => Err(ResultError::NotAnObject {
                    field: "response.body",
                }),
            },
            Some(code) => {
                let msg = r["body"]["error"]["message"]
                    .as_str()
                    .map_or_else(|| r["body"].to_string(), str::to_string);
                Ok(Outcome::Error(ModelError::Call(format!(
                    "HTTP {code} inside the batch: {}",
                    crate::transport::excerpt(msg.as_bytes())
                ))))
            }
            None => Err(ResultError::NotANumber {
                field: "response.status_code",
            }),
        },
        (_, Some(e)) if !e.is_null() => {
            let code = e["code"].as_str().unwrap_or("");
            let msg = e["message"].as_str().unwrap_or("(no message)");
            match code {
                "batch_expired" | "batch_cancelled" => Ok(Outcome::Unfinished(code.to_string())),
                _ => Ok(Outcome::Error(ModelError::Call(format!(
                    "batch request failed ({code}): {}",
                    crate::transport::excerpt(msg.as_bytes())
                )))),
            }
        }
        _ => Err(ResultError::Neither("response", "error")),
    };
    Ok((id, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::message::StopReason;
    use proptest::prelude::*;

    #[test]
    fn lines_of_every_kind() {
        let ok = br#"{"id":"r1","custom_id":"k1","response":{"status_code":200,"body":{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}},"error":null}"#;
        let (id, o) = parse_line(ok).unwrap();
        assert_eq!(id, "k1");
        match o.unwrap() {
            Outcome::Response(r) => {
                assert_eq!(r.content, "hi");
                assert_eq!(r.stop_reason, StopReason::Stop);
            }
            other => panic!("{other:?}"),
        }
        let err = br#"{"custom_id":"k2","response":{"status_code":400,"body":{"error":{"message":"bad tool id"}}},"error":null}"#;
        assert!(matches!(parse_line(err).unwrap().1, Ok(Outcome::Error(_))));
        let exp =
            br#"{"custom_id":"k3","response":null,"error":{"code":"batch_expired","message":"x"}}"#;
        assert_eq!(
            parse_line(exp).unwrap().1,
            Ok(Outcome::Unfinished("batch_expired".into()))
        );
        let bad_body = br#"{"custom_id":"k4","response":{"status_code":200,"body":{"choices":[{"finish_reason":"stop"}]}}}"#;
        let why = parse_line(bad_body).unwrap().1.unwrap_err();
        assert!(why.to_string().contains("choices[0].message"), "{why}");
        assert!(
            parse_line(b"{\"custom_id\": <<")
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        assert!(
            parse_line(br#"{"response":null}"#)
                .unwrap_err()
                .to_string()
                .contains("custom_id")
        );
        assert!(parse_line(br#"{"custom_id":"k5"}"#).unwrap().1.is_err());
    }

    #[test]
    fn failed_batches_say_why() {
        let v = json!({"status": "failed", "errors": {"data": [{"message": "bad line", "line": 3}]}, "request_counts": {"total": 0}});
        let p = polled(&v, "b1", |f| {
            Ok(Url::parse(&format!("http://x/{f}")).unwrap())
        })
        .unwrap();
        assert!(p.ended);
        assert_eq!(p.failure.as_deref(), Some("input line 3: bad line"));
        let v = json!({"status": "completed", "output_file_id": "f1", "error_file_id": null, "request_counts": {"total": 2, "completed": 2, "failed": 0}});
        let p = polled(&v, "b1", |f| {
            Ok(Url::parse(&format!("http://x/{f}")).unwrap())
        })
        .unwrap();
        assert_eq!(p.results.len(), 1);
        assert_eq!((p.done, p.total), (2, 2));
    }

    proptest! {
        /// Whatever bytes a result line holds, reading it never panics, and a line read
        /// as a request's result names a non-empty custom id.
        #[test]
        fn parse_line_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok((id, _)) = parse_line(&bytes) {
                prop_assert!(!id.is_empty());
            }
        }

        /// Lines built from the format's pieces with arbitrary values: never a panic.
        #[test]
        fn parse_structured_lines(
            id in prop_oneof![Just(json!("k")), Just(json!(7)), Just(Value::Null), any::<String>().prop_map(Value::from)],
            code in prop_oneof![Just(json!(200)), Just(json!(500)), Just(json!("200")), Just(Value::Null)],
            body in prop_oneof![
                Just(json!({"choices": [{"message": {"content": "x"}}]})),
                Just(json!({"choices": []})),
                Just(json!({"choices": [{"message": {"tool_calls": [{"id": 1}]}}]})),
                Just(json!("text")),
                Just(Value::Null),
            ],
            error in prop_oneof![Just(Value::Null), Just(json!({"code": "batch_expired"})), Just(json!({"code": 5}))],
        ) {
            let line = json!({"custom_id": id, "response": {"status_code": code, "body": body}, "error": error}).to_string();
            let _ = parse_line(line.as_bytes());
            let line = json!({"custom_id": id, "response": null, "error": error}).to_string();
            let _ = parse_line(line.as_bytes());
        }
    }
}
