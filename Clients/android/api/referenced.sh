#!/usr/bin/env bash
# Every class, method and field of another library that the classes under $1 reference (their constant pools, as javap
# prints them), one a line, sorted: `java/lang/String.getBytes:(Ljava/nio/charset/Charset;)[B`, `class java/io/File`.
set -euo pipefail
JAVAP=${JAVAP:-javap}
find "$1" -name '*.class' -print0 | xargs -0 "$JAVAP" -v -p 2>/dev/null \
  | sed -n -E 's/^ *#[0-9]+ = (Methodref|InterfaceMethodref|Fieldref|Class) +[^/]*\/\/ +(.*)$/\1 \2/p' \
  | sed -E -e 's/^(Methodref|InterfaceMethodref|Fieldref) //' -e 's/^Class /class /' -e 's/"//g' \
  | grep -v -E '^(class )?\[*L?io/tabserver/' | sort -u
