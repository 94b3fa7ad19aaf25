//! What the call layer checks and scrubs in every reply a model gives, for calls made
//! one by one ([`crate::cache`]) and in provider batches ([`crate::batch`]) alike.

use gauntlet_core::message::ChatResponse;
use gauntlet_models::{Model, ModelError};

/// What the call layer checks and scrubs in every reply a model gives, before it is
/// journaled, tallied or used, for calls made one by one and in batches alike:
/// - at most the model's `max_tool_calls` tool calls ([`gauntlet_models::CallLimits`]);
/// - a plausible usage: neither count above [`MAX_PLAUSIBLE_TOKENS`] (a reply claiming
///   2^64 − 1000 prompt tokens used to wrap the run's counters and zero its cost);
/// - the model's API key replaced by `[redacted]` wherever the reply carries it (text,
///   tool-call names, ids and arguments, the evidence's span attributes and sink hits):
///   an endpoint echoing the key back must not put it into the journal, transcripts,
///   results or reports.
///
/// A reply failing a check is that call's error outcome (not journaled), naming the
/// model and what was wrong.
///
/// [`MAX_PLAUSIBLE_TOKENS`]: gauntlet_core::message::MAX_PLAUSIBLE_TOKENS
pub fn vet_reply(model: &dyn Model, mut r: ChatResponse) -> Result<ChatResponse, ModelError> {
    use gauntlet_core::message::MAX_PLAUSIBLE_TOKENS;
    let cap = model.limits().max_tool_calls;
    if r.tool_calls.len() > cap {
        return Err(ModelError::Call(format!(
            "{}: the reply carries {} tool calls, more than the {cap} one reply may carry (the target's `max_tool_calls`); the call is an error",
            model.label(),
            r.tool_calls.len()
        )));
    }
    if let Some(u) = r.usage {
        for (what, n) in [("input", u.input_tokens), ("output", u.output_tokens)] {
            if n > MAX_PLAUSIBLE_TOKENS {
                return Err(ModelError::Call(format!(
                    "{}: the reply reports {n} {what} tokens for one call, more than any model's context (at most {MAX_PLAUSIBLE_TOKENS} are plausible): implausible usage, the call is an error",
                    model.label()
                )));
            }
        }
    }
    for secret in model.secrets() {
        redact_reply(secret, &mut r);
    }
    Ok(r)
}

/// Replaces the key wherever the reply carries it.
fn redact_reply(secret: &gauntlet_models::transport::Secret, r: &mut ChatResponse) {
    let scrub = |s: &mut String| {
        if secret.found_in(s) {
            *s = secret.redact(s);
        }
    };
    scrub(&mut r.content);
    if let gauntlet_core::message::StopReason::Other(s) = &mut r.stop_reason {
        scrub(s);
    }
    for c in &mut r.tool_calls {
        scrub(&mut c.name);
        scrub(&mut c.call_id);
        redact_json(secret, &mut c.arguments);
    }
    // Span attributes and sink hits are the application's text like its reply.
    if let Some(ev) = &mut r.evidence {
        for s in ev.strings_mut() {
            scrub(s);
        }
    }
}

fn redact_json(secret: &gauntlet_models::transport::Secret, v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) if secret.found_in(s) => *s = secret.redact(s),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_json(secret, x)),
        Value::Object(o) => {
            if o.keys().any(|k| secret.found_in(k)) {
                let old = std::mem::take(o);
                *o = old
                    .into_iter()
                    .map(|(k, v)| (secret.redact(&k), v))
                    .collect();
            }
            o.values_mut().for_each(|x| redact_json(secret, x));
        }
        _ => {}
    }
}
