//! The `openai_compat` target over real HTTP against the fault-injecting test server:
//! the request it sends (model, seed, key header, tools), normalised responses (text,
//! usage, refusals, tool calls with ids and invalid-JSON arguments), multi-turn tool
//! calling whose tool results carry the right `tool_call_id`, and typed errors for
//! malformed, truncated and incomplete responses.

use crate::common;

use common::{CANARY, openai};
use gauntlet_core::message::{ChatRequest, Message, Role, StopReason, ToolDef, Usage};
use gauntlet_models::{Model, ModelError};
use gauntlet_scripted::{Action, RefusalStyle, Rule, Script, ScriptedCall, ScriptedServer};
use serde_json::json;

fn ask(prompt: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("You are helpful."), Message::user(prompt)],
        seed: Some(7),
        temperature: Some(0.0),
        ..Default::default()
    }
}

#[tokio::test]
async fn plain_answer_usage_and_request_shape() {
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    let t = openai(&server.openai_base_url(), "OAI_PLAIN_KEY", "max_tokens: 64");
    let r = t.chat(&ask("Tell me a joke")).await.unwrap();
    assert_eq!(r.content, gauntlet_scripted::DEFAULT_COMPLIANCE_TEXT);
    assert_eq!(r.stop_reason, StopReason::Stop);
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 7,
            output_tokens: 11
        })
    );
    let refused = t.chat(&ask("something forbidden")).await.unwrap();
    assert_eq!(refused.content, gauntlet_scripted::DEFAULT_REFUSAL_TEXT);

    let req = &server.requests()[0];
    assert_eq!(req.body["model"], "test-model");
    assert_eq!(req.body["seed"], 7);
    assert_eq!(req.body["temperature"], 0.0);
    assert_eq!(req.body["max_tokens"], 64);
    assert_eq!(req.body["messages"][0]["role"], "system");
    assert_eq!(
        req.authorization.as_deref(),
        Some(format!("Bearer {CANARY}").as_str())
    );
    let stats = t.transport_stats().unwrap();
    assert_eq!((stats.calls, stats.attempts, stats.succeeded), (2, 2, 2));
    assert_eq!(stats.retries(), 0);
    assert!(!t.offline());
}

#[tokio::test]
async fn provider_refusals_are_refusals() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::refuse("I can't assist with that.")).when_contains("field"))
            .rule(
                Rule::new(Action::Refuse {
                    text: String::new(),
                    style: RefusalStyle::ContentFilter,
                })
                .when_contains("filter"),
            ),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "OAI_REFUSAL_KEY", "");
    let r = t.chat(&ask("refusal field please")).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
    assert_eq!(r.content, "I can't assist with that.");
    assert!(r.is_provider_refusal() && !r.is_empty());
    let r = t.chat(&ask("content filter please")).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
    assert_eq!(r.content, "");
    assert!(!r.is_empty(), "an explicit refusal is not an empty answer");
}

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "read_document".into(),
            description: "Read a document".into(),
            parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        },
        ToolDef {
            name: "send_email".into(),
            description: "Send an email".into(),
            parameters: json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        },
    ]
}

#[tokio::test]
async fn multi_turn_tool_calls_round_trip_ids() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(
                Rule::new(Action::tool_calls(vec![
                    ScriptedCall::new("call_abc", "read_document", json!({"name": "notes"})),
                    ScriptedCall {
                        raw_arguments: Some("{\"to\": \"bob\"".into()),
                        ..ScriptedCall::new("call_def", "send_email", json!(null))
                    },
                ]))
                .on_requests(&[1]),
            )
            .rule(Rule::new(Action::reply("Done: both tools ran.")).on_requests(&[2])),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "OAI_TOOLS_KEY", "");
    let mut req = ChatRequest {
        messages: vec![Message::user("Summarise my notes and email bob")],
        tools: tools().into(),
        ..Default::default()
    };
    let r = t.chat(&req).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolCalls);
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].call_id, "call_abc");
    assert_eq!(r.tool_calls[0].name, "read_document");
    assert_eq!(r.tool_calls[0].arguments, json!({"name": "notes"}));
    assert_eq!(
        r.tool_calls[1].arguments,
        json!("{\"to\": \"bob\""),
        "invalid JSON arguments are kept as a string"
    );

    // The first request carried the tool definitions.
    let first = &server.requests()[0].body;
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][1]["function"]["name"], "send_email");

    // Next turn: the assistant's calls, then one tool result per call.
    let mut call_msg = Message::assistant(r.content.clone());
    call_msg.tool_calls = r.tool_calls.clone();
    req.messages.push(call_msg);
    for (c, out) in r.tool_calls.iter().zip(["notes: buy milk", "sent"]) {
        req.messages.push(Message {
            role: Role::Tool,
            content: out.into(),
            name: Some(c.name.clone()),
            tool_calls: Vec::new(),
            tool_call_id: Some(c.call_id.clone()),
        });
    }
    let r2 = t.chat(&req).await.unwrap();
    assert_eq!(r2.content, "Done: both tools ran.");

    let second = &server.requests()[1].body;
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"], serde_json::Value::Null);
    assert_eq!(msgs[1]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(
        msgs[1]["tool_calls"][0]["function"]["arguments"],
        "{\"name\":\"notes\"}"
    );
    assert_eq!(
        msgs[1]["tool_calls"][1]["function"]["arguments"], "{\"to\": \"bob\"",
        "a raw argument string goes back verbatim"
    );
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["tool_call_id"], "call_abc");
    assert_eq!(msgs[3]["tool_call_id"], "call_def");
    assert_eq!(msgs[3]["content"], "sent");
    // Nothing but the conversation went out: no scripted control text.
    assert!(!second.to_string().contains("then"));
    assert_eq!(server.stats().outcomes.get("bad_request"), None);
}

#[tokio::test]
async fn a_wrong_tool_call_id_is_rejected_like_the_real_api() {
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    let t = openai(&server.openai_base_url(), "OAI_BADID_KEY", "");
    let req = ChatRequest {
        messages: vec![
            Message::user("hi"),
            Message {
                role: Role::Tool,
                content: "orphan".into(),
                name: None,
                tool_calls: Vec::new(),
                tool_call_id: Some("call_nope".into()),
            },
        ],
        ..Default::default()
    };
    let e = t.chat(&req).await.unwrap_err();
    let ModelError::Call(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(
        msg.contains("HTTP 400") && msg.contains("call_nope"),
        "{msg}"
    );
    assert_eq!(
        t.transport_stats().unwrap().attempts,
        1,
        "4xx is not retried"
    );
}

#[tokio::test]
async fn malformed_truncated_and_incomplete_json_are_typed_call_errors() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::Malformed).when_contains("malformed"))
            .rule(Rule::new(Action::Truncated).when_contains("truncated"))
            .rule(Rule::new(Action::MissingField).when_contains("missing")),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "OAI_JSON_KEY", "");
    let endpoint = format!("{}/chat/completions", server.openai_base_url());

    for (prompt, needle) in [
        ("malformed", "malformed JSON"),
        ("truncated", "malformed JSON"),
        ("missing", "`choices[0].message`"),
    ] {
        let e = t.chat(&ask(prompt)).await.unwrap_err();
        let ModelError::Call(msg) = &e else {
            panic!("{prompt}: {e:?}")
        };
        assert!(msg.contains(&endpoint), "{prompt}: {msg}");
        assert!(msg.contains(needle), "{prompt}: {msg}");
    }
    let s = t.transport_stats().unwrap();
    assert_eq!(
        (s.attempts, s.failed, s.retries()),
        (3, 3, 0),
        "a 200 with a bad body is not retried, and counts as a failed call"
    );
}
