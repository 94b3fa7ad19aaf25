//! The `anthropic` target over real HTTP against the fault-injecting test server: headers
//! (`x-api-key`, `anthropic-version`), system hoisting, mandatory `max_tokens`, usage,
//! the `refusal` stop reason, multi-turn tool use whose results go back as one user turn
//! of `tool_result` blocks carrying the right `tool_use_id`, 529 retries, and typed
//! errors for incomplete responses and rejected keys.

use crate::common;

use common::{CANARY, anthropic};
use gauntlet_core::message::{ChatRequest, Message, Role, StopReason, ToolDef, Usage};
use gauntlet_models::{Model, ModelError};
use gauntlet_scripted::{Action, Rule, Script, ScriptedCall, ScriptedServer};
use serde_json::json;

#[tokio::test]
async fn plain_answer_headers_and_system_hoisting() {
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    let t = anthropic(&server.url(), "ANT_PLAIN_KEY", "temperature: 0.5");
    let req = ChatRequest {
        messages: vec![
            Message::system("Rule one."),
            Message::user("Hello there"),
            Message::system("Rule two."),
        ],
        ..Default::default()
    };
    let r = t.chat(&req).await.unwrap();
    assert_eq!(r.content, gauntlet_scripted::DEFAULT_COMPLIANCE_TEXT);
    assert_eq!(r.stop_reason, StopReason::Stop);
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 6,
            output_tokens: 11
        })
    );
    let got = server.last_request().unwrap();
    assert_eq!(got.x_api_key.as_deref(), Some(CANARY));
    assert_eq!(got.authorization, None);
    assert_eq!(got.anthropic_version.as_deref(), Some("2023-06-01"));
    assert_eq!(got.body["system"], "Rule one.\n\nRule two.");
    assert_eq!(got.body["max_tokens"], 1024);
    assert_eq!(got.body["temperature"], 0.5);
    assert_eq!(got.body["model"], "claude-test");
    let msgs = got.body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "system messages are not turns");
    assert_eq!(msgs[0]["role"], "user");
    assert!(got.body.get("seed").is_none());
}

#[tokio::test]
async fn refusal_stop_reason_is_a_refusal() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::refuse("")).when_contains("empty"))
            .rule(Rule::new(Action::refuse("I won't do that."))),
    )
    .await
    .unwrap();
    let t = anthropic(&server.url(), "ANT_REFUSAL_KEY", "");
    let r = t
        .chat(&ChatRequest {
            messages: vec![Message::user("empty refusal")],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
    assert_eq!(r.content, "");
    assert!(!r.is_empty());
    let r = t
        .chat(&ChatRequest {
            messages: vec![Message::user("please")],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
    assert_eq!(r.content, "I won't do that.");
}

#[tokio::test]
async fn multi_turn_tool_use_round_trips_tool_use_ids() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(
                Rule::new(Action::Reply {
                    text: "Let me look.".into(),
                    tool_calls: vec![
                        ScriptedCall::new("toolu_01A", "search", json!({"query": "budget"})),
                        ScriptedCall::new("toolu_01B", "read_file", json!({"path": "q3.txt"})),
                    ],
                    stop: None,
                })
                .on_requests(&[1]),
            )
            .rule(Rule::new(Action::reply("The budget is fine.")).on_requests(&[2])),
    )
    .await
    .unwrap();
    let t = anthropic(&server.url(), "ANT_TOOLS_KEY", "");
    let mut req = ChatRequest {
        messages: vec![
            Message::system("You are an assistant with tools."),
            Message::user("Check the Q3 budget"),
        ],
        tools: vec![
            ToolDef {
                name: "search".into(),
                description: "Search".into(),
                parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            },
            ToolDef {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
        ]
        .into(),
        ..Default::default()
    };
    let r = t.chat(&req).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolCalls);
    assert_eq!(r.content, "Let me look.");
    let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["toolu_01A", "toolu_01B"]);
    assert_eq!(r.tool_calls[1].arguments, json!({"path": "q3.txt"}));
    let first = &server.requests()[0].body;
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");

    let mut call_msg = Message::assistant(r.content.clone());
    call_msg.tool_calls = r.tool_calls.clone();
    req.messages.push(call_msg);
    for c in &r.tool_calls {
        req.messages.push(Message {
            role: Role::Tool,
            content: format!("result of {}", c.name),
            name: Some(c.name.clone()),
            tool_calls: Vec::new(),
            tool_call_id: Some(c.call_id.clone()),
        });
    }
    let r2 = t.chat(&req).await.unwrap();
    assert_eq!(r2.content, "The budget is fine.");

    let second = &server.requests()[1].body;
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs.len(),
        3,
        "user, assistant, one merged user turn of tool results"
    );
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["id"], "toolu_01A");
    assert_eq!(msgs[1]["content"][2]["id"], "toolu_01B");
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_01A");
    assert_eq!(msgs[2]["content"][0]["content"], "result of search");
    assert_eq!(msgs[2]["content"][1]["tool_use_id"], "toolu_01B");
    assert_eq!(server.stats().outcomes.get("bad_request"), None);
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let server =
        ScriptedServer::start(Script::default().rule(Rule::new(Action::status(529)).times(2)))
            .await
            .unwrap();
    let t = anthropic(&server.url(), "ANT_529_KEY", "");
    let r = t
        .chat(&ChatRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Stop);
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_5xx, s.attempts, s.succeeded), (2, 3, 1));
    assert_eq!(server.stats().outcomes["status_529"], 2);
}

#[tokio::test]
async fn missing_content_and_rejected_key() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::MissingField).when_contains("missing"))
            .rule(Rule::new(Action::status(403)).when_contains("denied")),
    )
    .await
    .unwrap();
    let t = anthropic(&server.url(), "ANT_ERR_KEY", "");
    let ask = |p: &str| ChatRequest {
        messages: vec![Message::user(p)],
        ..Default::default()
    };
    let e = t.chat(&ask("missing")).await.unwrap_err();
    let ModelError::Call(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(msg.contains("`content`"), "{msg}");
    assert!(
        msg.contains(&format!("{}/v1/messages", server.url())),
        "{msg}"
    );

    let e = t.chat(&ask("denied")).await.unwrap_err();
    let ModelError::Config(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(
        msg.contains("HTTP 403") && msg.contains("check ANT_ERR_KEY"),
        "{msg}"
    );
    assert!(!msg.contains(CANARY), "{msg}");
    assert!(
        msg.contains("[redacted]"),
        "the echoed key is scrubbed: {msg}"
    );
}
