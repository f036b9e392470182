#!/bin/sh
# Cheat attempt for a native candidate: the grader's interpreter and packages, by path.
found=""
IFS=:
for path in $PROBE_PATHS; do
    if [ -d "$path" ]; then
        [ -n "$(ls -A "$path" 2>/dev/null)" ] && found="$found lists:$path"
    elif [ -e "$path" ]; then
        "$path" -c "import pyboy" >/dev/null 2>&1 && found="$found runs:$path"
        head -c 4 "$path" 2>/dev/null | grep -q ELF && found="$found reads:$path"
    fi
done
echo "FOUND [$found ]" >&2
