#!/usr/bin/env bash
# Idle wakeups: a tabserver serving configs/ with SQLite (as `make run` does), left alone; its context switches
# per second over a window, per thread name (voluntary: the thread slept and was woken; involuntary: preempted).
#
#   BIN=.build/release/tabserver WINDOW=10 bash bench/wakeups.sh
#   HELD=1 bash bench/wakeups.sh     # the same with one long-poll held through the window (`?wait=`)
#
# Prints a Markdown table. The server listens on 127.0.0.1 on a free port with a SQLite store of its own, and is
# stopped on exit.
cd "$(dirname "$0")/.."
source bench/lib.sh  # set -eEuo pipefail, and a failing step says which

BIN=${BIN:-.build/release/tabserver}
WINDOW=${WINDOW:-10}   # seconds counted
SETTLE=${SETTLE:-3}    # seconds after /readyz before counting (start-up work ends)
[ -x "$BIN" ] || { echo "no $BIN: run make release" >&2; exit 1; }
work=$(mktemp -d /tmp/tabserver-wakeups.XXXXXX)
TS_PID="" HOLDER=""
cleanup() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null || true
    [ -n "$TS_PID" ] && kill "$TS_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --host 127.0.0.1 --port "$port" --store "sqlite:$work/tabs.sqlite" --configs configs >"$work/log" 2>&1 &
TS_PID=$!
ready "$port" "$TS_PID" "$work/log" 60
if [ "${HELD:-0}" = 1 ]; then
    etag=$(curl -fsI "http://127.0.0.1:$port/v1/accounts/jack/tabs" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
    curl -fs -o /dev/null -H "If-None-Match: $etag" "http://127.0.0.1:$port/v1/accounts/jack/tabs?wait=$((WINDOW + SETTLE + 30))" &
    HOLDER=$!
fi
python3 - "$TS_PID" "$WINDOW" "$SETTLE" "${HELD:-0}" "$BIN" <<'PY'
import collections, glob, os, sys, time
pid, window, settle, held, binary = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]

def sample():
    threads = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(f"{task}/comm").read().strip()
            fields = dict(line.split(":", 1) for line in open(f"{task}/status"))
            threads[task] = (name, int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))
        except (OSError, KeyError, ValueError):
            pass  # a thread that ended meanwhile
    return threads

time.sleep(settle)
before, started = sample(), time.monotonic()
time.sleep(window)
after, elapsed = sample(), time.monotonic() - started
by_name = collections.defaultdict(lambda: [0, 0.0, 0.0])
for task, (name, vol, invol) in after.items():
    _, vol0, invol0 = before.get(task, (name, 0, 0))
    row = by_name[name]
    row[0] += 1
    row[1] += (vol - vol0) / elapsed
    row[2] += (invol - invol0) / elapsed
load = open("/proc/loadavg").read().split()[:3]
print(f"Idle wakeups of `{binary}` serving configs/ with SQLite{', one long-poll held' if held else ''}: context switches "
      f"per second over {elapsed:.1f} s, {settle:g} s after /readyz, per thread name (load average {' '.join(load)}).\n")
print("| thread | threads | voluntary/s | involuntary/s |")
print("|---|---|---|---|")
for name, (count, vol, invol) in sorted(by_name.items(), key=lambda item: -item[1][1]):
    print(f"| {name} | {count} | {vol:.1f} | {invol:.1f} |")
total = [sum(r[i] for r in by_name.values()) for i in (1, 2)]
print(f"| **all** | {sum(r[0] for r in by_name.values())} | **{total[0]:.1f}** | {total[1]:.1f} |")
PY
