#!/usr/bin/env python3
"""Readers' p99 while strings tables are written (docs/performance.md, "Reads while strings tables are written").

    python3 bench/strings-writes.py            (BIN, ACCOUNTS, ROUNDS, DURATION, CONNECTIONS as in bench/run.sh)

ACCOUNTS (100,000) layouts in an SQLite store (rows written with sqlite3, as `tabserver migrate` would copy them), a
release tabserver on it, and the 304 load of bench/readbench.py (h2load `--h1 -t1`, the iOS URLSession header set
with `Accept-Language: fr-FR,fr;q=0.9,en;q=0.8` and the ETag it was given, CONNECTIONS connections). Each round runs
the load twice, interleaved: alone, and with a `PUT /v1/strings/de` every second (a table that French readers do
not read). Prints each run's p99 and throughput and the median difference of p99 (the goal: under 1 ms).
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN", os.path.join(ROOT, ".build/release/tabserver"))
ACCOUNTS = int(os.environ.get("ACCOUNTS", "100000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DURATION = float(os.environ.get("DURATION", "5"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "256"))
TOKEN = "bench-admin-token-0123456789"
IOS = [
    ("Accept", "*/*"), ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("Accept-Encoding", "gzip, deflate, br"),
    ("User-Agent", "Tabs/1 CFNetwork/1494.0.7 Darwin/23.4.0"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method, url, body=None, headers=()):
    req = urllib.request.Request(url, data=body, method=method, headers=dict(headers))
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def make_store(path):
    subprocess.run([BIN, "import", os.path.join(ROOT, "configs"), "--store", f"sqlite:{path}"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(ROOT, "configs/layouts/nine.json"), "rb") as f:
        source = f.read().hex()
    sql = f"""
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ACCOUNTS})
        INSERT INTO layout_versions (account, version, source, content_type, etag, created_at_ms, author, message, deleted, extends)
        SELECT 'bench-' || i, 1, X'{source}', 'application/json', '"v1-' || hex(randomblob(10)) || '"', 1700000000000 + i,
               'bench', NULL, 0, '' FROM n;
        INSERT INTO layout_pointers (account, environment, version)
        SELECT account, 'production', 1 FROM layout_versions WHERE account LIKE 'bench-%';
    """
    subprocess.run(["sqlite3", path], input=sql.encode(), check=True)


def h2load(port, etag, log_path):
    args = ["h2load", "--h1", "-t1", f"-c{CONNECTIONS}", f"-D{int(DURATION * 1000)}ms", "--warm-up-time=500ms",
            f"--log-file={log_path}"]
    for name, value in IOS + [("If-None-Match", etag)]:
        args += ["-H", f"{name}: {value}"]
    args.append(f"http://127.0.0.1:{port}/v1/accounts/jack/tabs")
    out = subprocess.run(args, capture_output=True, text=True, timeout=DURATION + 60).stdout
    done = statuses = 0
    for line in out.splitlines():
        if line.startswith("requests:"):
            done = int(line.split()[7])
        if line.startswith("status codes:"):
            statuses = line
    latencies = []
    with open(log_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "304":
                latencies.append(int(parts[2]))
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000 if latencies else float("inf")
    return {"p99_ms": p99, "rps": done / DURATION, "304s": len(latencies), "statuses": statuses}


def writer(port, stop, counts):
    n = 0
    while not stop.is_set():
        started = time.time()
        body = f'"HOME_TAB" = "Startseite {n}";'.encode()
        status, headers, _ = request("GET", f"http://127.0.0.1:{port}/v1/strings/de", headers=[("Authorization", f"Bearer {TOKEN}")])
        precondition = [("If-Match", headers["ETag"])] if status == 200 else [("If-None-Match", "*")]
        status, _, _ = request("PUT", f"http://127.0.0.1:{port}/v1/strings/de", body,
                               [("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "text/plain")] + precondition)
        counts.append(status)
        n += 1
        stop.wait(max(0.0, 1.0 - (time.time() - started)))


def main():
    work = tempfile.mkdtemp(prefix="strings-writes-")
    server = None
    try:
        store = os.path.join(work, "tabs.sqlite")
        make_store(store)
        port = free_port()
        env = dict(os.environ, TABSERVER_ADMIN_TOKEN=TOKEN)
        server = subprocess.Popen([BIN, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads", "2",
                                   "--store", f"sqlite:{store}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                if request("GET", f"http://127.0.0.1:{port}/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        # The table exists before the load (a new locale re-matches every layout's locales once).
        request("PUT", f"http://127.0.0.1:{port}/v1/strings/de", b'"HOME_TAB" = "Startseite";',
                [("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "text/plain")])
        _, headers, _ = request("GET", f"http://127.0.0.1:{port}/v1/accounts/jack/tabs", headers=IOS)
        etag = headers["ETag"]
        rows = []
        for round_ in range(ROUNDS):
            quiet = h2load(port, etag, os.path.join(work, "quiet.log"))
            stop, counts = threading.Event(), []
            thread = threading.Thread(target=writer, args=(port, stop, counts))
            thread.start()
            busy = h2load(port, etag, os.path.join(work, "busy.log"))
            stop.set()
            thread.join()
            rows.append((quiet, busy, counts))
            print(f"round {round_ + 1}: alone p99 {quiet['p99_ms']:.2f} ms {quiet['rps']:.0f} req/s | with a strings PUT/s "
                  f"p99 {busy['p99_ms']:.2f} ms {busy['rps']:.0f} req/s, PUTs {counts}", file=sys.stderr)
        delta = statistics.median(b["p99_ms"] - q["p99_ms"] for q, b, _ in rows)
        print(f"| {ACCOUNTS:,} layouts, {CONNECTIONS} connections, 304s (median of {ROUNDS}) | p99 "
              f"{statistics.median(q['p99_ms'] for q, _, _ in rows):.2f} ms | p99 "
              f"{statistics.median(b['p99_ms'] for _, b, _ in rows):.2f} ms | {delta:+.2f} ms |")
    finally:
        if server:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
