#!/usr/bin/env python3
"""The read path while the apps' reports arrive: `…/tabs` loaded by h2load alone, then with 1,000 reports a second
posted beside it (`POST …/tabs/reports`), interleaved in the same run, on the same server.

    python3 bench/reports.py --url http://127.0.0.1:PORT --pid PID --work DIR [--rounds 3] [--duration 1]
        [--connections 32] [--rate 1000]

The reports come from ten loopback addresses (127.0.0.2 … 127.0.0.11), 50 reports a request, each address with its
own 100 install ids reporting `rendered` and `tabFailed` for the version served, so that no per-address limit of the
server answers them 429 instead of counting them (the 429s are printed: a cell where they are not zero measured the
refusals, not the counting). CPU per request is tabserver's whole CPU (every thread) over the `…/tabs` requests
answered, so the cost of counting the reports is in it. Prints a Markdown table; no target is checked here.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readbench  # noqa: E402  (h2load with p99 from its log, and the process's CPU from /proc)

ADDRESSES = [f"127.0.0.{n}" for n in range(2, 12)]
PER_REQUEST = 50


def post_reports(host, port, path, version, rate, stop, counts):
    """Posts `rate` reports a second, PER_REQUEST a request, round-robin over ADDRESSES, until `stop` is set."""
    connections = {a: http.client.HTTPConnection(host, port, timeout=5, source_address=(a, 0)) for a in ADDRESSES}
    interval = PER_REQUEST / rate
    next_at, sent = time.monotonic(), 0
    while not stop.is_set():
        address = ADDRESSES[sent % len(ADDRESSES)]
        install = f"bench-{address}-{(sent // len(ADDRESSES)) % 100}"
        reports = [{"version": version, "kind": "rendered"}] * (PER_REQUEST // 2) + [
            {"version": version, "kind": "tabFailed", "tab": "home", "reason": "bench"}] * (PER_REQUEST - PER_REQUEST // 2)
        body = json.dumps({"installId": install, "platform": "iphone", "reports": reports}).encode()
        try:
            connection = connections[address]
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            key = str(answer.status)
        except (OSError, http.client.HTTPException):
            connections[address] = http.client.HTTPConnection(host, port, timeout=5, source_address=(address, 0))
            key = "error"
        with counts.get_lock():
            counts[0] += 1
            counts[1] += key == "202"
            counts[2] += key == "429"
        sent += 1
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--account", default="jack")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=1)
    p.add_argument("--warm-up", type=float, default=0.5)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--rate", type=int, default=1000)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    host, port = a.url.split("//")[1].split(":")
    port = int(port)
    tabs = f"/v1/accounts/{a.account}/tabs"
    connection = http.client.HTTPConnection(host, port, timeout=5)
    connection.request("GET", tabs)
    version = json.loads(connection.getresponse().read())["version"]
    pids = [a.pid]  # /proc/PID/stat counts every thread of the process

    rows = {"alone": [], "with reports": []}
    posted = []
    for round_ in range(a.rounds):
        rows["alone"].append(readbench.h2load(a.url + tabs, [], a.connections, a.duration, a.warm_up,
                                              f"{a.work}/alone-{round_}.log", pids, 200))
        stop, counts = multiprocessing.Event(), multiprocessing.Array("l", 3)
        poster = multiprocessing.Process(target=post_reports, args=(host, port, tabs + "/reports", version, a.rate, stop, counts))
        poster.start()
        started = time.monotonic()
        rows["with reports"].append(readbench.h2load(a.url + tabs, [], a.connections, a.duration, a.warm_up,
                                                     f"{a.work}/with-{round_}.log", pids, 200))
        stop.set()
        poster.join(10)
        elapsed = time.monotonic() - started
        posted.append((counts[0] * PER_REQUEST / elapsed, counts[1], counts[2], counts[0] - counts[1] - counts[2]))

    def med(kind, key):
        return statistics.median(r[key] for r in rows[kind])

    print(f"| `…/tabs` 200, {a.connections} connections, h2load --h1 -t1 ({a.rounds} rounds of {a.duration:g} s, medians) "
          "| req/s | p99 ms | tabserver CPU µs/req | h2load CPU |")
    print("|---|---|---|---|---|")
    for kind in rows:
        busy = med(kind, 'gen_busy')
        mark = " **saturated: not counted**" if busy >= readbench.SATURATED else ""
        print(f"| {kind} | {med(kind, 'rps'):.0f} | {med(kind, 'p99_ms'):.2f} | {med(kind, 'cpu_us'):.1f} | {busy * 100:.0f}%{mark} |")
    print(f"| with reports / alone | **{med('with reports', 'rps') / med('alone', 'rps'):.2f}×** "
          f"| {med('with reports', 'p99_ms') / med('alone', 'p99_ms'):.2f}× "
          f"| {med('with reports', 'cpu_us') / med('alone', 'cpu_us'):.2f}× | |")
    rate = statistics.median(p[0] for p in posted)
    print(f"\nReports posted beside it: {rate:.0f} a second (median of the rounds; {PER_REQUEST} a request); "
          f"answered 202 {sum(p[1] for p in posted)}, 429 {sum(p[2] for p in posted)}, other {sum(p[3] for p in posted)} "
          "requests in all.")


if __name__ == "__main__":
    main()
