#!/usr/bin/env bash
# driftgate trend end to end: a repository with 30 commits, two environments (onednn
# 2.6.3 for commits 1-15, 3.1 from commit 16), one check 1000x worse from commit 23 and
# another 100x worse in the new environment. The report must list the first step at
# commits 22...23 and the second across the environment change (15...16), mark the change at
# commit 16, draw the tier-2 profile the stepped check carries once it fails, escape commit
# text, stay offline, and refuse bad input writing nothing.
source "$(dirname "$0")/lib.sh"
: "${TREND_FIXTURE:?set TREND_FIXTURE to the trend_fixture binary}"
here="$(cd "$(dirname "$0")" && pwd)"

repo="$work/repo"
/usr/bin/python3 "$here/trend_repo.py" --repo "$repo" --commits 30 >"$work/shas.txt"
mapfile -t sha <"$work/shas.txt"
stepped='resnet/in1/cpu_fp32~frozen/out'
upgraded='resnet/in2/cpu_fp32~channels_last/out'
"$TREND_FIXTURE" --store "$repo/baselines" --shas "$work/shas.txt" --env-switch-at 15 --step-at 22 \
  --step-check "$stepped" --env-step-check "$upgraded"
cd "$repo" || exit 1
key_a=$(ls baselines | while read -r k; do [[ -f "baselines/$k/${sha[0]}.jsonl" ]] && echo "$k"; done)
key_b=$(ls baselines | while read -r k; do [[ -f "baselines/$k/${sha[29]}.jsonl" ]] && echo "$k"; done)

h="$work/trend.html"
expect_exit 0 "trend over both environments" -- "$DRIFTGATE" trend --store baselines --branch main \
  -o "$work/trend.html" --markdown "$work/trend.md"
expect_contains "$work/stderr" "30 commits, 30 baselines in 2 environment(s), 1 environment change(s), 2 step change(s)" \
  "exactly two steps and one environment change are found (noise does not fire)"
expect_contains "$h" "${sha[14]:0:7}</code>...<code title=\"${sha[15]}\">${sha[15]:0:7}</code></td><td>change 16</td><td><code>$key_a</code> &#8594; <code>$key_b</code></td><td><code>$upgraded</code>" \
  "the step at the environment change is listed at commits 15...16, from A to B"
expect_contains "$h" "${sha[21]:0:7}</code>...<code title=\"${sha[22]}\">${sha[22]:0:7}" \
  "the step is listed at commits 22...23"
expect_contains "$h" "<code>$stepped</code>" "the step names its check"
expect_contains "$h" "<code>$key_b</code></td><td><code>$stepped" "the step names its environment"
expect_contains "$h" "onednn 2.6.3 -&gt; 3.1</text>" "the environment change is marked on the charts"
expect_contains "$h" "<td><code title=\"${sha[15]}\">${sha[15]:0:7}</code></td><td>change 16</td><td><code>$key_a</code></td><td><code>$key_b</code></td><td>onednn 2.6.3 -&gt; 3.1" \
  "the environment change is listed at commit 16, from A to B"
expect_contains "$h" "tolerance &lt;b&gt;bold&lt;/b&gt; &amp; a | pipe" "commit subjects are HTML-escaped"
checks=$((checks + 1))
if grep -q "<b>bold" "$h"; then failures=$((failures + 1)); echo "FAIL: raw HTML from a commit subject"; else
  echo "ok: no raw HTML from commit subjects"; fi
expect_contains "$h" "<title>${sha[22]:0:7} change 23" "points carry the commit on hover"
expect_contains "$h" "2026-01-01 22:00 +0000, Dev Eloper" "hover text carries date and author"
expect_contains "$h" "Tolerance sweep at ${sha[29]:0:7}" "the tolerance sweep of the newest baseline is drawn"
expect_contains "$h" "configured atol 0.0001" "the sweep marks the configured atol"
# Tier 2: the stepped check fails from commit 23 on and carries a profile there; the newest (commit 30) is drawn.
expect_contains "$h" "$stepped at ${sha[29]:0:7} (environment $key_b)</text>" "per-layer curves of the newest profile"
expect_contains "$h" ">first divergent: layer2.0.conv1/aten::_convolution#1</text>" "the first divergent layer is marked"
expect_contains "$h" "<title>layer2.0.conv1/aten::_convolution#1 (conv.py:459): error " "layers carry their full name on hover"
expect_contains "$h" ">fp32 noise floor (vs float64)</text>" "the noise floor is drawn beside the error"
expect_contains "$h" ">layer2.0.bn1</text>" "the layer axis names modules"
checks=$((checks + 1))
if grep -q "no per-layer curves to draw" "$h" || grep -q "layer2.0.bn1/aten::batch_norm#1 (functional.py:2450): error" "$h"; then
  failures=$((failures + 1)); echo "FAIL: per-layer section missing, or a fused layer drawn as an error"
else echo "ok: the per-layer section draws observable layers only"; fi
expect_contains "$h" "<title>step change at ${sha[21]:0:7}...${sha[22]:0:7}:" "the step is marked on the error chart at 22...23"
expect_contains "$h" "Max abs error per check, log scale (environment $key_a)" "an error chart per environment"
checks=$((checks + 1))
if grep -Eq '<script|<link|<img|src=|url\(|@import' "$h" || grep -o 'https\?://[^"]*' "$h" | grep -vqx 'http://www.w3.org/2000/svg'; then
  failures=$((failures + 1)); echo "FAIL: the HTML refers to something outside itself"
else echo "ok: the HTML is self-contained (inline SVG and CSS only)"; fi
m="$work/trend.md"
expect_contains "$m" "- \`${sha[21]:0:7}...${sha[22]:0:7}\` $stepped: max_abs" "markdown lists the step at 22...23"
expect_contains "$m" "xychart-beta" "markdown carries a mermaid chart"
expect_contains "$m" "tolerance &lt;b&gt;bold&lt;/b&gt; &amp; a &#124; pipe" "markdown cells are escaped"
expect_contains "$m" "\`${sha[15]:0:7}\` onednn 2.6.3 -&gt; 3.1" "markdown lists the environment change"

expect_exit 0 "trend of one environment" -- "$DRIFTGATE" trend --store baselines --branch main --env "$key_b" \
  -o "$work/b.html"
expect_contains "$work/stderr" "15 baselines in 1 environment(s), 0 environment change(s), 1 step change(s)" \
  "--env keeps one environment and still finds its step"
expect_exit 0 "--max-commits 5 stops before the step" -- "$DRIFTGATE" trend --store baselines --max-commits 5 \
  -o "$work/short.html"
expect_contains "$work/stderr" "5 commits, 5 baselines in 1 environment(s), 0 environment change(s), 0 step change(s)" \
  "--max-commits bounds the walk (HEAD by default)"

expect_exit 2 "a malformed --env" -- "$DRIFTGATE" trend --store baselines --env nothex -o "$work/bad1.html"
expect_contains "$work/stderr" "--env 'nothex': not an environment key" "the message names the bad key"
expect_missing "$work/bad1.html" "nothing written for a malformed --env"
expect_exit 2 "an --env the store lacks" -- "$DRIFTGATE" trend --store baselines --env 0123456789abcdef \
  -o "$work/bad2.html"
expect_contains "$work/stderr" "(it has: $(printf '%s\n' "$key_a" "$key_b" | sort | paste -sd, | sed 's/,/, /'))" \
  "the message lists the keys the store has"
expect_missing "$work/bad2.html" "nothing written for an unknown --env"
expect_exit 2 "an unknown branch" -- "$DRIFTGATE" trend --store baselines --branch nosuch -o "$work/bad3.html"
expect_contains "$work/stderr" "unknown revision 'nosuch'" "the message names the revision"
expect_missing "$work/bad3.html" "nothing written for an unknown branch"
mkdir "$work/empty-store"
expect_exit 2 "a store without baselines on this branch" -- "$DRIFTGATE" trend --store "$work/empty-store" \
  -o "$work/bad4.html"
expect_contains "$work/stderr" "no baseline for any of the 30 first-parent commits" "the message says why"
expect_missing "$work/bad4.html" "nothing written without baselines"
expect_exit 2 "a missing store" -- "$DRIFTGATE" trend --store "$work/nowhere" -o "$work/bad5.html"
expect_missing "$work/bad5.html" "nothing written for a missing store"
expect_exit 2 "no -o" -- "$DRIFTGATE" trend --store baselines
expect_exit 0 "--help" -- "$DRIFTGATE" trend --help
expect_contains "$work/stdout" "--max-commits" "--help lists the options"
finish
