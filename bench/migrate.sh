#!/usr/bin/env bash
# `tabserver migrate` from SQLite to PostgreSQL: ACCOUNTS (default 100,000) accounts with 3 versions each, the
# source of every version the bytes of configs/layouts/jack.json. Prints wall time, the copy's own seconds and the
# peak RSS (GNU time's maximum resident set size) as a Markdown table. Not part of CI.
#
#   bash bench/migrate.sh                 # a throwaway PostgreSQL from scripts/with-postgres
#   BIN=.build/release/tabserver ACCOUNTS=10000 bash bench/migrate.sh
#
# The store is written by the sqlite3 shell in one statement (300,000 writes through the API would measure the
# write path, not the copy); its tags have the store's form ("v<version>-<20 hex digits>") but random digits.
cd "$(dirname "$0")/.."
source bench/lib.sh  # set -eEuo pipefail, and a failing step says which

ACCOUNTS=${ACCOUNTS:-100000}
BIN=${BIN:-.build/release/tabserver}
if [ -z "${TABSERVER_TEST_POSTGRES_URL:-}" ]; then
    exec scripts/with-postgres bash bench/migrate.sh
fi
command -v sqlite3 >/dev/null || { echo "migrate.sh: needs the sqlite3 shell (apt-get install sqlite3)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "migrate.sh: no $BIN (swift build -c release --product tabserver)" >&2; exit 1; }

work=$(mktemp -d /tmp/tabserver-migrate.XXXXXX)
trap 'rm -rf "$work"' EXIT
source_db="$work/source.sqlite"

"$BIN" import configs --store "sqlite:$source_db" >/dev/null  # the schema, the sample layouts and strings tables
started=$(date +%s.%N)
sqlite3 "$source_db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $ACCOUNTS * 3 - 1)
INSERT INTO layout_versions (account, version, source, content_type, etag, created_at_ms, author, message, deleted, extends)
SELECT printf('account-%06d', i / 3), i % 3 + 1, readfile('configs/layouts/jack.json'), 'application/json',
       '"v' || (i % 3 + 1) || '-' || lower(hex(randomblob(10))) || '"', 1700000000000 + i, 'bench', 'version ' || (i % 3 + 1), 0, ''
FROM n;
SQL
seeded=$(date +%s.%N)

database="migrate_$$"
target="${TABSERVER_TEST_POSTGRES_URL%/*}/$database"
psql "$TABSERVER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE $database"

/usr/bin/time -f '%e %M' -o "$work/time" "$BIN" migrate --from "sqlite:$source_db" --to "$target" >"$work/out" 2>"$work/err"
read -r wall rss_kb <"$work/time"
copy_seconds=$(sed -n 's/.* rows in \([0-9.]*\) s;.*/\1/p' "$work/out")
rows=$(sqlite3 "$source_db" 'SELECT (SELECT count(*) FROM layout_versions) + (SELECT count(*) FROM strings_versions)')
size_mb=$(( $(stat -c %s "$source_db") / 1048576 ))

echo "| accounts | rows | SQLite file | wall time | copy and check (tabserver's count) | rows/s | peak RSS |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '| %s | %s | %s MiB | %s s | %s s | %s | %s MiB |\n' "$ACCOUNTS" "$rows" "$size_mb" "$wall" "$copy_seconds" \
    "$(python3 -c "print(round($rows / $wall))")" "$(( rss_kb / 1024 ))"
echo
echo "(seeding the SQLite store took $(python3 -c "print(round($seeded - $started, 1))") s; progress lines: $(grep -c 'rows/s' "$work/err"))"
