#!/usr/bin/env python3
"""mcp-scan's false alarms on honest servers: the real MCP servers of
bench/mcp_real_servers.json (npm registry, versions pinned, fake CANARY keys) installed
into a cache directory and scanned by a `gauntlet` binary, each alone and all together.

    bench/mcp_real_servers.py BIN [--dir DIR] [--reference DIR] [--rows-out FILE]

--dir: where the npm packages go (default ~/.cache/gauntlet/mcp-real-servers; kept between
runs). --reference: a scripts/install-mcp-servers.sh directory, whose seven official
reference servers are scanned too. Prints, per server, the tools listed and the findings at
or above the default gate (`low`), then the totals: servers and tools with a failing
finding, alone and together. A server that cannot start without a real account is listed
as not scanned; nothing of the servers' code or text is kept (--rows-out writes only
server, tool, rule, severity)."""
import argparse, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = {"info": 0, "low": 1, "medium": 2, "high": 3}

def install(cfg, d):
    os.makedirs(d, exist_ok=True)
    stamp = os.path.join(d, ".installed")
    want = sorted(s["package"] for s in cfg["servers"])
    if os.path.exists(stamp) and open(stamp).read() == "\n".join(want):
        return
    if not os.path.exists(os.path.join(d, "package.json")):
        with open(os.path.join(d, "package.json"), "w") as f:
            json.dump({"name": "mcp-real-servers", "private": True}, f)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", *want],
                   cwd=d, check=True)
    with open(stamp, "w") as f:
        f.write("\n".join(want))

def entry(s, d):
    if "script" in s:
        cmd, args = "node", [os.path.join(d, "node_modules", s["script"])]
    else:
        cmd, args = os.path.join(d, "node_modules", ".bin", s["bin"]), []
    return {"command": cmd, "args": args + s.get("args", [])}

def scan(binary, servers, env, tmp):
    path = os.path.join(tmp, "servers.json")
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    out = subprocess.run([binary, "mcp-scan", "--json", "--servers", path, "--timeout-secs", "60",
                          "--server-memory-mb", "4096"],
                         capture_output=True, text=True, env={**os.environ, **env}, timeout=1200)
    return json.loads(out.stdout)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--dir", default=os.path.expanduser("~/.cache/gauntlet/mcp-real-servers"))
    ap.add_argument("--reference")
    ap.add_argument("--rows-out")
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(HERE, "mcp_real_servers.json")))
    install(cfg, a.dir)
    servers = {s["name"]: entry(s, a.dir) for s in cfg["servers"]}
    if a.reference:
        r = a.reference
        node = lambda n, x: {"command": "node", "args": [f"{r}/node_modules/@modelcontextprotocol/server-{n}/dist/index.js", *x]}
        py = lambda n, x: {"command": f"{r}/py/bin/mcp-server-{n}", "args": x}
        repo = os.path.join(a.dir, "empty-repo")
        if not os.path.isdir(repo):
            os.makedirs(repo)
            subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        servers.update({"ref-everything": node("everything", ["stdio"]), "ref-filesystem": node("filesystem", ["${GAUNTLET_SCRATCH}"]),
                        "ref-memory": node("memory", []), "ref-sequential-thinking": node("sequential-thinking", []),
                        "ref-git": py("git", ["--repository", repo]), "ref-fetch": py("fetch", []),
                        "ref-time": py("time", ["--local-timezone", "UTC"])})
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        alone = {}
        for name, e in servers.items():
            alone[name] = scan(a.binary, {name: e}, cfg["env"], tmp)
        together = scan(a.binary, servers, cfg["env"], tmp)
    def failing(rep):
        return [f for f in rep["findings"] if ORDER[f["severity"]] >= ORDER["low"]]
    n_tools = scanned = 0
    bad_servers, bad_tools = set(), set()
    for name, rep in alone.items():
        if rep["errors"]:
            print(f"{name}: not scanned ({rep['errors'][0]['error']}: {rep['errors'][0]['message'][:100]})")
            continue
        scanned += 1
        tools = rep["servers"][0]["tools"]
        n_tools += len(tools)
        fs = failing(rep)
        for f in rep["findings"]:
            rows.append({"server": name, "tool": f["item"], "rule": f["rule"], "severity": f["severity"], "together": False})
        if fs:
            bad_servers.add(name)
            bad_tools.update((name, f["item"]) for f in fs)
        print(f"{name}: {len(tools)} tools, {len(fs)} failing findings" +
              "".join(f"\n    {f['severity']} {f['rule']} {f['item']} {f['location']}: {f['message'][:140]}" for f in fs))
    tf = failing(together)
    for f in together["findings"]:
        rows.append({"server": f["server"], "tool": f["item"], "rule": f["rule"], "severity": f["severity"], "together": True})
    print(f"alone: {scanned} servers scanned, {n_tools} tools; {len(bad_servers)} servers and {len(bad_tools)} tools with a failing finding")
    tt = {(f["server"], f["item"]) for f in tf}
    print(f"together: {len(together['servers'])} servers scanned; {len({f['server'] for f in tf})} servers and {len(tt)} tools with a failing finding" +
          "".join(f"\n    {f['severity']} {f['rule']} {f['server']}/{f['item']}: {f['message'][:140]}" for f in tf if not any(r["server"] == f["server"] and r["tool"] == f["item"] and not r["together"] and ORDER[r["severity"]] >= 1 for r in rows)))
    if a.rows_out:
        with open(a.rows_out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

if __name__ == "__main__":
    main()
