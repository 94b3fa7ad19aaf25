#!/usr/bin/env python3
"""Generates a synthetic detect-exam corpus: N scenarios, each with a log-uniform number
of events in [MIN, MAX] (most scenarios small, a long tail up to MAX), drawn from event
shapes that exercise every reference detector family. Deterministic for a given seed.

usage: gen_detect.py OUT_DIR [N=10000] [MIN=10] [MAX=1000] [SEED=7]
"""
import math
import os
import random
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
lo = int(sys.argv[3]) if len(sys.argv) > 3 else 10
hi = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 7)

SHAPES = [
    ("okta", "login_failure", "user_auth_failed", "okta-org/apps/sso", "{ip: 203.0.113.%d, reason: INVALID_CREDENTIALS}"),
    ("okta", "login_success", "user_session_start", "okta-org/apps/sso", "{ip: 198.51.100.%d, mfa: okta_verify_push}"),
    ("okta", "login", "user_session_start", "okta-org/apps/erp", "{ip: 198.51.100.%d, geo: PT-Lisbon}"),
    ("github", "push", "git_push", "examplecorp/storefront", "{ref: refs/heads/feature/x%d, forced: false, commit_message: 'feat: tidy'}"),
    ("github", "branch_delete", "delete_ref", "examplecorp/storefront", "{ref: refs/heads/feature/old%d}"),
    ("aws", "object_get", "GetObject", "s3://bucket.example.invalid/", "{resource_count: %d, bytes_transferred: 3400000}"),
    ("aws", "api_request", "http_get", "api-gateway/prod", "{request_count: %d, endpoint: /v2/catalog/items}"),
    ("aws", "records_read", "read_records", "dynamodb/customers", "{record_count: %d}"),
    ("azure", "secret_access", "get_secret_value", "sub-1/resourceGroups/pay-rg/vaults/kv%d", "{item: cred}"),
    ("azure", "role_assignment", "create_role_assignment", "sub-1", "{role: Reader, principal_id: p%d}"),
    ("azure", "setting_update", "change_setting", "workspace/security", "{config_key: k, old_value: '16', new_value: '%d'}"),
    ("npm", "dependency_update", "update_dependency", "examplecorp/storefront/package.json", "{package: express, old_version: 4.19.1, new_version: 4.19.%d}"),
    ("kubernetes", "log_format_drift", "emit_logs", "prod/logs", "{unmatched_percent: %d}"),
    ("support-portal", "ticket_created", "create_ticket", "support/tickets/T-1", "{subject: 'refund request number %d please'}"),
    ("github", "github.deployment", "deployment_create", "examplecorp/storefront", "{environment: production, approving_reviews: %d}"),
]
ACTORS = ["dana.finance", "ops-lead", "svc-etl", "dev-web-4", "ci-runner", "ana.sales", "stranger-%d"]

os.makedirs(out, exist_ok=True)
total = 0
for i in range(n):
    k = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    total += k
    sub = os.path.join(out, "g%02d" % (i % 50))
    os.makedirs(sub, exist_ok=True)
    lines = [
        "id: BENCH-%05d" % i,
        "detector: bench",
        "finding: {id: f%d, detector: volume-anomaly, title: bench, severity: low, event_ids: [e0]}" % i,
        "events:",
    ]
    for j in range(k):
        src, ty, action, target, meta = SHAPES[rng.randrange(len(SHAPES))]
        actor = ACTORS[rng.randrange(len(ACTORS))]
        if "%d" in actor:
            actor = actor % rng.randrange(5)
        if "%d" in target:
            target = target % rng.randrange(5)
        ts = "2026-05-%02dT%02d:%02d:%02dZ" % (1 + j % 28, rng.randrange(24), rng.randrange(60), rng.randrange(60))
        lines.append(
            "  - {id: e%d, timestamp: '%s', source: %s, event_type: %s, actor: %s, action: %s, target: '%s', severity: info, metadata: %s}"
            % (j, ts, src, ty, actor, action, target, (meta % rng.randrange(1, 300)) if "%d" in meta else meta)
        )
    lines += [
        "baseline:",
        "  known_entities: {actors: [dana.finance, ops-lead, svc-etl, dev-web-4, ci-runner, ana.sales], sources: [okta, aws, github], actor_hours: {ops-lead: [8, 9, 10, 11, 12, 13, 14, 15, 16, 17]}}",
        "  frequency_tables: {'aws:records_read:svc-etl': 400, 'aws:api_request:ci-runner': 50, 'aws:object_get': 40}",
        "  relationships: {'ops-lead:sub-1/resourceGroups/pay-rg/vaults/kv0': {count: 3}}",
        "expected: {chain_action: escalated}",
        "expected_detection: {must_fire: [], must_not_fire: [log-format-drift], reserved: false}",
    ]
    with open(os.path.join(sub, "BENCH-%05d.yaml" % i), "w") as f:
        f.write("\n".join(lines) + "\n")
print(total)
