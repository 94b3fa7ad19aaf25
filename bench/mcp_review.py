#!/usr/bin/env python3
"""mcp-scan's rules and a reviewer model side by side on the labelled set of tool
definitions (crates/mcp/data/labelled_tools.jsonl). Each row is scanned alone, as a
`--tools` file, by `gauntlet mcp-scan --review SPEC --json`; the script prints, per round
and for the held-out split, the precision and recall of:

- rules:    any poisoning rule fired (what the labelled test scores);
- reviewer: the reviewer said poisoned (rows without a verdict are left out and counted);
- quoted:   the reviewer said poisoned and quoted text that is in the definition;
- union:    rules or reviewer (what `mcp-scan --review` reports as findings; a row
            the rules pass and the reviewer gave no verdict on is undecided);

First it says whether the reviewer passes the four control definitions `mcp-scan --review`
sends before a scan (a reviewer that fails them reviews nothing there); the rows are then
scanned with `--review-no-controls`, so the figures measure the reviewer either way.

usage: bench/mcp_review.py GAUNTLET_BIN SPEC [--split test|dev|all] [--limit N] [--jobs N]
                           [--out rows.jsonl]
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "crates", "mcp", "data", "labelled_tools.jsonl")
UNQUOTED = "[its quoted evidence is not in the definition]"


def scan(bin_, spec, row, tmp):
    path = os.path.join(tmp, f"{row['id']}.json")
    with open(path, "w") as f:
        json.dump([row["tool"]], f)
    p = subprocess.run(
        [bin_, "mcp-scan", "--tools", path, "--review", spec, "--review-concurrency", "1",
         "--review-no-controls", "--json"],
        capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1, 2) or not p.stdout.strip():
        raise SystemExit(f"{row['id']}: mcp-scan exited {p.returncode}: {p.stderr.strip()[-400:]}")
    rep = json.loads(p.stdout)
    fs = rep["findings"]
    review = [f for f in fs if f["rule"] == "model_review"]
    return {
        "id": row["id"], "round": row["round"], "split": row["split"],
        "truth": row["label"] == "poisoned",
        "rules": any(f["rule"] != "model_review" and f["rule"] in RULES for f in fs),
        "reviewer": None if rep["review"]["errors"] else bool(review),
        "quoted": None if rep["review"]["errors"] else any(UNQUOTED not in f["message"] for f in review),
        "error": "; ".join(e["message"] for e in rep["errors"]),
    }


RULES = {"hidden_instruction", "invisible_text", "encoded_payload", "sensitive_data_request",
         "exfiltration_channel", "tool_shadowing"}


def pr(rows, key):
    dec = [r for r in rows if r[key] is not None]
    tp = sum(1 for r in dec if r["truth"] and r[key])
    fp = sum(1 for r in dec if not r["truth"] and r[key])
    fn = sum(1 for r in dec if r["truth"] and not r[key])
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    return f"P {prec:.3f} ({tp}/{tp + fp})  R {rec:.3f} ({tp}/{tp + fn})  decided {len(dec)}/{len(rows)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("spec")
    ap.add_argument("--split", default="all")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(DATA)]
    if a.split != "all":
        rows = [r for r in rows if r["split"] == a.split]
    if a.limit:
        rows = rows[: a.limit]
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        # The controls mcp-scan sends before any scan (the rows below skip them, to
        # measure the reviewer whatever it does on them).
        empty = os.path.join(tmp, "none.json")
        with open(empty, "w") as f:
            f.write("[]")
        p = subprocess.run([a.bin, "mcp-scan", "--tools", empty, "--review", a.spec, "--json"],
                           capture_output=True, text=True, timeout=600)
        rep = json.loads(p.stdout)
        v = rep["review"]
        print(f"controls: {v['controls_passed']}/{v['controls']} right"
              + "".join(f"\n  {e['message']}" for e in rep["errors"]))
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(a.jobs) as ex:
        res = list(ex.map(lambda r: scan(a.bin, a.spec, r, tmp), rows))
    for r in res:
        # Rules fired: flagged whatever the reviewer said. Otherwise the reviewer decides,
        # and a row it gave no verdict on is undecided (that scan exits 2), not a miss.
        r["union"] = True if r["rules"] else r["reviewer"]
    wall = time.time() - t0
    if a.out:
        with open(a.out, "w") as f:
            for r in res:
                f.write(json.dumps(r) + "\n")
    groups = [("all", res)] + [(f"round {k}", [r for r in res if r["round"] == k])
                               for k in sorted({r["round"] for r in res})]
    for name, g in groups:
        print(f"== {name} ({len(g)} rows)")
        for key in ("rules", "reviewer", "quoted", "union"):
            print(f"  {key:<9} {pr(g, key)}")
    errs = [r for r in res if r["error"]]
    print(f"rows without a verdict: {len(errs)}" + (f" (e.g. {errs[0]['id']}: {errs[0]['error'][:200]})" if errs else ""))
    print(f"wall {wall:.0f} s for {len(res)} rows ({wall / max(len(res), 1):.1f} s/row)")


if __name__ == "__main__":
    sys.exit(main())
