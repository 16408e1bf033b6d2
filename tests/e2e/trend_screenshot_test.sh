#!/usr/bin/env bash
# driftgate trend's HTML as a person sees it: render it in headless Chromium, take a
# screenshot, and check that the picture is not blank (many colours, enough ink).
# Exits 77 (skipped, with the reason) when chromium is not installed.
source "$(dirname "$0")/lib.sh"
: "${TREND_FIXTURE:?set TREND_FIXTURE to the trend_fixture binary}"
here="$(cd "$(dirname "$0")" && pwd)"

chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" ]]; then
  echo "skip: chromium is not installed (tools/install-deps.sh installs Debian's chromium package)"
  exit 77
fi

/usr/bin/python3 "$here/trend_repo.py" --repo "$work/repo" --commits 30 >"$work/shas.txt"
"$TREND_FIXTURE" --store "$work/repo/baselines" --shas "$work/shas.txt" --step-check 'resnet/in1/cpu_fp32~frozen/out'
expect_exit 0 "trend writes the report" -- "$DRIFTGATE" trend --repo "$work/repo" --store "$work/repo/baselines" \
  --branch main -o "$work/trend.html"

# SCREENSHOT_DIR keeps the picture for a person to look at.
shot="${SCREENSHOT_DIR:-$work}/trend.png"
profile=$(mktemp -d "$work/chromium.XXXXXX")
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir="$profile" --screenshot="$shot" \
  --window-size=1200,1600 "file://$work/trend.html" >"$work/chromium.log" 2>&1
checks=$((checks + 1))
if [[ -s "$shot" ]]; then echo "ok: chromium wrote a screenshot"; else
  failures=$((failures + 1)); echo "FAIL: no screenshot"; tail -20 "$work/chromium.log"; finish; exit 1; fi

# The first two series colours and the environment marker's (differ/svg_chart.cc, trend_html.cc).
read -r width height colours ink blue red marker < <(/usr/bin/python3 "$here/png_stats.py" "$shot" \
  '#1f77b4' '#d62728' '#b45309')
echo "screenshot: ${width}x${height}, $colours distinct colours, non-white fraction $ink;" \
  "pixels of series 1: $blue, series 2: $red, environment marker: $marker"
checks=$((checks + 1))
# A blank page has 1 colour; text alone gives greys; the charts add the palette and markers.
if [[ $width -eq 1200 && $colours -ge 50 ]] && awk "BEGIN{exit !($ink >= 0.03 && $ink <= 0.9)}"; then
  echo "ok: the screenshot shows a rendered page"
else
  failures=$((failures + 1)); echo "FAIL: the screenshot looks blank or broken"
fi
checks=$((checks + 1))
# Text alone (or an SVG that failed to render) has none of these colours; the legend's 3 px
# lines and the marker alone give well over 20 pixels each.
if [[ $blue -ge 20 && $red -ge 20 && $marker -ge 20 ]]; then
  echo "ok: the charts are drawn (series and environment-marker colours on screen)"
else
  failures=$((failures + 1)); echo "FAIL: the screenshot lacks the charts' colours"
fi
finish
