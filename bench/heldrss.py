"""RSS per held connection: what a server's memory grows by for each idle keep-alive connection it holds.

Used by readbench.py before its load runs (the allocators have not yet kept memory from earlier connections).
Connections are opened cumulatively (32, then up to 256, then up to 1,024 …), each sends one request with a
client's headers and reads the whole answer (so the server has read into, and answered from, the connection's
memory), and stays open; a warm-up on a connection of its own comes first, so that one-time costs (files
opened, caches filled) are not counted. At each count the server's RSS (every process: nginx's master and workers) is read from
/proc after a short settle. The figure is (RSS with N held − RSS before the first) / N, in KiB.
"""
import re
import socket
import ssl
import time
import urllib.parse


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def _answer(sock):
    """Reads one whole answer (header block, then Content-Length bytes unless 204/304)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed before the end of the header block")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
    length = int(m.group(1)) if m and status not in (204, 304) else 0
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed before the end of the body")
        body += chunk
    return status


def held_rss(url, headers, pids, counts, ca_file=None, settle=0.3):
    """{N: KiB per held connection} for each N in `counts` (ascending, cumulative). `pids` is a function giving
    the server's process ids. Raises OSError when the server refuses or drops a connection."""
    parts = urllib.parse.urlsplit(url)
    context = None
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    request = (f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
               + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode()
    held, out = [], {}
    # One-time costs first (files opened, caches filled, a worker's first buffers), on a connection that closes.
    warm = socket.create_connection((parts.hostname, parts.port), timeout=10)
    if context:
        warm = context.wrap_socket(warm, server_hostname=parts.hostname)
    with warm:
        for _ in range(8):
            warm.sendall(request)
            _answer(warm)
    time.sleep(settle)
    base = rss_kib(pids())
    try:
        for n in sorted(counts):
            opened = []
            while len(held) + len(opened) < n:
                sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
                if context:
                    sock = context.wrap_socket(sock, server_hostname=parts.hostname)
                sock.sendall(request)
                opened.append(sock)
            for sock in opened:
                status = _answer(sock)
                if status != 200:
                    raise OSError(f"{url} answered {status} to a held connection")
            held += opened
            time.sleep(settle)
            out[n] = (rss_kib(pids()) - base) / n
    finally:
        for sock in held:
            sock.close()
    return out
