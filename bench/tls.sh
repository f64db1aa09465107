#!/usr/bin/env bash
# HTTPS: tabserver (--tls-cert/--tls-key) against tuned nginx with the same certificate, keep-alive, 200 and 304,
# the client header sets in TLS_CLIENTS (readbench.py's short names, default iOS URLSession).
# Target: ≥ 0.8× nginx's throughput. Called by bench/run.sh, or alone:
#
#   BIN=.build/release/tabserver ROUNDS=3 DURATION=2 bash bench/tls.sh
#
# Each cell opens its connections (TLS handshakes) in a 2-second warm-up (TLS_WARM_UP) that is not measured: the
# load is keep-alive requests, not handshakes. Makes a CA and a server certificate for 127.0.0.1/localhost with
# openssl (ECDSA P-256, as most sites serve).
# When the binary refuses the TLS flags, prints one line saying so and exits 0. Prints Markdown.
cd "$(dirname "$0")/.."
source bench/lib.sh  # set -eEuo pipefail, and a failing step says which

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-2}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-"32 256"}
ACCOUNT=${ACCOUNT:-jack}
TLS_CLIENTS=${TLS_CLIENTS:-ios-urlsession}
BIN=${BIN:-.build/release/tabserver}
ulimit -n 65536 2>/dev/null || true

work=$(mktemp -d /tmp/tabserver-tls.XXXXXX)
chmod 755 "$work"
TS_PID=""
cleanup() {
    [ -n "$TS_PID" ] && kill "$TS_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# A CA, and a certificate it signs for the loopback names.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=tabserver bench CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
    -extfile "$work/ext.cnf" -out "$work/server.pem" 2>/dev/null
chmod 644 "$work/server.key"  # nginx reads it as root before dropping privileges; the file lives in a private dir

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TABSERVER_ADMIN_TOKEN=bench-admin-token-0123456789 "$BIN" serve --host 127.0.0.1 --port "$PORT" --threads "$THREADS" \
    --store "sqlite:$work/tabs.sqlite" --configs configs --tls-cert "$work/server.pem" --tls-key "$work/server.key" \
    >"$work/tabserver.log" 2>&1 &
TS_PID=$!
ready=""
for _ in $(seq 100); do
    if ! kill -0 "$TS_PID" 2>/dev/null; then break; fi
    if curl -fs --cacert "$work/ca.pem" "https://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then ready=1; break; fi
    sleep 0.1
done
if [ -z "$ready" ]; then
    reason=$(grep -m1 -iE "error|unknown|unexpected" "$work/tabserver.log" || true)
    if curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then reason="it answers plain HTTP on that port"; fi
    echo "**HTTPS: not measured.** \`$BIN serve --tls-cert … --tls-key …\` did not serve HTTPS within 10 s" \
        "(${reason:-no message}); this binary predates the TLS flags (--tls-cert, --tls-key)."
    exit 0
fi

python3 bench/readbench.py --url "https://127.0.0.1:$PORT" --pid "$TS_PID" --work "$work/reads" --threads "$THREADS" \
    --rounds "$ROUNDS" --duration "$DURATION" --warm-up "${TLS_WARM_UP:-2}" --connections "$CONNECTIONS" --wide-connections "" --clients "$TLS_CLIENTS" --account "$ACCOUNT" \
    --tls-cert "$work/server.pem" --tls-key "$work/server.key" --ca "$work/ca.pem" --targets tls \
    --title "HTTPS, keep-alive (one certificate for both servers, ECDSA P-256, made for the run)"
