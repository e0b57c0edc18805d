#!/usr/bin/env bash
# CI smoke run of every fuzz target (docs/reliability.md "Fuzzing"): build the libFuzzer targets
# with clang into build-fuzz/ (or $SV_FUZZ_BUILD), then fuzz each target for SECONDS (default 45)
# from its generated seeds, its regressions and the corpus earlier runs left. Prints one line per
# target (executions, result); exit 1 if any target crashed, leaked, timed out or ran out of
# memory (the input is in build-fuzz/fuzz-artifacts/, libFuzzer's report in build-fuzz/fuzz-logs/),
# 3 when clang or libFuzzer is not installed (nothing ran).
#
# usage: scripts/fuzz-smoke.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/fuzz-lib.sh
secs=${1:-45}
shift || true
targets=${*:-$SV_FUZZ_TARGETS}

fuzz_build
rc=$?
[ $rc -eq 0 ] || exit $rc

failed=0
for t in $targets; do
    # A fixed seed: the same tree makes the same mutations (up to the time limit), so a smoke
    # run that passed once does not fail later by luck; long runs (scripts/fuzz.sh) draw seeds.
    if fuzz_run "$t" "$secs" -seed=1; then
        printf 'fuzz %-9s %10s executions in %3s s: no crash\n' "$t" "$(fuzz_execs "$t")" "$secs"
    else
        failed=$((failed + 1))
        printf 'fuzz %-9s %10s executions: FAILED\n' "$t" "$(fuzz_execs "$t")"
        grep -E "^(==[0-9]+==ERROR|SUMMARY|fuzz:|servesim: internal error|.*runtime error)" \
            "$FUZZ_BUILD/fuzz-logs/$t.log" | head -5
        sed -n 's/.*Test unit written to //p' "$FUZZ_BUILD/fuzz-logs/$t.log" | head -3
    fi
done
n=$(echo $targets | wc -w)
echo "$((n - failed)) passed, $failed failed"
[ $failed -eq 0 ]
