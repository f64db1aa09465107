#!/usr/bin/env python3
"""The read path as real clients load it: tabserver against a tuned nginx serving the same bytes.

    python3 bench/readbench.py --url http://127.0.0.1:PORT --pid PID --work DIR [--tls-cert C --tls-key K --ca CA]
        [--pin auto|S,L] [--bin .build/release/tabserver --routes]

Each measured *entry* is one request (a path and the headers a client sends) answered by a tabserver, and the same
bytes served by nginx from files. The entries are the header sets of six real clients
(HEADER_SETS below) on `…/tabs`, and with `--routes` (which needs `--bin`) this round's read routes (ROUTES below:
the manifest, an immutable version, builds declared, a signing key), on tabservers this script starts itself. For
each entry this:
1. fetches from its tabserver the answer as that client gets it, and the same representation in each coding
   (`Accept-Encoding: identity`, `gzip`, `br`, the client's other headers unchanged);
2. lays those bytes out for nginx, one directory per entry, at the request's path (`tabs`, `tabs.gz`, `tabs.br`):
   the bytes tabserver gave for a coding, or, for a coding tabserver did not give, the identity bytes compressed as
   a careful operator would (`gzip -9`, `brotli -q 11`); nginx sends the `Cache-Control`, `Tabs-Signature` and
   `Tabs-Withheld` tabserver sent with that 200 and with its 304 (COPIED_HEADERS);
3. starts nginx from Debian tuned for static JSON (sendfile, tcp_nopush, open_file_cache, keep-alive,
   gzip_static, brotli_static, access_log off, worker_processes = the server's threads), one `server` per entry
   on its own port so that both servers see the same URI, and nginx picks br/gzip/identity from the same
   `Accept-Encoding` the client sends;
4. checks what each server answers to each entry (status, coding, body bytes, ETag, and a 304 for the ETag
   that server gave), then loads both with h2load `--h1 -t1`, interleaved (A,B then B,A in the next round), on
   the 200 path (the client's headers) and the 304 path (the same headers and `If-None-Match` with the ETag that
   server gave for them), for each connection count;
5. prints a Markdown table of medians per (entry, path, connections): throughput ratio, server CPU per
   request from /proc (utime+stime of every thread of tabserver; of nginx's master and workers), p99 from
   h2load's per-request log, bytes per response, unexpected statuses; then the memory after load and a count of
   the cells that meet each target (docs/performance.md).

Two phases. *Unpinned*: the servers and h2load share every core, as before. *Pinned* (`--pin auto`,
or `--pin S,L`): every thread of each tabserver (`taskset -a -p`) and a second nginx with one worker process
(started under `taskset`) on CPU S, h2load on CPU L; the pinning is read back from /proc and a run whose threads are
elsewhere stops the bench. The targets are judged on the pinned table; the route entries are measured once, in the
pinned phase (in the unpinned one when pinning is off or impossible here).

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

# What each client sends, captured from the client itself, in the order it sends it.
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


SHORT_NAMES = {name: re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") for name in HEADER_SETS}
CODINGS = ("identity", "gzip", "br")
BROTLI_MODULE = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"
# What nginx copies from tabserver's answer (its 200 and its 304, each as tabserver sent it): what a client or a
# cache reads besides the body. ETag is each server's own (each answers 304 to the ETag it gave); Vary is not
# copied (nginx sends `Vary: Accept-Encoding`, tabserver names the headers it negotiates on).
COPIED_HEADERS = ("Cache-Control", "Tabs-Signature", "Tabs-Withheld")
ADMIN_TOKEN = "bench-admin-token-0123456789"  # the one bench/run.sh gives its server
# The client of the route entries: the iOS URLSession headers, and what TabClient adds (X-Client-Platform,
# X-App-Version) for the build entries. The UA says Tabs/4.2; build 4.1 is the declared one that is trimmed.
ROUTE_CLIENT = "iOS URLSession"
PLATFORM, UNDECLARED_VERSION, DECLARED_VERSION = "iphone", "4.2", "4.1"
# The route entries: name -> (title, tabserver, baseline entry). The baseline is the entry whose tabserver cost the
# route is compared with: `…/tabs` with the same headers on a plain server, or, for the builds, the same request on a
# server without builds ("today").
ROUTES = {
    "manifest": ("`…/tabs/manifest`", "plain", ROUTE_CLIENT),
    "version": ("`…/tabs?version=N` (immutable)", "plain", ROUTE_CLIENT),
    "build-none": ("`…/tabs` with X-Client-Platform/X-App-Version, no build declared", "plain", ROUTE_CLIENT),
    "build-undeclared": ("`…/tabs`, builds declared, the client's build not among them", "builds", "build-none"),
    "build-declared": ("`…/tabs`, a declared build (trimmed answer)", "builds", "build-none"),
    "signed": ("`…/tabs` with `--signing-key` (Tabs-Signature)", "signed", ROUTE_CLIENT),
}


class BenchError(Exception):
    """A server could not be prepared for the bench; the message says what was found."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fetcher:
    """One-request-per-connection requests that send exactly the given headers (no Accept-Encoding of its own)."""

    def __init__(self, ca_file=None):
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None

    def get(self, url, headers):
        return self.request("GET", url, headers)

    def request(self, method, url, headers, body=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=10, context=self.context)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        try:
            conn.putrequest(method, parts.path + (("?" + parts.query) if parts.query else ""), skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            data = response.read()
            fields = {k.lower(): v for k, v in response.getheaders()}
            return response.status, fields, data
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
        target = parts.path + (("?" + parts.query) if parts.query else "")
        request = f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
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


def client_entry(name, ts_url, pid, account):
    """`…/tabs` with a client's headers, on the server bench/run.sh started."""
    return {"label": name, "title": name, "group": "clients", "headers": HEADER_SETS[name],
            "uri": f"/v1/accounts/{account}/tabs", "ts_url": ts_url, "ts_pid": pid, "short": SHORT_NAMES[name]}


def prepare(fetcher, entries, work):
    """Fetches every entry's representation from its tabserver, per coding; writes nginx's files. Returns the
    entries tabserver answered with 200, and {label: what it answered} for the others."""
    prepared, refused = {}, {}
    # A variant's brotli form is made after its first request (gzip or identity until then): every entry asks once
    # and the forms settle, so that what is measured is what a returning client gets.
    for entry in entries:
        fetcher.get(entry["ts_url"] + entry["uri"], entry["headers"])
    time.sleep(1)
    for entry in entries:
        name, headers, url = entry["label"], entry["headers"], entry["ts_url"] + entry["uri"]
        status, fields, body = fetcher.get(url, headers)
        if status != 200:
            refused[name] = f"{status} {body[:160].decode(errors='replace')}"
            continue
        entry.update({"ts_coding": fields.get("content-encoding", "identity"), "ts_etag": fields.get("etag"),
                      "ts_body": len(body), "ts_fields": fields, "files": {}, "source": {}})
        forms = {}
        for coding in CODINGS:
            s, f, b = fetcher.get(url, with_header(headers, "Accept-Encoding", coding))
            if s == 200 and f.get("content-encoding", "identity") == coding:
                forms[coding] = (b, "tabserver")
        if "identity" not in forms:
            raise BenchError(f"tabserver gives no identity body to {name} with Accept-Encoding: identity")
        entry["identity"] = forms["identity"][0]
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
        path = urllib.parse.urlsplit(entry["uri"]).path.strip("/")
        directory = os.path.join(work, "root", entry["short"], os.path.dirname(path))
        os.makedirs(directory, exist_ok=True)
        for coding, suffix in (("identity", ""), ("gzip", ".gz"), ("br", ".br")):
            with open(os.path.join(directory, os.path.basename(path) + suffix), "wb") as f:
                f.write(forms[coding][0])
            entry["files"][coding] = len(forms[coding][0])
            entry["source"][coding] = forms[coding][1]
        # What tabserver sends this client is byte for byte what nginx has for that coding.
        if forms[entry["ts_coding"]][0] != body if entry["ts_coding"] in forms else True:
            raise BenchError(f"tabserver sent {name} a {entry['ts_coding']} body unlike its answer to Accept-Encoding: "
                             f"{entry['ts_coding']} (or a coding other than identity, gzip and br)")
        # Its 304 to its own ETag, and what nginx copies from each answer.
        s304, f304, _ = fetcher.get(url, headers + [("If-None-Match", entry["ts_etag"] or '""')])
        entry["ts_304"] = s304
        entry["copied"] = {h: (fields.get(h.lower()), f304.get(h.lower()) if s304 == 304 else None) for h in COPIED_HEADERS}
        prepared[name] = entry
    for dirpath, dirnames, filenames in os.walk(os.path.join(work, "root")):
        os.chmod(dirpath, 0o755)
        for filename in filenames:
            os.chmod(os.path.join(dirpath, filename), 0o644)
    return prepared, refused


class Server:
    """A tabserver of this script's own (the route entries, the pinned phase's): `--bin serve` with `--configs`, its
    own SQLite store, the admin token bench/run.sh uses, and `extra` flags; `--threads` as the bench's, or with `cpu`
    started under `taskset` on that CPU without the flag, so that it runs the workers it chooses there (one)."""

    def __init__(self, args, name, extra, cpu=None):
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = os.path.join(args.work, f"tabserver-{name}.log")
        threads = [] if cpu is not None else ["--threads", str(args.threads)]
        pinning = [] if cpu is None else ["taskset", "-c", str(cpu)]
        self.cmd = pinning + [args.bin, "serve", "--host", "127.0.0.1", "--port", str(self.port)] + threads + [
                    "--per-address-connections", "2048", "--store", f"sqlite:{args.work}/tabs-{name}.sqlite",
                    "--configs", args.configs] + extra
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, TABSERVER_ADMIN_TOKEN=ADMIN_TOKEN))
        self.pid = self.proc.pid

    def ready(self, fetcher, limit=60):
        """Waits for /readyz 200 (as bench/lib.sh's `ready`); says why when the server exits or the time passes."""
        started = time.monotonic()
        while True:
            try:
                if fetcher.get(self.url + "/readyz", [])[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() - started > limit:
                tail = "".join(open(self.log, errors="replace").readlines()[-20:])
                why = f"exited ({self.proc.returncode})" if self.proc.poll() is not None else f"did not answer /readyz 200 within {limit} s"
                raise BenchError(f"the {self.name} tabserver (`{' '.join(self.cmd)}`) {why}; its log ends:\n{tail}")
            time.sleep(0.05)

    def stop(self):
        stop_process(self.proc)



def on_one_core(args, fetcher, entries, cpu, servers):
    """The client entries on a tabserver started on `cpu` alone, as a host with one CPU runs it (the workers it chooses
    from its affinity mask: one), as nginx runs one worker there; each answers 304 to the ETag the entry was prepared
    with, so that its bytes are the ones nginx serves."""
    server = Server(args, "one-core", [], cpu=cpu)
    servers.append(server)
    server.ready(fetcher)
    for entry in entries.values():
        fetcher.get(server.url + entry["uri"], entry["headers"])
    time.sleep(1)  # the brotli forms settle, as in `prepare`
    moved = {}
    for name, entry in entries.items():
        status = fetcher.get(server.url + entry["uri"], entry["headers"] + [("If-None-Match", entry["ts_etag"] or '""')])[0]
        if status != 304:
            raise BenchError(f"the one-core tabserver answers {name} {status}, not 304, to the ETag of the bench's server")
        moved[name] = {**entry, "ts_url": server.url, "ts_pid": server.pid}
    workers = next((l for l in open(server.log) if "worker thread" in l), "")
    match = re.search(r"with (\d+) worker thread", workers)
    args.pinned_workers = match.group(1) if match else "?"
    return moved


def stop_process(proc):
    """SIGTERM, then SIGKILL when the process is still there after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

def view_controllers(value):
    """Every `rootViewController` named in a compiled layout, in order of appearance, each once."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "rootViewController" and isinstance(item, str):
                found.append(item)
            else:
                found += view_controllers(item)
    elif isinstance(value, list):
        for item in value:
            found += view_controllers(item)
    return list(dict.fromkeys(found))


def start_route_servers(args, fetcher, ts_url, servers):
    """The servers of the route entries besides the plain one (bench/run.sh's): one with builds declared, one with
    a signing key. Appends them to `servers` (stopped by the caller) and returns {kind: (url, pid)} and what was
    declared."""
    key = os.path.join(args.work, "signing.pem")
    made = subprocess.run([args.bin, "keys", "generate", "--out", key], capture_output=True, text=True)
    if made.returncode != 0 or not os.path.exists(key):
        raise BenchError(f"`{args.bin} keys generate --out {key}` failed ({made.returncode}): {(made.stderr or made.stdout).strip()[:300]}")
    builds, signed = Server(args, "builds", []), Server(args, "signed", ["--signing-key", key])
    servers += [builds, signed]
    builds.ready(fetcher)
    signed.ready(fetcher)

    # The builds: the layout's view controllers as the plain server compiles it for this platform and version.
    uri = f"/v1/accounts/{args.account}/tabs"
    headers = with_header(HEADER_SETS[ROUTE_CLIENT], "Accept-Encoding", "identity") + [
        ("X-Client-Platform", PLATFORM), ("X-App-Version", UNDECLARED_VERSION)]
    status, _, body = fetcher.get(ts_url + uri, headers)
    if status != 200:
        raise BenchError(f"declaring builds: GET {uri} on the plain server answered {status}")
    names = view_controllers(json.loads(body))
    if len(names) < 2:
        raise BenchError(f"declaring builds: {args.account}'s layout names {names}; the trimmed answer needs two view controllers or more")
    # One declared build lacks the last view controller (its answer is trimmed); the others have them all, on both
    # platforms, so that the lookup is among several builds. None is the undeclared version the other entry asks as.
    declared = [(PLATFORM, DECLARED_VERSION, names[:-1])]
    for i in range(args.builds - 1):
        declared.append((("android", PLATFORM)[i % 2], f"3.{i}", names))
    for platform, version, vcs in declared:
        body = json.dumps({"viewControllers": vcs, "note": "bench/readbench.py"}).encode()
        status, _, answer = fetcher.request("PUT", f"{builds.url}/v1/builds/{platform}/{version}",
                                            [("Authorization", f"Bearer {ADMIN_TOKEN}"), ("Content-Type", "application/json")], body)
        if status not in (200, 201):
            raise BenchError(f"PUT /v1/builds/{platform}/{version} answered {status}: {answer[:300].decode(errors='replace')}")
    return {"plain": (ts_url, args.pid), "builds": (builds.url, builds.pid), "signed": (signed.url, signed.pid)}, {
        "count": len(declared), "lacking": names[-1]}


def route_entries(args, fetcher, where):
    """The route entries (ROUTES), on the servers of `where`."""
    uri = f"/v1/accounts/{args.account}/tabs"
    ios = HEADER_SETS[ROUTE_CLIENT]
    status, _, body = fetcher.get(where["plain"][0] + uri + "/manifest", with_header(ios, "Accept-Encoding", "identity"))
    if status != 200:
        raise BenchError(f"GET {uri}/manifest answered {status}: {body[:300].decode(errors='replace')}")
    version = (json.loads(body).get("stable") or {}).get("version")
    if not isinstance(version, int):
        raise BenchError(f"the manifest of {args.account} names no stable version: {body[:300].decode(errors='replace')}")
    build = lambda v: ios + [("X-Client-Platform", PLATFORM), ("X-App-Version", v)]
    requests = {"manifest": (uri + "/manifest", ios), "version": (f"{uri}?version={version}", ios),
                "build-none": (uri, build(UNDECLARED_VERSION)), "build-undeclared": (uri, build(UNDECLARED_VERSION)),
                "build-declared": (uri, build(DECLARED_VERSION)), "signed": (uri, ios)}
    entries = []
    for name, (title, server, baseline) in ROUTES.items():
        path, headers = requests[name]
        entries.append({"label": name, "title": title.replace("N", str(version)) if name == "version" else title,
                        "group": "routes", "headers": headers, "uri": path, "ts_url": where[server][0],
                        "ts_pid": where[server][1], "short": "route-" + name, "baseline": baseline})
    return entries


def check_routes(routes, clients):
    """What each route must show for its cell to measure what it says (else the bench stops, saying which)."""
    def fail(name, what):
        raise BenchError(f"route entry {name} ({ROUTES[name][0]}): {what}")
    if "Tabs-Withheld".lower() not in routes["build-declared"]["ts_fields"]:
        fail("build-declared", "the declared build's answer has no Tabs-Withheld (nothing was trimmed)")
    for name in ("build-none", "build-undeclared"):
        if "tabs-withheld" in routes[name]["ts_fields"]:
            fail(name, f"an undeclared build's answer withholds {routes[name]['ts_fields']['tabs-withheld']}")
    if routes["build-undeclared"]["identity"] != routes["build-none"]["identity"]:
        fail("build-undeclared", "its body differs from the same request's on a server without builds")
    if "tabs-signature" not in routes["signed"]["ts_fields"]:
        fail("signed", "the 200 carries no Tabs-Signature")
    if ROUTE_CLIENT in clients:
        routes["version"]["same_etag"] = routes["version"]["ts_etag"] == clients[ROUTE_CLIENT]["ts_etag"]


def nginx_quote(value):
    """A header value as an nginx string; refuses what nginx would rewrite (variables) or that needs escaping."""
    if any(c in value for c in "$'\\\n"):
        raise BenchError(f"cannot give nginx the header value {value!r} verbatim")
    return f"'{value}'"


def nginx_config(work, name, workers, entries, ports, tls):
    maps, servers = [], []
    for i, (label, entry) in enumerate(entries.items()):
        listen = f"127.0.0.1:{ports[label]}" + (" ssl" if tls else "")
        adds = []
        for j, header in enumerate(COPIED_HEADERS):
            on200, on304 = entry["copied"][header]
            if on200 is None and on304 is None:
                continue
            if on200 == on304:
                adds.append(f"        add_header {header} {nginx_quote(on200)};")
            else:  # an empty value sends no header
                maps.append(f"    map $status $bench_{i}_{j} {{ 304 {nginx_quote(on304 or '')}; default {nginx_quote(on200 or '')}; }}")
                adds.append(f"        add_header {header} $bench_{i}_{j};")
        servers.append(f"    server {{\n        listen {listen};\n        root {work}/root/{entry['short']};\n" + "\n".join(adds) + "\n    }")
    ssl = ""
    if tls:
        ssl = f"""    ssl_certificate {tls[0]};
    ssl_certificate_key {tls[1]};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL-{name}:10m;
    ssl_session_timeout 1h;
    ssl_prefer_server_ciphers off;
"""
    text = "\n".join(maps + servers)
    return f"""load_module {BROTLI_MODULE};
worker_processes {workers};
pid {work}/nginx-{name}.pid;
error_log {work}/nginx-{name}-error.log warn;
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
{ssl}{text}
}}
"""


class Nginx:
    """One nginx serving every entry of `entries` (its own port each), with `workers` worker processes, started
    under `taskset -c CPU` when `cpu` is given."""

    def __init__(self, args, name, entries, workers, tls, scheme, cpu=None):
        self.name, self.scheme = name, scheme
        self.ports = {label: free_port() for label in entries}
        conf = os.path.join(args.work, f"nginx-{name}.conf")
        with open(conf, "w") as f:
            f.write(nginx_config(args.work, name, workers, entries, self.ports, tls))
        cmd = [args.nginx, "-p", args.work, "-c", conf, "-g", "daemon off;"]
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        self.stderr = os.path.join(args.work, f"nginx-{name}-stderr.log")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.stderr, "w"))
        self.pid = self.proc.pid  # taskset execs nginx: the same process, nginx's master

    def pids(self):
        return [self.pid] + children(self.pid)

    def url(self, label, uri):
        return f"{self.scheme}://127.0.0.1:{self.ports[label]}{uri}"

    def ready(self, fetcher):
        deadline = time.monotonic() + 10
        for port in self.ports.values():
            while True:
                try:
                    fetcher.get(f"{self.scheme}://127.0.0.1:{port}/", [])
                    break
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise BenchError(f"nginx ({self.name}) did not start: {open(self.stderr).read()}")
                    time.sleep(0.05)

    def stop(self):
        stop_process(self.proc)


def cpu_set(text):
    """`0-1,3` (a Cpus_allowed_list, or taskset -c's syntax) as a set of CPU numbers."""
    cpus = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def allowed_cpus(pid, tid=None):
    with open(f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return cpu_set(line.split(":", 1)[1])
    return set()


def pin_plan(spec):
    """((server CPU, load CPU), None) for `--pin`, or (None, why the pinned phase is not run)."""
    if spec in ("off", "0", ""):
        return None, "PIN=0"
    if not shutil.which("taskset"):
        return None, "taskset is not installed (Debian util-linux)"
    mine = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        if len(mine) < 2:
            return None, f"this process may use {len(mine)} CPU ({mine}); pinning needs two"
        return (mine[0], mine[1]), None
    try:
        server, load = (int(c) for c in spec.split(","))
    except ValueError:
        raise SystemExit(f"--pin {spec!r}: expected auto, off, or SERVER_CPU,LOAD_CPU such as 0,1")
    if server == load or server not in mine or load not in mine:
        raise SystemExit(f"--pin {spec}: two different CPUs among those this process may use ({mine})")
    return (server, load), None


def pin(pid, cpus, what):
    """Every thread of `pid` on `cpus` (taskset -a -p), read back from /proc: a thread left elsewhere stops the bench."""
    done = subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, sorted(cpus))), str(pid)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"taskset -a -p of {what} (pid {pid}) failed: {done.stderr.strip()}")
    stray = [tid for tid in os.listdir(f"/proc/{pid}/task") if allowed_cpus(pid, tid) != set(cpus)]
    if stray:
        raise BenchError(f"{what} (pid {pid}): threads {stray} are not on CPUs {sorted(cpus)} after taskset")


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


def h2load(url, headers, conns, duration, warm_up, log_path, pids, expected, cpu=None):
    """One timed h2load --h1 run with one thread (under `taskset -c CPU` when `cpu` is given). Connections are
    opened (and TLS handshakes done) during the warm-up; CPU is sampled when h2load says its main phase starts and
    when it exits, and only requests started in the main phase count for p99. A run that outlives its deadline is
    killed and counted as failed. `gen_busy` is h2load's own CPU time over its wall time (1.0: its core was full)."""
    cmd = ["h2load", "--h1", "-t1", f"-c{conns}", f"-D{int(duration * 1000)}ms", f"--warm-up-time={int(warm_up * 1000)}ms",
           f"--log-file={log_path}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    cmd.append(url)
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
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
            if cpu is not None and proc.poll() is None and allowed_cpus(proc.pid) != {cpu}:
                proc.kill()
                raise BenchError(f"h2load (pid {proc.pid}) runs on CPUs {sorted(allowed_cpus(proc.pid))}, not {cpu}, under taskset")
    lines = [output.decode(errors="replace")]
    if proc.poll() is None:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return {"tls": None, "rps": 0.0, "done": 0, "p99_ms": float("inf"), "unexpected": 1, "cpu_us": float("inf"),
                    "gen_busy": float("nan"), "hung": True}
    cpu_end = cpu_ticks(pids)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started
    r = parse_h2load("".join(lines), log_path, expected, main_started_us)
    r["cpu_us"] = (cpu_end - cpu_start) / os.sysconf("SC_CLK_TCK") * 1e6 / r["done"] if r["done"] else float("inf")
    r["gen_busy"] = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / wall
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
    p.add_argument("--threads", type=int, default=2, help="tabserver's worker threads = nginx worker_processes (unpinned)")
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
    p.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    p.add_argument("--tls-cert", help="serve nginx over HTTPS with this certificate (the one tabserver uses)")
    p.add_argument("--tls-key")
    p.add_argument("--ca", help="CA file to verify both servers with")
    p.add_argument("--title", default="Read path, real client headers")
    p.add_argument("--targets", choices=("read", "tls"), default="read",
                   help="which targets to count: the read path's (docs/performance.md), or HTTPS throughput ≥ 0.8× nginx")
    p.add_argument("--pin", default="off",
                   help="auto (the first two CPUs this process may use), SERVER_CPU,LOAD_CPU, or off: the pinned phase")
    p.add_argument("--pinned-clients", help="header sets of the pinned phase (default: --clients)")
    p.add_argument("--routes", action="store_true", help="also the route entries (ROUTES), on servers started from --bin")
    p.add_argument("--pinned-connections", help="connection counts of the pinned phase (default: --connections)")
    p.add_argument("--pinned-wide-connections", help="its wide rows (default: --wide-connections; empty: none)")
    p.add_argument("--bin", help="the tabserver binary (the pinned phase's one-core server, the route entries' servers, `keys generate`)")
    p.add_argument("--configs", default="configs", help="what the route entries' servers serve (as bench/run.sh's)")
    p.add_argument("--builds", type=int, default=8, help="builds declared on the builds server (one of them trimmed)")
    p.add_argument("--json", help="write every measurement here")
    args = p.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))

    def chosen(spec):
        if spec == "all":
            return list(HEADER_SETS)
        wanted = [c.strip() for c in spec.split(",")]
        unknown = [c for c in wanted if c not in HEADER_SETS and c not in SHORT_NAMES.values()]
        if unknown:
            raise SystemExit(f"unknown header sets {unknown}; known: {', '.join(SHORT_NAMES.values())}")
        return [k for k in HEADER_SETS if k in wanted or SHORT_NAMES[k] in wanted]
    clients, pinned_clients = chosen(args.clients), chosen(args.pinned_clients or args.clients)
    tls = (args.tls_cert, args.tls_key) if args.tls_cert else None
    scheme = "https" if tls else "http"
    def counts(conns, more):
        """(connection counts, {header set: its counts with the wide ones})."""
        conns, more = [int(c) for c in conns.split()], [int(c) for c in more.split()]
        return conns, {name: sorted(set(conns + more)) for name in HEADER_SETS if more and (
            name in args.wide_clients.split(",") or SHORT_NAMES[name] in args.wide_clients.split(","))}
    unpinned_conns = counts(args.connections, args.wide_connections)
    pinned_conns = counts(args.pinned_connections if args.pinned_connections is not None else args.connections,
                          args.pinned_wide_connections if args.pinned_wide_connections is not None else args.wide_connections)
    if args.routes and not args.bin:
        raise SystemExit("--routes needs --bin (the route entries run on servers of their own)")
    if args.routes and tls:
        raise SystemExit("--routes measures plain HTTP only")
    pins, why_not = pin_plan(args.pin)
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(os.path.join(args.work, "nginx-tmp"), exist_ok=True)
    os.chmod(args.work, 0o755)
    fetcher = Fetcher(args.ca)
    servers, nginxes = [], []
    try:
        return run(args, fetcher, args.url.rstrip("/"), scheme, tls, unpinned_conns, pinned_conns, clients, pinned_clients,
                   pins, why_not, servers, nginxes)
    finally:
        for process in nginxes + servers:
            process.stop()


def run(args, fetcher, ts_url, scheme, tls, unpinned_conns, pinned_conns, clients, pinned_clients, pins, why_not, servers,
        nginxes):
    # The routes' baseline, `…/tabs` with the iOS headers, is measured in the same phase and rounds as they are.
    if args.routes and pins and ROUTE_CLIENT not in pinned_clients:
        pinned_clients = [n for n in HEADER_SETS if n in pinned_clients or n == ROUTE_CLIENT]
    if args.routes and not pins and ROUTE_CLIENT not in clients:
        clients = [n for n in HEADER_SETS if n in clients or n == ROUTE_CLIENT]
    names = list(dict.fromkeys(clients + (pinned_clients if pins else [])))
    prepared, refused = prepare(fetcher, [client_entry(n, ts_url, args.pid, args.account) for n in names], args.work)
    if not prepared:
        raise BenchError(f"tabserver answers no header set with 200: {refused}")
    routes, declared = {}, None
    if args.routes:
        where, declared = start_route_servers(args, fetcher, ts_url, servers)
        routes, refused_routes = prepare(fetcher, route_entries(args, fetcher, where), args.work)
        if refused_routes:
            raise BenchError(f"route entries tabserver does not answer with 200: {refused_routes}")
        check_routes(routes, prepared)

    # The phases: unpinned (as before), then pinned, which the route entries join (or the unpinned one without pins).
    unpinned = {n: prepared[n] for n in clients if n in prepared}
    phases = []
    if pins:
        phases.append({"mode": "unpinned", "entries": unpinned, "pinning": None, "conns": unpinned_conns,
                       "nginx": Nginx(args, "unpinned", unpinned, args.threads, tls, scheme)})
        entries = {n: prepared[n] for n in HEADER_SETS if n in pinned_clients and n in prepared}
        if args.bin and not tls:
            entries = on_one_core(args, fetcher, entries, pins[0], servers)
        entries = {**entries, **routes}
        phases.append({"mode": "pinned", "entries": entries, "pinning": pins, "conns": pinned_conns,
                       "nginx": Nginx(args, "pinned", entries, 1, tls, scheme, cpu=pins[0])})
    else:
        entries = {**unpinned, **routes}
        phases.append({"mode": "unpinned", "entries": entries, "pinning": None, "conns": unpinned_conns,
                       "nginx": Nginx(args, "unpinned", entries, args.threads, tls, scheme)})
    for phase in phases:
        nginxes.append(phase["nginx"])
        phase["nginx"].ready(fetcher)
    for phase in phases:
        check_nginx(args, fetcher, phase["entries"], phase["nginx"])

    # Memory per held connection, before any load (see heldrss.py), with the first header set's request, at every
    # connection count of the unpinned phase.
    first = next(iter(unpinned or prepared))
    nginx = phases[0]["nginx"]
    all_conns = sorted({c for e in phases[0]["entries"].values() for c in conns_of(phases[0], e)})
    held = {}
    for server, url, pids in (("tabserver", ts_url + prepared[first]["uri"], lambda: [args.pid]),
                              ("nginx", nginx.url(first, prepared[first]["uri"]), nginx.pids)):
        try:
            held[server] = held_rss(url, prepared[first]["headers"], pids, all_conns, args.ca)
        except OSError as error:
            print(f"  RSS per held connection, {server}: not measured ({error})", file=sys.stderr)
            held[server] = {}
        print(f"  RSS per held connection, {server}: " + ", ".join(f"{n}: {k:.1f} KiB" for n, k in held[server].items()),
              file=sys.stderr, flush=True)

    cells = {}
    for phase in phases:
        nginx, pinning = phase["nginx"], phase["pinning"]
        tabservers = sorted({e["ts_pid"] for e in phase["entries"].values()})
        before = {pid: os.sched_getaffinity(pid) for pid in tabservers}
        try:
            if pinning:
                for pid in tabservers:
                    pin(pid, {pinning[0]}, "tabserver")
                stray = [pid for pid in nginx.pids() if allowed_cpus(pid) != {pinning[0]}]
                if stray:
                    raise BenchError(f"nginx processes {stray} are not on CPU {pinning[0]} under taskset")
            measure(args, phase, cells)
        finally:
            if pinning:
                for pid in tabservers:
                    if os.path.exists(f"/proc/{pid}"):
                        pin(pid, before[pid], "tabserver (restoring its CPUs)")
        phase["memory"] = {"held_kib": held if phase is phases[0] else {}, "tabserver_rss_kib": rss_kib(args.pid),
                           "tabserver_threads": threads_of(args.pid), "nginx_rss_kib": sum(rss_kib(p) for p in nginx.pids()),
                           "nginx_workers": len(children(nginx.pid)), "metrics": metrics_lines(fetcher, ts_url)}

    for i, phase in enumerate(phases):
        shown = {n: e for n, e in phase["entries"].items() if e["group"] == "clients"}
        if i:
            print()
        report(args, phase, shown, refused if i == 0 else {}, cells, why_not,
               new_files=[n for n in shown if all(n not in p["entries"] for p in phases[:i])])
    if routes:
        print()
        report_routes(args, next(p for p in phases if "manifest" in p["entries"]), routes, cells, declared)
    if args.json:
        def plain(entry):
            return {k: v for k, v in entry.items() if k not in ("headers", "identity")}
        with open(args.json, "w") as f:
            json.dump({"cells": {"|".join(map(str, k)): v for k, v in cells.items()},
                       "memory": {p["mode"]: p["memory"] for p in phases},
                       "pin": {"cpus": pins, "not_pinned_because": why_not},
                       "prepared": {k: plain(v) for k, v in prepared.items()},
                       "routes": {k: plain(v) for k, v in routes.items()}}, f, indent=1)
    return 0


def check_nginx(args, fetcher, entries, nginx):
    """What nginx answers to each entry, before any load, beside tabserver's (kept per nginx in entry["ng"])."""
    for label, entry in entries.items():
        h = entry["headers"]
        ng_url = nginx.url(label, entry["uri"])
        s, f, b = fetcher.get(ng_url, h)
        if s != 200:
            raise BenchError(f"nginx ({nginx.name}) answers {s} to {entry['title']}")
        ng = {"coding": f.get("content-encoding", "identity"), "etag": f.get("etag"), "body": len(b)}
        if ng["coding"] == entry["ts_coding"]:
            _, _, tb = fetcher.get(entry["ts_url"] + entry["uri"], h)
            if tb != b:
                raise BenchError(f"{entry['title']}: both servers send {ng['coding']} but different bytes")
        ng["304"], f304, _ = fetcher.get(ng_url, h + [("If-None-Match", ng["etag"] or '""')])
        for header, (on200, on304) in entry["copied"].items():
            for status, fields, want in ((200, f, on200), (304, f304, on304)):
                if fields.get(header.lower()) != want and (status == 200 or ng["304"] == 304):
                    raise BenchError(f"{entry['title']}: nginx ({nginx.name}) sends {header}: {fields.get(header.lower())!r} "
                                     f"with its {status}, tabserver {want!r}")
        ng["wire_200"] = response_size(ng_url, h, args.ca)
        ng["wire_304"] = response_size(ng_url, h + [("If-None-Match", ng["etag"] or '""')], args.ca)
        entry.setdefault("ng", {})[nginx.name] = ng
        if "ts_wire_200" not in entry:
            ts = entry["ts_url"] + entry["uri"]
            entry["ts_wire_200"] = response_size(ts, h, args.ca)
            entry["ts_wire_304"] = response_size(ts, h + [("If-None-Match", entry["ts_etag"] or '""')], args.ca)


def measure(args, phase, cells):
    """Every cell of a phase: rounds × connection counts × entries × (200, 304) × both servers, interleaved."""
    log = os.path.join(args.work, "h2load.log")
    mode, entries, nginx, pinning = phase["mode"], phase["entries"], phase["nginx"], phase["pinning"]
    for round_ in range(args.rounds):
        for conns in sorted({c for e in entries.values() for c in conns_of(phase, e)}):
            for label, entry in entries.items():
                if conns not in conns_of(phase, entry):
                    continue
                for path in (200, 304):
                    order = ("tabserver", "nginx") if round_ % 2 == 0 else ("nginx", "tabserver")
                    for server in order:
                        if server == "tabserver":
                            url, pids, etag = entry["ts_url"] + entry["uri"], [entry["ts_pid"]], entry["ts_etag"]
                        else:
                            url, pids, etag = nginx.url(label, entry["uri"]), nginx.pids(), entry["ng"][mode]["etag"]
                        headers = entry["headers"] + ([("If-None-Match", etag or '""')] if path == 304 else [])
                        if os.path.exists(log):
                            os.remove(log)
                        r = h2load(url, headers, conns, args.duration, args.warm_up, log, pids, path,
                                   pinning[1] if pinning else None)
                        cells.setdefault((mode, label, path, conns, server), []).append(r)
                        busy = f"  h2load {r['gen_busy'] * 100:3.0f}%{' SATURATED' if r['gen_busy'] >= SATURATED else ''}"
                        print(f"  {mode} round {round_ + 1} {label:20} {path} c={conns:<4} {server:9} {r['rps']:9.0f} req/s "
                              f"p99 {r['p99_ms']:6.2f} ms  cpu {r['cpu_us']:5.1f} µs/req{busy}"
                              f"{'  UNEXPECTED ' + str(r['unexpected']) if r['unexpected'] else ''}"
                              f"{'  HUNG: killed after its deadline' if r.get('hung') else ''}", file=sys.stderr, flush=True)


def conns_of(phase, entry):
    """The connection counts measured for an entry in a phase: every header set gets the phase's connections, the
    wide clients more; the routes the phase's connections."""
    conns, wide = phase["conns"]
    return wide.get(entry["label"], conns) if entry["group"] == "clients" else conns


# h2load's own CPU time over its run's wall time from which a cell is the load generator's measure, not the server's.
SATURATED = 0.95


def load_text(t, n):
    """h2load's CPU over its run's wall time, `tabserver / nginx` medians, marked when either side saturated it."""
    text = f"{med(t, 'gen_busy') * 100:.0f}% / {med(n, 'gen_busy') * 100:.0f}%"
    return text + " **saturated: not counted**" if saturated(t, n) else text


def saturated(*sides):
    """Whether h2load's median CPU on any side of a cell reached ``SATURATED`` of its core: that side's throughput and
    latency are the load generator's, so the cell says nothing about the servers."""
    return any(med(rows, "gen_busy") >= SATURATED for rows in sides)


def held_text(memory, conns):
    """`tabserver / nginx` KiB per held connection at `conns`, or a dash where it was not measured."""
    figures = [memory["held_kib"].get(server, {}).get(conns) for server in ("tabserver", "nginx")]
    return " / ".join("—" if f is None else f"{f:.1f}" for f in figures)


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def machine():
    load = open("/proc/loadavg").read().split()[:3]
    cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return f"{os.cpu_count()} cores ({cpu_model}), load average {' '.join(load)} at the end"


def report(args, phase, prepared, refused, cells, why_not, new_files):
    mode, memory, pinning, conns_list = phase["mode"], phase["memory"], phase["pinning"], phase["conns"][0]
    if pinning:
        workers = getattr(args, "pinned_workers", None)
        tabserver = (f"a tabserver started on CPU {pinning[0]} alone ({workers} worker thread{'s' if workers != '1' else ''}, "
                     f"its own choice there, and the rest)" if workers else
                     f"every thread of tabserver ({args.threads} worker threads and the rest) on CPU {pinning[0]}")
        print(f"**{args.title}, pinned.** {machine()}; {tabserver}, nginx with 1 worker process (and its master) on CPU "
              f"{pinning[0]}, h2load `--h1 -t1` on CPU {pinning[1]}, by `taskset` and read back from /proc (other "
              f"processes of the machine are not moved); nginx tuned as above; {args.rounds} interleaved rounds of "
              f"{args.duration:g} s per cell; medians. **The targets are judged on this table.** \"h2load CPU\" is "
              f"the load generator's CPU time over its run's wall time: at {SATURATED * 100:.0f}% or more (of its one "
              f"core) h2load and not the server set that cell's pace, and the cell is not counted in the targets.\n")
    else:
        shared = ""
        if why_not is None and mode == "unpinned" and args.pin not in ("off", "0", ""):
            shared = " Both servers and h2load share every core here: this table is shown beside the pinned one below, which the targets are judged on."
        elif why_not and why_not != "PIN=0":
            shared = f" **Pinned: not measured** ({why_not}): the targets are counted on this table."
        print(f"**{args.title}.** {machine()}; tabserver "
              f"{args.threads} worker threads, nginx {args.threads} worker processes (tuned: sendfile, tcp_nopush, "
              f"open_file_cache, keep-alive, gzip_static, brotli_static, access_log off); h2load `--h1 -t1` on the same "
              f"machine; {args.rounds} interleaved rounds of {args.duration:g} s per cell; medians. CPU is the server's "
              f"user+system time from /proc per request answered; \"h2load CPU\" the load generator's own over its run's "
              f"wall time (a cell where it reached {SATURATED * 100:.0f}% is not counted).{shared}\n")
    if new_files or refused:
        print("| client headers | coding tabserver / nginx | body bytes per 200 tabserver / nginx | 304 to its own ETag tabserver / nginx |")
        print("|---|---|---|---|")
        for name in new_files:
            e, ng = prepared[name], prepared[name]["ng"][mode]
            print(f"| {name} | {e['ts_coding']} / {ng['coding']} | {e['ts_body']} / {ng['body']} | {e['ts_304']} / {ng['304']} |")
        for name, answer in refused.items():
            print(f"| {name} | tabserver answers {answer.splitlines()[0] if answer else ''}: **not loaded** | | |")
        print()
        print("nginx's files per header set (who made them; what `gzip -9` / `brotli -q 11` make of the identity bytes): " + "; ".join(
            f"{name}: " + ", ".join(f"{c} {e['files'][c]} B ({e['source'][c]}"
                                    + (f"; {'gzip -9' if c == 'gzip' else 'brotli -q 11'}: {e['operator'][c]} B" if c != "identity" else "") + ")"
                                    for c in CODINGS) for name, e in ((n, prepared[n]) for n in new_files)) + ".\n")
    held = "" if pinning else " RSS KiB per held connection tabserver / nginx |"
    print("| client headers | path | conns | tabserver req/s | nginx req/s | ratio | CPU µs/req tabserver / nginx | CPU ratio | "
          f"p99 ms tabserver / nginx | bytes per response (header block + body) tabserver / nginx |{held} h2load CPU tabserver / nginx | "
          "unexpected status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("" if pinning else "---|") + "---|")
    not_counted = []
    cpu_ratios = {200: [], 304: []}
    counted = {}  # throughput ratios of the cells counted, by path
    summary = {"200 throughput ≥ 1.2× nginx": [], "304 throughput ≥ 1.0× nginx": [], "CPU per request ≤ nginx's": [],
               "p99 at 256 connections ≤ nginx's and < 5 ms": [], "p99 ≤ nginx's (every cell)": [],
               "bytes per 200 ≤ nginx's": []}
    for name in prepared:
        for path in (200, 304):
            for conns in conns_of(phase, prepared[name]):
                t, n = cells[(mode, name, path, conns, "tabserver")], cells[(mode, name, path, conns, "nginx")]
                ratio = med(t, "rps") / med(n, "rps") if med(n, "rps") else float("nan")
                tc, nc = med(t, "cpu_us"), med(n, "cpu_us")
                tp, np_ = med(t, "p99_ms"), med(n, "p99_ms")
                (th, tbody), (nh, nbody) = prepared[name][f"ts_wire_{path}"], prepared[name]["ng"][mode][f"wire_{path}"]
                bad = f"{sum(r['unexpected'] for r in t)} / {sum(r['unexpected'] for r in n)}"
                extra = "" if pinning else f" {held_text(memory, conns)} |"
                print(f"| {name} | {path} | {conns} | {med(t, 'rps'):.0f} | {med(n, 'rps'):.0f} | **{ratio:.2f}×** | "
                      f"{tc:.1f} / {nc:.1f} | {tc / nc if nc else float('nan'):.2f}× | {tp:.2f} / {np_:.2f} | {th} + {tbody} / {nh} + {nbody} |"
                      f"{extra} {load_text(t, n)} | {bad} |")
                if conns not in conns_list:
                    continue  # the wide rows are shown, not counted: the targets are judged on the narrower ones
                if saturated(t, n):
                    not_counted.append(f"{name} {path} at {conns} connections")
                    continue  # the load generator's pace, not the servers'
                counted.setdefault(path, []).append(ratio)
                summary["200 throughput ≥ 1.2× nginx" if path == 200 else "304 throughput ≥ 1.0× nginx"].append(
                    ratio >= (1.2 if path == 200 else 1.0))
                summary["CPU per request ≤ nginx's"].append(tc <= nc)
                cpu_ratios[path].append(tc / nc if nc else float("nan"))
                if conns == 256:
                    summary["p99 at 256 connections ≤ nginx's and < 5 ms"].append(tp <= np_ and tp < 5)
                summary["p99 ≤ nginx's (every cell)"].append(tp <= np_)
                if path == 200:
                    summary["bytes per 200 ≤ nginx's"].append(tbody <= nbody)
    if args.targets == "tls":
        ratios = [ratio for path, rows in counted.items() for ratio in rows]
        summary = {"HTTPS throughput ≥ 0.8× nginx": [r >= 0.8 for r in ratios],
                   "CPU per request ≤ nginx's": summary["CPU per request ≤ nginx's"]}
        versions = sorted({f"{server}: {r['tls']}" for (m, _, _, _, server), rows in cells.items() if m == mode for r in rows if r["tls"]})
        print("\nNegotiated by h2load: " + "; ".join(versions) + ".")
    print()
    if args.targets == "tls":
        heading = "target"
    elif pinning:
        heading = "target, pinned: **judged here**"
    elif why_not is None and args.pin not in ("off", "0", ""):
        heading = "target, unpinned: shown, judged on the pinned table"
    else:
        heading = "target"
    print(f"| {heading} | cells that meet it |")
    print("|---|---|")
    for target, met in summary.items():
        print(f"| {target} | {sum(met)} of {len(met)} |")
    if not_counted:
        print(f"\n**Not counted** (h2load at {SATURATED * 100:.0f}% or more of its core on one side: the load generator "
              f"set the pace): {'; '.join(not_counted)}.")
    stalls = [f"{server} {name} {path} at {conns} connections, round {i + 1}" + (" (h2load killed after its deadline)" if r.get("hung") else "")
              for (m, name, path, conns, server), rows in cells.items() if m == mode and name in prepared
              for i, r in enumerate(rows) if r["done"] == 0]
    print()
    if stalls:
        print("**Rounds in which a server answered nothing during the measured time** (counted in the medians as 0 req/s "
              "and an infinite p99): " + "; ".join(stalls) + ".\n")
    def median_of(values):
        return f"{statistics.median(values):.2f}×" if values else "none counted"
    print("Medians over the header sets and connection counts counted: throughput ratio " + ", ".join(
        f"{path} {median_of(counted.get(path, []))}" for path in (200, 304)) + "; CPU per request ratio " + ", ".join(
        f"{path} {median_of(cpu_ratios[path])}" for path in (200, 304)) + ".\n")
    m = memory
    extra = "; /metrics: " + ", ".join(f"`{l}`" for l in m["metrics"]) if m["metrics"] else "; /metrics reports no memory figure"
    print(f"Memory after the load: tabserver RSS {m['tabserver_rss_kib'] / 1024:.1f} MiB ({m['tabserver_threads']} threads), "
          f"nginx RSS {m['nginx_rss_kib'] / 1024:.1f} MiB (master and {m['nginx_workers']} worker{'s' if m['nginx_workers'] != 1 else ''}){extra}.")


def report_routes(args, phase, routes, cells, declared):
    mode, pinning = phase["mode"], phase["pinning"]
    where = (f"pinned as the table above (tabservers and nginx on CPU {pinning[0]}, h2load on CPU {pinning[1]})"
             if pinning else "unpinned (servers and h2load share the cores)")
    print(f"**This round's read routes.** {machine()}; {where}; the same rounds as the "
          f"`…/tabs` rows they are compared with; {args.rounds} interleaved rounds of {args.duration:g} s per cell; "
          f"medians. Headers: {ROUTE_CLIENT}'s, and for the builds `X-Client-Platform: {PLATFORM}` with `X-App-Version` "
          f"{UNDECLARED_VERSION} (not declared) or {DECLARED_VERSION} (declared without `{declared['lacking']}`); "
          f"{declared['count']} builds declared on the builds server (`PUT /v1/builds/…`), one key made by `tabserver "
          f"keys generate` on the signed one; the others are bench/run.sh's server. nginx serves each route's bytes "
          f"from files with the {', '.join(COPIED_HEADERS)} tabserver sent. The last columns compare tabserver with "
          f"itself: the route's throughput and CPU per request over those of the row named (same path and "
          f"connections, same rounds).\n")
    print("| route | request | coding tabserver / nginx | body bytes tabserver / nginx | 304 to its own ETag tabserver / nginx | "
          "tabserver's Cache-Control; other headers |")
    print("|---|---|---|---|---|---|")
    for name, e in routes.items():
        ng, f = e["ng"][mode], e["ts_fields"]
        others = [f"Tabs-Withheld: {f['tabs-withheld']}"] if "tabs-withheld" in f else []
        if "tabs-signature" in f:
            others.append("Tabs-Signature")
        if "same_etag" in e:
            others.append(f"ETag {'the same as' if e['same_etag'] else '**not** the same as'} `…/tabs`'s")
        request = e["uri"].split(f"/accounts/{args.account}/", 1)[-1] + "".join(
            f", {k}: {v}" for k, v in e["headers"] if k.startswith("X-"))
        print(f"| {e['title']} | `{request}` | {e['ts_coding']} / {ng['coding']} | {e['ts_body']} / {ng['body']} | "
              f"{e['ts_304']} / {ng['304']} | `{f.get('cache-control', '—')}`{'; ' + ', '.join(others) if others else ''} |")
    print()
    print("| route | path | conns | tabserver req/s | nginx req/s | ratio | CPU µs/req tabserver / nginx | CPU ratio | "
          "p99 ms tabserver / nginx | bytes per response (header block + body) tabserver / nginx | "
          "tabserver against | req/s, CPU per request against it | h2load CPU tabserver / nginx | unexpected status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    against = {}
    for name, e in routes.items():
        for path in (200, 304):
            for conns in conns_of(phase, e):
                t, n = cells[(mode, name, path, conns, "tabserver")], cells[(mode, name, path, conns, "nginx")]
                b = cells.get((mode, e["baseline"], path, conns, "tabserver"))
                ratio = med(t, "rps") / med(n, "rps") if med(n, "rps") else float("nan")
                tc, nc = med(t, "cpu_us"), med(n, "cpu_us")
                (th, tbody), (nh, nbody) = e[f"ts_wire_{path}"], e["ng"][mode][f"wire_{path}"]
                base_title = routes[e["baseline"]]["title"] if e["baseline"] in routes else f"`…/tabs`, {e['baseline']}"
                if b:
                    rr, cr = med(t, "rps") / med(b, "rps") if med(b, "rps") else float("nan"), tc / med(b, "cpu_us")
                    against.setdefault(name, {}).setdefault(path, []).append((rr, cr))
                    vs = f"{rr:.2f}×, **{cr:.2f}×**"
                else:
                    vs = "not measured"
                print(f"| {e['title']} | {path} | {conns} | {med(t, 'rps'):.0f} | {med(n, 'rps'):.0f} | **{ratio:.2f}×** | "
                      f"{tc:.1f} / {nc:.1f} | {tc / nc if nc else float('nan'):.2f}× | {med(t, 'p99_ms'):.2f} / {med(n, 'p99_ms'):.2f} | "
                      f"{th} + {tbody} / {nh} + {nbody} | {base_title} | {vs} | {load_text(t, n)} | "
                      f"{sum(r['unexpected'] for r in t)} / {sum(r['unexpected'] for r in n)} |")
    print()
    if against:
        print("tabserver's CPU per request on each route over its comparison row's, medians over connection counts: " + "; ".join(
            f"{routes[name]['title']} " + ", ".join(f"{path} {statistics.median(c for _, c in rows):.2f}×" for path, rows in paths.items())
            for name, paths in against.items()) + ".")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"readbench: {error}", file=sys.stderr)
        sys.exit(2)
