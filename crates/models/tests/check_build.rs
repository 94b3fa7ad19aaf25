//! `build_target_for_check` (what `gauntlet validate` builds): an unset or empty API-key
//! variable is a warning naming it, with every other check still made; anything else
//! stays an error; a loopback server that needs no key gets no warning.

use crate::common;

use gauntlet_models::registry::build_target_for_check_with;

#[test]
fn an_unset_key_is_a_warning_and_everything_else_still_an_error() {
    let none = common::env(&[]);
    let ant = common::spec("{name: anthropic, params: {model: claude-haiku-4-5}}");
    let (m, w) = build_target_for_check_with(&ant, &none).unwrap();
    assert_eq!(m.label(), "anthropic");
    let w = w.expect("a warning");
    assert!(
        w.contains("environment variable ANTHROPIC_API_KEY is not set"),
        "{w}"
    );
    // An empty variable is as good as unset.
    let empty = common::env(&[("ANTHROPIC_API_KEY", "  ")]);
    let (_, w) = build_target_for_check_with(&ant, &empty).unwrap();
    assert!(w.unwrap().contains("ANTHROPIC_API_KEY is empty"));
    // With the key: no warning.
    let set = common::env(&[("ANTHROPIC_API_KEY", "sk-x")]);
    let (_, w) = build_target_for_check_with(&ant, &set).unwrap();
    assert_eq!(w, None);
    // A bad base URL is an error even when the key is also missing.
    let bad = common::spec(
        "{name: openai_compat, params: {model: m, base_url: 'http://example.invalid/v1', api_key_env: SOME_KEY}}",
    );
    let e = build_target_for_check_with(&bad, &none)
        .err()
        .expect("an error");
    assert!(e.to_string().contains("http"), "{e}");
    // Loopback servers may run keyless: nothing to warn about.
    let local = common::spec(
        "{name: openai_compat, params: {model: m, base_url: 'http://127.0.0.1:8080/v1', api_key_env: SOME_KEY}}",
    );
    let (_, w) = build_target_for_check_with(&local, &none).unwrap();
    assert_eq!(w, None);
    // Offline targets build as always.
    let r = common::spec("reference");
    assert_eq!(build_target_for_check_with(&r, &none).unwrap().1, None);
}
