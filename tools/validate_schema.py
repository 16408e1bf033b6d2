#!/usr/bin/python3
"""Validates experiment YAML files and JSONL run files against schema/.

  tools/validate_schema.py experiment configs/*.yaml
  tools/validate_schema.py run out/run.jsonl
Exit 0 when every document is valid, 1 otherwise (each problem printed as file:line: message;
a file that is not YAML or JSON is invalid too), 2 on usage errors or an unreadable file.
"""
import json
import os
import sys

import jsonschema
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_schema(name):
    with open(os.path.join(ROOT, "schema", name)) as f:
        schema = json.load(f)
    return jsonschema.Draft202012Validator(schema)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("experiment", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, paths = sys.argv[1], sys.argv[2:]
    validator = load_schema("experiment.schema.json" if kind == "experiment" else "record.schema.json")
    problems = 0
    documents = 0
    invalid = 0
    for path in paths:
        try:
            with open(path) as f:
                if kind == "experiment":
                    items = [(1, yaml.safe_load(f))]
                else:
                    items = [(n, json.loads(line)) for n, line in enumerate(f, 1) if line.strip()]
        except OSError as error:
            print(f"{path}: cannot read: {error.strerror}")
            return 2
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark
            print(f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {error.problem}")
            documents += 1
            invalid += 1
            problems += 1
            continue
        except json.JSONDecodeError as error:
            print(f"{path}: not valid JSON: {error}")
            documents += 1
            invalid += 1
            problems += 1
            continue
        for line, document in items:
            documents += 1
            errors = list(validator.iter_errors(document))
            invalid += 1 if errors else 0
            for error in errors:
                problems += 1
                where = "/".join(str(p) for p in error.absolute_path)
                print(f"{path}:{line}: {where}: {error.message}")
    print(f"{documents - invalid} passed, {invalid} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
