#!/usr/bin/env bash
# The installed servesim, one check per mode (tests/install/CMakeLists.txt registers each):
#   install CMAKE BUILD PREFIX        cmake --install BUILD --prefix PREFIX into an emptied PREFIX;
#                                     the expected files are there, no internal header is
#   embed PREFIX EMBED.c CC CFLAGS LDFLAGS
#                                     every installed header compiles alone with only
#                                     `pkg-config --cflags libservesim`; EMBED.c builds with
#                                     `pkg-config --cflags --libs libservesim` and exits 0 (it
#                                     checks hand-computed totals of a small run itself); the
#                                     whole archive links with those flags
#   man PREFIX                        servesim.1 and servesim-run.1 render with groff, no warning
#   completion PREFIX                 the installed bash completion, in bash, on the installed
#                                     program: commands, long flags, values, file names
# Exit 0 pass, 1 fail, 77 skipped (a tool absent; the reason is printed).
set -u
mode=$1
shift
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

case $mode in
install)
    cmake=$1 build=$2 prefix=$3
    rm -rf "$prefix"
    "$cmake" --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install failed"
    for f in bin/servesim lib/libservesim.a lib/pkgconfig/libservesim.pc \
        include/servesim/core/core.h include/servesim/planner/planner.h \
        include/servesim/memory-tier/memtier.h include/servesim/proto/et_def.pb-c.h \
        share/bash-completion/completions/servesim; do
        [ -f "$prefix/$f" ] || fail "$prefix/$f not installed"
    done
    internal=$(find "$prefix/include" -name '*_internal.h')
    [ -z "$internal" ] || fail "internal headers installed: $internal"
    [ -x "$prefix/bin/servesim" ] || fail "bin/servesim is not executable"
    echo "installed into $prefix"
    ;;

embed)
    prefix=$1 src=$2 cc=$3 cflags=$4 ldflags=$5
    command -v pkg-config >/dev/null || skip "pkg-config not installed"
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    pc_cflags=$(pkg-config --cflags libservesim) || fail "pkg-config --cflags libservesim"
    pc_libs=$(pkg-config --libs libservesim) || fail "pkg-config --libs libservesim"
    case " $pc_cflags " in
    *" -I$prefix/lib/pkgconfig/../../include/servesim "* | *" -I$prefix/include/servesim "*) ;;
    *) fail "pkg-config --cflags does not point into $prefix: $pc_cflags" ;;
    esac
    work=$(mktemp -d "$prefix/embed.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    # Each installed header on its own: it includes only what is installed beside it.
    n=0
    while IFS= read -r h; do
        rel=${h#"$prefix/include/servesim/"}
        printf '#include "%s"\n' "$rel" >"$work/one.c"
        # shellcheck disable=SC2086
        "$cc" $cflags $pc_cflags -fsyntax-only "$work/one.c" || fail "$rel does not compile alone"
        n=$((n + 1))
    done < <(find "$prefix/include/servesim" -name '*.h' | sort)
    [ "$n" -ge 14 ] || fail "only $n headers installed"
    # shellcheck disable=SC2086
    "$cc" $cflags $pc_cflags "$src" -o "$work/embed" $ldflags $pc_libs ||
        fail "$src does not build against the installed library"
    "$work/embed" || fail "the embedding program failed"
    # Every object of the archive linked in (not only those the example calls): whatever library
    # a module uses must come with `pkg-config --libs libservesim` (packaging/CMakeLists.txt,
    # SV_PKGCONFIG_REQUIRES), or this link fails with the symbol it lacks.
    # shellcheck disable=SC2086
    "$cc" $cflags $pc_cflags "$src" -o "$work/embed-whole" $ldflags \
        -Wl,--whole-archive "$prefix/lib/libservesim.a" -Wl,--no-whole-archive $pc_libs ||
        fail "the whole archive does not link with pkg-config --libs libservesim: a dependency is missing from libservesim.pc"
    echo "$n headers compile alone; the embedding program ran"
    ;;

man)
    prefix=$1
    man1=$prefix/share/man/man1
    if [ ! -f "$man1/servesim.1" ]; then
        command -v help2man >/dev/null && fail "help2man is installed but servesim.1 is not"
        skip "help2man not installed: no man pages (Debian: apt-get install help2man)"
    fi
    command -v groff >/dev/null || skip "groff not installed"
    version=$("$prefix/bin/servesim" --version) || fail "servesim --version"
    for page in servesim servesim-run servesim-replay; do
        f=$man1/$page.1
        [ -f "$f" ] || fail "$f not installed"
        warnings=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
        [ -z "$warnings" ] || fail "groff warns on $page.1: $warnings"
        text=$(groff -man -Tutf8 -rLL=300n -P-cbou "$f" 2>/dev/null)
        grep -q "^NAME" <<<"$text" || fail "$page.1 has no NAME section"
        grep -Eq "^ +$page +- " <<<"$text" || fail "$page.1: NAME line is not '$page - ...'"
        grep -q "^SEE ALSO" <<<"$text" || fail "$page.1 has no SEE ALSO"
        # help2man makes a SYNOPSIS only from a usage line it recognises (help2man-usage.awk).
        syn="servesim <command>"
        [ "$page" = servesim ] || syn="servesim ${page#servesim-} "
        grep -A1 "^SYNOPSIS" <<<"$text" | tr -s " " | grep -qF "$syn" || fail "$page.1: no SYNOPSIS '$syn...'"
        grep -q "${version#servesim }" <<<"$text" || fail "$page.1 lacks the version: $version"
    done
    # The main page lists the commands and refers to their pages; run's page has its flags.
    main=$(groff -man -Tutf8 -rLL=300n -P-cbou "$man1/servesim.1")
    for c in run replay validate convert inspect; do
        grep -Eq "^ +$c( |\$)" <<<"$main" || fail "servesim.1 does not list the command $c"
        grep -q "servesim-$c(1)" <<<"$main" || fail "servesim.1 does not refer to servesim-$c(1)"
    done
    groff -man -Tutf8 -rLL=300n -P-cbou "$man1/servesim-run.1" | grep -q -- "--output-dir" ||
        fail "servesim-run.1 does not document --output-dir"
    echo "man pages render without warnings"
    ;;

completion)
    prefix=$1
    script=$prefix/share/bash-completion/completions/servesim
    work=$(mktemp -d "$prefix/compl.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    mkdir "$work/dir1" && touch "$work/cl.json"
    PATH=$prefix/bin:$PATH WORK=$work ASAN_OPTIONS=detect_leaks=0 bash --norc -c '
        source "$1" || exit 1
        [ "$(complete -p servesim)" = "complete -F _servesim servesim" ] || {
            echo "FAIL: complete -p servesim: $(complete -p servesim)"; exit 1; }
        bad=0
        # comp EXPECTED WORD...: complete the last word; EXPECTED ("a b c") must equal the sorted
        # reply, or be contained in it when it starts with "+".
        comp() {
            local want=$1; shift
            COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
            _servesim
            local got; got=$(printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " ")
            got=${got% }
            if [[ $want == +* ]]; then
                for w in ${want#+}; do
                    [[ " $got " == *" $w "* ]] || { echo "FAIL: [$*] lacks $w: $got"; bad=1; }
                done
            elif [[ $got != "$want" ]]; then
                echo "FAIL: [$*]: want \"$want\", got \"$got\""; bad=1
            fi
        }
        comp "+convert inspect replay report run sweep validate" servesim ""
        comp "replay report run" servesim r
        comp "--help --version" servesim --
        comp "--output-dir --output-len" servesim run --out
        comp "profile roofline" servesim run --latency ""
        comp "roofline" servesim run --latency r
        comp "+least_load prefix_aware random round_robin slo_aware" servesim run --router ""
        comp "iteration run" servesim run --et-scope ""
        comp "analytical fifo flow ideal" servesim run --network-model ""
        comp "fifo flow" servesim replay --network-model=f
        comp "fifo flow" servesim replay --network-model = f
        comp "analytical fifo flow ideal" servesim replay --network-model =
        comp "$WORK/cl.json" servesim run --cluster "$WORK/c"
        comp "$WORK/dir1" servesim run --output-dir "$WORK/"
        comp "--measured" servesim validate --mea
        # A switch takes no value: the next word completes as a file name.
        comp "$WORK/cl.json" servesim run --skip-bad-lines "$WORK/c"
        exit $bad
    ' bash "$script" || fail "completion"
    echo "completion: commands, flags, values and file names complete"
    ;;

*)
    fail "unknown mode $mode"
    ;;
esac
