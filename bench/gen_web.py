#!/usr/bin/env python3
"""Makes N run directories for the dashboard benchmark from one real run directory.

Each copy gets its own run id (run.json and every leaderboard row), so none is flagged as
a duplicate; everything else (transcripts, results) is the real run's, so the dashboard's
background recount does real work on each. Usage: gen_web.py TEMPLATE_DIR OUT_DIR N
"""
import json
import os
import shutil
import sys

template, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
run_json = json.load(open(os.path.join(template, "run.json")))
board = json.load(open(os.path.join(template, "leaderboard.json")))
os.makedirs(out, exist_ok=True)
for i in range(n):
    d = os.path.join(out, f"run-{i:04d}")
    os.makedirs(d, exist_ok=True)
    rid = f"{run_json['run_id']}-{i:04d}"
    for name in ("transcripts.jsonl", "results.json", "sessions.jsonl", "usage.json"):
        src = os.path.join(template, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(d, name))
    rj = dict(run_json, run_id=rid)
    json.dump(rj, open(os.path.join(d, "run.json"), "w"), indent=2)
    rows = [dict(r, run_id=rid) for r in board]
    json.dump(rows, open(os.path.join(d, "leaderboard.json"), "w"), indent=2)
