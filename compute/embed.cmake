# Writes OUT as a C string literal of the text file IN (the built-in catalogs are data files,
# compiled into the program so that results never depend on where it runs).
# cmake -DIN=file.json -DOUT=file.inc -P embed.cmake
file(READ "${IN}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE "${OUT}" "/* Generated from ${IN} by compute/embed.cmake: do not edit. */\n\"${text}\"\n")
