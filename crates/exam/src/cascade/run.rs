//! Running the cascade: the floor, one pass of the chain, and the consensus voters
//! (more complete passes at temperature 0.4 when the chain resolves).

use super::call::{Ctx, Recorder};
use super::chain::one_pass;
use super::floor::{floor_reason, floor_route};
use super::outcome::{CascadeOptions, CascadeOutcome};
use super::tiers::{CONSENSUS_TEMPERATURE, Direct, MAIN_TEMPERATURE, TierCaller, TierModels};
use crate::tools::{Toolbox, render_finding};
use crate::verdict::Action;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// Triages one finding. `toolbox` is the scenario's model-visible telemetry.
pub async fn run_cascade(
    toolbox: &Toolbox,
    models: &TierModels,
    opts: &CascadeOptions,
) -> CascadeOutcome {
    run_cascade_via(toolbox, models, opts, &Direct).await
}

/// [`run_cascade`] with every model call made through `caller`.
pub async fn run_cascade_via(
    toolbox: &Toolbox,
    models: &TierModels,
    opts: &CascadeOptions,
    caller: &dyn TierCaller,
) -> CascadeOutcome {
    let family = toolbox.finding.family();
    if let Some(route) = floor_route(&family, &toolbox.finding_metadata, opts) {
        return CascadeOutcome {
            terminal_action: Action::Escalate.chain_word().to_string(),
            terminal_reason: floor_reason(route, toolbox),
            force_escalated: true,
            route_id: Some(route.to_string()),
            transcript: Vec::new(),
            triage_action: None,
            investigated_with_tools: false,
            iterations: 0,
            fail_safe: None,
        };
    }
    let evidence = toolbox.gather();
    let rec = Recorder {
        next: AtomicUsize::new(0),
        entries: Mutex::new(Vec::new()),
        fail_safe: Mutex::new(None),
    };
    let mut ctx = Ctx {
        models,
        caller,
        voter: 0,
        rec: &rec,
        toolbox,
        evidence: &evidence,
        finding_text: render_finding(&toolbox.finding, &toolbox.finding_metadata),
        evidence_text: evidence.render(),
        opts,
    };
    let main = one_pass(&ctx, MAIN_TEMPERATURE).await;
    let mut action = main.action;
    let mut reason = main.reason.clone();
    if action == Action::Resolve {
        for voter in 1..=opts.consensus {
            ctx.voter = voter;
            let v = one_pass(&ctx, CONSENSUS_TEMPERATURE).await;
            if v.action != Action::Resolve {
                action = Action::Escalate;
                reason = format!(
                    "consensus: voter {voter} of {} did not resolve: {}",
                    opts.consensus, v.reason
                );
                break;
            }
        }
    }
    let mut transcript = rec.entries.into_inner().expect("recorder lock");
    transcript.sort_by_key(|e| e.seq);
    let fail_safe = rec
        .fail_safe
        .into_inner()
        .expect("recorder lock")
        .map(|(_, why)| why);
    CascadeOutcome {
        terminal_action: action.chain_word().to_string(),
        terminal_reason: reason,
        force_escalated: false,
        route_id: None,
        transcript,
        triage_action: Some(main.triage.chain_word().to_string()),
        investigated_with_tools: main.investigated_with_tools,
        iterations: main.iterations,
        fail_safe,
    }
}
