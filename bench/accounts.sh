#!/usr/bin/env bash
# The many-accounts rows of the performance issue: ACCOUNTS (default 100,000) accounts with layouts of their
# own, written through the API, then a restart (start-up time, RSS), then reads of one account and of random
# accounts, interleaved with a server that holds a handful of layouts. Called by bench/run.sh (or alone:
# BIN, ROUNDS, DURATION and WRK_THREADS as there); prints a Markdown table.
#
# Every step says on stderr what it does, and a failing one says which it was and why (bench/lib.sh). The server
# is ready when /readyz answers 200: with a million accounts /healthz answers 200 for the ~6 s the restarted
# server spends loading them, while every other path answers 503; waiting on /healthz made step 4's `curl -fs`
# read a 503 and `set -e` end the script without a word.
cd "$(dirname "$0")/.."
source bench/lib.sh

ACCOUNTS=${ACCOUNTS:-100000}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
THREADS=${THREADS:-2}
WRK_THREADS=${WRK_THREADS:-2}
BIN=${BIN:-.build/release/tabserver}
ulimit -n 65536 2>/dev/null || true

work=$(mktemp -d /tmp/tabserver-accounts.XXXXXX)
MANY_PID="" FEW_PID=""
cleanup() {
    for pid in $MANY_PID $FEW_PID; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
serve() { # serve PORT STORE LOG → pid in $! (the caller captures it)
    TABSERVER_ADMIN_TOKEN=bench-admin-token-0123456789 "$BIN" serve --host 127.0.0.1 --port "$1" --threads "$THREADS" \
        --store "sqlite:$2" --configs configs >"$3" 2>&1 &
}
rss_mb() { awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# Every account gets the same five-tab layout (its own copy: nothing is shared in the store or the snapshot).
cat >"$work/layout.json" <<'JSON'
{"schemaVersion":1,"tabs":[{"id":"home","title":"Home","rootViewController":"HomeViewController"},{"id":"search","title":"Search","rootViewController":"SearchViewController"},{"id":"inbox","title":"Inbox","rootViewController":"InboxViewController"},{"id":"profile","title":"Profile","rootViewController":"ProfileViewController"},{"id":"settings","title":"Settings","rootViewController":"SettingsViewController"}]}
JSON

MANY_PORT=$(free_port)
serve "$MANY_PORT" "$work/many.sqlite" "$work/many.log"
MANY_PID=$!
step "start the server that will hold $ACCOUNTS accounts"
ready "$MANY_PORT" "$MANY_PID" "$work/many.log"

# 1. Write every account through the API: curl, 8 requests in flight, one acknowledged PUT each.
python3 - "$ACCOUNTS" "$MANY_PORT" "$work" >"$work/put.cfg" <<'PY'
import sys
accounts, port, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for i in range(accounts):
    if i:
        print("next")
    print(f'url = "http://127.0.0.1:{port}/v1/accounts/a{i:06d}/layout"\nrequest = "PUT"\n'
          'header = "Authorization: Bearer bench-admin-token-0123456789"\nheader = "Content-Type: application/json"\n'
          f'data-binary = "@{work}/layout.json"\noutput = "/dev/null"\nwrite-out = "%{{http_code}}\\n"')
PY
step "1. write $ACCOUNTS accounts through the API"
started=$(date +%s.%N)
curl -s --parallel --parallel-max 8 -K "$work/put.cfg" >"$work/put-codes.txt" 2>"$work/put-errors.txt" || true
seeded=$(date +%s.%N)
created=$(grep -c '^201$' "$work/put-codes.txt" || true)
alive "$MANY_PID" "$work/many.log" "while $ACCOUNTS accounts were written ($created created)"
if [ "$created" != "$ACCOUNTS" ]; then
    echo "accounts.sh: $((ACCOUNTS - created)) of $ACCOUNTS PUTs were not 201; their codes: $(sort "$work/put-codes.txt" | uniq -c |
        tr '\n' ' ')curl said: $(sort -u "$work/put-errors.txt" | head -3 | tr '\n' ' ')" >&2
fi

# 2. One PUT at full size: 20 sequential new versions of one account, curl's total time each.
step "2. 20 PUTs of one account among $ACCOUNTS"
for i in $(seq 20); do
    curl -s -o /dev/null -w '%{time_total}\n' -X PUT "http://127.0.0.1:$MANY_PORT/v1/accounts/a000000/layout" \
        -H 'Authorization: Bearer bench-admin-token-0123456789' -H 'Content-Type: application/json' -H 'If-Match: *' \
        --data-binary "{\"schemaVersion\":1,\"tabs\":[{\"id\":\"home\",\"title\":\"Home $i\",\"rootViewController\":\"HomeViewController\"}]}"
done >"$work/one-put.txt"
must_curl -X PUT "http://127.0.0.1:$MANY_PORT/v1/accounts/a000000/layout" -H 'Authorization: Bearer bench-admin-token-0123456789' \
    -H 'Content-Type: application/json' -H 'If-Match: *' --data-binary "@$work/layout.json" >/dev/null

# 3. Restart: time from exec to a ready answer (/readyz 200: every layout loaded), RSS after start-up.
step "3. restart with $ACCOUNTS accounts"
alive "$MANY_PID" "$work/many.log" "before the restart"
kill "$MANY_PID"
wait "$MANY_PID" || true
restart=$(date +%s.%N)
serve "$MANY_PORT" "$work/many.sqlite" "$work/many.log"
MANY_PID=$!
ready "$MANY_PORT" "$MANY_PID" "$work/many.log"
ready=$(date +%s.%N)
rss_start=$(rss_mb "$MANY_PID")

# 4. The same layout, as the only account of its own, on a server with the sample configs.
FEW_PORT=$(free_port)
serve "$FEW_PORT" "$work/few.sqlite" "$work/few.log"
FEW_PID=$!
step "4. one account alone on a second server, compared with the same account among $ACCOUNTS"
ready "$FEW_PORT" "$FEW_PID" "$work/few.log"
ONE=$(printf "a%06d" $((ACCOUNTS / 2)))
must_curl -X PUT "http://127.0.0.1:$FEW_PORT/v1/accounts/$ONE/layout" -H 'Authorization: Bearer bench-admin-token-0123456789' \
    -H 'Content-Type: application/json' --data-binary "@$work/layout.json" >/dev/null
must_curl "http://127.0.0.1:$FEW_PORT/v1/accounts/$ONE/tabs" >"$work/few.json"
must_curl "http://127.0.0.1:$MANY_PORT/v1/accounts/$ONE/tabs" >"$work/many.json"
cmp "$work/few.json" "$work/many.json" || { echo "the two servers answer different bytes:" >&2; cat "$work/few.json" "$work/many.json" >&2; exit 1; }

rps() { # rps FILE → requests/s, p99 ms, non-2xx/3xx
    python3 - "$1" <<'PY'
import re, sys
out = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
p99 = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
print(f"{rps:.0f}\t{p99:.2f}\t{int(bad.group(1)) if bad else 0}")
PY
}
: >"$work/reads.tsv"
step "5. reads: $ROUNDS rounds of one account on each server and of random accounts"
for round in $(seq "$ROUNDS"); do
    for cell in few many spread; do
        case $cell in
        few) wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "http://127.0.0.1:$FEW_PORT/v1/accounts/$ONE/tabs" >"$work/out.txt" ;;
        many) wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "http://127.0.0.1:$MANY_PORT/v1/accounts/$ONE/tabs" >"$work/out.txt" ;;
        spread) ACCOUNTS=$ACCOUNTS wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency -s bench/spread.lua \
            "http://127.0.0.1:$MANY_PORT/" >"$work/out.txt" ;;
        esac
        printf '%s\t%s\t%s\n' "$cell" "$round" "$(rps "$work/out.txt")" >>"$work/reads.tsv"
    done
done
alive "$MANY_PID" "$work/many.log" "after the reads"
rss_end=$(rss_mb "$MANY_PID")
step "the table"

python3 - "$ACCOUNTS" "$created" "$started" "$seeded" "$restart" "$ready" "$rss_start" "$rss_end" "$work" <<'PY'
import statistics, sys
accounts, created = int(sys.argv[1]), int(sys.argv[2])
started, seeded, restart, ready = map(float, sys.argv[3:7])
rss_start, rss_end, work = int(sys.argv[7]), int(sys.argv[8]), sys.argv[9]
one_put = sorted(float(l) * 1000 for l in open(f"{work}/one-put.txt").read().split())
reads = {}
for line in open(f"{work}/reads.tsv").read().splitlines():
    cell, _, rps, p99, bad = line.split("\t")
    reads.setdefault(cell, []).append((float(rps), float(p99), int(bad)))
def med(cell, i=0): return statistics.median(r[i] for r in reads[cell])
def rng(cell): return f"{med(cell):.0f} ({min(r[0] for r in reads[cell]):.0f}–{max(r[0] for r in reads[cell]):.0f})"
few = med("few")
ok = lambda good: "met" if good else "**not met**"
print(f"| {accounts:,} accounts | measured | target |")
print("|---|---|---|")
print(f"| writing them: PUTs through the API, 8 in flight | {created:,} created in {seeded - started:.1f} s "
      f"(**{created / (seeded - started):.0f} PUT/s**); failed {accounts - created} | — |")
print(f"| one PUT with {accounts:,} accounts (20 in a row) | median {statistics.median(one_put):.2f} ms, max {one_put[-1]:.2f} ms | — |")
print(f"| start-up to /readyz 200 (load, parse, validate, resolve every layout) | **{ready - restart:.1f} s** | < 10 s: {ok(ready - restart < 10)} |")
print(f"| RSS after start-up | **{rss_start} MB** | < 1 GiB: {ok(rss_start < 1024)} |")
print(f"| GET 200 of one account, 32 conns, server with a handful of layouts | {rng('few')} req/s; p99 {med('few', 1):.2f} ms | — |")
print(f"| the same account on the {accounts:,}-account server | {rng('many')} req/s (**{med('many') / few:.2f}×**); "
      f"p99 {med('many', 1):.2f} ms | ≥ 0.95×: {ok(med('many') / few >= 0.95)} |")
print(f"| random accounts among the {accounts:,} (each compiled on first request) | {rng('spread')} req/s (**{med('spread') / few:.2f}×**); "
      f"p99 {med('spread', 1):.2f} ms; unexpected status {sum(r[2] for r in reads['spread'])} | — |")
print(f"| RSS after those reads (every variant read is cached) | {rss_end} MB | < 1 GiB: {ok(rss_end < 1024)} |")
PY
