#!/usr/bin/env bash
# Interleaved A/B rounds of bench/held.sh: each round runs every build once, in an order that alternates from round
# to round, and prints one row per run (the machine's other load moves single runs; the server's CPU per woken poll
# moves least). Each build is a label and a release binary:
#
#   BINS="main=/tmp/tabserver-main wake=.build-release/release/tabserver" ROUNDS=3 N=17000 bash bench/held-ab.sh
#
# SERVER_ARGS and the other variables of held.sh apply to every run. Prints Markdown; each run's whole table goes to
# stderr.
cd "$(dirname "$0")/.."
source bench/lib.sh

ROUNDS=${ROUNDS:-3}
N=${N:-10000}
read -r -a builds <<<"${BINS:?BINS=\"label=binary …\"}"
for build in "${builds[@]}"; do
    [ -x "${build#*=}" ] || { echo "held-ab.sh: no binary ${build#*=} for ${build%%=*}" >&2; exit 1; }
done

echo "| round | build | load (1, 5 min) | last 200 after the PUT's answer | server CPU per woken poll | /healthz p99 waiting / woken (20 ms) | while woken, probed every 5 ms: /healthz, /readyz, writes p99 (while waiting) | SIGTERM: last 304 / exit |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
    order=("${builds[@]}")
    if [ $((round % 2)) = 0 ]; then  # every other round the other way round
        order=()
        for ((i = ${#builds[@]} - 1; i >= 0; i--)); do order+=("${builds[$i]}"); done
    fi
    for build in "${order[@]}"; do
        step "round $round: ${build%%=*}"
        load=$(cut -d' ' -f1-2 /proc/loadavg)
        table=$(BIN=${build#*=} N=$N bash bench/held.sh 2>/dev/null)
        echo "$table" >&2
        TABLE=$table python3 - "$round" "${build%%=*}" "$load" <<'PY'
import os, re, sys
round_, label, load = sys.argv[1:]
lines = os.environ["TABLE"].splitlines()
def row(prefix):  # the measured cell of the row whose label starts so
    for line in lines:
        if line.startswith("| " + prefix) or line.startswith("| **" + prefix):
            return line.split("|")[2].strip().strip("*")
    return ""
def p99(text):
    m = re.search(r"p99 ([\d.]+) ms", text)
    return m.group(1) if m else "–"
def first(pattern, text):
    m = re.search(pattern, text)
    return m.group(1) if m else "–"
term = row("SIGTERM")
last = first(r"([\d.]+) ms after", row("last held request's 200 after the PUT"))
cpu = first(r"([\d.]+) µs", row("server CPU (user"))
waiting = p99(row("/healthz, /readyz while they wait").split(";")[0])
woken = p99(row("/healthz, /readyz while they are woken").split(";")[0])
quiet = row("while they wait, probed as during the wake").split(";")
healthz, readyz, writes = p99(row("/healthz while they are woken")), p99(row("/readyz while they are woken")), p99(row("writes"))
baseline = "/".join(p99(part) for part in quiet) if len(quiet) == 3 else "–"
last304, exited = first(r"([\d.]+) ms after the command", term), first(r"exited ([\d.]+) s", term)
print(f"| {round_} | {label} | {load} | {last} ms | {cpu} µs | {waiting} / {woken} ms | {healthz}, {readyz}, {writes} ms ({baseline}) "
      f"| {last304} ms / {exited} s |")
PY
    done
done
