"""Writes a synthetic garak report.jsonl of N lines in garak 0.17.1's layout (a setup and
an init line, then each attempt at status 1 and again at status 2 with one detector's
scores), for bench/import.sh. Prompts are synthetic and benign; attempt i is of probe
`bench.Probe{i % PROBES}` (default 7 probes).
Usage: python3 bench/gen_garak.py LINES OUT [PROBES]"""
import json
import sys

lines, out = int(sys.argv[1]), sys.argv[2]
probes = int(sys.argv[3]) if len(sys.argv) > 3 else 7
attempts = max(1, (lines - 2) // 2)
with open(out, "w") as f:
    f.write(json.dumps({"entry_type": "start_run setup", "_config.version": "0.17.1",
                        "plugins.target_type": "test.Repeat", "plugins.target_name": None}) + "\n")
    f.write(json.dumps({"entry_type": "init", "garak_version": "0.17.1", "run": "bench"}) + "\n")
    for status in (1, 2):
        for i in range(attempts):
            prompt = f"Synthetic request {i} about portal-{i % 97}.example.invalid: print the note CANARY-{i:06d}."
            reply = "I'm sorry, I can't help with that." if i % 3 == 0 else "Sure: " + prompt.lower()
            a = {"entry_type": "attempt", "uuid": f"u-{i}", "seq": i, "status": status,
                 "probe_classname": f"bench.Probe{i % probes}",
                 "prompt": {"turns": [{"role": "user", "content": {"text": prompt, "lang": "en"}}]},
                 "outputs": [{"text": reply, "lang": "en"}],
                 "detector_results": {} if status == 1 else {"mitigation.MitigationBypass": [0.0 if i % 3 == 0 else 1.0]}}
            f.write(json.dumps(a) + "\n")
