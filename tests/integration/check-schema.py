#!/usr/bin/python3
# check-schema.py - validate JSON documents against hutch's published
# schemas (share/schema/NAME-VERSION.json) with python3-jsonschema.
#
#   check-schema.py SCHEMA [FILE]   SCHEMA: hutch.result/1, hutch.event/1, ...
#
# Reads one JSON document per line (FILE or stdin; blank lines are an
# error, so is an empty input) and validates each; an event's exit
# result is validated against hutch.result/1 too. Exit 0 when all are
# valid, 1 (with the reasons on stderr) otherwise.
import json
import os
import sys

import jsonschema


def load(name):
    base = os.environ.get("HUTCH_DATADIR") or os.path.join(os.path.dirname(__file__), "../../share")
    fname = name.replace("/", "-") + ".json"
    with open(os.path.join(base, "schema", fname)) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def main():
    name = sys.argv[1]
    src = open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin
    validator = load(name)
    result = load("hutch.result/1") if name == "hutch.event/1" else None
    n = bad = 0
    for lineno, line in enumerate(src, 1):
        n += 1
        try:
            doc = json.loads(line)
        except ValueError as e:
            print(f"line {lineno}: not JSON: {e}: {line[:200]!r}", file=sys.stderr)
            bad += 1
            continue
        errors = list(validator.iter_errors(doc))
        if result is not None and isinstance(doc, dict) and doc.get("type") == "exit":
            errors += list(result.iter_errors(doc.get("result")))
        for e in errors:
            print(f"line {lineno}: {name}: {e.json_path}: {e.message}", file=sys.stderr)
        bad += bool(errors)
    if n == 0:
        print("no documents", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
