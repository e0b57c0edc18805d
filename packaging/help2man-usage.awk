# Rewrites the usage paragraph of a servesim --help text the way help2man reads a synopsis
# (packaging/man.cmake pipes --help through it; the program's own text is left as it is):
#   "usage: servesim ..."                 -> "Usage: servesim ..."
#   "       servesim ..." (another form)  -> "  or:  servesim ..."
#   any other indented line of the paragraph is joined to the line before it.
# GLib's own --help (servesim replay) starts "Usage:" alone, then "  servesim [OPTION…] - text":
#   -> "Usage: servesim <cmd> [OPTION...]", a blank line and the text (cmd: awk -v cmd=NAME).
# The rest of the text passes through unchanged.
NR == 1 && /^Usage:$/ { glib = 1; next }
glib == 1 && match($0, /^  [^ ]+ \[OPTION[^]]*\]( - )?/) {
    glib = 2
    print "Usage: servesim " (cmd != "" ? cmd " " : "") "[OPTION...]"
    print ""
    if (RLENGTH < length($0)) print substr($0, RLENGTH + 1)
    next
}
glib == 1 { print "Usage:"; glib = 2 }
NR == 1 && /^usage: / { in_usage = 1; line = "Usage: " substr($0, 8); next }
in_usage && /^[[:space:]]*$/ { print line; in_usage = 0; print; next }
in_usage && /^       servesim / { print line; line = "  or:  " substr($0, 8); next }
in_usage {
    sub(/^[[:space:]]+/, " ")
    line = line $0
    next
}
{ print }
END { if (in_usage) print line }
