//! Anthropic's Message Batches API for the `anthropic` target: one
//! `POST {base}/v1/messages/batches` with `{"requests": [{"custom_id", "params"}]}` (each
//! `params` the body the target would send alone), polled with
//! `GET {base}/v1/messages/batches/{id}` (`processing_status`: `in_progress`,
//! `canceling`, `ended`); once ended, the JSONL at its `results_url` holds one line per
//! request: `{"custom_id", "result": {"type": "succeeded", "message"}}`, or `errored`
//! (with the error), `canceled` or `expired` (never ran).
//!
//! A succeeded message is read by the target's own [`parse_response`], so a batched call
//! gives exactly the response the same call made alone gives. The results URL comes from
//! the provider: it is followed only to the host the target talks to (the key is sent
//! with it), never elsewhere.

use super::{BadLine, BatchApi, BatchOptions, Ingested, Outcome, ParsedLine, Polled, ResultError};
use crate::targets::anthropic::{AnthropicTarget, parse_capped, parse_response};
use crate::transport::Payload;
use crate::{BoxFuture, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use reqwest::{Method, Url};
use serde_json::{Value, json};

impl AnthropicTarget {
    /// `{base}/v1/messages/batches{suffix}`.
    fn batches_url(&self, suffix: &str) -> Result<Url, ModelError> {
        let base = self.transport.url().as_str();
        Url::parse(&format!("{base}/batches{suffix}")).map_err(|e| {
            ModelError::Config(format!(
                "cannot form the batch URL {base}/batches{suffix}: {e}"
            ))
        })
    }
}

impl BatchApi for AnthropicTarget {
    fn provider(&self) -> &'static str {
        "anthropic"
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
            let reqs: Vec<Value> = requests
                .iter()
                .map(|(c, b)| json!({"custom_id": c, "params": b}))
                .collect();
            let body = serde_json::to_vec(&json!({"requests": reqs}))
                .map_err(|e| ModelError::Call(format!("cannot encode the batch: {e}")))?;
            drop(reqs);
            let created = self
                .transport
                .plumbing(
                    Method::POST,
                    &self.batches_url("")?,
                    &Payload::Json(body),
                    false,
                )
                .await?;
            created["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    ModelError::Call(format!(
                        "creating a message batch at {} answered without an `id`",
                        self.batches_url("")
                            .map_or_else(|_| String::new(), |u| u.to_string())
                    ))
                })
        })
    }
    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Polled, ModelError>> {
        Box::pin(async move {
            let url = self.batches_url(&format!("/{id}"))?;
            let v = self
                .transport
                .plumbing(Method::GET, &url, &Payload::Empty, true)
                .await?;
            polled(&v, id, self.transport.url())
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

/// Reads a message batch object; its `results_url` must be on the target's own host.
fn polled(v: &Value, id: &str, endpoint: &Url) -> Result<Polled, ModelError> {
    let status = v["processing_status"].as_str().ok_or_else(|| {
        ModelError::Call(format!(
            "message batch {id}: no `processing_status`; body starts: {}",
            crate::transport::excerpt(v.to_string().as_bytes())
        ))
    })?;
    let ended = status == "ended";
    let c = &v["request_counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    let done = n("succeeded") + n("errored") + n("canceled") + n("expired");
    let total = done + n("processing");
    let mut results = Vec::new();
    if ended {
        let raw = v["results_url"].as_str().ok_or_else(|| {
            ModelError::Call(format!(
                "message batch {id} has ended but has no `results_url`"
            ))
        })?;
        let url = Url::parse(raw).map_err(|e| {
            ModelError::Call(format!(
                "message batch {id}: `results_url` {:?} is not a URL ({e})",
                crate::transport::excerpt(raw.as_bytes())
            ))
        })?;
        if url.scheme() != endpoint.scheme()
            || url.host_str() != endpoint.host_str()
            || url.port_or_known_default() != endpoint.port_or_known_default()
        {
            return Err(ModelError::Call(format!(
                "message batch {id}: `results_url` {} is not on {}; the API key is sent only to the configured host, so the results are not fetched",
                crate::transport::shown_url(&url),
                endpoint.origin().ascii_serialization()
            )));
        }
        results.push(("results".to_string(), url));
    }
    Ok(Polled {
        status: status.to_string(),
        ended,
        done,
        total,
        failure: None,
        results,
    })
}

/// [`parse_line`] with at most `max_tool_calls` tool calls per reply (the target's cap).
pub fn parse_line_capped(line: &[u8], max_tool_calls: usize) -> ParsedLine {
    parse_line_with(line, &|v, url| parse_capped(v, url, max_tool_calls))
}

/// Reads one line of a results file.
pub fn parse_line(line: &[u8]) -> ParsedLine {
    parse_line_with(line, &parse_response)
}

fn parse_line_with(
    line: &[u8],
    parse_response: &dyn Fn(&serde_json::Value, &str) -> Result<ChatResponse, ModelError>,
) -> ParsedLine {
    let v = super::line_json(line)?;
    let id = super::custom_id(&v)?;
    let r = &v["result"];
    let outcome = match r["type"].as_str() {
        Some("succeeded") => match r.get("message") {
            Some(m) if m.is_object() => parse_response(m, "the batch results")
                .map(Outcome::Response)
                .map_err(ResultError::Response),
            _ => Err(ResultError::NotAnObject {
                field: "result.message",
            }),
        },
        Some("errored") => {
            let e = &r["error"]["error"];
            let kind = e["type"].as_str().unwrap_or("error");
            let msg = e["message"]
                .as_str()
                .map_or_else(|| r["error"].to_string(), str::to_string);
            Ok(Outcome::Error(ModelError::Call(format!(
                "{kind} inside the batch: {}",
                crate::transport::excerpt(msg.as_bytes())
            ))))
        }
        Some(t @ ("canceled" | "expired")) => Ok(Outcome::Unfinished(t.to_string())),
        Some(other) => Err(ResultError::Unknown {
            field: "result.type",
            kind: crate::transport::excerpt(other.as_bytes()),
        }),
        None => Err(ResultError::Missing {
            field: "result.type",
        }),
    };
    Ok((id, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_of_every_kind() {
        let ok = br#"{"custom_id":"k1","result":{"type":"succeeded","message":{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":2,"output_tokens":1}}}}"#;
        match parse_line(ok).unwrap() {
            (id, Ok(Outcome::Response(r))) => {
                assert_eq!(id, "k1");
                assert_eq!(r.content, "hi");
            }
            other => panic!("{other:?}"),
        }
        let err = br#"{"custom_id":"k2","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens"}}}}"#;
        let (_, o) = parse_line(err).unwrap();
        let Ok(Outcome::Error(e)) = o else {
            panic!("{o:?}")
        };
        assert!(e.to_string().contains("invalid_request_error"), "{e}");
        for t in ["canceled", "expired"] {
            let l = format!(r#"{{"custom_id":"k","result":{{"type":"{t}"}}}}"#);
            assert_eq!(
                parse_line(l.as_bytes()).unwrap().1,
                Ok(Outcome::Unfinished(t.into()))
            );
        }
        let bad = br#"{"custom_id":"k4","result":{"type":"succeeded","message":{"stop_reason":"end_turn"}}}"#;
        assert!(
            parse_line(bad)
                .unwrap()
                .1
                .unwrap_err()
                .to_string()
                .contains("`content`")
        );
        assert!(
            parse_line(b"\xff\xfe")
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
    }

    #[test]
    fn results_url_must_stay_on_the_host() {
        let ep = Url::parse("http://127.0.0.1:9/v1/messages").unwrap();
        let v = json!({"processing_status": "ended", "request_counts": {"succeeded": 1}, "results_url": "http://evil.example.invalid/r"});
        let e = polled(&v, "b", &ep).unwrap_err().to_string();
        assert!(e.contains("not on http://127.0.0.1:9"), "{e}");
        let v = json!({"processing_status": "ended", "request_counts": {"succeeded": 1}, "results_url": "http://127.0.0.1:9/v1/messages/batches/b/results"});
        assert_eq!(polled(&v, "b", &ep).unwrap().results.len(), 1);
    }

    proptest! {
        #[test]
        fn parse_line_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok((id, _)) = parse_line(&bytes) {
                prop_assert!(!id.is_empty());
            }
        }

        #[test]
        fn parse_structured_lines(
            id in prop_oneof![Just(json!("k")), Just(json!(7)), Just(Value::Null), any::<String>().prop_map(Value::from)],
            kind in prop_oneof![Just(json!("succeeded")), Just(json!("errored")), Just(json!("expired")), Just(json!(3)), any::<String>().prop_map(Value::from)],
            message in prop_oneof![
                Just(json!({"content": [{"type": "text", "text": "x"}]})),
                Just(json!({"content": [{"type": "tool_use"}]})),
                Just(json!({"content": "no"})),
                Just(Value::Null),
            ],
        ) {
            let line = json!({"custom_id": id, "result": {"type": kind, "message": message, "error": message}}).to_string();
            let _ = parse_line(line.as_bytes());
        }
    }
}
