# cmake -DSERVESIM=... -DHELP2MAN=... -DOUT=DIR -DVERSION=X.Y.Z -P man.cmake
#
# Writes DIR/servesim.1 from `servesim --help` and `--version`, and DIR/servesim-<cmd>.1 for each
# command that `servesim --help` lists under "commands:", from `servesim <cmd> --help` (run
# through a two-line wrapper script, as help2man runs one program). The one-line summaries of the
# command list become the pages' NAME lines. Any failure stops the build with help2man's message.
cmake_minimum_required(VERSION 3.18)
foreach(v SERVESIM HELP2MAN OUT VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "man.cmake: -D${v}= is required")
  endif()
endforeach()
# A sanitizer build's program must not fail --help over a leak report at exit.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
# The wrapper scripts and help2man's include files go beside DIR, not into it (DIR is installed).
set(WRAP ${OUT}-wrap)
file(REMOVE_RECURSE ${OUT} ${WRAP})
file(MAKE_DIRECTORY ${OUT} ${WRAP})

execute_process(COMMAND ${SERVESIM} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "man.cmake: ${SERVESIM} --help failed (${rc})")
endif()
# The command list: "  <name>   <summary>" lines after "commands:", up to a blank line.
string(REPLACE "\n" ";" lines "${help}")
set(in_list OFF)
set(commands)
foreach(line IN LISTS lines)
  if(line MATCHES "^commands:")
    set(in_list ON)
  elseif(in_list AND line MATCHES "^  ([a-z][a-z0-9-]*) +(.*)$")
    list(APPEND commands ${CMAKE_MATCH_1})
    set(summary_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  elseif(in_list)
    break()
  endif()
endforeach()
if(NOT commands)
  message(FATAL_ERROR "man.cmake: no commands found under \"commands:\" in servesim --help")
endif()

set(see_also)
foreach(c ${commands})
  list(APPEND see_also ".BR servesim-${c} (1)")
endforeach()
list(JOIN see_also ",\n" see_also)
file(WRITE ${WRAP}/servesim.h2m "[SEE ALSO]\n${see_also}\n")

# A script WRAP/<name> that runs `servesim <args> "$@"` and passes its output through
# help2man-usage.awk (help2man finds the synopsis in a "Usage:" line and "or:" lines).
function(wrapper name)
  string(JOIN " " args ${ARGN})
  file(WRITE ${WRAP}/tmp/${name} "#!/bin/bash\nset -o pipefail\n'${SERVESIM}' ${args} \"$@\" | "
                                 "awk -v cmd='${ARGN}' -f '${CMAKE_CURRENT_LIST_DIR}/help2man-usage.awk'\n")
  file(COPY ${WRAP}/tmp/${name} DESTINATION ${WRAP}
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
endfunction()

function(help2man prog name out)
  execute_process(
    COMMAND ${HELP2MAN} --no-info --section=1 --name=${name} ${ARGN}
            --output=${out} ${prog}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man.cmake: help2man ${prog}: ${err}")
  endif()
endfunction()

foreach(c ${commands})
  # help2man names the page after the program it runs: a script servesim-<cmd>.
  wrapper(servesim-${c} ${c})
  file(WRITE ${WRAP}/servesim-${c}.h2m "[SEE ALSO]\n.BR servesim (1)\n")
  help2man(${WRAP}/servesim-${c} "${summary_${c}}" ${OUT}/servesim-${c}.1
           --version-string=${VERSION} --include=${WRAP}/servesim-${c}.h2m)
endforeach()
# Last: servesim.1 is the build rule's output, so it exists only when every page was written.
wrapper(servesim)
help2man(${WRAP}/servesim "discrete-event simulator of LLM serving clusters" ${OUT}/servesim.1
         --include=${WRAP}/servesim.h2m)
