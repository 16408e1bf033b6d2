#!/usr/bin/env bash
# What LibTorch prints reaches each check's record (deduplicated, counted, the same in two
# runs), stays off the terminal without -v and is printed with -v. The model warns on every
# forward (warnings.warn) and triggers LibTorch's own "output ... was resized" warning.
source "$(dirname "$0")/lib.sh"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"
cd "$work" || exit 1
cat >make_model.py <<'PY'
import torch, warnings
class Warns(torch.nn.Module):
    def forward(self, x):
        warnings.warn("this model warns on every forward")
        out = torch.empty(3)
        torch.add(x.flatten()[:4], 1.0, out=out)  # out has 3 elements, the sum 4: resized
        return out * 2
torch.jit.script(Warns()).save("warns.pt")
PY
/usr/bin/python3 make_model.py 2>/dev/null || exit 1
cat >warns.yaml <<'YAML'
name: warns
model: warns.pt
inputs: [{name: a, random: {shape: [1, 4], seed: 1}}]
targets: [onednn_off]
tolerance: {atol: 1.0e-5, rtol: 0}
YAML
expect_exit 0 "run without -v" -- "$DRIFTGATE" run warns.yaml -o run1.jsonl
checks=$((checks + 1))
if grep -q "resized" "$work/stderr"; then failures=$((failures + 1)); echo "FAIL: LibTorch's warning reached the terminal";
else echo "ok: LibTorch's warning is off the terminal"; fi
expect_contains "$work/stderr" "backends printed on stderr (cpu_fp32, onednn_off, oracle_fp64): in the records of 1 checks" \
  "one line says where the messages went"
/usr/bin/python3 - run1.jsonl >messages.txt <<'PY' || exit 1
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    if record.get("type") == "check":
        for m in record["messages"]:
            print(m["backend"], m["count"], m["text"][:60])
PY
cat messages.txt
# Each backend warns once per forward: 13 for the reference and the target (2 compared repeats,
# 1 more warm-up forward to the default 3, 10 timed ones), 1 for the oracle.
expect_contains messages.txt "onednn_off 13 W __torch__.py:8] Warning: this model warns on every forw" "the target's warning, 13 times"
expect_contains messages.txt "onednn_off 13 W Resize.cpp:17] Warning: An output with one or more elem" "the resize warning, counted"
expect_contains messages.txt "oracle_fp64 1 W Resize.cpp:17] Warning: An output with one or more ele" "the oracle's own"
expect_exit 0 "the run file validates against schema/record.schema.json" -- \
  /usr/bin/python3 "$tools/validate_schema.py" run "run1.jsonl"
expect_exit 0 "run with -v" -- "$DRIFTGATE" run warns.yaml -o run2.jsonl -v
expect_contains "$work/stderr" "[warns] a onednn_off printed: W Resize.cpp:17] Warning: An output with one or more elements" \
  "-v prints each line with its backend and input"
checks=$((checks + 1))
if diff <(grep -o '"messages":.*"timings_ms"' run1.jsonl) <(grep -o '"messages":.*"timings_ms"' run2.jsonl) >/dev/null; then
  echo "ok: two runs record the same messages"
else failures=$((failures + 1)); echo "FAIL: the messages differ between two runs"; fi
finish
