#!/usr/bin/env python3
"""The code-shape figures issue 33 asks for, measured the same way every time.

Usage: scripts/code_shape.py [--top N] [--edges]   (from the repository root)

Reads every `crates/*/src/**/*.rs`, leaves out test code (files named `tests.rs`, files
under a `tests/` directory, and every `#[cfg(test)]` item, found by brace matching after
comments and string literals are blanked), and prints:

- import circles among files: a file depends on the module file a `crate::…`,
  `super::…` or `self::…` path names (in `use` trees and in inline paths; the deepest
  module that exists is taken), and every strongly connected component of more than one
  file is printed, each with the edges that close it. A module file's `mod child;` lines
  are declarations, not uses, and are not edges; its `pub use child::X` re-exports are.
- the largest functions (lines from `fn` to its closing brace);
- `Result<_, String>` in non-test code, `use super::*` outside test modules, and
  `pub use …::*` glob re-exports.

Rust keeps crates acyclic by itself, so only circles inside a crate are looked for.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

ROOT = os.getcwd()


def blank(src):
    """Comments and string/char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 260]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_brace(s, open_at):
    depth = 0
    for j in range(open_at, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


CFG_TEST = re.compile(r"#\[cfg\((?:all\()?test\b[^\]]*\]")


def strip_tests(code):
    """Every item under `#[cfg(test)]` blanked."""
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code
        # The item: up to its `;` or its brace block, whichever comes first.
        semi = code.find(";", m.end())
        brace = code.find("{", m.end())
        if brace < 0 or (0 <= semi < brace):
            end = semi
        else:
            end = match_brace(code, brace)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start(): end + 1]) + code[end + 1:]


def module_of(crate_src, path):
    rel = os.path.relpath(path, crate_src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    if rel and rel[0] == "bin":
        return None  # binaries are their own crates
    return tuple(rel)


def use_paths(tree):
    """Paths named by one use tree (`a::{b, c::d}` → [a::b, a::c::d])."""
    return [segs for segs, _ in use_paths_aliased(tree)]


def use_names(tree, here):
    """`name -> absolute path` of what one use tree brings into module `here`'s scope."""
    out = {}
    for path in use_paths_aliased(tree):
        segs, alias = path
        if not segs or segs[-1] in ("self", "*"):
            continue
        # None: an item of another crate (`pub use gauntlet_job::shard::Shard`).
        out[alias or segs[-1]] = absolute(segs, here)
    return out


def use_paths_aliased(tree, prefix=()):
    """(path, alias) for each path one use tree names; alias None without `as`."""
    tree = tree.strip()
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(tree):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(tree[start:i])
            start = i + 1
    parts.append(tree[start:])
    if len(parts) > 1:
        return [x for p in parts for x in use_paths_aliased(p, prefix)]
    if "{" in tree:
        head, rest = tree.split("{", 1)
        head = [x for x in head.strip().rstrip(":").split("::") if x]
        return use_paths_aliased(rest.rsplit("}", 1)[0], prefix + tuple(head))
    m = re.match(r"(.*?)\s+as\s+(\w+)$", tree)
    alias = m.group(2) if m else None
    t = (m.group(1) if m else tree).strip()
    segs = tuple(x for x in t.split("::") if x)
    return [(prefix + segs, alias)] if segs else []


def absolute(segs, here):
    """A `crate::`/`super::`/`self::` path as a path from the crate root, else None."""
    rest = list(segs)
    if rest[0] == "crate":
        return tuple(rest[1:])
    if rest[0] in ("super", "self"):
        base = here
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        return base + tuple(rest)
    if here + (rest[0],) in MODULES:  # a child module, named without `self::`
        return here + tuple(rest)
    return None


MODULES = set()

# module -> {name: absolute path}: what each module's `use` lines bring into scope, so a
# path through a re-export (or a parent's import seen as `super::x`) reaches the file
# that defines the item.
SCOPE = {}


def resolve(segs, here, modules, depth=0):
    """The module file a path names, seen from module `here`, or None outside the
    crate. A path to an item a module only imports (`pub use child::X`, or `use` lines
    seen through `super::`) is followed to the module the item comes from."""
    if not segs:
        return None
    base = None
    rest = list(segs)
    if rest[0] == "crate":
        base, rest = (), rest[1:]
    elif rest[0] in ("super", "self"):
        base = here
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    full = base + tuple(rest)
    cand = full
    while cand not in modules and len(cand) > len(base):
        cand = cand[:-1]
    if cand not in modules:
        return None
    if len(full) > len(cand) and depth < 8:
        item = full[len(cand)]
        scope = SCOPE.get(cand, {})
        if item in scope and scope[item] is None:
            return None  # re-exported from another crate: no edge inside this one
        target = scope.get(item)
        if target is not None and target[: len(cand)] != cand + (item,):
            via = resolve(("crate",) + target, cand, modules, depth + 1)
            if via is not None:
                return via
    return cand


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in list(graph):
        if v not in index:
            strong(v)
    return out


FN = re.compile(r"\bfn\s+(\w+)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--edges", action="store_true", help="print every edge of each circle")
    a = ap.parse_args()
    crates = sorted(d for d in os.listdir("crates") if os.path.isdir(os.path.join("crates", d, "src")))
    circles, fns = [], []
    res_string = super_glob = glob_reexport = 0
    files_read = 0
    for c in crates:
        src = os.path.join("crates", c, "src")
        files = {}
        for dp, dn, fn in os.walk(src):
            if os.sep + "tests" in dp[len(src):] or dp.endswith(os.sep + "tests"):
                continue
            for f in fn:
                if f.endswith(".rs") and f != "tests.rs":
                    p = os.path.join(dp, f)
                    m = module_of(src, p)
                    if m is not None:
                        files[m] = p
        graph = defaultdict(set)
        codes = {}
        SCOPE.clear()
        MODULES.clear()
        MODULES.update(files)
        for mod, p in files.items():
            code = strip_tests(blank(open(p, encoding="utf-8").read()))
            codes[mod] = code
            scope = {}
            for um in re.finditer(r"\buse\s+([^;]+);", code):
                scope.update(use_names(um.group(1), mod))
            SCOPE[mod] = scope
        for mod, p in files.items():
            files_read += 1
            code = codes[mod]
            lines = code.split("\n")
            res_string += sum(1 for ln in lines if re.search(r"Result<[^;]*,\s*String>", ln))
            super_glob += len(re.findall(r"\buse\s+super::\*", code))
            glob_reexport += len(re.findall(r"\bpub(\([^)]*\))?\s+use\s+[^;]*::\*", code))
            paths = []
            for um in re.finditer(r"\buse\s+([^;]+);", code):
                paths += use_paths(um.group(1))
            inline = re.sub(r"\buse\s+[^;]+;", " ", code)  # use trees are read above
            for pm in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:\s*::\s*(?:super|\w+))+)", inline):
                paths.append(tuple(s.strip() for s in pm.group(1).split("::")))
            for segs in paths:
                if segs and segs[0] not in ("crate", "super", "self") and mod + (segs[0],) in files:
                    segs = ("self",) + tuple(segs)
                t = resolve(segs, mod, files)
                if t is not None and t != mod:
                    graph[mod].add(t)
            for fm in FN.finditer(code):
                brace = code.find("{", fm.end())
                semi = code.find(";", fm.end())
                if brace < 0 or (0 <= semi < brace):
                    continue
                end = match_brace(code, brace)
                n = code.count("\n", fm.start(), end) + 1
                fns.append((n, f"{p}:{code.count(chr(10), 0, fm.start()) + 1}", fm.group(1)))
        for comp in sccs(graph):
            if len(comp) > 1:
                members = set(comp)
                edges = sorted((files[s], files[t]) for s in comp for t in graph[s] if t in members)
                circles.append((c, sorted(files[m] for m in comp), edges))
    print(f"files read (non-test): {files_read}")
    print(f"import circles among files: {len(circles)}")
    for c, members, edges in circles:
        print(f"  {c}: " + " <-> ".join(members))
        if a.edges:
            for s, t in edges:
                print(f"      {s} -> {t}")
    print(f"largest functions (lines, fn to closing brace):")
    for n, where, name in sorted(fns, reverse=True)[: a.top]:
        print(f"  {n:5d}  {name}  {where}")
    print(f"Result<_, String> in non-test code: {res_string}")
    print(f"use super::* outside test modules: {super_glob}")
    print(f"glob re-exports (pub use …::*): {glob_reexport}")


if __name__ == "__main__":
    main()
