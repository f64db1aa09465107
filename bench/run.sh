#!/usr/bin/env bash
# tabserver against a tuned nginx serving the same bytes, loaded with the headers real clients send.
#
#   bash bench/run.sh                    # `make bench`: everything, ~18 minutes on 2 cores
#   BENCH_QUICK=1 bash bench/run.sh      # a ~2-minute smoke: one short round, three header sets, no TLS rounds
#                                        # beyond one, pinned and routes at 32 connections, 2,000 long-polls, no accounts
#   ROUNDS=5 DURATION=3 bash bench/run.sh # more and longer rounds (DURATION: seconds per cell, default 1)
#
# Sections (each can be skipped with its variable set to 0):
#   reads     bench/readbench.py: six client header sets (HEADER_SETS in readbench.py), 200 and 304, 32 and
#             256 connections, h2load --h1 -t1, interleaved rounds, against nginx from Debian tuned for static
#             JSON (sendfile, open_file_cache, gzip_static, brotli_static, precompressed gzip -9 / brotli -q 11)
#             serving the bytes tabserver serves for each header set; twice: unpinned (servers and h2load share the
#             cores), then PIN=auto: each server on one core (a tabserver started there, which runs one
#             worker, and nginx with one worker), h2load on the other, by taskset; the targets are judged on
#             the pinned table
#   ROUTES=1  in the pinned phase, this round's read routes against nginx serving the same bytes: the manifest and
#             ?version=N (200 and 304), …/tabs with builds declared for an undeclared and a declared build, and
#             …/tabs with --signing-key, each compared with …/tabs on the same rounds
#   TLS=1     bench/tls.sh: the same over HTTPS, both servers with one certificate made for the run
#   writes    acknowledged PUT/s, and reads during ~10 PUT/s
#   REPORTS=1 bench/reports.py: …/tabs alone and beside 1,000 reports a second (POST …/tabs/reports), same run
#   FLAME=1   a perf profile of the 304 path under iOS headers, drawn as docs/flame-304.svg
#   LONGPOLL=1 bench/longpoll.py: 10,000 held long-polls, then one write that wakes them all
#   ACCOUNTS=100000  bench/accounts.sh: the many-accounts rows
#
# Needs h2load, wrk, nginx, brotli, openssl (installed from Debian's archive when missing) and a release build
# (BIN, default .build/release/tabserver; make bench builds it). Prints Markdown, writes it to
# bench/results-latest.md, and replaces the generated section of docs/performance.md (between its bench:begin and
# bench:end markers). Every server it starts listens on 127.0.0.1 on a free port and is stopped on exit.
cd "$(dirname "$0")/.."
source bench/lib.sh  # set -eEuo pipefail, and a failing step says which

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-1} ACCOUNTS=${ACCOUNTS:-0}
    TLS_CLIENTS=${TLS_CLIENTS:-ios-urlsession} CONNECTIONS=${CONNECTIONS:-"32 256"}
    # Three header sets (one per coding: br, gzip, identity) and 2,000 held long-polls keep the smoke under 2 minutes.
    CLIENTS=${CLIENTS:-ios-urlsession,android-okhttp,curl} LONGPOLL_CONNECTIONS=${LONGPOLL_CONNECTIONS:-2000}
    # The pinned phase and the routes once each, at 32 connections and for the iOS headers only (28 more runs), and
    # shorter warm-ups (a smoke measures nothing): ~2 minutes in all (124 s at a load average of 4).
    PINNED_CLIENTS=${PINNED_CLIENTS:-ios-urlsession} PINNED_CONNECTIONS=${PINNED_CONNECTIONS:-32}
    PINNED_WIDE_CONNECTIONS=${PINNED_WIDE_CONNECTIONS-} WARM_UP=${WARM_UP:-0.25} TLS_WARM_UP=${TLS_WARM_UP:-1}
fi
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-1}             # seconds measured per cell (integer: wrk and perf take it too)
WARM_UP=${WARM_UP:-0.5}             # seconds per read cell before it is measured (connections opened)
THREADS=${THREADS:-2}            # tabserver worker threads, and nginx worker processes
WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-"32 256"}
WIDE_CONNECTIONS=${WIDE_CONNECTIONS-1024}  # more connection counts, for the iOS URLSession headers only ("" for none)
CLIENTS=${CLIENTS:-all}
PIN=${PIN:-auto}                 # auto: the first two CPUs this shell may use; SERVER_CPU,LOAD_CPU; 0: no pinned phase
PINNED_CLIENTS=${PINNED_CLIENTS:-$CLIENTS}
PINNED_CONNECTIONS=${PINNED_CONNECTIONS:-$CONNECTIONS}
PINNED_WIDE_CONNECTIONS=${PINNED_WIDE_CONNECTIONS-$WIDE_CONNECTIONS}
ROUTES=${ROUTES:-1}
ACCOUNT=${ACCOUNT:-jack}
BIN=${BIN:-.build/release/tabserver}
export ROUNDS DURATION THREADS WRK_THREADS CONNECTIONS BIN ACCOUNT

need=""
command -v wrk >/dev/null || need="$need wrk"
command -v h2load >/dev/null || need="$need nghttp2-client"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need="$need nginx-light"
[ -f /usr/lib/nginx/modules/ngx_http_brotli_static_module.so ] || need="$need libnginx-mod-http-brotli-static"
command -v brotli >/dev/null || need="$need brotli"
command -v openssl >/dev/null || need="$need openssl"
if [ -n "$need" ]; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need
fi
[ -x "$BIN" ] || { echo "no $BIN: run make release (or make bench)" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true
started_at=$(date +%s)

work=$(mktemp -d /tmp/tabserver-bench.XXXXXX)
chmod 755 "$work"  # nginx workers run as another user
TS_PID=""
cleanup() {
    [ -n "$TS_PID" ] && kill "$TS_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TS_PORT=$(free_port)
# Every load comes from 127.0.0.1: one address may hold 2,048 connections here (1,024 by default), so that the
# 1,024-connection rows and the bench's own requests fit.
TABSERVER_ADMIN_TOKEN=bench-admin-token-0123456789 "$BIN" serve --host 127.0.0.1 --port "$TS_PORT" --threads "$THREADS" \
    --per-address-connections 2048 --store "sqlite:$work/tabs.sqlite" --configs configs >"$work/tabserver.log" 2>&1 &
TS_PID=$!
ready "$TS_PORT" "$TS_PID" "$work/tabserver.log" 30
PATH_URI="/v1/accounts/$ACCOUNT/tabs"

# 1. Reads with real clients' headers, against tuned nginx.
step "reads: client header sets × 200/304 × connections, tabserver and nginx interleaved, unpinned then pinned (PIN=$PIN)"
routes=()
if [ "$ROUTES" != 0 ]; then routes=(--routes); fi
python3 bench/readbench.py --url "http://127.0.0.1:$TS_PORT" --pid "$TS_PID" --work "$work/reads" \
    --threads "$THREADS" --rounds "$ROUNDS" --duration "$DURATION" --warm-up "$WARM_UP" --connections "$CONNECTIONS" \
    --wide-connections "$WIDE_CONNECTIONS" --clients "$CLIENTS" --account "$ACCOUNT" --json "$work/reads.json" \
    --pin "$PIN" --pinned-clients "$PINNED_CLIENTS" --pinned-connections "$PINNED_CONNECTIONS" \
    --pinned-wide-connections "$PINNED_WIDE_CONNECTIONS" --bin "$BIN" --configs configs "${routes[@]}" | tee "$work/reads.md"

# 2. The same over HTTPS.
: >"$work/tls.md"
if [ "${TLS:-1}" != 0 ]; then
    step "HTTPS"
    TLS_CLIENTS=${TLS_CLIENTS:-ios-urlsession} TLS_WARM_UP=${TLS_WARM_UP:-2} bash bench/tls.sh | tee "$work/tls.md"
fi

# 3. Writes: acknowledged PUTs per second (SQLite, synchronous=FULL, on this machine's disk), and reads with the
# iOS headers while a paced writer does ~10 PUT/s.
step "writes"
IOS_HEADERS=(-H 'Accept: */*' -H 'Accept-Language: fr-FR,fr;q=0.9,en;q=0.8' -H 'Accept-Encoding: gzip, deflate, br'
    -H 'User-Agent: Tabs/4.2 CFNetwork/1498.700.2 Darwin/23.6.0')
for w in 0 1 2 3; do
    must_curl -X PUT "http://127.0.0.1:$TS_PORT/v1/accounts/bench-w$w/layout" -H "Authorization: Bearer bench-admin-token-0123456789" \
        -H 'Content-Type: application/json' --data '{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"A"}]}' >/dev/null
done
writes="$work/writes.tsv"
: >"$writes"
for round in $(seq "$ROUNDS"); do
    BENCH_TOKEN=bench-admin-token-0123456789 wrk -t4 -c4 -d"${DURATION}s" --latency -s bench/put.lua "http://127.0.0.1:$TS_PORT/" >"$work/put.txt"
    # The same read load without writes, just before the one with them (the baseline of the ratio).
    wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "${IOS_HEADERS[@]}" "http://127.0.0.1:$TS_PORT$PATH_URI" >"$work/alone.txt"
    BENCH_TOKEN=bench-admin-token-0123456789 PACE_MS=100 wrk -t1 -c1 -d"$((DURATION + 1))s" -s bench/put.lua "http://127.0.0.1:$TS_PORT/" >"$work/paced.txt" &
    paced=$!
    wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "${IOS_HEADERS[@]}" "http://127.0.0.1:$TS_PORT$PATH_URI" >"$work/read.txt"
    wait "$paced"
    python3 - "$work" "$round" >>"$writes" <<'PY'
import re, sys
work, round_ = sys.argv[1:]
def parse(name):
    out = open(f"{work}/{name}").read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    units = {"us": 0.001, "ms": 1, "s": 1000}
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, (float(p99.group(1)) * units[p99.group(2)] if p99 else 0), int(bad.group(1)) if bad else 0
put, paced, read, alone = parse("put.txt"), parse("paced.txt"), parse("read.txt"), parse("alone.txt")
print(f"{round_}\t{put[0]:.0f}\t{put[1]:.2f}\t{put[2]}\t{paced[0]:.1f}\t{paced[2]}\t{read[0]:.0f}\t{read[1]:.2f}\t{read[2]}"
      f"\t{alone[0]:.0f}\t{alone[1]:.2f}")
PY
done
python3 - "$writes" <<'PY' | tee "$work/writes.md"
import statistics, sys
writes = [[float(v) for v in l.split("\t")] for l in open(sys.argv[1]).read().splitlines()]
def m(i): return statistics.median(w[i] for w in writes)
def r(i, fmt): return f"{fmt.format(m(i))} ({fmt.format(min(w[i] for w in writes))}–{fmt.format(max(w[i] for w in writes))})"
print("| writes (SQLite, synchronous=FULL) | value |")
print("|---|---|")
print(f"| acknowledged PUT/s, 4 writers (wrk + bench/put.lua) | {r(1, '{:.0f}')}; p99 {m(2):.2f} ms; failed {sum(w[3] for w in writes):.0f} |")
print(f"| paced writer during the read run | {r(4, '{:.1f}')} PUT/s; failed {sum(w[5] for w in writes):.0f} |")
print(f"| GET 200 with iOS headers, 32 conns (wrk), during those writes | {r(6, '{:.0f}')} req/s (**{m(6) / m(9):.2f}×** of "
      f"{m(9):.0f} without writes, measured just before); p99 {m(7):.2f} ms (without writes {m(10):.2f} ms); "
      f"unexpected status {sum(w[8] for w in writes):.0f} |")
PY

# 3b. The read path while the apps' reports arrive: …/tabs alone and beside 1,000 reports a second, interleaved rounds
# on the same server (bench/reports.py).
: >"$work/reports.md"
if [ "${REPORTS:-1}" != 0 ]; then
    step "reads beside the apps' reports"
    python3 bench/reports.py --url "http://127.0.0.1:$TS_PORT" --pid "$TS_PID" --work "$work/reports" --account "$ACCOUNT" \
        --rounds "$ROUNDS" --duration "$DURATION" --warm-up "$WARM_UP" | tee "$work/reports.md"
fi

# 4. A profile of the 304 path under the iOS headers: where the server's CPU goes (perf, cpu-clock: works
# without hardware counters), as a flame graph and as the functions with the most samples under them.
: >"$work/flame.md"
FLAME_SECONDS=${FLAME_SECONDS:-$([ "${BENCH_QUICK:-0}" = 1 ] && echo 2 || echo 5)}
if [ "${FLAME:-1}" != 0 ]; then
    step "profile of the 304 path (iOS headers)"
    if ! command -v perf >/dev/null; then
        SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
        $SUDO apt-get install -y -qq linux-perf >/dev/null 2>&1 || true
    fi
    IOS_ETAG=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prepared"]["iOS URLSession"]["ts_etag"])' "$work/reads.json")
    if ! command -v perf >/dev/null; then
        echo "perf is not installed (Debian linux-perf): no profile." | tee "$work/flame.md"
    elif ! perf record -q -e cpu-clock -o "$work/probe.data" -- true >/dev/null 2>&1; then
        echo "perf cannot record here (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo ?),"\
            "or no perf events in this VM): no profile." | tee "$work/flame.md"
    else
        perf record -q -e cpu-clock -g -o "$work/perf.data" -p "$TS_PID" -- sleep "$FLAME_SECONDS" >/dev/null 2>&1 &
        perf_pid=$!
        h2load --h1 -t1 -c32 -D"$FLAME_SECONDS" "${IOS_HEADERS[@]}" -H "If-None-Match: $IOS_ETAG" \
            "http://127.0.0.1:$TS_PORT$PATH_URI" >"$work/flame-h2load.txt"
        wait "$perf_pid" || true
        demangle=cat
        command -v swift >/dev/null && demangle="swift demangle --simplified"
        perf script -i "$work/perf.data" 2>/dev/null | $demangle >"$work/perf.txt"
        python3 bench/flamegraph.py --title "tabserver, GET 304 with iOS URLSession headers, 32 connections" \
            <"$work/perf.txt" >docs/flame-304.svg
        {
            echo "Profile of tabserver answering 304s to the iOS URLSession headers and their ETag (32 connections,"
            echo "${FLAME_SECONDS} s, h2load \`--h1 -t1\`, perf cpu-clock): the share of samples by module, then the functions"
            echo "with the most samples under them (inclusive) and in them (self); the flame graph is docs/flame-304.svg."
            echo
            echo '```'
            python3 bench/flamegraph.py --modules <"$work/perf.txt"
            echo
            echo "  incl.   self  function"
            python3 bench/flamegraph.py --top 25 <"$work/perf.txt" | cut -c1-120
            echo '```'
        } | tee "$work/flame.md"
    fi
fi
kill "$TS_PID" 2>/dev/null || true
wait "$TS_PID" 2>/dev/null || true
TS_PID=""

# 5. Held long-polls, with a server of their own.
: >"$work/longpoll.md"
if [ "${LONGPOLL:-1}" != 0 ]; then
    step "long-poll"
    python3 bench/longpoll.py --bin "$BIN" --threads "$THREADS" --duration "$DURATION" \
        --connections "${LONGPOLL_CONNECTIONS:-10000}" | tee "$work/longpoll.md"
fi

# 6. The many-accounts rows, with servers of their own.
: >"$work/accounts.md"
if [ "${ACCOUNTS:-100000}" != 0 ]; then
    step "${ACCOUNTS:-100000} accounts"
    ACCOUNTS=${ACCOUNTS:-100000} bash bench/accounts.sh | tee "$work/accounts.md"
fi

# Readers while strings tables are written: the 304 load at ACCOUNTS layouts, alone and with a strings PUT/s.
: >"$work/stringswrites.md"
if [ "${ACCOUNTS:-100000}" != 0 ]; then
    step "readers while a strings table is written every second"
    {
        echo "Readers' p99 with a strings PUT every second (\`bench/strings-writes.py\`: another locale's table than the"
        echo "readers', interleaved with the same load alone; the goal is a difference under 1 ms):"
        echo
        echo "| load | alone | with writes | difference |"
        echo "|---|---|---|---|"
        ACCOUNTS=${ACCOUNTS:-100000} ROUNDS=$ROUNDS DURATION=$((DURATION < 5 ? 5 : DURATION)) CONNECTIONS=256 BIN=$BIN \
            python3 bench/strings-writes.py
    } | tee "$work/stringswrites.md"
fi

{
    echo "Run of $(date -u +%Y-%m-%d) (\`make bench\`$([ "${BENCH_QUICK:-0}" = 1 ] && echo ", BENCH_QUICK=1"),"\
        "${ROUNDS} rounds of ${DURATION} s per cell; the whole run took $(( ($(date +%s) - started_at + 30) / 60 )) min)."\
        "Binary: \`$BIN\`, built $(date -u -r "$BIN" '+%Y-%m-%d %H:%M UTC'); the repository is at commit"\
        "$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- Sources Package.swift 2>/dev/null || echo ' with uncommitted changes')"\
        "$([ "$BIN" = .build/release/tabserver ] && echo "(\`make bench\` built the binary from it)" || echo "(a BIN given by hand may come from other sources)")."
    for part in reads tls writes reports flame longpoll accounts stringswrites; do
        if [ -s "$work/$part.md" ]; then
            echo
            cat "$work/$part.md"
        fi
    done
} >bench/results-latest.md
python3 - bench/results-latest.md docs/performance.md <<'PY'
import sys
results, doc = sys.argv[1:]
text = open(doc).read()
begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(doc, "w").write(head + begin + "\n" + open(results).read().strip() + "\n" + end + tail)
    print(f"updated {doc}", file=sys.stderr)
PY
