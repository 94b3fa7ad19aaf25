//! `mcp-scan --review SPEC`: every listed definition sent to a reviewer model beside the
//! rules (the request and the reading of the reply are `gauntlet_mcp::review`'s; this
//! sends them through the configured model and puts the outcomes in the report).

use crate::error::CliError;
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_mcp::review::{self, Pending, ReviewSummary};
use gauntlet_mcp::scan::{Inventory, ScanReport, ServerError};
use gauntlet_models::{Model, ModelError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest reply asked of the reviewer, tokens.
const MAX_TOKENS: u32 = 512;

/// How the reviewer is run.
pub struct ReviewOptions {
    /// Definitions reviewed at once.
    pub concurrency: usize,
    /// A poisoned verdict counts only when its quote is in the definition.
    pub require_evidence: bool,
    /// Send the control definitions first ([`review::controls`]).
    pub controls: bool,
}

/// The reviewer model of `--review`, built before any server is started so a bad spec
/// or a missing API key fails first.
pub fn reviewer(spec: &str) -> Result<Reviewer, CliError> {
    let spec =
        gauntlet_engine::stored::parse_target_spec("--review", spec).map_err(CliError::invalid)?;
    let model = gauntlet_models::registry::build_target(&spec)
        .map_err(|e| CliError::invalid(format!("--review: {e}")))?;
    // The model's name says which reviewer it was, when the spec's label does not.
    let label = match spec.params.str("model") {
        Some(m) if model.label() == spec.name => format!("{} ({m})", spec.name),
        _ => model.label(),
    };
    Ok(Reviewer { model, label })
}

/// The reviewer model and how the report names it.
pub struct Reviewer {
    pub model: Arc<dyn Model>,
    pub label: String,
}

/// The request of one item: the reviewer's instructions, the item, greedy decoding.
fn request(p: &Pending) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system(p.system.clone()),
            Message::user(p.user.clone()),
        ],
        temperature: Some(0.0),
        seed: Some(0),
        max_tokens: Some(MAX_TOKENS),
        ..ChatRequest::default()
    }
}

/// One reviewer call: the reply's text, checked and scrubbed of the model's secrets
/// like every reply the call layer takes.
async fn ask(model: Arc<dyn Model>, req: ChatRequest) -> Result<String, ModelError> {
    let reply = model.chat(&req).await?;
    Ok(gauntlet_calls::vet::vet_reply(model.as_ref(), reply)?.content)
}

/// Sends `pending`'s requests with at most `concurrency` in flight; the replies in
/// `pending`'s order, whatever order they finish in, with a progress line on stderr about
/// every two seconds.
fn ask_all(
    rt: &tokio::runtime::Runtime,
    model: &Arc<dyn Model>,
    pending: &[&Pending],
    concurrency: usize,
) -> Vec<Result<String, ModelError>> {
    rt.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, p) in pending.iter().enumerate() {
            let (model, gate, req) = (Arc::clone(model), Arc::clone(&gate), request(p));
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                (i, ask(model, req).await)
            });
        }
        let mut out: Vec<Option<Result<String, ModelError>>> =
            pending.iter().map(|_| None).collect();
        let (mut done, mut shown) = (0, Instant::now());
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((i, r)) => out[i] = Some(r),
                Err(e) => eprintln!("review: a call task ended abnormally: {e}"),
            }
            done += 1;
            if shown.elapsed() >= Duration::from_secs(2) && done < pending.len() {
                eprintln!("review: {done}/{} definitions", pending.len());
                shown = Instant::now();
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(ModelError::Call("the call task did not finish".into())))
            })
            .collect()
    })
}

/// Reviews every definition of `invs` and adds the outcomes to `report` in scan order.
/// First, unless turned off, the reviewer judges the control definitions
/// ([`review::controls`]); a reviewer that gets one wrong reviews nothing else, and the
/// report says why (an error of the scan: exit 2), keeping the rules' findings.
pub fn review_all(
    rt: &tokio::runtime::Runtime,
    reviewer: &Reviewer,
    invs: &[Inventory],
    report: &mut ScanReport,
    o: &ReviewOptions,
) {
    let model = &reviewer.model;
    let mut summary = ReviewSummary::new(&reviewer.label, o.require_evidence);
    if o.controls {
        let controls = review::control_pending();
        let refs: Vec<&Pending> = controls.iter().map(|(p, _)| p).collect();
        let replies = ask_all(rt, model, &refs, o.concurrency);
        let misses: Vec<String> = controls
            .iter()
            .zip(&replies)
            .filter_map(|((p, poisoned), r)| match r {
                Ok(text) => review::control_miss(p, *poisoned, Ok(text)),
                Err(e) => review::control_miss(p, *poisoned, Err(e)),
            })
            .collect();
        summary.controls = controls.len();
        summary.controls_passed = controls.len() - misses.len();
        if !misses.is_empty() {
            report.errors.push(ServerError {
                server: review::CONTROL_SERVER.into(),
                error: "review_controls".into(),
                message: format!(
                    "reviewer {} failed {} of {} control definitions whose verdict is known ({}), so its verdicts would not tell poisoned from benign and no definition was sent to it; use a stronger model (or --review-no-controls to measure this one anyway)",
                    reviewer.label,
                    misses.len(),
                    controls.len(),
                    misses.join("; ")
                ),
            });
            report.review = Some(summary);
            return;
        }
    }
    let pending = review::pending(invs);
    let refs: Vec<&Pending> = pending.iter().collect();
    let replies = ask_all(rt, model, &refs, o.concurrency);
    for (p, r) in pending.iter().zip(&replies) {
        match r {
            Ok(text) => summary.record(report, p, Ok(text)),
            Err(e) => summary.record(report, p, Err(e)),
        }
    }
    report.review = Some(summary);
}
