//! The live targets built the way a run builds them — through `registry::build_target`
//! with the real process environment — with a recognisable fake key in an environment
//! variable: the key is sent, never shown (errors, Debug, spec), and a missing variable is
//! a configuration error naming it.
//!
//! Environment variables are process-global, so this file is its own test binary with a
//! single test that sets only variables with names unique to it.

use crate::common;

use common::CANARY;
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_models::ModelError;
use gauntlet_models::registry::build_target;
use gauntlet_scripted::{Action, Rule, Script, ScriptedServer};

#[tokio::test]
async fn process_environment_keys() {
    // SAFETY: this binary has exactly one test, and sets these variables before starting
    // anything that reads the environment concurrently.
    unsafe {
        std::env::set_var("GAUNTLET_ENV_TEST_KEY", CANARY);
        std::env::remove_var("GAUNTLET_ENV_TEST_UNSET");
    }
    let server = ScriptedServer::start(
        Script::default().rule(Rule::new(Action::status(401)).when_contains("reject me")),
    )
    .await
    .unwrap();

    let good = common::spec(&format!(
        "{{name: openai_compat, params: {{name: local, model: m, base_url: '{}', api_key_env: GAUNTLET_ENV_TEST_KEY}}}}",
        server.openai_base_url()
    ));
    let t = build_target(&good).unwrap();
    assert_eq!(t.label(), "local");
    let ok = t
        .chat(&ChatRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!ok.content.is_empty());
    assert_eq!(
        server.last_request().unwrap().authorization.as_deref(),
        Some(format!("Bearer {CANARY}").as_str())
    );
    let err = t
        .chat(&ChatRequest {
            messages: vec![Message::user("reject me")],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Config(_)));
    let msg = err.to_string();
    assert!(msg.contains("check GAUNTLET_ENV_TEST_KEY"), "{msg}");

    let ant = common::spec(&format!(
        "{{name: anthropic, params: {{model: m, base_url: '{}', api_key_env: GAUNTLET_ENV_TEST_KEY}}}}",
        server.url()
    ));
    let a = build_target(&ant).unwrap();
    let stats = t.transport_stats().unwrap();

    let missing =
        common::spec("{name: anthropic, params: {model: m, api_key_env: GAUNTLET_ENV_TEST_UNSET}}");
    let missing_err = build_target(&missing)
        .err()
        .expect("a missing key fails the build");
    assert!(
        missing_err
            .to_string()
            .contains("GAUNTLET_ENV_TEST_UNSET is not set"),
        "{missing_err}"
    );

    for text in [
        msg,
        format!("{err:?}"),
        good.identity().to_string(),
        t.spec().identity().to_string(),
        a.spec().identity().to_string(),
        serde_json::to_string(&stats).unwrap(),
        missing_err.to_string(),
    ] {
        assert!(!text.contains(CANARY), "key leaked: {text}");
    }
}
