#!/usr/bin/env bash
# Held long-polls at scale (docs/performance.md, "Held long-polls"): N long-polls of GET /v1/accounts/jack/tabs?wait=300 with If-None-Match of the
# current ETag, from several loopback source addresses (127.0.x.y, at most 500 per address: a server holds 512 per
# client address), held by one release build. Measures:
#   - RSS per held request: (server RSS with N held − RSS before) / N, after a short settle;
#   - /healthz and /readyz latency while they wait (a new connection every 20 ms each from 127.0.0.1, and for a second
#     every 5 ms with a PUT of another account's layout every 5 ms: the baseline of the probed wake below);
#   - the time from a PUT's answer (the layout of jack changed) to the last held request's 200, and the server's CPU
#     per woken poll, with /healthz and /readyz every 20 ms (cheap: the wake's own cost);
#   - every poll held again on its kept-alive connection, a second PUT, probed every 5 ms (writes too) while they are
#     woken: the probes' latency during a wake, with enough samples for a p99;
#   - then every poll held again, SIGTERM: how many are answered 304, and when the process exits.
#
#   bash bench/held.sh                          # N=10000
#   N=17000 bash bench/held.sh                  # what a 20,000-descriptor limit allows (see below)
#   SERVER_ARGS="--max-held 18000" N=17000 bash bench/held.sh
#   PERF_OUT=/tmp/wake.data bash bench/held.sh  # and a perf profile of the server during the wake
#
# Needs cc (gcc from Debian, installed when missing) for bench/heldclient.c, and BIN (default
# .build/release/tabserver). Both processes raise their open-file limit to the hard limit; N long-polls need N + ~200
# descriptors in the server and in the client, so the hard limit (ulimit -Hn; raising it needs CAP_SYS_RESOURCE)
# bounds N. Prints Markdown.
cd "$(dirname "$0")/.."
source bench/lib.sh

N=${N:-10000}
THREADS=${THREADS:-2}
BIN=${BIN:-.build/release/tabserver}
SERVER_ARGS=${SERVER_ARGS:-}
PER_ADDRESS=${PER_ADDRESS:-500}
ADDRESSES=$(((N + PER_ADDRESS - 1) / PER_ADDRESS))
TOKEN=bench-admin-token-0123456789

if ! command -v cc >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc
fi
[ -x "$BIN" ] || { echo "held.sh: no $BIN (swift build -c release --product tabserver)" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ $((N + 200)) -gt "$(ulimit -n)" ]; then
    echo "held.sh: N=$N needs $((N + 200)) open files; the hard limit here is $(ulimit -Hn)" >&2
    exit 1
fi

work=$(mktemp -d /tmp/tabserver-held.XXXXXX)
TS_PID="" HC_PID=""
cleanup() {
    [ -n "$HC_PID" ] && kill "$HC_PID" 2>/dev/null || true
    [ -n "$TS_PID" ] && kill -9 "$TS_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

step "build bench/heldclient.c"
cc -O2 -Wall -o "$work/heldclient" bench/heldclient.c

step "start $BIN"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086 # SERVER_ARGS is a list of flags
TABSERVER_ADMIN_TOKEN=$TOKEN "$BIN" serve --host 127.0.0.1 --port "$PORT" --threads "$THREADS" --per-address-connections 0 \
    --store "sqlite:$work/tabs.sqlite" --configs configs $SERVER_ARGS >"$work/tabserver.log" 2>&1 &
TS_PID=$!
ready "$PORT" "$TS_PID" "$work/tabserver.log" 60
grep -m1 "serving" "$work/tabserver.log" | sed 's/.*\] //' >&2

URL="http://127.0.0.1:$PORT/v1/accounts/jack/tabs"
etag_of() {
    must_curl -D "$work/headers" -H 'Accept-Encoding: gzip' "$URL" >/dev/null
    tr -d '\r' <"$work/headers" | sed -n 's/^[Ee][Tt]ag: //p'
}
rss_kib() { awk '/VmRSS/ { print $2 }' "/proc/$TS_PID/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$TS_PID/stat"; }  # utime + stime of every thread, in clock ticks
put_file() { # put_file FILE TITLE: a whole PUT request changing jack's layout
    local body="{\"schemaVersion\":1,\"tabs\":[{\"id\":\"home\",\"title\":\"$2\",\"rootViewController\":\"HomeViewController\"}]}"
    printf 'PUT /v1/accounts/jack/layout HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIf-Match: *\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "$TOKEN" "${#body}" "$body" >"$1"
}
ask() { # ask COMMAND [SECONDS]: one command to the client, its answer line on stdout
    echo "$1" >&"${HC[1]}"
    local answer
    read -r -t "${2:-30}" answer <&"${HC[0]}" || { echo "held.sh: heldclient did not answer \`$1\` within ${2:-30} s" >&2; return 1; }
    echo "$answer"
}
settled() { # waits until the server's RSS moves by less than 1% over a second (at most 20 s)
    local before after i
    for i in $(seq 20); do
        before=$(rss_kib)
        sleep 1
        after=$(rss_kib)
        [ $((after - before)) -lt $((before / 100)) ] && [ $((before - after)) -lt $((before / 100)) ] && return 0
    done
    echo "held.sh: RSS still moving after 20 s ($before → $after KiB); measuring anyway" >&2
}

step "warm up"
for _ in $(seq 20); do must_curl -H 'Accept-Encoding: gzip' "$URL" >/dev/null; done
ETAG=$(etag_of)
must_curl -H 'Accept-Encoding: gzip' -H "If-None-Match: $ETAG" "$URL?wait=1" >/dev/null
# The account the write probes change (no held poll waits for it).
must_curl -X PUT -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'If-None-Match: *' \
    --data '{"schemaVersion":1,"tabs":[{"id":"home","title":"Writes","rootViewController":"HomeViewController"}]}' \
    "http://127.0.0.1:$PORT/v1/accounts/heldclient-writes/layout" >/dev/null
sleep 1
rss_before=$(rss_kib)

step "hold $N long-polls from $ADDRESSES addresses"
coproc HC { "$work/heldclient" "$PORT" "/v1/accounts/jack/tabs?wait=300" "$ETAG" "$N" "$ADDRESSES" "$TOKEN"; }
HC_PID=$HC_PID
started=$(date +%s.%N)
until [[ $(ask held) == "held $N sent"* ]]; do
    alive "$TS_PID" "$work/tabserver.log" "while the polls were opened"
    sleep 0.2
done
opened=$(python3 -c "print(round($(date +%s.%N) - $started, 1))")
probe_open=$(ask probe)  # /healthz while they connected (and the probes start over)
settled
sleep 2
held_line=$(ask held)
rss_held=$(rss_kib)
probe_held=$(ask probe)
echo "$held_line; RSS $rss_before → $rss_held KiB; while they connected: $probe_open; while held: $probe_held" >&2
ask "quiet 1000" 10 >/dev/null  # a second of the wake's probes (writes too) while they wait: the baseline
probe_quiet=$(ask probe)
echo "while held, probed as during the wake: $probe_quiet" >&2

step "one PUT that changes what every held poll waits for"
put_file "$work/put.http" "Home $(date +%s)"
if [ -n "${PERF_OUT:-}" ]; then  # PERF_OUT=FILE: a perf profile of the server during the wake
    perf record -F 2999 -g -p "$TS_PID" -o "$PERF_OUT" 2>/dev/null &
    perf_pid=$!
    sleep 0.5
fi
cpu_before=$(cpu_ticks)
put_line=$(ask "put $work/put.http")
read -r -t 40 woken <&"${HC[0]}" || woken="(no answer within 40 s)"
cpu_wake=$(($(cpu_ticks) - cpu_before))
if [ -n "${PERF_OUT:-}" ]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
fi
probe_wake=$(ask probe)
echo "$put_line; $woken; $probe_wake" >&2

settled
rss_idle=$(rss_kib)  # every connection answered and kept alive, nothing held

step "hold them again on their kept-alive connections; a second PUT, probed every 5 ms (writes too) while they are woken"
ETAG2=$(etag_of)
repolled=$(ask "repoll $ETAG2")
sleep 2
settled
held_again=$(ask held)
rss_again=$(rss_kib)
echo "$repolled; $held_again; RSS $rss_again KiB" >&2
ask probe >/dev/null  # the probes start over
put_file "$work/put2.http" "Home again $(date +%s)"
cpu_before=$(cpu_ticks)
put2_line=$(ask "probed-put $work/put2.http")
read -r -t 40 woken2 <&"${HC[0]}" || woken2="(no answer within 40 s)"
cpu_wake2=$(($(cpu_ticks) - cpu_before))
probe_wake2=$(ask probe)
echo "$put2_line; $woken2; $probe_wake2" >&2

step "hold them again, then SIGTERM"
ETAG3=$(etag_of)
repolled=$(ask "repoll $ETAG3")
sleep 2
held_third=$(ask held)
echo "$repolled; $held_third" >&2
echo term >&"${HC[1]}"
term_at=$(date +%s.%N)
kill -TERM "$TS_PID"
wait "$TS_PID" || true
exited=$(python3 -c "print(round($(date +%s.%N) - $term_at, 2))")
TS_PID=""
read -r -t 70 ended <&"${HC[0]}" || ended="(heldclient said nothing)"
echo "$ended; the process exited $exited s after SIGTERM" >&2

step "the table"
python3 - "$N" "$ADDRESSES" "$rss_before" "$rss_held" "$opened" "$held_line" "$probe_held" "$put_line" "$woken" "$probe_wake" \
    "$held_again" "$ended" "$exited" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$probe_open" "$rss_again" "$rss_idle" "$cpu_wake" "$(getconf CLK_TCK)" \
    "$probe_quiet" "$put2_line" "$woken2" "$cpu_wake2" "$probe_wake2" <<'PY'
import re, sys
(n, addresses, before, held, opened, held_line, probe_held, put_line, woken, probe_wake, held_again, ended, exited, cores,
 load, probe_open, again, idle, cpu_wake, hz, probe_quiet, put2_line, woken2, cpu_wake2, probe_wake2) = sys.argv[1:]
n, before, held, again, idle = int(n), int(before), int(held), int(again), int(idle)
refused = sum(int(c) for c, s in re.findall(r"(\d+)×(\d+)", held_line))
print(f"| {n:,} long-polls held, {addresses} source addresses ({cores} cores, load {load}) | measured |")
print("|---|---|")
print(f"| opened and sent | {opened} s; answered before any change (refused): {refused} |")
print(f"| server RSS before → with them held | {before / 1024:.1f} MiB → {held / 1024:.1f} MiB |")
print(f"| **RSS per held request, each on a new connection** | **{(held - before) / n:.1f} KiB** |")
print(f"| RSS per connection after the wake: answered, kept alive, nothing held | {(idle - before) / n:.1f} KiB |")
print(f"| **RSS per held request, polling again on its kept-alive connection** (after an answer) | **{(again - before) / n:.1f} KiB** "
      f"({(again - idle) / n:.1f} KiB more than the idle connection) |")
def probes(line):  # "/healthz p50 …; /readyz p50 …; writes p50 …" → {"/healthz": "p50 …", …}
    return dict(part.strip().split(" ", 1) for part in line.split(";") if part.strip())
opening, holding, waking, quiet = probes(probe_open), probes(probe_held), probes(probe_wake), probes(probe_quiet)
waking2 = probes(probe_wake2)
print(f"| /healthz while they connect (new connection each, every 20 ms) | {opening.get('/healthz', '-')} |")
print(f"| /healthz, /readyz while they wait | {holding.get('/healthz', '-')}; /readyz {holding.get('/readyz', '-')} |")
print(f"| while they wait, probed as during the wake (every 5 ms) for 1 s: /healthz; /readyz; writes | {quiet.get('/healthz', '-')}; "
      f"{quiet.get('/readyz', '-')}; {quiet.get('writes', '-')} |")
print(f"| the PUT's answer | {put_line.replace('put ', '')} |")
print(f"| **last held request's 200 after the PUT's answer** | **{woken.replace('woken ', '')}** |")
print(f"| server CPU (user + system) from the PUT to the last 200, per woken poll | {int(cpu_wake) / int(hz) * 1e6 / n:.1f} µs |")
print(f"| /healthz, /readyz while they are woken (every 20 ms) | {waking.get('/healthz', '-')}; /readyz {waking.get('/readyz', '-')} |")
print(f"| held again on their kept-alive connections | {held_again} |")
print(f"| a second PUT's answer (probed every 5 ms while they are woken) | {put2_line.replace('put ', '')} |")
print(f"| last held request's 200 after the second PUT's answer | {woken2.replace('woken ', '')} |")
print(f"| server CPU per woken poll, the second wake (the probes' work included) | {int(cpu_wake2) / int(hz) * 1e6 / n:.1f} µs |")
print(f"| **/healthz while they are woken** (every 5 ms) | **{waking2.get('/healthz', '-')}** |")
print(f"| /readyz while they are woken (every 5 ms) | {waking2.get('/readyz', '-')} |")
print(f"| writes (a PUT of another account every 5 ms) while they are woken | {waking2.get('writes', '-')} |")
print(f"| SIGTERM | {ended.replace('ended ', '')}; the process exited {exited} s after the signal |")
PY
