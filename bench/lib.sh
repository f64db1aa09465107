# Sourced by the bench scripts: no step fails without saying which.
#
# `set -e` ends a script at the first failing command without a word when that command is silent (`curl -fs`
# answering 503, `kill` of a process already gone, `grep -c` finding nothing): ACCOUNTS=1000000 bash
# bench/accounts.sh ended so, twice, after nine minutes of seeding. The ERR trap names the script,
# the line and the command, with its exit status, on stderr; `ready` and `must_curl` say what they waited for.

set -eEuo pipefail  # -E: the ERR trap fires inside functions and subshells too

bench_script=$(basename "${0:-bench}")
bench_failed() { # bench_failed STATUS LINE COMMAND PIPESTATUS
    [[ $3 == "return "* ]] && return 0  # a helper below already said what failed, and where it was called
    if [[ $4 == *" "* ]]; then
        # A pipeline (`python3 … | tee FILE`): BASH_COMMAND names only its last command, often not the one that failed.
        echo "$bench_script: line $2: the pipeline ending in \`$3\` failed (its commands exited $4, in order)${BENCH_STEP:+ during: $BENCH_STEP}" >&2
    else
        echo "$bench_script: line $2: \`$3\` failed (exit $1)${BENCH_STEP:+ during: $BENCH_STEP}" >&2
    fi
}
trap 'bench_failed $? "$LINENO" "$BASH_COMMAND" "${PIPESTATUS[*]}"' ERR

# step "WHAT": names the step the next failure belongs to (printed with it) and on stderr now, with the seconds
# since the script started (what each section costs).
step() {
    BENCH_STEP=$1
    echo "== $1 (at ${SECONDS} s)" >&2
}

# ready PORT PID LOG [SECONDS]: waits until the server answers GET /readyz 200 (its store loaded and its first
# snapshot built; /healthz answers 200 earlier, while a large store still loads, and every other path 503).
# Fails, saying why and with the log's tail, when the process exits or SECONDS (default 120) pass.
ready() {
    local port=$1 pid=$2 log=$3 limit=${4:-120} started
    started=$(date +%s)
    until curl -fs -o /dev/null "http://127.0.0.1:$port/readyz"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$bench_script: line ${BASH_LINENO[0]}: the server (pid $pid, port $port) exited before /readyz answered 200; its log ends:" >&2
            tail -n 20 "$log" >&2
            return 1
        fi
        if [ $(($(date +%s) - started)) -ge "$limit" ]; then
            echo "$bench_script: line ${BASH_LINENO[0]}: /readyz on port $port did not answer 200 within $limit s; it says:" >&2
            curl -s "http://127.0.0.1:$port/readyz" >&2 || true
            tail -n 20 "$log" >&2
            return 1
        fi
        sleep 0.05
    done
}

# must_curl CURL-ARGS…: curl that fails on a 4xx/5xx or a transport error and says which request and what came
# back (status, the body's first 300 bytes) on stderr; the body goes to stdout (redirect it; no -o).
must_curl() {
    local out status
    out=$(mktemp)
    status=$(curl -sS -o "$out" -w '%{http_code}' "$@") || status=000
    if [ "$status" = 000 ] || [ "$status" -ge 400 ]; then
        echo "$bench_script: line ${BASH_LINENO[0]}: curl $* answered ${status/#000/nothing}${BENCH_STEP:+ during: $BENCH_STEP}: $(head -c 300 "$out")" >&2
        rm -f "$out"
        return 1
    fi
    cat "$out"
    rm -f "$out"
}

# alive PID LOG WHEN: fails, saying so with the log's tail, when the process has exited.
alive() {
    kill -0 "$1" 2>/dev/null && return 0
    echo "$bench_script: line ${BASH_LINENO[0]}: the server (pid $1) is gone $3; its log ends:" >&2
    tail -n 20 "$2" >&2
    return 1
}
