#!/usr/bin/env bash
# Runs every LLMServingSim cluster config shipped in ../shared/reference/llmservingsim
# (configs/cluster/*.json and cases/*/*/config.json) through `servesim run` and prints one line
# per config: name, status, finished requests, TTFT / TPOT / E2E means, wall time.
# docs/reference-configs.md explains the choices (workload, latency source) and lists the result.
#
# usage: scripts/run-reference-configs.sh SERVESIM [--quick] [--requests N] [--max-output N]
#                                          [--keep DIR] [--shared DIR]
#   SERVESIM      path of the servesim program
#   --quick       the first 20 requests of each workload, outputs capped at 32 tokens (CI)
#   --requests N  only the first N requests of each workload
#   --max-output N  cap each request's output_toks at N (drops output_tok_ids)
#   --keep DIR    write each run's outputs under DIR/<name> (default: a temp dir, removed)
#   --shared DIR  the reference data (default ../shared, relative to the repository root)
# Run from the repository root. Exit status: 0 when every config ran (ok or a clearly reported
# "not supported"), 1 when any FAILed, 2 on a usage error.
set -u

usage() { sed -n '5,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
BIN=$1
shift
REQS=0
MAXOUT=0
KEEP=""
SHARED=../shared
while [ $# -gt 0 ]; do
    case $1 in
    --quick) REQS=20 MAXOUT=32 ;;
    --requests) [ $# -ge 2 ] || usage; REQS=$2; shift ;;
    --max-output) [ $# -ge 2 ] || usage; MAXOUT=$2; shift ;;
    --keep) [ $# -ge 2 ] || usage; KEEP=$2; shift ;;
    --shared) [ $# -ge 2 ] || usage; SHARED=$2; shift ;;
    -h | --help) usage ;;
    *) echo "run-reference-configs.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
[ -x "$BIN" ] || { echo "run-reference-configs.sh: $BIN is not an executable" >&2; exit 2; }
case $REQS in '' | *[!0-9]*) echo "run-reference-configs.sh: --requests: '$REQS' is not a count" >&2; exit 2 ;; esac
case $MAXOUT in '' | *[!0-9]*) echo "run-reference-configs.sh: --max-output: '$MAXOUT' is not a count" >&2; exit 2 ;; esac

REF=$SHARED/reference/llmservingsim
[ -d "$REF/configs/cluster" ] || { echo "run-reference-configs.sh: $REF/configs/cluster not found (run from the repository root)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/servesim-refcfg.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
OUT=${KEEP:-$TMP/out}
mkdir -p "$OUT" || exit 2

# The workload of a model: the ShareGPT traces LLMServingSim generated with the model family's
# tokenizer (workloads/README.md: sharegpt-llama-3.1-8b-300-sps10 for Llama-3.1, and the
# Qwen3-30B-A3B validation case runs the Qwen3 trace); example_trace.jsonl for anything else.
workload_for() {
    local w
    case $1 in
    meta-llama/Llama-3.1-*) w=sharegpt-llama-3.1-8b-300-sps10.jsonl ;;
    Qwen/Qwen3-*) w=sharegpt-qwen3-32b-300-sps10.jsonl ;;
    *) w=example_trace.jsonl ;;
    esac
    cut_trace "$REF/workloads/$w"
}

# The trace to run: SRC itself, or (--quick, --requests, --max-output) a cut of it: the first
# REQS lines, output_toks capped at MAXOUT (the output token ids then no longer match, so they
# are dropped; they are optional).
cut_trace() {
    local src=$1
    if [ "$REQS" -gt 0 ] || [ "$MAXOUT" -gt 0 ]; then
        local w
        w=$(basename "$src")
        local cut=$TMP/${w%.jsonl}-r$REQS-o$MAXOUT.jsonl
        if [ ! -f "$cut" ]; then
            if [ "$REQS" -gt 0 ]; then head -n "$REQS" "$src"; else cat "$src"; fi |
                awk -v cap="$MAXOUT" '{
                    if (cap > 0) {
                        sub(/, *"output_tok_ids" *: *\[[^]]*\]/, "")
                        if (match($0, /"output_toks" *: *[0-9]+/)) {
                            tok = substr($0, RSTART, RLENGTH); n = tok; sub(/.*: */, "", n)
                            if (n + 0 > cap) $0 = substr($0, 1, RSTART - 1) "\"output_toks\": " cap substr($0, RSTART + RLENGTH)
                        }
                    }
                    print
                }' >"$cut"
        fi
        src=$cut
    fi
    echo "$src"
}

# Values of a string / integer key of a config, one per occurrence.
json_strs() { grep -o "\"$2\" *: *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; }
json_ints() { grep -o "\"$2\" *: *[0-9]*" "$1" | sed 's/.*: *//'; }

# profile when every (hardware, model, tp) of the config has a bundle, else roofline.
latency_for() {
    local cfg=$1 model=$2 hw tp
    local hws tps
    hws=$(json_strs "$cfg" hardware | sort -u)
    tps=$(json_ints "$cfg" tp_size | sort -u)
    [ -n "$tps" ] || tps=1
    for hw in $hws; do
        for tp in $tps; do
            [ -d "$REF/profiles/$hw/$model/bf16/tp$tp" ] || { echo roofline; return; }
        done
    done
    echo profile
}

# "mean" of a latency block of summary.json (json-glib's layout: one key per line).
summary_mean() {
    awk -v blk="\"$2\"" '$1 == blk { inb = 1 } inb && $1 == "\"mean\"" { gsub(/,/, "", $3); printf "%.1f", $3; exit }' "$1"
}
summary_finished() {
    grep -m1 '"finished"' "$1" | sed 's/[^0-9]//g'
}

CONFIGS=()
for f in "$REF"/configs/cluster/*.json "$REF"/cases/*/*/config.json; do
    [ -f "$f" ] && CONFIGS+=("$f")
done

printf '%-46s %-10s %-8s %9s %9s %9s %10s %7s  %s\n' config latency finished "TTFT ms" "TPOT ms" \
    "E2E ms" wall_s rc status
fails=0
runs=0
# One run: name, config, latency source, workload, profiles folder, then extra flags.
run_one() {
    local name=$1 cfg=$2 lat=$3 wl=$4 prof=$5
    shift 5
    local dir=$OUT/$(echo "$name" | tr '/' '_')
    rm -rf "$dir"
    runs=$((runs + 1))
    t0=$(date +%s%N)
    "$BIN" run --cluster "$cfg" --workload "$wl" --latency "$lat" --profiles "$prof" \
        --output-dir "$dir" --quiet "$@" \
        >"$TMP/stdout" 2>"$TMP/stderr"
    rc=$?
    t1=$(date +%s%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    # Features the run cannot model are named on stderr as
    # "<where>: <feature> is not yet supported (ignored)" or, when the run would be meaningless,
    # an error "... is not yet supported".
    unsup=$(grep 'is not yet supported' "$TMP/stderr" |
        sed 's/^servesim run: [^ ]*: [^ ]*: //; s/ is not yet supported.*//' | sort -u |
        awk '{ printf "%s%s", (NR > 1 ? " | " : ""), $0 }')
    fin=- ttft=- tpot=- e2e=-
    if [ $rc -eq 0 ] && [ -s "$dir/requests.csv" ] && [ -s "$dir/summary.json" ]; then
        fin=$(summary_finished "$dir/summary.json")
        ttft=$(summary_mean "$dir/summary.json" ttft)
        tpot=$(summary_mean "$dir/summary.json" tpot)
        e2e=$(summary_mean "$dir/summary.json" e2e)
        status=ok
        [ -n "$unsup" ] && status="ok; not supported (ignored): $unsup"
        # Energy per output token when the config has power blocks (docs/power.md).
        jpt=$(awk '$1 == "\"j_per_output_token\"" { gsub(/,/, "", $3); printf "%.3f", $3; exit }' "$dir/summary.json")
        [ -n "$jpt" ] && status="$status; $jpt J/token"
        # The latency notice ("instance I (...)" or "instances I-J (...): latency SOURCE") is expected.
        other=$(grep -v -e 'is not yet supported' -e '^servesim run: instances\{0,1\} [0-9-]* (.*): latency ' \
            "$TMP/stderr" | head -n 1)
        [ -n "$other" ] && status="$status; stderr: $other"
    elif [ $rc -ne 0 ] && [ -n "$unsup" ] && grep -q 'is not yet supported$' "$TMP/stderr"; then
        status="not supported: $unsup"
    else
        status="FAIL: $(grep -v -e 'is not yet supported' \
            -e '^servesim run: instances\{0,1\} [0-9-]* (.*): latency ' "$TMP/stderr" | head -n 1)"
        fails=$((fails + 1))
    fi
    printf '%-46s %-10s %-8s %9s %9s %9s %10s %7s  %s\n' "$name" "$lat" "$fin" "$ttft" "$tpot" \
        "$e2e" "$wall" "$rc" "$status"
}

for cfg in "${CONFIGS[@]}"; do
    rel=${cfg#"$REF"/}
    case $rel in
    cases/*) name=${rel%/config.json} ;;
    *) name=$(basename "$rel" .json) ;;
    esac
    model=$(json_strs "$cfg" model_name | head -n 1)
    run_one "$name" "$cfg" "$(latency_for "$cfg" "$model")" "$(workload_for "$model")" \
        "$REF/profiles"
done

# PIM offload is a run-time switch in LLMServingSim (--enable-attn-offloading): the bundled PIM
# config with it and with sub-batch interleaving. Then the ISPASS'26 artifact's power (figure 6)
# and PIM (figure 10) configs, with their legacy A6000 perf models and the ShareGPT trace of
# the Llama family they used (docs/reference-configs.md).
PIMCFG=$REF/configs/cluster/single_node_pim_instance.json
LLAMA=$(workload_for meta-llama/Llama-3.1-8B)
run_one single_node_pim_instance+attn_offloading "$PIMCFG" profile "$LLAMA" "$REF/profiles" \
    --enable-attn-offloading
run_one single_node_pim_instance+sub_batch "$PIMCFG" profile "$LLAMA" "$REF/profiles" \
    --enable-attn-offloading --enable-sub-batch-interleaving
ISPASS=$SHARED/reference/llmservingsim-ispass26
if [ -d "$ISPASS/figure_6" ]; then
    ILLAMA=$ISPASS/dataset/sharegpt_req300_rate10_llama.jsonl
    if [ "$REQS" -gt 0 ] || [ "$MAXOUT" -gt 0 ]; then
        ILLAMA=$TMP/ispass-llama.jsonl
        head -n "${REQS/#0/100000}" "$ISPASS/dataset/sharegpt_req300_rate10_llama.jsonl" >"$ILLAMA"
    fi
    for c in figure_6/config/power_config_tp1 figure_6/config/power_config_tp2 \
        figure_10/config/gpu_only_config; do
        run_one "ispass26/${c%%/*}/$(basename "$c")" "$ISPASS/$c.json" profile "$ILLAMA" \
            "$ISPASS/perf_models"
    done
    run_one ispass26/figure_10/pim_config+attn_offloading "$ISPASS/figure_10/config/pim_config.json" \
        profile "$ILLAMA" "$ISPASS/perf_models" --pim-dir "$REF/configs/pim" --enable-attn-offloading
    run_one ispass26/figure_10/pim_config+sub_batch "$ISPASS/figure_10/config/pim_config.json" \
        profile "$ILLAMA" "$ISPASS/perf_models" --pim-dir "$REF/configs/pim" --enable-attn-offloading \
        --enable-sub-batch-interleaving
    # Figures 5 and 9 (figure 8's configs are figure 5's H100 ones, byte for byte), with the
    # datasets and flags of the artifact's evaluation/figure_5.sh and figure_9.sh: the MoE
    # configs run the Phi (A6000) and Mixtral (H100) traces; prefix caching only for SD+PC
    # (LLMServingSim's default is off). Legacy MoE and TPU layouts (docs/compute.md).
    for c in figure_5/A6000/config/SD figure_5/A6000/config/SD+PC figure_5/A6000/config/MD \
        figure_5/A6000/config/PDD figure_5/A6000/config/SM figure_5/H100/config/SD \
        figure_5/H100/config/SD+PC figure_5/H100/config/MD figure_5/H100/config/PDD \
        figure_5/H100/config/SM figure_9/config/SD; do
        wl=llama pc=--no-prefix-caching
        case $c in
        figure_5/A6000/*/SM) wl=phi ;;
        figure_5/H100/*/SM) wl=mixtral ;;
        esac
        case $c in *+PC) pc= ;; esac
        name=ispass26/$(echo "$c" | sed 's|/config/|/|')
        run_one "$name" "$ISPASS/${c}_config.json" profile \
            "$(cut_trace "$ISPASS/dataset/sharegpt_req300_rate10_$wl.jsonl")" "$ISPASS/perf_models" $pc
    done
fi
echo "$runs runs of ${#CONFIGS[@]} configs and the extra cases, $fails failed (workloads: ${REQS/#0/all} requests each, outputs capped at ${MAXOUT/#0/no} tokens; run outputs: ${KEEP:-temporary})"
[ $fails -eq 0 ]
