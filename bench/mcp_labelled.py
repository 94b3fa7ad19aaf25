#!/usr/bin/env python3
"""Scores a `gauntlet` binary's mcp-scan on the labelled tool definitions, one round at a
time, through the CLI: each row is written to a tools file and scanned alone (or beside the
servers its `neighbours` field lists) with `mcp-scan --tools … --json`.

    bench/mcp_labelled.py BIN [ROUND…] [--data FILE] [--rows-out FILE]

Two readings per row:
- gate:      the scan fails at the default gate (exit 1 with `--fail-on low`): what a user
             of the defaults gets, and what the labelled test scores;
- poisoning: a poisoning rule fired on the row (the reading earlier rounds published).

Prints precision and recall per round and reading, with the wrong ids. An old binary can
be scored on new rows (rows it cannot know), which is how a round is scored once before
the rules are revised from it."""
import argparse, json, os, subprocess, sys, tempfile

POISONING = {"hidden_instruction", "invisible_text", "encoded_payload", "sensitive_data_request",
             "exfiltration_channel", "tool_shadowing", "model_review"}

def scan(binary, row, tmp):
    files = []
    path = os.path.join(tmp, "candidate.json")
    with open(path, "w") as f:
        json.dump([row["tool"]], f)
    files += ["--tools", path]
    for n in row.get("neighbours", []):
        p = os.path.join(tmp, n["server"] + ".json")
        with open(p, "w") as f:
            json.dump([{"name": t, "description": "", "inputSchema": {"type": "object"}} for t in n["tools"]], f)
        files += ["--tools", p]
    out = subprocess.run([binary, "mcp-scan", "--json", *files], capture_output=True, text=True, timeout=60)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{row['id']}: exit {out.returncode}: {out.stderr[:400]}")
    report = json.loads(out.stdout)
    mine = [f for f in report["findings"] if f["server"] == "candidate"]
    order = {"info": 0, "low": 1, "medium": 2, "high": 3}
    return {
        "gate": any(order[f["severity"]] >= order["low"] for f in mine),
        "poisoning": any(f["rule"] in POISONING for f in mine),
        "rules": sorted({f["rule"] for f in mine}),
    }

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("rounds", nargs="*", type=int)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "crates/mcp/data/labelled_tools.jsonl"))
    ap.add_argument("--rows-out")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.data)]
    if a.rounds:
        rows = [r for r in rows if r["round"] in a.rounds]
    scored = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            v = scan(a.binary, r, tmp)
            scored.append({"id": r["id"], "round": r["round"], "label": r["label"], **v})
    if a.rows_out:
        with open(a.rows_out, "w") as f:
            for s in scored:
                f.write(json.dumps(s) + "\n")
    for rnd in sorted({s["round"] for s in scored}):
        rs = [s for s in scored if s["round"] == rnd]
        for key in ("gate", "poisoning"):
            tp = sum(1 for s in rs if s[key] and s["label"] == "poisoned")
            fp = sum(1 for s in rs if s[key] and s["label"] == "benign")
            fn = sum(1 for s in rs if not s[key] and s["label"] == "poisoned")
            p = tp / max(tp + fp, 1)
            r_ = tp / max(tp + fn, 1)
            print(f"round {rnd} {key:9} n={len(rs)} precision {p:.3f} ({tp}/{tp + fp}) recall {r_:.3f} ({tp}/{tp + fn})")
            wrong = [("FP " if s["label"] == "benign" else "FN ") + s["id"] + (" " + ",".join(s["rules"]) if s["label"] == "benign" else "")
                     for s in rs if s[key] != (s["label"] == "poisoned")]
            if wrong:
                print("   ", "; ".join(wrong))

if __name__ == "__main__":
    main()
