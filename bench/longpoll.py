#!/usr/bin/env python3
"""10,000 held long-polls on one tabserver, then one write that must wake them all.

    python3 bench/longpoll.py --bin .build/release/tabserver [--connections 10000] [--sources 10]

Starts its own tabserver (SQLite store in a scratch directory, the sample configs), then:
1. reads the layout with the iOS URLSession headers (bench/readbench.py's HEADER_SETS) and keeps its ETag;
2. checks that long-poll is there: one `?wait=2` request with that ETag must be held (an answer within 1 s means
   the binary answers at once: the script says so and stops, exit 0);
3. loads the 200 and 304 paths with h2load (`--h1 -t1`, 32 connections, iOS headers) with nothing held;
4. opens N connections (from `--sources` loopback addresses 127.0.0.2, .3, …, in turn), each sending
   `GET …/tabs?wait=60` with those headers and `If-None-Match: <ETag>`; checks after a settle time that none was
   answered, and reads the server's threads and RSS from /proc/PID/status (and held long-polls from /metrics);
5. loads the 200 and 304 paths again while they are held, and checks that they are still held;
6. writes a new version of the layout (`PUT …/layout` with the admin token and `If-Match`) and times every held
   request from just before the PUT to its complete 200, reporting when the last one arrived.

Prints Markdown. Targets: threads ≤ 64, RSS ≤ 300 MB, all woken with 200 within 1 s. Every wait has a deadline.
"""
import argparse
import errno
import http.client
import json
import os
import re
import resource
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

IOS_HEADERS = [
    ("Accept", "*/*"),
    ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"),
    ("Accept-Encoding", "gzip, deflate, br"),
    ("User-Agent", "Tabs/4.2 CFNetwork/1498.700.2 Darwin/23.6.0"),
]
TOKEN = "bench-admin-token-0123456789"  # admin tokens have at least 16 characters


class BenchError(Exception):
    """The run cannot go on; the message says what was found."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, headers, body=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def proc_status(pid):
    """(threads, RSS KiB, peak RSS KiB) from /proc/PID/status."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def h2load(port, path, headers, duration, pid, expected):
    """200 or 304 load with h2load --h1 -t1 -c32: (req/s, p99 ms, server CPU µs per request, unexpected)."""
    log = tempfile.NamedTemporaryFile(delete=False, suffix=".log").name
    cmd = ["h2load", "--h1", "-t1", "-c32", f"-D{int(duration * 1000)}ms", "--warm-up-time=0", f"--log-file={log}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    before = cpu_ticks(pid)
    out = subprocess.run(cmd + [f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, timeout=duration + 60).stdout
    after = cpu_ticks(pid)
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    lines = [l.split("\t") for l in open(log).read().splitlines() if l]
    os.unlink(log)
    latencies = sorted(int(l[2]) for l in lines)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000 if latencies else float("nan")
    unexpected = sum(1 for l in lines if l[1] != str(expected))
    return rps, p99, (after - before) / os.sysconf("SC_CLK_TCK") * 1e6 / max(done, 1), unexpected


class Waiter:
    __slots__ = ("sock", "buffer", "status", "done_at", "length")

    def __init__(self, sock):
        self.sock, self.buffer, self.status, self.done_at, self.length = sock, b"", None, None, None

    def feed(self, data, now):
        """Appends received bytes; returns True once a whole response is in."""
        self.buffer += data
        if self.length is None:
            if b"\r\n\r\n" not in self.buffer:
                return False
            head, _ = self.buffer.split(b"\r\n\r\n", 1)
            self.status = int(head.split(b" ", 2)[1])
            m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
            body = 0 if self.status in (204, 304) or not m else int(m.group(1))
            self.length = len(head) + 4 + body
        if len(self.buffer) >= self.length:
            self.done_at = now
            return True
        return False


def open_waiters(port, n, sources, request_bytes, deadline):
    """N non-blocking connections that each send the held request once connected."""
    ep = select.epoll()
    waiters, pending = {}, {}
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((f"127.0.0.{2 + i % sources}", 0))
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            raise BenchError(f"connection {i} failed: {os.strerror(err)} (try --sources 4 if the address runs out of ports)")
        pending[s.fileno()] = s
        ep.register(s.fileno(), select.EPOLLOUT)
        # Keep the kernel's accept backlog from overflowing: let the server catch up every 500 connections.
        if len(pending) >= 500:
            drain_connects(ep, pending, waiters, request_bytes, deadline, until=0)
    drain_connects(ep, pending, waiters, request_bytes, deadline, until=0)
    if pending:
        raise BenchError(f"{len(pending)} connections not established before the deadline")
    return ep, waiters


def drain_connects(ep, pending, waiters, request_bytes, deadline, until):
    while len(pending) > until:
        if time.monotonic() > deadline:
            return
        for fd, _ in ep.poll(0.5):
            s = pending.pop(fd, None)
            if s is None:
                continue
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise BenchError(f"a connection failed: {os.strerror(err)}")
            s.sendall(request_bytes)  # a few hundred bytes into an empty send buffer: never blocks
            ep.modify(fd, select.EPOLLIN)
            waiters[fd] = Waiter(s)


def collect(ep, waiters, deadline, stop_when_all=True):
    """Reads what arrives until every waiter has a whole response or the deadline passes."""
    left = sum(1 for w in waiters.values() if w.done_at is None)
    while left and time.monotonic() < deadline:
        for fd, _ in ep.poll(min(0.05, max(0.0, deadline - time.monotonic()))):
            w = waiters[fd]
            try:
                data = w.sock.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""  # counted below as closed without an answer
            now = time.monotonic()
            if not data:
                ep.unregister(fd)
                if w.done_at is None:
                    w.status, w.done_at = w.status or -1, now
                    left -= 1
                continue
            if w.done_at is None and w.feed(data, now):
                left -= 1
        if not stop_when_all:
            break
    return left


def metrics_held(port):
    try:
        status, _, body = request(port, "GET", "/metrics", [])
    except OSError:
        return None
    lines = [l for l in body.decode(errors="replace").splitlines() if not l.startswith("#") and re.search(r"poll|held|wait", l.split(" ")[0])]
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=".build/release/tabserver")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--connections", type=int, default=10000)
    p.add_argument("--sources", type=int, default=0,
                   help="loopback source addresses (127.0.0.2, .3, …) to spread the held connections over; default: one "
                        "per 500, since tabserver holds at most 512 long-polls per client address (and 1,024 connections)")
    p.add_argument("--wait", type=int, default=60, help="the wait=N of the held requests")
    p.add_argument("--duration", type=float, default=2, help="seconds of each 200/304 load run")
    p.add_argument("--account", default="jack")
    p.add_argument("--configs", default="configs")
    args = p.parse_args()
    if args.sources <= 0:
        args.sources = max(1, -(-args.connections // 500))
    if args.sources > 250:
        raise BenchError("at most 250 source addresses (127.0.0.2 to 127.0.0.251)")

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 1024
    if hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
        except (ValueError, OSError):
            raise BenchError(f"the open-file limit is {hard}; {args.connections} connections need {want} (run as root or raise it)")
    else:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, min(hard, 65536)), hard))

    work = tempfile.mkdtemp(prefix="tabserver-longpoll.")
    port = free_port()
    env = dict(os.environ, TABSERVER_ADMIN_TOKEN=TOKEN)
    server = subprocess.Popen([args.bin, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads", str(args.threads),
                               "--store", f"sqlite:{work}/tabs.sqlite", "--configs", args.configs],
                              env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/tabserver.log", "w"))
    try:
        return run(args, port, server, work)
    except (BenchError, OSError, http.client.HTTPException) as error:
        alive = "running" if server.poll() is None else f"exited with status {server.returncode}"
        log = open(f"{work}/tabserver.log", errors="replace").read().splitlines()
        raise BenchError(f"{type(error).__name__}: {error}; tabserver {alive}; the end of its log:\n  "
                         + "\n  ".join(log[-15:])) from error
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)
        subprocess.run(["rm", "-rf", work], check=False)


def run(args, port, server, work):
    deadline = time.monotonic() + 15
    while True:
        try:
            if request(port, "GET", "/healthz", [], timeout=2)[0] == 200:
                break
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise BenchError("tabserver did not start: " + open(f"{work}/tabserver.log").read()[-2000:])
        time.sleep(0.05)
    path = f"/v1/accounts/{args.account}/tabs"
    status, fields, body = request(port, "GET", path, IOS_HEADERS)
    if status != 200 or "etag" not in fields:
        raise BenchError(f"GET {path} with the iOS headers: {status}, ETag {fields.get('etag')}")
    etag = fields["etag"]
    held_headers = IOS_HEADERS + [("If-None-Match", etag)]

    # Is long-poll there? A held request answers after ~2 s; an immediate 304 means it is not.
    started = time.monotonic()
    status, fields, _ = request(port, "GET", path + "?wait=2", held_headers, timeout=10)
    probe = time.monotonic() - started
    if probe < 1:
        print(f"**Long-poll: not measured.** `GET {path}?wait=2` with a matching `If-None-Match` was answered "
              f"{status} after {probe * 1000:.0f} ms: this binary does not hold long-polls yet (the API: held until the "
              f"representation changes or N seconds pass).")
        return 0

    alone = {code: h2load(port, path, IOS_HEADERS + ([("If-None-Match", etag)] if code == 304 else []), args.duration, server.pid, code)
             for code in (200, 304)}
    threads_before, rss_before, _ = proc_status(server.pid)

    request_bytes = (f"GET {path}?wait={args.wait} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     + "".join(f"{k}: {v}\r\n" for k, v in held_headers) + "\r\n").encode()
    opened = time.monotonic()
    ep, waiters = open_waiters(port, args.connections, args.sources, request_bytes, opened + 60)
    open_seconds = time.monotonic() - opened
    # Settle: the server reads every request; none may be answered before the write.
    settle_deadline = time.monotonic() + 3
    while time.monotonic() < settle_deadline:
        collect(ep, waiters, settle_deadline, stop_when_all=False)
    early = [w for w in waiters.values() if w.done_at is not None]
    threads_held, rss_held, _ = proc_status(server.pid)
    held_metrics = metrics_held(port)

    during = {code: h2load(port, path, IOS_HEADERS + ([("If-None-Match", etag)] if code == 304 else []), args.duration, server.pid, code)
              for code in (200, 304)}
    collect(ep, waiters, time.monotonic() + 0.2, stop_when_all=False)
    early_after_load = {fd for fd, w in waiters.items() if w.done_at is not None}

    # The write: the same source with one colour changed, so that every variant's bytes change.
    auth = [("Authorization", f"Bearer {TOKEN}")]
    status, fields, source = request(port, "GET", f"/v1/accounts/{args.account}/layout", auth)
    if status != 200:
        raise BenchError(f"GET the layout source: {status}")
    document = json.loads(source)
    appearance = document.setdefault("appearance", {})
    appearance["backgroundColor"] = "#F8F8F9" if appearance.get("backgroundColor") != "#F8F8F9" else "#F8F8F8"
    new_source = json.dumps(document).encode()
    put_result = {}

    def put():
        put_result["started"] = time.monotonic()
        put_result["status"] = request(port, "PUT", f"/v1/accounts/{args.account}/layout",
                                       auth + [("Content-Type", "application/json"), ("If-Match", fields["etag"])], new_source)[0]
        put_result["acknowledged"] = time.monotonic()

    writer = threading.Thread(target=put)
    server_cpu, client_cpu = cpu_ticks(server.pid), time.process_time()
    t0 = time.monotonic()
    writer.start()
    left = collect(ep, waiters, t0 + 10)
    writer.join(timeout=15)
    server_cpu = (cpu_ticks(server.pid) - server_cpu) / os.sysconf("SC_CLK_TCK")
    client_cpu = time.process_time() - client_cpu
    woken = [w for fd, w in waiters.items() if fd not in early_after_load]
    statuses = {}
    for w in woken:
        statuses[w.status] = statuses.get(w.status, 0) + 1
    ok = [w.done_at - t0 for w in woken if w.status == 200]
    ok.sort()
    threads_after, rss_after, peak_rss = proc_status(server.pid)
    for w in waiters.values():
        w.sock.close()
    ep.close()

    def pct(xs, q):
        return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")

    n = args.connections
    met = lambda good: "met" if good else "**not met**"
    last = ok[-1] if len(ok) == len(woken) and ok else float("inf")
    print(f"**Long-poll: {n:,} held requests on one tabserver** ({args.threads} worker threads; "
          f"`GET {path}?wait={args.wait}` with the iOS URLSession headers and `If-None-Match` of their ETag, from "
          f"{args.sources} source address{'es' if args.sources > 1 else ''}, 127.0.0.2 and up, because tabserver holds at "
          f"most 512 long-polls per address; the load runs come from 127.0.0.1; opened in {open_seconds:.1f} s).\n")
    print("| long-poll | measured | target |")
    print("|---|---|---|")
    print(f"| server threads (/proc/PID/status) with {n:,} held | {threads_held} (before: {threads_before}) | ≤ 64: {met(threads_held <= 64)} |")
    print(f"| server RSS with {n:,} held | {rss_held / 1024:.0f} MB (before: {rss_before / 1024:.0f} MB; "
          f"{(rss_held - rss_before) / max(n, 1):.1f} KiB per held request) | ≤ 300 MB: {met(rss_held / 1024 <= 300)} |")
    early_statuses = {}
    for fd in early_after_load:
        status = waiters[fd].status
        early_statuses[status] = early_statuses.get(status, 0) + 1
    early_text = ", ".join(f"{'closed or reset' if k == -1 else k}×{v}" for k, v in sorted(early_statuses.items()))
    print(f"| answered before the write (must be 0) | {len(early_after_load)}{' (' + early_text + ')' if early_text else ''}; "
          f"{len(early)} during the settle time, {len(early_after_load) - len(early)} during the load runs | 0: {met(not early_after_load)} |")
    if held_metrics:
        print(f"| /metrics while held | {', '.join(f'`{l}`' for l in held_metrics)} | — |")
    print(f"| one PUT (If-Match, admin token) | {put_result.get('status')} acknowledged after "
          f"{(put_result.get('acknowledged', float('nan')) - put_result.get('started', float('nan'))) * 1000:.1f} ms | — |")
    print(f"| held requests woken with 200 | {len(ok):,} of {len(woken):,}; other answers: "
          f"{', '.join(f'{k}×{v}' for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])) if k != 200) or 'none'}; "
          f"not answered within 10 s: {left} | all: {met(len(ok) == len(woken) and left == 0)} |")
    print(f"| time from the PUT to the last complete 200 | **{last * 1000:.0f} ms** (median {pct(ok, 0.5) * 1000:.0f} ms, "
          f"p99 {pct(ok, 0.99) * 1000:.0f} ms) | ≤ 1 s: {met(last <= 1)} |")
    print(f"| CPU while waking them: the server's, and this script's reading the answers (same 2 cores) | "
          f"{server_cpu * 1000:.0f} ms, {client_cpu * 1000:.0f} ms | — |")
    print(f"| server threads, RSS after the wake-up; peak RSS of the run (VmHWM) | {threads_after}, {rss_after / 1024:.0f} MB; "
          f"{peak_rss / 1024:.0f} MB | ≤ 300 MB: {met(peak_rss / 1024 <= 300)} |")
    for code in (200, 304):
        a, d = alone[code], during[code]
        print(f"| GET {code}, iOS headers, 32 conns (h2load), while {n:,} are held | {d[0]:.0f} req/s (**{d[0] / a[0]:.2f}×** "
              f"of {a[0]:.0f} with none held, measured just before); p99 {d[1]:.2f} ms (none held {a[1]:.2f}); CPU "
              f"{d[2]:.1f} µs/req (none held {a[2]:.1f}); unexpected status {d[3]} | — |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"longpoll: {error}", file=sys.stderr)
        sys.exit(2)
