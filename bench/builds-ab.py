#!/usr/bin/env python3
"""The read path's CPU per request on two (or more) tabserver builds, A/B in one run: what a change to the read path
costs, measured against the build before it on the same machine at the same time.

    python3 bench/builds-ab.py --bin main=/tmp/base/.build/release/tabserver --bin branch=.build/release/tabserver \
        [--rounds 5] [--duration 2] [--connections 32] [--pin auto|S,L|off] [--json FILE]

Each build serves `configs/` from its own SQLite store. On each, account `--rollout-account` (jill) gets a rollout
(a draft of another layout, at 50%), which turns the read memo off for that account (docs/rollouts.md): its
requests are read, negotiated and answered each time, as every install's own request is once the memo's slots hold
other installs'. The cells, each 200 and 304 (`If-None-Match` with the ETag that build gave), with the iOS
URLSession headers (bench/readbench.py's HEADER_SETS) and what TabClient adds (`X-Client-Platform`, `X-App-Version`,
`X-Install-Id`):
- `rollout`: `…/tabs` of the rollout's account with an install's own `X-Install-Id` (the memo does not answer);
- `memo`: `…/tabs` of `--account` (jack, no rollout) with the same headers (the memo answers).

Rounds interleave the builds (A,B then B,A), every run an h2load `--h1 -t1` of `--duration` seconds after a warm-up;
CPU per request is utime+stime of every thread of the server (/proc/PID/stat) over the requests h2load completed.
With `--pin` (auto by default) every server thread is on one CPU and h2load on the other. Prints each run and a table
of medians per build and cell.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import types
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readbench import ADMIN_TOKEN, HEADER_SETS, BenchError, Server, h2load, pin, pin_plan  # noqa: E402

INSTALL = "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77"
CLIENT = HEADER_SETS["iOS URLSession"] + [("X-Client-Platform", "iphone"), ("X-App-Version", "4.2"), ("X-Install-Id", INSTALL)]


class Fetch:
    """Plain HTTP requests for the setup (status, headers, body), errors answered as statuses."""

    @staticmethod
    def request(method, url, headers, body=None):
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers))
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

    def get(self, url, headers):
        return self.request("GET", url, headers)


def start_rollout(fetch, url, account, configs):
    """A draft of another layout for `account` and a rollout of it at 50%: the memo stops answering the account."""
    auth = [("Authorization", f"Bearer {ADMIN_TOKEN}")]
    status, fields, body = fetch.get(f"{url}/v1/accounts/{account}/layout", auth)
    if status != 200:
        raise BenchError(f"GET /v1/accounts/{account}/layout answered {status}: {body[:300]!r}")
    etag = fields["etag"]
    with open(os.path.join(configs, "layouts", "john.json"), "rb") as f:
        other = f.read()
    status, _, body = fetch.request("PUT", f"{url}/v1/accounts/{account}/layout?publish=false",
                                    auth + [("If-Match", etag), ("Content-Type", "application/json")], other)
    if status not in (200, 201):
        raise BenchError(f"the draft of {account} answered {status}: {body[:300]!r}")
    version = json.loads(body)["version"]
    status, _, body = fetch.request("POST", f"{url}/v1/accounts/{account}/layout/rollout",
                                    auth + [("If-Match", etag), ("Content-Type", "application/json")],
                                    json.dumps({"version": version, "percent": 50}).encode())
    if status not in (200, 201):
        raise BenchError(f"the rollout of {account} answered {status}: {body[:300]!r}")


def cells(fetch, server, args):
    """(cell, path, uri, headers, expected status) of one server, with the ETag it gives for the 304s."""
    found = []
    for cell, account in (("rollout", args.rollout_account), ("memo", args.account)):
        uri = f"/v1/accounts/{account}/tabs"
        status, fields, body = fetch.get(server.url + uri, CLIENT)
        if status != 200:
            raise BenchError(f"{server.name}: GET {uri} answered {status}: {body[:300]!r}")
        if cell == "rollout" and "X-Install-Id" not in fields.get("vary", ""):
            raise BenchError(f"{server.name}: {uri} does not vary on X-Install-Id (no rollout?): {fields.get('vary')}")
        found.append((cell, "200", uri, CLIENT, 200))
        found.append((cell, "304", uri, CLIENT + [("If-None-Match", fields["etag"])], 304))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", action="append", required=True, help="NAME=PATH of a tabserver build (two or more)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--warm-up", type=float, default=0.5)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--account", default="jack")
    p.add_argument("--rollout-account", default="jill")
    p.add_argument("--configs", default="configs")
    p.add_argument("--pin", default="auto")
    p.add_argument("--json")
    args = p.parse_args()
    builds = [spec.split("=", 1) for spec in args.bin]
    work = tempfile.mkdtemp(prefix="builds-ab-")
    plan, why_not = pin_plan(args.pin)
    print(f"pinning: {plan or why_not}", file=sys.stderr)
    fetch, servers, runs = Fetch(), [], []
    try:
        for name, path in builds:
            server = Server(types.SimpleNamespace(bin=path, work=work, threads=args.threads, configs=args.configs), name, [])
            servers.append(server)
            server.ready(fetch)
            start_rollout(fetch, server.url, args.rollout_account, args.configs)
            if plan:
                pin(server.pid, {plan[0]}, name)
        plans = {server.name: cells(fetch, server, args) for server in servers}
        order = list(servers)
        for round_ in range(args.rounds):
            for server in order:
                for cell, path, uri, headers, expected in plans[server.name]:
                    log = os.path.join(work, f"h2load-{server.name}.log")
                    r = h2load(server.url + uri, headers, args.connections, args.duration, args.warm_up, log, [server.pid],
                               expected, cpu=plan[1] if plan else None)
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    row = {"round": round_, "build": server.name, "cell": cell, "status": path, "cpu_us": r["cpu_us"],
                           "rps": r["rps"], "unexpected": r["unexpected"], "load": load}
                    runs.append(row)
                    print(f"round {round_} {server.name:>8} {cell:>7} {path}: {r['cpu_us']:6.2f} µs/req, {r['rps']:9.0f} req/s, "
                          f"unexpected {r['unexpected']}, load {load}", file=sys.stderr, flush=True)
            order.reverse()
    finally:
        for server in servers:
            server.stop()
    names = [name for name, _ in builds]
    print(f"\nCPU µs per request, median of {args.rounds} interleaved rounds ({args.connections} connections, "
          f"{args.duration:g} s each{', pinned' if plan else ''}); req/s in brackets\n")
    print("| cell | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for cell in ("rollout", "memo"):
        for path in ("200", "304"):
            row = []
            for name in names:
                mine = [r for r in runs if r["build"] == name and r["cell"] == cell and r["status"] == path]
                row.append(f"{statistics.median(r['cpu_us'] for r in mine):.1f} ({statistics.median(r['rps'] for r in mine):.0f})")
            print(f"| `…/tabs` {cell} {path} | " + " | ".join(row) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    if any(r["unexpected"] for r in runs):
        print("\nsome runs had unexpected statuses (see stderr)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
