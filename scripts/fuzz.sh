#!/usr/bin/env bash
# A long fuzzing run of one target (docs/reliability.md "Fuzzing"): build the libFuzzer targets
# with clang (build-fuzz/, or $SV_FUZZ_BUILD), then fuzz TARGET for HOURS (a decimal is fine:
# 0.5) with JOBS processes (default 1), keeping going after a crash (-fork: every distinct crash
# is saved as build-fuzz/fuzz-artifacts/TARGET-*). The working corpus build-fuzz/fuzz-corpus/
# TARGET grows across runs. At the end it prints the executions, the crashes saved, and how to
# turn one into a regression test.
#
# usage: scripts/fuzz.sh TARGET HOURS [JOBS]
#   TARGET: et cluster workload azure lengths system network memory groups
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/fuzz-lib.sh
if [ $# -lt 2 ]; then
    echo "usage: scripts/fuzz.sh TARGET HOURS [JOBS]   (TARGET: $SV_FUZZ_TARGETS)" >&2
    exit 2
fi
t=$1
jobs=${3:-1}
case " $SV_FUZZ_TARGETS " in *" $t "*) ;; *)
    echo "fuzz: unknown target '$t' (one of: $SV_FUZZ_TARGETS)" >&2
    exit 2
    ;;
esac
secs=$(awk -v h="$2" 'BEGIN { s = int(h * 3600); if (s < 1) s = 1; print s }')
fuzz_build || exit $?
before=$(ls "$FUZZ_BUILD"/fuzz-artifacts/"$t"-* 2>/dev/null | wc -l)
echo "fuzz: $t for $secs s with $jobs job(s); log in $FUZZ_BUILD/fuzz-logs/$t.log"
fuzz_run "$t" "$secs" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
after=$(ls "$FUZZ_BUILD"/fuzz-artifacts/"$t"-* 2>/dev/null | wc -l)
# Fork mode reports "#<executions>: cov: ... crash: N ..." lines, not the final stats.
execs=$(fuzz_execs "$t")
[ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$FUZZ_BUILD/fuzz-logs/$t.log" | tail -1 | tr -d '#')
echo "fuzz: $t: $execs executions, $((after - before)) new crash input(s)"
ls -t "$FUZZ_BUILD"/fuzz-artifacts/"$t"-* 2>/dev/null | head -$((after - before))
cat <<MSG
To keep a crash as a regression test: minimize it
  $FUZZ_BUILD/tests/fuzz/fuzz_$t -minimize_crash=1 -runs=10000 -exact_artifact_path=tests/fuzz/regressions/$t/NAME CRASH
fix the bug, and check that ctest's fuzz_$t (the plain driver over tests/fuzz/regressions/$t) passes.
MSG
