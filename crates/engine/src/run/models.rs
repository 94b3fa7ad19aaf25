//! The plan's models seen from the driver: every model (for batching), the network
//! ones with their roles (for transport counters), and the call counters progress hears.

use crate::plan::Plan;
use gauntlet_calls::cache::CallCounters;
use gauntlet_job::progress::CallStats;
use gauntlet_models::{Model, TransportStats};
use std::sync::Arc;

/// Every model of the plan (targets, attackers, attack judges' and judges' graders).
pub(super) fn all_models(plan: &Plan) -> Vec<Arc<dyn Model>> {
    plan.targets
        .iter()
        .chain(plan.attackers.iter().flatten())
        .chain(plan.attack_graders.iter().flatten())
        .chain(plan.graders.iter().flatten())
        .cloned()
        .collect()
}

/// Every network model of the plan with its role, for transport counters.
pub(super) fn network_models(plan: &Plan) -> Vec<(String, &Arc<dyn Model>)> {
    let all = plan
        .targets
        .iter()
        .map(|t| ("target", t))
        .chain(plan.attackers.iter().flatten().map(|m| ("attacker", m)))
        .chain(
            plan.attack_graders
                .iter()
                .flatten()
                .map(|m| ("attack_judge", m)),
        )
        .chain(plan.graders.iter().flatten().map(|m| ("grader", m)));
    all.filter(|(_, m)| m.transport_stats().is_some())
        .map(|(role, m)| (format!("{role}:{}", m.label()), m))
        .collect()
}

/// Transport counters summed per `role:label` (two models with one label are summed).
pub(super) fn transport_snapshot(
    models: &[(String, Arc<dyn Model>)],
) -> Vec<(String, TransportStats)> {
    let mut out: Vec<(String, TransportStats)> = Vec::new();
    for (name, m) in models {
        let Some(s) = m.transport_stats() else {
            continue;
        };
        if let Some((_, t)) = out.iter_mut().find(|(n, _)| n == name) {
            t.calls += s.calls;
            t.attempts += s.attempts;
            t.succeeded += s.succeeded;
            t.failed += s.failed;
            t.retries_429 += s.retries_429;
            t.retries_5xx += s.retries_5xx;
            t.retries_timeout += s.retries_timeout;
            t.retries_connect += s.retries_connect;
            t.retry_wait_ms += s.retry_wait_ms;
            t.concurrency_decreases += s.concurrency_decreases;
        } else {
            out.push((name.clone(), s));
        }
    }
    out
}

pub(super) fn call_stats(
    counters: &CallCounters,
    transport: &[(String, TransportStats)],
) -> CallStats {
    let (made, cached, failed) = counters.snapshot();
    let mut c = CallStats {
        made,
        in_flight: counters
            .in_flight
            .load(std::sync::atomic::Ordering::Relaxed),
        cached,
        failed,
        ..Default::default()
    };
    for (_, t) in transport {
        c.retries_429 += t.retries_429;
        c.retries_5xx += t.retries_5xx;
        c.retries_timeout += t.retries_timeout;
        c.retries_connect += t.retries_connect;
    }
    c
}
