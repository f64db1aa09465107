#!/usr/bin/env python3
"""The read path as real clients load it: tabserver against a tuned nginx serving the same bytes.

    python3 bench/readbench.py --url http://127.0.0.1:PORT --pid PID --work DIR [--tls-cert C --tls-key K --ca CA]

For every header set of ../shared/docs/CLIENT-HEADERS.md (HEADER_SETS below) this:
1. fetches from tabserver the layout as that client gets it, and the same representation in each coding
   (`Accept-Encoding: identity`, `gzip`, `br`, the client's other headers unchanged);
2. lays those bytes out for nginx, one directory per header set (`tabs`, `tabs.gz`, `tabs.br`): the bytes
   tabserver gave for a coding, or, for a coding tabserver did not give, the identity bytes compressed as a careful
   operator would (`gzip -9`, `brotli -q 11`);
3. starts nginx from Debian tuned for static JSON (sendfile, tcp_nopush, open_file_cache, keep-alive,
   gzip_static, brotli_static, access_log off, worker_processes = the server's threads), one `server` per header
   set on its own port so that both servers see the same URI, and nginx picks br/gzip/identity from the same
   `Accept-Encoding` the client sends;
4. checks what each server answers to each header set (status, coding, body bytes, ETag, and a 304 for the ETag
   that server gave), then loads both with h2load `--h1 -t1`, interleaved (A,B then B,A in the next round), on
   the 200 path (the client's headers) and the 304 path (the same headers and `If-None-Match` with the ETag that
   server gave for them), for each connection count;
5. prints a Markdown table of medians per (header set, path, connections): throughput ratio, server CPU per
   request from /proc (utime+stime of every thread of tabserver; of nginx's master and workers), p99 from
   h2load's per-request log, bytes per response, unexpected statuses; then the memory after load and a count of
   the cells that meet each target of issues 14 and 25.

`--json FILE` also writes every measurement. Exit status 2 when a server could not be prepared (not a slow one).
"""
import argparse
import gzip
import http.client
import json
import os
import re
import resource
import select
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import time
import urllib.parse

from heldrss import held_rss

# What each client sends (../shared/docs/CLIENT-HEADERS.md), in the order it sends it.
HEADER_SETS = {
    "iOS URLSession": [
        ("Accept", "*/*"),
        ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"),
        ("Accept-Encoding", "gzip, deflate, br"),
        ("User-Agent", "Tabs/4.2 CFNetwork/1498.700.2 Darwin/23.6.0"),
    ],
    "iOS Alamofire": [
        ("Accept", "*/*"),
        ("Accept-Language", "en-US;q=1.0, fr-CA;q=0.9"),
        ("Accept-Encoding", "br;q=1.0, gzip;q=0.9, deflate;q=0.8"),
        ("User-Agent", "Tabs/4.2 (com.example.tabs; build:42; iOS 17.5.0) Alamofire/5.9.1"),
    ],
    "Android OkHttp": [
        ("Accept", "application/json"),
        ("Accept-Language", "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7"),
        ("Accept-Encoding", "gzip"),
        ("User-Agent", "okhttp/4.12.0"),
    ],
    "Linux URLSession": [
        ("Accept", "*/*"),
        ("Accept-Language", "en"),
        ("Accept-Encoding", "deflate, gzip, br, zstd"),
        ("User-Agent", "probe (unknown version) curl/7.88.1"),
    ],
    "browser (Chromium)": [
        ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
        ("Accept-Language", "en-US,en;q=0.9"),
        ("Accept-Encoding", "gzip, deflate, br, zstd"),
        ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"),
    ],
    "curl": [
        ("Accept", "*/*"),
        ("User-Agent", "curl/7.88.1"),
    ],
}
SHORT_NAMES = {name: re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") for name in HEADER_SETS}
CODINGS = ("identity", "gzip", "br")
BROTLI_MODULE = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"


class BenchError(Exception):
    """A server could not be prepared for the bench; the message says what was found."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fetcher:
    """One-request-per-connection GETs that send exactly the given headers (no Accept-Encoding of its own)."""

    def __init__(self, ca_file=None):
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None

    def get(self, url, headers):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=10, context=self.context)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        try:
            conn.putrequest("GET", parts.path + (("?" + parts.query) if parts.query else ""), skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders()
            response = conn.getresponse()
            body = response.read()
            fields = {k.lower(): v for k, v in response.getheaders()}
            return response.status, fields, body
        finally:
            conn.close()


def response_size(url, headers, ca_file=None):
    """(header block bytes, body bytes) of one answer on the wire, read over a raw socket: the exact figure that
    h2load's totals blur (they count the partial answers in flight when a timed run stops)."""
    parts = urllib.parse.urlsplit(url)
    raw = socket.create_connection((parts.hostname, parts.port), timeout=10)
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
        raw = context.wrap_socket(raw, server_hostname=parts.hostname)
    with raw:
        request = f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        raw.sendall((request + "\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = raw.recv(65536)
            if not chunk:
                raise BenchError(f"{url} closed the connection before the end of the header block")
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ", 2)[1])
        length = 0
        if status not in (204, 304):
            m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
            if not m:
                raise BenchError(f"{url} answered {status} without Content-Length")
            length = int(m.group(1))
            while len(body) < length:
                chunk = raw.recv(65536)
                if not chunk:
                    break
                body += chunk
        return len(head) + 4, length


def with_header(headers, name, value):
    """The header set with `name` replaced by `value` (appended if absent; removed if value is None)."""
    out = [(k, v) for k, v in headers if k.lower() != name.lower()]
    if value is not None:
        out.append((name, value))
    return out


def compress(coding, data, work):
    """`gzip -9` or `brotli -q 11` of `data`, as an operator precompresses static files."""
    path = os.path.join(work, "compress-input")
    with open(path, "wb") as f:
        f.write(data)
    if coding == "gzip":
        return subprocess.run(["gzip", "-9", "-n", "-c", path], check=True, capture_output=True).stdout
    return subprocess.run(["brotli", "-q", "11", "-c", path], check=True, capture_output=True).stdout


def brotli_decompress(data, work):
    path = os.path.join(work, "decompress-input.br")
    with open(path, "wb") as f:
        f.write(data)
    return subprocess.run(["brotli", "-d", "-c", path], check=True, capture_output=True).stdout


def prepare_root(fetcher, ts_url, account, work):
    """Fetches every header set's representation from tabserver, per coding; writes nginx's files."""
    uri = f"/v1/accounts/{account}/tabs"
    prepared, refused = {}, {}
    # A variant's brotli form is made after its first request (gzip or identity until then): every header set asks
    # once and the forms settle, so that what is measured is what a returning client gets.
    for headers in HEADER_SETS.values():
        fetcher.get(ts_url + uri, headers)
    time.sleep(1)
    for name, headers in HEADER_SETS.items():
        status, fields, body = fetcher.get(ts_url + uri, headers)
        if status != 200:
            refused[name] = f"{status} {body[:160].decode(errors='replace')}"
            continue
        entry = {"headers": headers, "ts_coding": fields.get("content-encoding", "identity"), "ts_etag": fields.get("etag"),
                 "ts_body": len(body), "files": {}, "source": {}}
        forms = {}
        for coding in CODINGS:
            s, f, b = fetcher.get(ts_url + uri, with_header(headers, "Accept-Encoding", coding))
            if s == 200 and f.get("content-encoding", "identity") == coding:
                forms[coding] = (b, "tabserver")
        if "identity" not in forms:
            raise BenchError(f"tabserver gives no identity body to the {name} headers with Accept-Encoding: identity")
        for coding in ("gzip", "br"):
            if coding not in forms:
                forms[coding] = (compress(coding, forms["identity"][0], work), "gzip -9" if coding == "gzip" else "brotli -q 11")
        if gzip.decompress(forms["gzip"][0]) != forms["identity"][0]:
            raise BenchError(f"the gzip form for {name} does not decompress to the identity form")
        if brotli_decompress(forms["br"][0], work) != forms["identity"][0]:
            raise BenchError(f"the br form for {name} does not decompress to the identity form")
        # What an operator's own `gzip -9` / `brotli -q 11` make of the same identity bytes (the issue's "same
        # compressor, same level"), whoever made the files nginx serves.
        entry["operator"] = {c: len(compress(c, forms["identity"][0], work)) for c in ("gzip", "br")}
        directory = os.path.join(work, "root", SHORT_NAMES[name], uri.strip("/").rsplit("/", 1)[0])
        os.makedirs(directory, exist_ok=True)
        for coding, suffix in (("identity", ""), ("gzip", ".gz"), ("br", ".br")):
            with open(os.path.join(directory, "tabs" + suffix), "wb") as f:
                f.write(forms[coding][0])
            entry["files"][coding] = len(forms[coding][0])
            entry["source"][coding] = forms[coding][1]
        # What tabserver sends this client is byte for byte what nginx has for that coding.
        if forms[entry["ts_coding"]][0] != body if entry["ts_coding"] in forms else True:
            raise BenchError(f"tabserver sent {name} a {entry['ts_coding']} body unlike its answer to Accept-Encoding: "
                             f"{entry['ts_coding']} (or a coding other than identity, gzip and br)")
        prepared[name] = entry
    for dirpath, dirnames, filenames in os.walk(os.path.join(work, "root")):
        os.chmod(dirpath, 0o755)
        for filename in filenames:
            os.chmod(os.path.join(dirpath, filename), 0o644)
    if not prepared:
        raise BenchError(f"tabserver answers no header set with 200: {refused}")
    return uri, prepared, refused


def nginx_config(work, threads, ports, cache_control, tls):
    servers = []
    for name, port in ports.items():
        listen = f"127.0.0.1:{port}" + (" ssl" if tls else "")
        servers.append(f"""    server {{
        listen {listen};
        root {work}/root/{SHORT_NAMES[name]};
        add_header Cache-Control "{cache_control}";
    }}""")
    ssl = ""
    if tls:
        ssl = f"""    ssl_certificate {tls[0]};
    ssl_certificate_key {tls[1]};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    ssl_session_timeout 1h;
    ssl_prefer_server_ciphers off;
"""
    servers_text = "\n".join(servers)
    return f"""load_module {BROTLI_MODULE};
worker_processes {threads};
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 16384; use epoll; }}
http {{
    access_log off;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    open_file_cache_min_uses 1;
    open_file_cache_errors on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    gzip off;
    gzip_static on;
    gzip_vary on;
    brotli_static on;
    etag on;
    types {{ }}
    default_type application/json;
    client_body_temp_path {work}/nginx-tmp;
    proxy_temp_path {work}/nginx-tmp;
    fastcgi_temp_path {work}/nginx-tmp;
    uwsgi_temp_path {work}/nginx-tmp;
    scgi_temp_path {work}/nginx-tmp;
{ssl}{servers_text}
}}
"""


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
        except FileNotFoundError:
            pass
    return total


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return out


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def threads_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def h2load(url, headers, conns, duration, warm_up, log_path, pids, expected):
    """One timed h2load --h1 run with one thread. Connections are opened (and TLS handshakes done) during the
    warm-up; CPU is sampled when h2load says its main phase starts and when it exits, and only requests started
    in the main phase count for p99. A run that outlives its deadline is killed and counted as failed."""
    cmd = ["h2load", "--h1", "-t1", f"-c{conns}", f"-D{int(duration * 1000)}ms", f"--warm-up-time={int(warm_up * 1000)}ms",
           f"--log-file={log_path}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    cmd.append(url)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + warm_up + duration + 60
    cpu_start, main_started_us, output = cpu_ticks(pids), 0, b""
    ready = select.poll()
    ready.register(proc.stdout.fileno(), select.POLLIN)
    marker = b"Main benchmark duration is started"
    while time.monotonic() < deadline:
        if not ready.poll(max(0, deadline - time.monotonic()) * 1000):
            break
        chunk = os.read(proc.stdout.fileno(), 65536)  # unbuffered: the marker is seen when it is written
        if not chunk:
            break
        output += chunk
        if not main_started_us and marker in output:
            cpu_start, main_started_us = cpu_ticks(pids), time.time_ns() // 1000
    lines = [output.decode(errors="replace")]
    if proc.poll() is None:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return {"tls": None, "rps": 0.0, "done": 0, "p99_ms": float("inf"), "unexpected": 1, "cpu_us": float("inf"),
                    "hung": True}
    cpu_end = cpu_ticks(pids)
    r = parse_h2load("".join(lines), log_path, expected, main_started_us)
    r["cpu_us"] = (cpu_end - cpu_start) / os.sysconf("SC_CLK_TCK") * 1e6 / r["done"] if r["done"] else float("inf")
    return r


def parse_h2load(text, log_path, expected, main_started_us):
    m = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text)
    if not m:
        raise BenchError("h2load printed no result:\n" + text[-2000:])
    rps = float(m.group(1))
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", text).group(1))
    latencies, unexpected = [], 0
    with open(log_path) as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) >= 3 and int(parts[0]) >= main_started_us:
                latencies.append(int(parts[2]))
                if parts[1] != str(expected):
                    unexpected += 1
    latencies.sort()
    # No answer in the whole measured time: every request's latency exceeds it (inf keeps medians ordered).
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000 if latencies else float("inf")
    failed = int(re.search(r"(\d+) failed", text).group(1))
    tls = re.search(r"TLS Protocol: (\S+)\s+Cipher: (\S+)", text)
    return {"tls": f"{tls.group(1)} {tls.group(2)}" if tls else None, "rps": rps, "done": done, "p99_ms": p99,
            "unexpected": unexpected + failed}


def metrics_lines(fetcher, ts_url):
    try:
        status, _, body = fetcher.get(ts_url + "/metrics", [])
    except OSError:
        return []
    if status != 200:
        return []
    return [l for l in body.decode(errors="replace").splitlines()
            if not l.startswith("#") and re.search(r"bytes|snapshot|memory|rss", l.split(" ")[0])]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="tabserver base URL (http://127.0.0.1:PORT or https://…)")
    p.add_argument("--pid", type=int, required=True, help="tabserver's process id (for /proc)")
    p.add_argument("--work", required=True, help="a scratch directory (nginx's root and logs go there)")
    p.add_argument("--threads", type=int, default=2, help="tabserver's worker threads = nginx worker_processes")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=2, help="seconds measured per cell")
    p.add_argument("--warm-up", type=float, default=0.5,
                   help="seconds per cell before measuring (connections, TLS handshakes); not counted")
    p.add_argument("--connections", default="32 256")
    p.add_argument("--wide-connections", default="1024",
                   help="more connection counts, measured for --wide-clients only (empty: none)")
    p.add_argument("--wide-clients", default="iOS URLSession", help="comma-separated header-set names")
    p.add_argument("--clients", default="all", help="comma-separated header-set names, or all")
    p.add_argument("--account", default="jack")
    p.add_argument("--cache-control", default="no-cache", help="what nginx sends as Cache-Control, as tabserver does")
    p.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    p.add_argument("--tls-cert", help="serve nginx over HTTPS with this certificate (the one tabserver uses)")
    p.add_argument("--tls-key")
    p.add_argument("--ca", help="CA file to verify both servers with")
    p.add_argument("--title", default="Read path, real client headers")
    p.add_argument("--targets", choices=("issue14", "tls"), default="issue14",
                   help="which targets to count: issue 14's, or HTTPS throughput ≥ 0.8× nginx (issue 15 §5)")
    p.add_argument("--json", help="write every measurement here")
    args = p.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    global HEADER_SETS
    if args.clients != "all":
        wanted = [c.strip() for c in args.clients.split(",")]
        unknown = [c for c in wanted if c not in HEADER_SETS and c not in SHORT_NAMES.values()]
        if unknown:
            raise SystemExit(f"unknown header sets {unknown}; known: {', '.join(SHORT_NAMES.values())}")
        HEADER_SETS = {k: v for k, v in HEADER_SETS.items() if k in wanted or SHORT_NAMES[k] in wanted}
    tls = (args.tls_cert, args.tls_key) if args.tls_cert else None
    scheme = "https" if tls else "http"
    conns_list = [int(c) for c in args.connections.split()]
    wide = [int(c) for c in args.wide_connections.split()]
    args.wide = {name: sorted(set(conns_list + wide)) for name in HEADER_SETS
                 if wide and (name in args.wide_clients.split(",") or SHORT_NAMES[name] in args.wide_clients.split(","))}
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(os.path.join(args.work, "nginx-tmp"), exist_ok=True)
    os.chmod(args.work, 0o755)
    fetcher = Fetcher(args.ca)
    ts_url = args.url.rstrip("/")

    uri, prepared, refused = prepare_root(fetcher, ts_url, args.account, args.work)
    ports = {name: free_port() for name in prepared}
    conf = os.path.join(args.work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(nginx_config(args.work, args.threads, ports, args.cache_control, tls))
    nginx = subprocess.Popen([args.nginx, "-p", args.work, "-c", conf, "-g", "daemon off;"],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(args.work, "nginx-stderr.log"), "w"))
    try:
        return run(args, fetcher, ts_url, uri, prepared, refused, ports, nginx, scheme, conns_list)
    finally:
        nginx.terminate()
        try:
            nginx.wait(timeout=10)
        except subprocess.TimeoutExpired:
            nginx.kill()


def run(args, fetcher, ts_url, uri, prepared, refused, ports, nginx, scheme, conns_list):
    deadline = time.monotonic() + 10
    for name, port in ports.items():
        while True:
            try:
                fetcher.get(f"{scheme}://127.0.0.1:{port}/", [])
                break
            except OSError:
                if nginx.poll() is not None or time.monotonic() > deadline:
                    err = open(os.path.join(args.work, "nginx-stderr.log")).read()
                    raise BenchError(f"nginx did not start: {err}")
                time.sleep(0.05)

    # What each server answers to each header set, before any load.
    checks = []
    for name, entry in prepared.items():
        h = entry["headers"]
        ng_url = f"{scheme}://127.0.0.1:{ports[name]}{uri}"
        s, f, b = fetcher.get(ng_url, h)
        if s != 200:
            raise BenchError(f"nginx answers {s} to the {name} headers")
        entry["ng_coding"] = f.get("content-encoding", "identity")
        entry["ng_etag"] = f.get("etag")
        entry["ng_body"] = len(b)
        if entry["ng_coding"] == entry["ts_coding"]:
            _, _, tb = fetcher.get(ts_url + uri, h)
            if tb != b:
                raise BenchError(f"{name}: both servers send {entry['ng_coding']} but different bytes")
        entry["ts_304"] = fetcher.get(ts_url + uri, h + [("If-None-Match", entry["ts_etag"] or '""')])[0]
        entry["ng_304"] = fetcher.get(ng_url, h + [("If-None-Match", entry["ng_etag"] or '""')])[0]
        for server, url, etag in (("ts", ts_url + uri, entry["ts_etag"]), ("ng", ng_url, entry["ng_etag"])):
            entry[f"{server}_wire_200"] = response_size(url, h, args.ca)
            entry[f"{server}_wire_304"] = response_size(url, h + [("If-None-Match", etag or '""')], args.ca)
        checks.append(entry)

    # Memory per held connection, before any load (see heldrss.py), with the first header set's request.
    first = next(iter(prepared))
    all_conns = sorted({c for name in prepared for c in conns_for(args, name, conns_list)})
    held = {}
    for server, url, pids in (("tabserver", ts_url + uri, lambda: [args.pid]),
                              ("nginx", f"{scheme}://127.0.0.1:{ports[first]}{uri}", lambda: [nginx.pid] + children(nginx.pid))):
        try:
            held[server] = held_rss(url, prepared[first]["headers"], pids, all_conns, args.ca)
        except OSError as error:
            print(f"  RSS per held connection, {server}: not measured ({error})", file=sys.stderr)
            held[server] = {}
        print(f"  RSS per held connection, {server}: " + ", ".join(f"{n}: {k:.1f} KiB" for n, k in held[server].items()),
              file=sys.stderr, flush=True)

    ts_pids = [args.pid]
    cells = {}
    log = os.path.join(args.work, "h2load.log")
    for round_ in range(args.rounds):
        for conns in all_conns:
            for name, entry in prepared.items():
                if conns not in conns_for(args, name, conns_list):
                    continue
                for path in (200, 304):
                    order = ("tabserver", "nginx") if round_ % 2 == 0 else ("nginx", "tabserver")
                    for server in order:
                        if server == "tabserver":
                            url, pids, etag = ts_url + uri, ts_pids, entry["ts_etag"]
                        else:
                            url, pids, etag = f"{scheme}://127.0.0.1:{ports[name]}{uri}", [nginx.pid] + children(nginx.pid), entry["ng_etag"]
                        headers = entry["headers"] + ([("If-None-Match", etag or '""')] if path == 304 else [])
                        if os.path.exists(log):
                            os.remove(log)
                        r = h2load(url, headers, conns, args.duration, args.warm_up, log, pids, path)
                        cells.setdefault((name, path, conns, server), []).append(r)
                        print(f"  round {round_ + 1} {name:20} {path} c={conns:<4} {server:9} {r['rps']:9.0f} req/s "
                              f"p99 {r['p99_ms']:6.2f} ms  cpu {r['cpu_us']:5.1f} µs/req"
                              f"{'  UNEXPECTED ' + str(r['unexpected']) if r['unexpected'] else ''}"
                              f"{'  HUNG: killed after its deadline' if r.get('hung') else ''}", file=sys.stderr, flush=True)

    memory = {"held_kib": held, "tabserver_rss_kib": rss_kib(args.pid), "tabserver_threads": threads_of(args.pid),
              "nginx_rss_kib": sum(rss_kib(p) for p in [nginx.pid] + children(nginx.pid)),
              "metrics": metrics_lines(fetcher, ts_url)}
    report(args, prepared, refused, cells, memory, conns_list)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cells": {"|".join(map(str, k)): v for k, v in cells.items()}, "memory": memory,
                       "prepared": {k: {kk: vv for kk, vv in v.items() if kk != "headers"} for k, v in prepared.items()}}, f, indent=1)
    return 0


def conns_for(args, name, conns_list):
    """The connection counts measured for a header set: every set gets --connections, wide clients more."""
    return args.wide.get(name, conns_list)


def held_text(memory, conns):
    """`tabserver / nginx` KiB per held connection at `conns`, or a dash where it was not measured."""
    figures = [memory["held_kib"].get(server, {}).get(conns) for server in ("tabserver", "nginx")]
    return " / ".join("—" if f is None else f"{f:.1f}" for f in figures)


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def report(args, prepared, refused, cells, memory, conns_list):
    load = open("/proc/loadavg").read().split()[:3]
    cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"**{args.title}.** {os.cpu_count()} cores ({cpu_model}), load average {' '.join(load)} at the end; tabserver "
          f"{args.threads} worker threads, nginx {args.threads} worker processes (tuned: sendfile, tcp_nopush, "
          f"open_file_cache, keep-alive, gzip_static, brotli_static, access_log off); h2load `--h1 -t1` on the same "
          f"machine; {args.rounds} interleaved rounds of {args.duration:g} s per cell; medians. CPU is the server's "
          f"user+system time from /proc per request answered.\n")
    print("| client headers | coding tabserver / nginx | body bytes per 200 tabserver / nginx | 304 to its own ETag tabserver / nginx |")
    print("|---|---|---|---|")
    for name, e in prepared.items():
        print(f"| {name} | {e['ts_coding']} / {e['ng_coding']} | {e['ts_body']} / {e['ng_body']} | {e['ts_304']} / {e['ng_304']} |")
    for name, answer in refused.items():
        print(f"| {name} | tabserver answers {answer.splitlines()[0] if answer else ''}: **not loaded** | | |")
    print()
    print("nginx's files per header set (who made them; what `gzip -9` / `brotli -q 11` make of the identity bytes): " + "; ".join(
        f"{name}: " + ", ".join(f"{c} {e['files'][c]} B ({e['source'][c]}"
                                + (f"; {'gzip -9' if c == 'gzip' else 'brotli -q 11'}: {e['operator'][c]} B" if c != "identity" else "") + ")"
                                for c in CODINGS) for name, e in prepared.items()) + ".\n")
    print("| client headers | path | conns | tabserver req/s | nginx req/s | ratio | CPU µs/req tabserver / nginx | CPU ratio | "
          "p99 ms tabserver / nginx | bytes per response (header block + body) tabserver / nginx | "
          "RSS KiB per held connection tabserver / nginx | unexpected status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cpu_ratios = {200: [], 304: []}
    summary = {"200 throughput ≥ 1.2× nginx": [], "304 throughput ≥ 1.0× nginx": [], "CPU per request ≤ nginx's": [],
               "p99 at 256 connections ≤ nginx's and < 5 ms": [], "p99 ≤ nginx's (issue 25: every cell)": [],
               "bytes per 200 ≤ nginx's": []}
    for name in prepared:
        for path in (200, 304):
            for conns in conns_for(args, name, conns_list):
                t, n = cells[(name, path, conns, "tabserver")], cells[(name, path, conns, "nginx")]
                ratio = med(t, "rps") / med(n, "rps") if med(n, "rps") else float("nan")
                tc, nc = med(t, "cpu_us"), med(n, "cpu_us")
                tp, np_ = med(t, "p99_ms"), med(n, "p99_ms")
                (th, tbody), (nh, nbody) = prepared[name][f"ts_wire_{path}"], prepared[name][f"ng_wire_{path}"]
                bad = f"{sum(r['unexpected'] for r in t)} / {sum(r['unexpected'] for r in n)}"
                print(f"| {name} | {path} | {conns} | {med(t, 'rps'):.0f} | {med(n, 'rps'):.0f} | **{ratio:.2f}×** | "
                      f"{tc:.1f} / {nc:.1f} | {tc / nc if nc else float('nan'):.2f}× | {tp:.2f} / {np_:.2f} | {th} + {tbody} / {nh} + {nbody} | "
                      f"{held_text(memory, conns)} | {bad} |")
                if conns not in conns_list:
                    continue  # the wide rows are shown, not counted: the targets are issue 14's cells
                summary["200 throughput ≥ 1.2× nginx" if path == 200 else "304 throughput ≥ 1.0× nginx"].append(
                    ratio >= (1.2 if path == 200 else 1.0))
                summary["CPU per request ≤ nginx's"].append(tc <= nc)
                cpu_ratios[path].append(tc / nc if nc else float("nan"))
                if conns == 256:
                    summary["p99 at 256 connections ≤ nginx's and < 5 ms"].append(tp <= np_ and tp < 5)
                summary["p99 ≤ nginx's (issue 25: every cell)"].append(tp <= np_)
                if path == 200:
                    summary["bytes per 200 ≤ nginx's"].append(tbody <= nbody)
    if args.targets == "tls":
        ratios = [med(cells[(name, path, c, "tabserver")], "rps") / med(cells[(name, path, c, "nginx")], "rps")
                  for name in prepared for path in (200, 304) for c in conns_list]
        summary = {"HTTPS throughput ≥ 0.8× nginx (issue 15 §5)": [r >= 0.8 for r in ratios],
                   "CPU per request ≤ nginx's": summary["CPU per request ≤ nginx's"]}
        versions = sorted({f"{server}: {r['tls']}" for (_, _, _, server), rows in cells.items() for r in rows if r["tls"]})
        print("\nNegotiated by h2load: " + "; ".join(versions) + ".")
    print()
    print(f"| target ({'issue 15 §5' if args.targets == 'tls' else 'issues 14 and 25'}) | cells that meet it |")
    print("|---|---|")
    for target, met in summary.items():
        print(f"| {target} | {sum(met)} of {len(met)} |")
    stalls = [f"{server} {name} {path} at {conns} connections, round {i + 1}" + (" (h2load killed after its deadline)" if r.get("hung") else "")
              for (name, path, conns, server), rows in cells.items() for i, r in enumerate(rows) if r["done"] == 0]
    print()
    if stalls:
        print("**Rounds in which a server answered nothing during the measured time** (counted in the medians as 0 req/s "
              "and an infinite p99): " + "; ".join(stalls) + ".\n")
    print("Medians over the header sets and connection counts: throughput ratio " + ", ".join(
        f"{path} {statistics.median(med(cells[(n, path, c, 'tabserver')], 'rps') / med(cells[(n, path, c, 'nginx')], 'rps') for n in prepared for c in conns_list):.2f}×"
        for path in (200, 304)) + "; CPU per request ratio " + ", ".join(
        f"{path} {statistics.median(cpu_ratios[path]):.2f}×" for path in (200, 304)) + ".\n")
    m = memory
    extra = "; /metrics: " + ", ".join(f"`{l}`" for l in m["metrics"]) if m["metrics"] else "; /metrics reports no memory figure"
    print(f"Memory after the load: tabserver RSS {m['tabserver_rss_kib'] / 1024:.1f} MiB ({m['tabserver_threads']} threads), "
          f"nginx RSS {m['nginx_rss_kib'] / 1024:.1f} MiB (master and workers){extra}.")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"readbench: {error}", file=sys.stderr)
        sys.exit(2)
