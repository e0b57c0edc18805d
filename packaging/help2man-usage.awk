# Rewrites the usage paragraph of a servesim --help text the way help2man reads a synopsis
# (packaging/man.cmake pipes --help through it; the program's own text is left as it is):
#   "usage: servesim ..."                 -> "Usage: servesim ..."
#   "       servesim ..." (another form)  -> "  or:  servesim ..."
#   any other indented line of the paragraph is joined to the line before it.
# The rest of the text passes through unchanged.
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
