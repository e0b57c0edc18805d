#!/usr/bin/env bash
# The four studies of docs/studies.md, end to end: runs them into OUT (default studies-out/) and
# writes their reports (OUT/<study>.html) and the plots docs/studies.md shows (docs/studies/*.svg
# with --docs). Study 3 replays the Mooncake trace from ../shared and is skipped, with the
# reason, without it. Everything is deterministic: the same binary gives the same bytes.
#
# usage: scripts/studies.sh [SERVESIM] [OUT] [--docs]      (from the repository root)
set -euo pipefail
BIN=$(readlink -f "${1:-build/servesim}")
OUT=${2:-studies-out}
DOCS=""
[ "${3:-}" = --docs ] && DOCS=docs/studies
mkdir -p "$OUT"
[ -n "$DOCS" ] && mkdir -p "$DOCS"

# keep one plot of a report's --svg-dir as docs/studies/<name>.svg
keep() { [ -z "$DOCS" ] || cp "$1" "$DOCS/$2.svg"; }

# 1. Llama-3.1-70B on one 8-GPU H100 node: 4 x TP2, 2 x TP4, 1 x TP8 under three loads.
"$BIN" sweep examples/studies/70b-tp-splits.yaml -o "$OUT/70b" -q
"$BIN" report "$OUT/70b/points/0002" "$OUT/70b/points/0005" "$OUT/70b/points/0008" \
    --label 4xTP2 --label 2xTP4 --label 1xTP8 --title "Llama-3.1-70B on 8 H100, 64 req/s" \
    -o "$OUT/70b.html" --svg-dir "$OUT/70b-svg"
keep "$OUT/70b-svg/plot-running-waiting.svg" 70b-running-waiting
keep "$OUT/70b-svg/plot-ttft-cdf.svg" 70b-ttft-cdf

# 2. Prefill on H100, decode on A100, against H100 only and against two colocated instances.
pd="--model meta-llama/Llama-3.1-8B --hardware H100-SXM --latency roofline --requests 2000"
pd="$pd --qps 20 --seed 1 --quiet"
"$BIN" run $pd --instances 2 --output-dir "$OUT/pd/colocated"
"$BIN" run $pd --pd 1:1 --output-dir "$OUT/pd/h100-h100"
"$BIN" run $pd --pd 1:1 --decode-hardware A100-80GB --output-dir "$OUT/pd/h100-a100" \
    --trace "$OUT/pd/h100-a100.trace.json" --trace-window 10:11
"$BIN" run $pd --pd 1:2 --decode-hardware A100-80GB --output-dir "$OUT/pd/h100-2xa100"
"$BIN" report "$OUT/pd/colocated" "$OUT/pd/h100-h100" "$OUT/pd/h100-a100" "$OUT/pd/h100-2xa100" \
    --title "Llama-3.1-8B, 20 req/s: prefill/decode splits" -o "$OUT/pd.html" \
    --svg-dir "$OUT/pd-svg"
keep "$OUT/pd-svg/plot-tpot-cdf.svg" pd-tpot-cdf

# 3. The Mooncake conversation trace through 8 H100 instances at 12 req/s: two routers.
MC=../shared/traces/mooncake_fast25/conversation_trace.jsonl
if [ -f "$MC" ]; then
    for r in least_load prefix_aware; do
        "$BIN" run --model meta-llama/Llama-3.1-8B --hardware H100-SXM --latency roofline \
            --instances 8 --workload "$MC" --qps 12 --router $r --quiet --output-dir "$OUT/mc/$r"
    done
    "$BIN" report "$OUT/mc/least_load" "$OUT/mc/prefix_aware" \
        --title "Mooncake conversation trace, 8 x H100, 12 req/s" -o "$OUT/mooncake.html" \
        --svg-dir "$OUT/mc-svg"
    keep "$OUT/mc-svg/plot-ttft-cdf.svg" mooncake-ttft-cdf
else
    echo "studies: study 3 skipped: $MC not found (the Mooncake trace is read from ../shared)" >&2
fi

# 4. The fewest GPUs for Llama-3.1-70B at 32 req/s within p99 TTFT 1 s and p99 TPOT 50 ms.
"$BIN" sweep examples/studies/70b-goal.yaml -o "$OUT/70b-goal" --goal -q
"$BIN" report "$OUT/70b-goal/points/0053" "$OUT/70b-goal/points/0029" \
    "$OUT/70b-goal/points/0038" "$OUT/70b-goal/points/0020" --label "H200 2xTP4" \
    --label "H100 2xTP4" --label "H100 1xTP8" --label "A100 3xTP8" \
    --title "Llama-3.1-70B at 32 req/s" -o "$OUT/70b-goal.html" --svg-dir "$OUT/70b-goal-svg"
keep "$OUT/70b-goal-svg/plot-tpot-cdf.svg" 70b-goal-tpot-cdf
echo "studies: reports in $OUT/*.html"
