#!/usr/bin/env bash
# Golden outputs: runs every reference config and case (scripts/run-reference-configs.sh, full
# workloads), the quick form, the default run and every ASTRA-sim / Chakra vector under
# ../shared/interop through `servesim replay`, and stores what they wrote: requests.csv,
# timeseries.csv and summary.json of each run, and the `sys[i] finished ...` lines (or the error
# line) of each replay. A refactor must leave all of them byte-identical.
#
# usage: scripts/golden.sh SERVESIM OUTDIR        run everything, store the outputs in OUTDIR
#        scripts/golden.sh --compare OLD NEW       list every file that differs; exit 1 if any
#   --shared DIR   the reference data (default ../shared, relative to the repository root)
# Run from the repository root. Wall times are not stored (they are not outputs).
set -u

usage() { sed -n '8,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

if [ "${1:-}" = --compare ]; then
    [ $# -eq 3 ] || usage
    if diff -r -q "$2" "$3"; then
        echo "golden: identical ($(find "$2" -type f | wc -l) files)"
        exit 0
    fi
    echo "golden: outputs differ (above)" >&2
    exit 1
fi

[ $# -ge 2 ] || usage
BIN=$(readlink -f "$1")
OUT=$2
shift 2
SHARED=../shared
while [ $# -gt 0 ]; do
    case $1 in
    --shared) [ $# -ge 2 ] || usage; SHARED=$2; shift ;;
    *) usage ;;
    esac
    shift
done
[ -x "$BIN" ] || { echo "golden.sh: $BIN is not an executable" >&2; exit 2; }
[ -d "$SHARED/reference" ] || { echo "golden.sh: $SHARED/reference not found" >&2; exit 2; }
SHARED=$(readlink -f "$SHARED")
rm -rf "$OUT"
mkdir -p "$OUT" || exit 2
OUT=$(readlink -f "$OUT")
fails=0

# Keep only the outputs of a run directory (drop anything else a run may write).
keep_outputs() {
    find "$1" -type f ! -name requests.csv ! -name timeseries.csv ! -name summary.json -delete
}

# 1. Every reference config and case, full workloads.
scripts/run-reference-configs.sh "$BIN" --keep "$OUT/refcfg" --shared "$SHARED" \
    >"$OUT/refcfg.log" 2>&1 || fails=$((fails + 1))
keep_outputs "$OUT/refcfg"
# The table without its wall-time column (and the trailing note naming the temp folder).
awk 'NR > 1 && !/ failed \(workloads:/ { $7 = ""; print }' "$OUT/refcfg.log" >"$OUT/refcfg.table"
rm -f "$OUT/refcfg.log"

# The measured validation case (README's serving study), with its profiles named explicitly.
V=$SHARED/reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B
"$BIN" run --cluster "$V/config.json" \
    --workload "$SHARED/reference/llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl" \
    --profiles "$SHARED/reference/llmservingsim/profiles" --output-dir "$OUT/validation" \
    --quiet >/dev/null 2>"$OUT/validation.stderr" || fails=$((fails + 1))

# 2. The quick form and 3. the default run (from a scratch folder: it writes ./servesim-out).
"$BIN" run --model Llama-2-7B --hardware A100-80GB --requests 1000 --qps 5 --input-len 512 \
    --output-len 128 --output-dir "$OUT/quick" --quiet >/dev/null 2>"$OUT/quick.stderr" ||
    fails=$((fails + 1))
mkdir -p "$OUT/default-cwd"
(cd "$OUT/default-cwd" && "$BIN" >/dev/null 2>"$OUT/default.stderr") || fails=$((fails + 1))
mv "$OUT/default-cwd/servesim-out" "$OUT/default" 2>/dev/null
rm -rf "$OUT/default-cwd"
# run.json names the commit it was built from (git_describe) and the output folder given on the
# command line: neither is an output a change may keep, so two OUTDIRs compare.
sed -i -e '/"git_describe"/d' -e "s#$OUT/#OUT/#g" "$OUT"/*/run.json 2>/dev/null

# 4. Every ASTRA-sim vector through replay, with each network model that reproduces ASTRA-sim
# (analytical, fifo) and the two of our own (flow, ideal).
A=$SHARED/interop/astra-sim
C=$SHARED/interop/chakra
SYS=$A/configs/Ring_4chunks.json
FC2=$A/configs/FullyConnected_2npus.yml
MEM=$A/configs/per_npu_memory_expansion.json
REPLAY=$OUT/replay.txt
: >"$REPLAY"
replay() {
    local name=$1
    shift
    for m in analytical fifo flow ideal; do
        {
            echo "== $name $m"
            "$BIN" replay "$@" --network-model "$m" 2>&1 | grep -E '^sys\[|servesim replay:'
        } >>"$REPLAY"
    done
}
for coll in all_reduce all_gather reduce_scatter all_to_all; do
    for n in 4 8 16; do
        replay "$coll/$n" --workload "$A/microbenchmarks/$coll/${n}npus_1MB/$coll" \
            --system "$SYS" --network "$A/configs/Ring_${n}npus.yml"
    done
    replay "$coll/4 switch" --workload "$A/microbenchmarks/$coll/4npus_1MB/$coll" \
        --system "$SYS" --network "$A/configs/Switch_4npus.yml"
    replay "$coll/4 switch2x2" --workload "$A/microbenchmarks/$coll/4npus_1MB/$coll" \
        --system "$SYS" --network "$A/configs/Switch2x2_2d.yml"
    replay "$coll/8 hgx" --workload "$A/microbenchmarks/$coll/8npus_1MB/$coll" \
        --system "$A/configs/HGX-H100-validated.json" --network "$A/configs/HGX-H100-validated.yml"
done
R=$A/rt_template/inputs
replay rt_template --workload "$R/workload/chakra_trace" --system "$R/system_cfg.json" \
    --network "$R/network_cfg.yml" --memory "$R/remote_memory_cfg.json"
replay custom_collective --workload "$A/microbenchmarks/all_reduce/8npus_1MB/all_reduce" \
    --system "$A/custom_collectives/custom_collective.json" --network "$A/configs/Ring_8npus.yml"
replay compute_chain --workload "$C/vectors/compute_chain/compute_chain" --system "$SYS" \
    --network "$FC2"
replay collectives --workload "$C/vectors/collectives/collectives" --system "$SYS" \
    --network "$A/configs/Ring_4npus.yml"
replay p2p --workload "$C/vectors/p2p/p2p" --system "$SYS" --network "$FC2"
replay remote_mem --workload "$C/vectors/remote_mem/remote_mem" --system "$SYS" --network "$FC2" \
    --memory "$MEM"
replay remote_mem_none --workload "$C/vectors/remote_mem/remote_mem" --system "$SYS" \
    --network "$FC2" --memory "$A/configs/no_memory_expansion.json"
replay dp_overlap --workload "$C/vectors/dp_overlap/dp_overlap" --system "$SYS" \
    --network "$A/configs/Switch_4npus.yml"
replay comm_groups --workload "$C/vectors/comm_groups/comm_groups" --system "$SYS" \
    --network "$A/configs/Ring_4npus.yml" --comm-groups "$C/vectors/comm_groups/comm_group.json"
# The single-file vectors (they stop on the second NPU's missing file: the error line is kept).
for v in all_fields edge_empty_metadata gzip; do
    for f in "$C/vectors/$v"/*.0.et; do
        p=${f%.0.et}
        replay "$v/$(basename "$p")" --workload "$p" --system "$SYS" --network "$FC2" \
            --memory "$MEM"
    done
done
for f in "$C"/chakra_generator/*.0.et; do
    p=${f%.0.et}
    replay "generator/$(basename "$p")" --workload "$p" --system "$SYS" --network "$FC2" \
        --memory "$MEM"
done

n=$(find "$OUT" -type f | wc -l)
echo "golden: $n files in $OUT ($fails of the serving runs failed)"
[ $fails -eq 0 ]
