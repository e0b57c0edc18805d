# Shared by scripts/fuzz-smoke.sh and scripts/fuzz.sh (sourced): the fuzz build and per-target
# settings. docs/reliability.md "Fuzzing".

SV_FUZZ_TARGETS="et cluster workload azure lengths system network memory groups sweep report flags"
FUZZ_BUILD=${SV_FUZZ_BUILD:-build-fuzz}

# Configure and build the libFuzzer targets with clang (ASan + UBSan + coverage), then write the
# seed corpora into $FUZZ_BUILD/fuzz-seeds. Returns 3 when clang or libFuzzer is missing.
fuzz_build() {
    local cc=${SV_FUZZ_CC:-clang}
    if ! command -v "$cc" >/dev/null; then
        echo "fuzz: $cc not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
        return 3
    fi
    mkdir -p "$FUZZ_BUILD"
    CC=$cc cmake -S . -B "$FUZZ_BUILD" -DSV_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$FUZZ_BUILD/fuzz-configure.log" 2>&1 || {
        cat "$FUZZ_BUILD/fuzz-configure.log" >&2
        return 1
    }
    if ! grep -q "SV_FUZZ: libFuzzer targets on" "$FUZZ_BUILD/fuzz-configure.log"; then
        grep "SV_FUZZ" "$FUZZ_BUILD/fuzz-configure.log" >&2
        return 3
    fi
    cmake --build "$FUZZ_BUILD" -j"$(nproc)" --target fuzz_all || return 1
    rm -rf "$FUZZ_BUILD/fuzz-seeds"
    "$FUZZ_BUILD/tests/fuzz/fuzz_seeds" "$FUZZ_BUILD/fuzz-seeds" >/dev/null || return 1
}

# fuzz_run TARGET SECONDS [libFuzzer options...]: fuzz one target for SECONDS into its working
# corpus $FUZZ_BUILD/fuzz-corpus/TARGET (kept between runs), starting from the seeds and the
# regressions; crashes go to $FUZZ_BUILD/fuzz-artifacts/TARGET-*. Prints libFuzzer's final stats
# into $FUZZ_BUILD/fuzz-logs/TARGET.log; returns libFuzzer's status (0 = no crash).
fuzz_run() {
    local t=$1 secs=$2
    shift 2
    local corpus="$FUZZ_BUILD/fuzz-corpus/$t"
    mkdir -p "$corpus" "$FUZZ_BUILD/fuzz-artifacts" "$FUZZ_BUILD/fuzz-logs"
    # -timeout: one input may take 10 s (a slow input is a finding: class 2 of issue 13);
    # -rss_limit_mb / -malloc_limit_mb: an input that makes the reader allocate 2 GB is one too.
    "$FUZZ_BUILD/tests/fuzz/fuzz_$t" "$corpus" "$FUZZ_BUILD/fuzz-seeds/$t" "tests/fuzz/regressions/$t" \
        -dict="tests/fuzz/$t.dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -malloc_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$FUZZ_BUILD/fuzz-artifacts/$t-" "$@" >"$FUZZ_BUILD/fuzz-logs/$t.log" 2>&1
}

# Executions of the last run of TARGET (libFuzzer's stat::number_of_executed_units).
fuzz_execs() {
    sed -n 's/^stat::number_of_executed_units: *//p' "$FUZZ_BUILD/fuzz-logs/$1.log" | tail -1
}
