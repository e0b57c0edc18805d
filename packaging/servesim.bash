# bash completion for servesim (installed as share/bash-completion/completions/servesim).
#
# Nothing here lists a command or a flag: both are read at completion time from the program's
# own --help (`servesim --help` lists the commands under "commands:", `servesim CMD --help` each
# command's flags), so a new command or flag completes without an edit here. A flag's argument
# completes by what its help line calls it:
#   FILE, PATH, PREFIX, IN, OUT, SPEC.yaml, X.json ...   file names
#   DIR                                                  directories
#   a|b (in the flag column, "--latency profile|roofline")  those values
#   anything else (NAME, MODE, ...): the values its description lists as "a | b | c"
#   (parenthesised remarks and placeholders such as slo_aware[:MS] or zipf:S are cut).

# The program to ask: the command word as typed (./build/servesim), else servesim on PATH.
_servesim_prog()
{
    local p=${COMP_WORDS[0]}
    p=${p/#\~/$HOME}
    if [[ $p == */* && -x $p ]] || type -P -- "$p" >/dev/null 2>&1; then
        printf '%s\n' "$p"
    else
        printf 'servesim\n'
    fi
}

# Commands: the lines under "commands:" in `servesim --help`, up to the first blank line.
_servesim_commands()
{
    "$1" --help 2>/dev/null | awk '/^commands:/ { on = 1; next }
        on && /^[[:space:]]*$/ { exit }
        on && match($0, /^  [a-z][a-z0-9-]*/) { print substr($0, 3, RLENGTH - 2) }'
}

# One line per long flag of a help text: FLAG, ARG (empty for a switch) and DESCRIPTION, separated
# by \037 (not a tab: `read` would merge the two tabs around an empty ARG).
# Accepted forms: "  --flag ARG   text", "  --flag   text" (two spaces end the flag column),
# "  -x, --flag=ARG   text" (GLib's own --help); continuation lines join the description.
_servesim_flags()
{
    awk '
    function flush() { if (flag != "") print flag "\037" arg "\037" desc; flag = "" }
    /^[[:space:]]+(-[A-Za-z0-9], )?--[A-Za-z0-9]/ && match($0, /^[[:space:]]+/) && RLENGTH < 8 {
        flush()
        line = $0
        sub(/^[[:space:]]+(-[A-Za-z0-9], )?/, "", line)
        match(line, /^--[A-Za-z0-9][A-Za-z0-9-]*/)
        flag = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1); arg = ""
        if (rest ~ /^=/) {
            match(rest, /^=[^[:space:]]+/); arg = substr(rest, 2, RLENGTH - 1)
            rest = substr(rest, RLENGTH + 1)
        } else if (rest ~ /^ [^[:space:]]/) {
            match(rest, /^ [^[:space:]]+/); arg = substr(rest, 2, RLENGTH - 1)
            rest = substr(rest, RLENGTH + 1)
        }
        desc = rest
        next
    }
    flag != "" && /^        / { desc = desc " " $0; next }
    { flush() }
    END { flush() }'
}

# The values a flag description lists as "a | b | c".
_servesim_values()
{
    awk -v d="$1" 'BEGIN {
        while (gsub(/\([^()]*\)/, "", d)) {}
        gsub(/[[:space:]]+/, " ", d)
        n = split(d, seg, / \| /)
        for (i = 1; i <= n; i++) {
            m = split(seg[i], w, " ")
            if (i > 1) cand[++k] = w[1]
            if (i < n) cand[++k] = w[m]
        }
        for (j = 1; j <= k; j++) {
            v = cand[j]
            sub(/[:,.;]$/, "", v)
            sub(/[\[,;].*$/, "", v)
            sub(/:[A-Z@].*$/, ":", v)
            if (v !~ /^[a-z0-9][A-Za-z0-9_.:-]*$/ || seen[v]++) continue
            print v
        }
    }'
}

_servesim()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local prog cmd i
    prog=$(_servesim_prog)
    COMPREPLY=()

    # The command: the first word after the program that is not an option.
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} != -* ]]; then
            cmd=${COMP_WORDS[i]}
            break
        fi
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W '--help --version' -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$(_servesim_commands "$prog")" -- "$cur")
        fi
        return 0
    fi

    local help flags
    help=$("$prog" "$cmd" --help 2>/dev/null)
    flags=$(_servesim_flags <<<"$help")

    # --flag=value: complete the value after the '='. bash splits the word at '=' (it is in
    # COMP_WORDBREAKS): "--flag" "=" "value", or "--flag" "=" right after the '='.
    local opt="" val=$cur
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
        val=${cur#*=}
    elif [[ $cur == = && $prev == --* ]]; then
        opt=$prev
        val=""
    elif [[ $prev == = && $COMP_CWORD -ge 3 && ${COMP_WORDS[COMP_CWORD - 2]} == --* ]]; then
        opt=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $prev == --* ]]; then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        local f arg desc
        while IFS=$'\037' read -r f arg desc; do
            [[ $f == "$opt" ]] || continue
            [[ -z $arg ]] && break # a switch: what follows is a new word
            local words=""
            if [[ $arg == *'|'* ]]; then
                words=${arg//|/ }
            elif [[ $arg == DIR || $arg == *DIR ]]; then
                compopt -o filenames 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -d -- "$val")
                return 0
            elif [[ $arg =~ ^(FILE|PATH|PREFIX|IN|OUT)$ || $arg == *.* || $arg == FILE* ]]; then
                compopt -o filenames 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -f -- "$val")
                return 0
            else
                words=$(_servesim_values "$desc")
            fi
            [[ -n $words ]] && mapfile -t COMPREPLY < <(compgen -W "$words" -- "$val")
            return 0
        done <<<"$flags"
        if [[ $cur == --*=* ]]; then
            return 0
        fi
    fi

    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(cut -d $'\037' -f1 <<<"$flags")" -- "$cur")
    else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
}

complete -F _servesim servesim
