//! `mcp-scan --review SPEC`: every listed definition sent to a reviewer model beside the
//! rules (the request and the reading of the reply are `gauntlet_mcp::review`'s; this
//! sends them through the configured model and puts the outcomes in the report).

use crate::error::CliError;
use futures_util::StreamExt;
use gauntlet_calls::cache::{self, CachedModel, CallCounters, UsageSlot};
use gauntlet_calls::journal::{Journal, journal_error};
use gauntlet_calls::seam::CallModel;
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_mcp::finding::ReviewSummary;
use gauntlet_mcp::review::{self, Pending};
use gauntlet_mcp::scan::{Inventory, ScanReport, ServerError};
use gauntlet_models::{Model, ModelError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest reply asked of the reviewer, tokens.
const MAX_TOKENS: u32 = 512;

/// How the reviewer is run.
pub(crate) struct ReviewOptions {
    /// Definitions reviewed at once.
    pub concurrency: usize,
    /// A poisoned verdict counts only when its quote is in the definition.
    pub require_evidence: bool,
    /// Send the control definitions first ([`review::controls`]).
    pub controls: bool,
    /// Where the reviewer's replies are journaled (a rerun reads them back instead of
    /// calling again).
    pub journal: Option<PathBuf>,
}

/// The reviewer model of `--review`, built before any server is started so a bad spec
/// or a missing API key fails first.
pub(crate) fn reviewer(spec: &str) -> Result<Reviewer, CliError> {
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
pub(crate) struct Reviewer {
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

/// The call layer under the reviewer: its journal (the user's `--review-journal`, else
/// one in a temporary directory), counters and usage, as every run's model calls have.
struct Calls {
    journal: Journal,
    counters: CallCounters,
    pending: cache::Pending,
    usage: UsageSlot,
    base: HashWriter,
    /// The temporary journal's directory, removed when the scan ends.
    _scratch: Option<tempfile::TempDir>,
}

impl Calls {
    fn open(model: &dyn Model, path: Option<&Path>) -> Result<Calls, CliError> {
        let (path, scratch) = match path {
            Some(p) => (p.to_path_buf(), None),
            None => {
                let d = tempfile::tempdir().map_err(CliError::failed)?;
                (d.path().join("review.jsonl"), Some(d))
            }
        };
        let journal = Journal::open(&path)
            .map_err(|e| CliError::invalid(format!("--review-journal {}: {e}", path.display())))?;
        Ok(Calls {
            journal,
            counters: CallCounters::with_budget(None),
            pending: cache::Pending::default(),
            usage: UsageSlot::default(),
            base: cache::call_base(model, "mcp-review"),
            _scratch: scratch,
        })
    }
}

/// Sends `pending`'s requests through the call layer (a request already in the journal
/// is answered from it; every reply is checked and scrubbed of the model's secrets
/// before it is journaled or read), at most `concurrency` in flight; the replies' text in
/// `pending`'s order, with a progress line on stderr about every two seconds.
fn ask_all(
    rt: &tokio::runtime::Runtime,
    model: &dyn Model,
    calls: &Calls,
    pending: &[&Pending],
    concurrency: usize,
) -> Result<Vec<Result<String, ModelError>>, CliError> {
    let cached = CachedModel::new(
        model,
        &calls.base,
        review::PROMPT_VERSION.as_bytes(),
        &calls.journal,
        &calls.counters,
        &calls.pending,
        &calls.usage,
    );
    let out = rt.block_on(async {
        let cached = &cached;
        let mut replies = futures_util::stream::iter(pending.iter())
            .map(|p| async move { cached.call(request(p)).await.map(|r| r.content) })
            .buffered(concurrency.max(1));
        let mut out = Vec::with_capacity(pending.len());
        let mut shown = Instant::now();
        while let Some(r) = replies.next().await {
            out.push(r);
            if shown.elapsed() >= Duration::from_secs(2) && out.len() < pending.len() {
                eprintln!("review: {}/{} definitions", out.len(), pending.len());
                shown = Instant::now();
            }
        }
        out
    });
    calls
        .pending
        .flush(&calls.journal)
        .map_err(|e| CliError::failed(journal_error(&calls.journal, &e)))?;
    Ok(out)
}

/// Reviews every definition of `invs` and adds the outcomes to `report` in scan order.
/// First, unless turned off, the reviewer judges the control definitions
/// ([`review::controls`]); a reviewer that gets one wrong reviews nothing else, and the
/// report says why (an error of the scan: exit 2), keeping the rules' findings.
pub(crate) fn review_all(
    rt: &tokio::runtime::Runtime,
    reviewer: &Reviewer,
    invs: &[Inventory],
    report: &mut ScanReport,
    o: &ReviewOptions,
) -> Result<(), CliError> {
    let model = reviewer.model.as_ref();
    let calls = Calls::open(model, o.journal.as_deref())?;
    let mut summary = ReviewSummary::new(&reviewer.label, o.require_evidence);
    if o.controls {
        let controls = review::control_pending();
        let refs: Vec<&Pending> = controls.iter().map(|(p, _)| p).collect();
        let replies = ask_all(rt, model, &calls, &refs, o.concurrency)?;
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
            return Ok(());
        }
    }
    let pending = review::pending(invs);
    let refs: Vec<&Pending> = pending.iter().collect();
    let replies = ask_all(rt, model, &calls, &refs, o.concurrency)?;
    for (p, r) in pending.iter().zip(&replies) {
        match r {
            Ok(text) => summary.record(report, p, Ok(text)),
            Err(e) => summary.record(report, p, Err(e)),
        }
    }
    report.review = Some(summary);
    // Call counts go to stderr, not the report: a rerun answered from the journal must
    // write the same report.
    let (made, cached, failed) = calls.counters.snapshot();
    eprintln!("review: {made} calls made, {cached} answered from the journal, {failed} failed");
    Ok(())
}
