//! One pass of the chain: triage → investigate → deep panel (merged by code) →
//! the escalate formatter.

use super::call::Ctx;
use super::evidence::{evidence_score, investigate_triggers, needs_strong_evidence};
use super::tiers::Tier;
use crate::sanitize::boxed;
use crate::verdict::{Action, ParseKind, Verdict};

/// One complete pass of steps 1–4.
pub(super) struct Pass {
    pub(super) action: Action,
    pub(super) reason: String,
    pub(super) triage: Action,
    pub(super) investigated_with_tools: bool,
    pub(super) iterations: u32,
}

pub(super) async fn one_pass(ctx: &Ctx<'_>, temperature: f64) -> Pass {
    let tb = ctx.toolbox;
    let ev = ctx.evidence;
    let tools_empty = ev.is_empty();
    let triage = ctx
        .verdict(Tier::Triage, temperature, ctx.base_prompt())
        .await;
    let mut pass = Pass {
        action: Action::Escalate,
        reason: String::new(),
        triage: triage.action,
        investigated_with_tools: false,
        iterations: 0,
    };
    let clean = triage.action == Action::Resolve
        && triage.confidence >= 4
        && triage.positive_evidence
        && !tools_empty;
    if clean {
        if needs_strong_evidence(tb, &ev.actor) && !triage.strong_evidence {
            let why = format!(
                "triage resolve of a role grant or bulk/PII export without an approval key or strong evidence; escalated. Triage said: {}",
                triage.reason
            );
            return format_escalation(ctx, pass, temperature, why, &[("triage", &triage)]).await;
        }
        if !investigate_triggers(tb, ev) {
            pass.action = Action::Resolve;
            pass.reason = triage.reason;
            return pass;
        }
    }

    // Step 2: investigate (runtime tools, or the model's own tool loop).
    let (inv, tools_empty) = if ctx.opts.tool_loop {
        let (v, rounds, data) = ctx
            .investigate_loop(temperature, &triage, ctx.opts.max_tool_rounds)
            .await;
        pass.iterations += rounds;
        pass.investigated_with_tools = data;
        (v, !data)
    } else {
        pass.iterations += 1;
        pass.investigated_with_tools = !tools_empty;
        let v = ctx
            .verdict(
                Tier::Investigate,
                temperature,
                ctx.with_verdicts(&[("triage", &triage)]),
            )
            .await;
        (v, tools_empty)
    };
    let fan_out = match inv.action {
        Action::Resolve => {
            let guard = if inv.insufficient_data {
                Some("it reported insufficient data")
            } else if tools_empty {
                Some("the tools returned nothing")
            } else if inv.confidence <= 2 {
                Some("its confidence is below 3")
            } else if !inv.positive_evidence {
                Some("it cited no positive evidence")
            } else {
                None
            };
            if let Some(g) = guard {
                let why = format!(
                    "investigate resolve rejected because {g}; escalated. Investigate said: {}",
                    inv.reason
                );
                return format_escalation(
                    ctx,
                    pass,
                    temperature,
                    why,
                    &[("triage", &triage), ("investigate", &inv)],
                )
                .await;
            }
            if evidence_score(tb, ev, &inv) >= 3 {
                pass.action = Action::Resolve;
                pass.reason = inv.reason;
                return pass;
            }
            true
        }
        Action::Escalate => inv.confidence < 4 || inv.insufficient_data,
    };
    if !fan_out {
        let why = inv.reason.clone();
        return format_escalation(
            ctx,
            pass,
            temperature,
            why,
            &[("triage", &triage), ("investigate", &inv)],
        )
        .await;
    }

    // Step 3: the deep panel, concurrently; seqs reserved up front so the transcript
    // order does not depend on which call finishes first.
    pass.iterations += 3;
    let prompt = ctx.with_verdicts(&[("triage", &triage), ("investigate", &inv)]);
    let base = ctx.rec.reserve(3);
    let (b, m, i) = tokio::join!(
        ctx.verdict_at(base, Tier::DeepBenign, temperature, prompt.clone()),
        ctx.verdict_at(base + 1, Tier::DeepMalicious, temperature, prompt.clone()),
        ctx.verdict_at(base + 2, Tier::DeepIncomplete, temperature, prompt),
    );
    let panel = [&b, &m, &i];
    let all_resolve = panel.iter().all(|v| {
        v.action == Action::Resolve
            && v.confidence >= 3
            && v.positive_evidence
            && v.parse == ParseKind::Json
    }) && !i.insufficient_data;
    if all_resolve {
        pass.action = Action::Resolve;
        pass.reason = b.reason.clone();
        return pass;
    }
    let dissent = panel
        .iter()
        .zip(["deep-benign", "deep-malicious", "deep-incomplete"])
        .find(|(v, _)| v.action != Action::Resolve || v.insufficient_data)
        .map(|(v, n)| format!("{n}: {}", v.reason))
        .unwrap_or_else(|| "the deep panel was not unanimous and confident".to_string());
    format_escalation(
        ctx,
        pass,
        temperature,
        dissent,
        &[
            ("triage", &triage),
            ("investigate", &inv),
            ("deep-benign", &b),
            ("deep-malicious", &m),
            ("deep-incomplete", &i),
        ],
    )
    .await
}

/// Step 4: the formatter's alert becomes the reason; its failure keeps `why`.
pub(super) async fn format_escalation(
    ctx: &Ctx<'_>,
    mut pass: Pass,
    temperature: f64,
    why: String,
    prior: &[(&str, &Verdict)],
) -> Pass {
    pass.action = Action::Escalate;
    let mut user = ctx.with_verdicts(prior);
    user.push_str(&boxed("escalation_cause", &why));
    user.push_str("\nWrite the analyst alert now.");
    let seq = ctx.rec.reserve(1);
    pass.reason = match ctx.call(seq, Tier::Formatter, temperature, user).await {
        Ok(text) if !text.trim().is_empty() => text.trim().to_string(),
        _ => why,
    };
    pass
}
