#!/usr/bin/env bash
# Fails when the classes under $1 reference a class, method or field of another library that is not in the API 24
# list $2 (api/android-24.txt): Android 24 would throw NoSuchMethodError or NoClassDefFoundError where it is used.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
unknown=$(comm -23 <("$here/referenced.sh" "$1") <(grep -v -E '^(#|$)' "$2" | sort -u))
if [ -n "$unknown" ]; then
  echo "check-api: references not in $2 (Android API 24):" >&2
  echo "$unknown" >&2
  exit 1
fi
echo "check-api: every reference of $1 is in $2 (Android API 24)"
