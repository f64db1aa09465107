#!/usr/bin/env bash
# tabserver vs nginx serving the same bytes, loaded by wrk in one run (interleaved, medians).
#
#   bash bench/run.sh                 # defaults: 3 rounds of 5 s per cell
#   ROUNDS=5 DURATION=10 bash bench/run.sh
#
# Needs wrk, h2load and nginx (installed from Debian's archive when missing) and a release build
# (make bench builds it). Prints Markdown tables, writes them to bench/results-latest.md, and replaces the
# generated section of docs/performance.md (between its bench:begin and bench:end markers).
#
# Then the many-accounts rows (bench/accounts.sh; ACCOUNTS=0 skips them) and a CPU profile of tabserver
# answering 304s, drawn as docs/flame-304.svg (perf and bench/flamegraph.py; FLAME=0 skips it).
#
# The 200 path is loaded with wrk. The 304 path is loaded with h2load (HTTP/1.1 mode, one log line per
# request for the p99): a 304 from tabserver carries the 200's Content-Length (libmicrohttpd 0.9.75 always
# sends a length; RFC 9110 §8.6 allows only that value), and wrk's parser then waits for a body that a 304
# never has, while h2load, like every HTTP client, knows that a 304 ends at its header block.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
THREADS=${THREADS:-2}            # tabserver worker threads, and nginx worker processes
WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-"32 256"}
ACCOUNT=${ACCOUNT:-jack}
BIN=${BIN:-.build/release/tabserver}

need=""
command -v wrk >/dev/null || need="$need wrk"
command -v h2load >/dev/null || need="$need nghttp2-client"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need="$need nginx-light"
if [ -n "$need" ]; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$BIN" ] || { echo "no $BIN: run make release (or make bench)" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true

work=$(mktemp -d /tmp/tabserver-bench.XXXXXX)
chmod 755 "$work"  # nginx workers run as another user
cleanup() {
    [ -n "${TS_PID:-}" ] && kill "$TS_PID" 2>/dev/null || true
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TS_PORT=$(free_port)
NG_PORT=$(free_port)

TABSERVER_ADMIN_TOKEN=bench "$BIN" serve --host 127.0.0.1 --port "$TS_PORT" --threads "$THREADS" \
    --store "sqlite:$work/tabs.sqlite" --configs configs >"$work/tabserver.log" 2>&1 &
TS_PID=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$TS_PORT/healthz" >/dev/null && break; sleep 0.1; done

# The bytes a client gets: tabserver's compiled layout, served by nginx as a static file.
PATH_URI="/v1/accounts/$ACCOUNT/tabs"
mkdir -p "$work/root/v1/accounts/$ACCOUNT"
curl -fs "http://127.0.0.1:$TS_PORT$PATH_URI" -o "$work/root$PATH_URI"
TS_ETAG=$(curl -fsI "http://127.0.0.1:$TS_PORT$PATH_URI" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')

cat >"$work/nginx.conf" <<NGINX
worker_processes $THREADS;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 60;
    etag on;
    types { }
    default_type application/json;
    server {
        listen 127.0.0.1:$NG_PORT;
        root $work/root;
    }
}
NGINX
"$NGINX" -p "$work" -c "$work/nginx.conf"
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$NG_PORT$PATH_URI" >/dev/null && break; sleep 0.1; done
NG_ETAG=$(curl -fsI "http://127.0.0.1:$NG_PORT$PATH_URI" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
cmp <(curl -fs "http://127.0.0.1:$NG_PORT$PATH_URI") <(curl -fs "http://127.0.0.1:$TS_PORT$PATH_URI") \
    || { echo "nginx and tabserver bodies differ" >&2; exit 1; }
[ "$(curl -fs -o /dev/null -w '%{http_code}' -H "If-None-Match: $TS_ETAG" "http://127.0.0.1:$TS_PORT$PATH_URI")" = 304 ] \
    || { echo "tabserver does not answer 304" >&2; exit 1; }

NGINX_PIDS() { pgrep -f "nginx: worker process" | tr '\n' ' '; }
cpu_ticks() { # utime+stime of the given pids, in clock ticks
    local total=0
    for pid in "$@"; do
        read -r -a f <"/proc/$pid/stat"
        total=$((total + f[13] + f[14]))
    done
    echo "$total"
}

results="$work/results.tsv"
: >"$results"
for round in $(seq "$ROUNDS"); do
    for conns in $CONNECTIONS; do
        for kind in 200 304; do
            for server in tabserver nginx; do
                if [ "$server" = tabserver ]; then port=$TS_PORT etag=$TS_ETAG pids=$TS_PID; else port=$NG_PORT etag=$NG_ETAG pids=$(NGINX_PIDS); fi
                before=$(cpu_ticks $pids)
                if [ "$kind" = 200 ]; then
                    wrk -t"$WRK_THREADS" -c"$conns" -d"${DURATION}s" --latency "http://127.0.0.1:$port$PATH_URI" >"$work/out.txt"
                else
                    rm -f "$work/h2load.log"
                    h2load --h1 -t"$WRK_THREADS" -c"$conns" -D"$DURATION" --warm-up-time=0 -H "If-None-Match: $etag" \
                        --log-file="$work/h2load.log" "http://127.0.0.1:$port$PATH_URI" >"$work/out.txt"
                fi
                after=$(cpu_ticks $pids)
                python3 - "$server" "$kind" "$conns" "$round" "$((after - before))" "$(getconf CLK_TCK)" "$work" >>"$results" <<'PY'
import re, sys
server, kind, conns, round_, ticks, hz, work = sys.argv[1:]
out = open(f"{work}/out.txt").read()
if kind == "200":
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
    p99 = ms(*re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out).groups())
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    bad = int(bad.group(1)) if bad else 0
else:
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    lines = [l.split("\t") for l in open(f"{work}/h2load.log").read().splitlines() if l]
    total = len(lines)
    latencies = sorted(int(l[2]) for l in lines)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000 if latencies else 0
    bad = sum(1 for l in lines if l[1] != "304")
cpu_us = int(ticks) / int(hz) * 1e6 / max(total, 1)
print(f"{server}\t{kind}\t{conns}\t{round_}\t{rps:.0f}\t{p99:.3f}\t{cpu_us:.2f}\t{bad}")
PY
            done
        done
    done
done

# Writes: acknowledged PUTs per second (SQLite, synchronous=FULL, on this machine's disk), and reads while
# a paced writer does ~10 PUT/s.
for w in 0 1 2 3; do
    curl -fs -o /dev/null -X PUT "http://127.0.0.1:$TS_PORT/v1/accounts/bench-w$w/layout" -H "Authorization: Bearer bench" \
        -H 'Content-Type: application/json' --data '{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"A"}]}'
done
writes="$work/writes.tsv"
: >"$writes"
for round in $(seq "$ROUNDS"); do
    BENCH_TOKEN=bench wrk -t4 -c4 -d"${DURATION}s" --latency -s bench/put.lua "http://127.0.0.1:$TS_PORT/" >"$work/put.txt"
    # The same read load without writes, just before the one with them (the baseline of the ratio).
    wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "http://127.0.0.1:$TS_PORT$PATH_URI" >"$work/alone.txt"
    BENCH_TOKEN=bench PACE_MS=100 wrk -t1 -c1 -d"$((DURATION + 1))s" -s bench/put.lua "http://127.0.0.1:$TS_PORT/" >"$work/paced.txt" &
    paced=$!
    wrk -t"$WRK_THREADS" -c32 -d"${DURATION}s" --latency "http://127.0.0.1:$TS_PORT$PATH_URI" >"$work/read.txt"
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

python3 - "$results" "$THREADS" "$ROUNDS" "$DURATION" "$writes" <<'PY' | tee "$work/reads.md"
import statistics, sys, platform, os
path, threads, rounds, duration, writes_path = sys.argv[1:]
rows = [l.split("\t") for l in open(path).read().splitlines()]
cells = {}
for server, kind, conns, _, rps, p99, cpu, errors in rows:
    cells.setdefault((kind, int(conns), server), []).append((float(rps), float(p99), float(cpu), int(errors)))
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {os.cpu_count()} cores, {cpu_model}; tabserver --threads {threads}, nginx worker_processes {threads}; "
      f"wrk on the same machine; {rounds} interleaved rounds of {duration} s per cell; medians (min–max).\n")
print("| path (tool) | conns | tabserver req/s | nginx req/s | ratio | tabserver p99 ms | nginx p99 ms | tabserver CPU µs/req | nginx CPU µs/req | unexpected status |")
print("|---|---|---|---|---|---|---|---|---|---|")
for kind in ("200", "304"):
    for conns in sorted({k[1] for k in cells}):
        t, n = cells[(kind, conns, "tabserver")], cells[(kind, conns, "nginx")]
        def med(xs, i): return statistics.median(x[i] for x in xs)
        def rng(xs, i, fmt): return f"{fmt.format(med(xs, i))} ({fmt.format(min(x[i] for x in xs))}–{fmt.format(max(x[i] for x in xs))})"
        print(f"| GET {kind} ({'wrk' if kind == '200' else 'h2load'}) | {conns} | {rng(t, 0, '{:.0f}')} | {rng(n, 0, '{:.0f}')} | **{med(t, 0) / med(n, 0):.2f}×** | "
              f"{med(t, 1):.2f} | {med(n, 1):.2f} | {med(t, 2):.1f} | {med(n, 2):.1f} | {sum(x[3] for x in t)}/{sum(x[3] for x in n)} |")
writes = [[float(v) for v in l.split("\t")] for l in open(writes_path).read().splitlines()]
if writes:
    def m(i): return statistics.median(w[i] for w in writes)
    def r(i, fmt): return f"{fmt.format(m(i))} ({fmt.format(min(w[i] for w in writes))}–{fmt.format(max(w[i] for w in writes))})"
    reads_alone, p99_alone = m(9), m(10)
    print()
    print("| writes (SQLite, synchronous=FULL) | value |")
    print("|---|---|")
    print(f"| acknowledged PUT/s, 4 writers (wrk + bench/put.lua) | {r(1, '{:.0f}')}; p99 {m(2):.2f} ms; failed {sum(w[3] for w in writes):.0f} |")
    print(f"| paced writer during the read run | {r(4, '{:.1f}')} PUT/s; failed {sum(w[5] for w in writes):.0f} |")
    print(f"| GET 200, 32 conns, during those writes | {r(6, '{:.0f}')} req/s (**{m(6) / reads_alone:.2f}×** of {reads_alone:.0f} without writes, measured just before); "
          f"p99 {m(7):.2f} ms (without writes {p99_alone:.2f} ms) |")
PY

# A profile of the 304 path under load: where the server's CPU goes (perf, cpu-clock: works without hardware
# counters), as a flame graph and as a list of the functions with the most samples under them.
: >"$work/flame.md"
if [ "${FLAME:-1}" != 0 ]; then
    if ! command -v perf >/dev/null; then
        SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
        $SUDO apt-get install -y -qq linux-perf >/dev/null 2>&1 || true
    fi
    if command -v perf >/dev/null; then
        perf record -q -e cpu-clock -g -o "$work/perf.data" -p "$TS_PID" -- sleep "$DURATION" >/dev/null 2>&1 &
        perf_pid=$!
        h2load --h1 -t"$WRK_THREADS" -c32 -D"$DURATION" -H "If-None-Match: $TS_ETAG" "http://127.0.0.1:$TS_PORT$PATH_URI" >/dev/null
        wait "$perf_pid" || true
        demangle=cat
        command -v swift >/dev/null && demangle="swift demangle --simplified"
        perf script -i "$work/perf.data" 2>/dev/null | $demangle >"$work/perf.txt"
        python3 bench/flamegraph.py --title "tabserver, GET 304, 32 connections" <"$work/perf.txt" >docs/flame-304.svg
        {
            echo "Profile of tabserver answering 304s (32 connections, ${DURATION} s, perf cpu-clock): the share of samples"
            echo "by module, then the functions with the most samples under them (inclusive) and in them (self); the"
            echo "flame graph is docs/flame-304.svg."
            echo
            echo '```'
            python3 bench/flamegraph.py --modules <"$work/perf.txt"
            echo
            echo "  incl.   self  function"
            python3 bench/flamegraph.py --top 25 <"$work/perf.txt" | cut -c1-120
            echo '```'
        } | tee "$work/flame.md"
    else
        echo "perf is not available: no profile" >&2
    fi
fi

# The many-accounts rows, with servers of their own.
: >"$work/accounts.md"
if [ "${ACCOUNTS:-100000}" != 0 ]; then
    ACCOUNTS=${ACCOUNTS:-100000} BIN=$BIN ROUNDS=$ROUNDS DURATION=$DURATION THREADS=$THREADS WRK_THREADS=$WRK_THREADS \
        bash bench/accounts.sh | tee "$work/accounts.md"
fi

{
    echo "Run of $(date -u +%Y-%m-%d) (\`make bench\`, ${ROUNDS} rounds of ${DURATION} s)."
    echo
    cat "$work/reads.md"
    echo
    cat "$work/accounts.md"
    echo
    cat "$work/flame.md"
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
    print(f"updated {doc}")
PY
