/* Holds N long-polls on one server from several loopback source addresses, in one epoll loop, for bench/held.sh.
 *
 *   heldclient PORT PATH ETAG N ADDRESSES [TOKEN]
 *
 * Opens N connections to 127.0.0.1:PORT, the i-th from address j = i % ADDRESSES, 127.0.(j / 250).(2 + j % 250)
 * (IP_BIND_ADDRESS_NO_PORT, so
 * each source address has its own ephemeral ports), at most 256 connecting at once, and sends on each
 * `GET PATH HTTP/1.1` with `If-None-Match: ETAG`. Any answer that comes back while they should be held is counted
 * by status. Then it reads commands on standard input, one a line, and answers each with one line on stdout:
 *
 *   held                  "held SENT ANSWERED-BY-STATUS…": what was sent and answered so far
 *   put FILE              sends FILE's bytes (a whole PUT request) on a connection of its own; answers
 *                         "put STATUS" when its answer is in, then "woken K 200s, LAST ms after the PUT's answer,
 *                         OTHER other answers" once all N answered or after 30 s
 *   probed-put FILE       the same, with the probes of a wake (every 5 ms, writes too) until the last answer
 *   repoll ETAG           every connection whose poll was answered polls again with ETAG (keep-alive); "repolled K"
 *   term                  (the caller sends SIGTERM to the server) "ended K 304s, OTHER other answers, CLOSED closed
 *                         without an answer, LAST ms after the command" once every connection answered or closed,
 *                         or after 60 s
 *   quiet MS              for MS milliseconds the probes run as during a wake (every 5 ms, writes too) while nothing
 *                         is woken; "quiet" when they end (a `probe` then reports them)
 *   probe                 "/healthz p50 A ms, p99 B ms, max C ms over K probes; /readyz …; writes …": the probes since
 *                         the last `probe`, once those still running have ended (at most 5 s; none starts meanwhile)
 *
 * The probes run in a process of their own (forked at the start, one epoll loop), so that the thousands of answers
 * this one reads during a wake do not delay them: /healthz and /readyz every 20 ms each on a new connection from
 * 127.0.0.1 (every 5 ms during a `probed-put`'s wake and a `quiet` window), and with TOKEN, during those, a write every
 * 5 ms (a PUT with If-Match: * of the layout of account heldclient-writes, which no held poll waits for: the caller
 * creates it). Each takes the time from its connect to its whole answer. HELDCLIENT_TRACE=1 prints each probe of
 * a wake or window on stderr, with when it started.
 *
 * Times are CLOCK_MONOTONIC. Built by bench/held.sh with cc -O2.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum kind { POLL, PUT, INPUT };
struct conn {
    int fd;
    enum kind kind;
    int connecting;
    int answered;  /* status of the last complete answer, 0 while none */
    char *buf;     /* a partial answer */
    size_t len, cap;
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int port, nconns, naddrs, ep;
static const char *path;
static char request[4096];
static size_t request_len;
static struct conn *conns;
static int sent, status_counts[600];
static int connecting_now;

static void build_request(const char *etag) {
    request_len = (size_t)snprintf(request, sizeof request,
        "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: heldclient\r\nAccept-Encoding: gzip\r\n"
        "If-None-Match: %s\r\n\r\n", path, port, etag);
}

static int open_socket(const char *from) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { perror("socket"); exit(1); }
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind"); exit(1); }
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0 && errno != EINPROGRESS) { perror("connect"); exit(1); }
    return fd;
}

static void add(struct conn *c, uint32_t events) {
    struct epoll_event e = {.events = events, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0) { perror("epoll_ctl"); exit(1); }
}

/* Reads what arrived; returns the status of an answer completed by it, 0 for none yet, -1 for closed. */
static int receive(struct conn *c) {
    char chunk[65536];
    int status = 0;
    for (;;) {
        ssize_t n = recv(c->fd, chunk, sizeof chunk, 0);
        if (n == 0) return status ? status : -1;
        if (n < 0) return (errno == EAGAIN) ? status : (status ? status : -1);
        if (c->len + (size_t)n > c->cap) {
            c->cap = (c->len + (size_t)n) * 2;
            c->buf = realloc(c->buf, c->cap);
        }
        memcpy(c->buf + c->len, chunk, (size_t)n);
        c->len += (size_t)n;
        for (;;) { /* every complete answer in the buffer */
            char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
            if (!end) break;
            int code = atoi(c->buf + 9);
            size_t head = (size_t)(end - c->buf) + 4, body = 0;
            char *cl = memmem(c->buf, head, "ontent-Length:", 14);
            if (!cl) cl = memmem(c->buf, head, "ontent-length:", 14);
            if (cl && code != 304 && code != 204) body = strtoul(cl + 14, NULL, 10);
            if (c->len < head + body) break;
            memmove(c->buf, c->buf + head + body, c->len - head - body);
            c->len -= head + body;
            status = code;
        }
    }
}

static void start_poll(int i) {
    char from[32];
    int j = i % naddrs;
    snprintf(from, sizeof from, "127.0.%d.%d", j / 250, 2 + j % 250);
    conns[i].fd = open_socket(from);
    conns[i].kind = POLL;
    conns[i].connecting = 1;
    connecting_now++;
    add(&conns[i], EPOLLOUT | EPOLLIN);
}

static void send_all(int fd, const char *bytes, size_t len) {
    while (len) {
        ssize_t n = send(fd, bytes, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) { usleep(100); continue; }
        if (n <= 0) return;
        bytes += n;
        len -= (size_t)n;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The prober: its own process and epoll loop. Commands on `commands`, one a line: "busy" (every 5 ms, writes too),
 * "normal" (every 20 ms, no writes), "report" (one line of the latencies since the last report, on `reports`). */
enum probe_kind { HEALTHZ, READYZ, WRITE, PROBE_KINDS };
static const char *probe_names[PROBE_KINDS] = {"/healthz", "/readyz", "writes"};
struct probe {
    int fd, connecting;
    double started;
    char buf[8192];
    size_t len;
};

static size_t probe_request(enum probe_kind kind, const char *token, int serial, char *out, size_t cap) {
    if (kind == HEALTHZ) return (size_t)snprintf(out, cap, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if (kind == READYZ) return (size_t)snprintf(out, cap, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    char body[512];
    int blen = snprintf(body, sizeof body,
        "{\"schemaVersion\":1,\"tabs\":[{\"id\":\"home\",\"title\":\"Write %d\",\"rootViewController\":\"HomeViewController\"}]}",
        serial);
    return (size_t)snprintf(out, cap,
        "PUT /v1/accounts/heldclient-writes/layout HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        "Content-Type: application/json\r\nIf-Match: *\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
        token, blen, body);
}

/* The status of the whole answer in `p->buf` (Connection: close: the answer ends when the server closes), 0 while
 * it is still arriving, -1 when the connection ended without one. */
static int probe_receive(struct probe *p) {
    for (;;) {
        if (p->len == sizeof p->buf - 1) p->len = 0; /* only the status line matters */
        ssize_t n = recv(p->fd, p->buf + p->len, sizeof p->buf - 1 - p->len, 0);
        if (n > 0) { p->len += (size_t)n; continue; }
        if (n < 0 && errno == EAGAIN) return 0;
        p->buf[p->len] = 0;
        return (p->len > 12 && !strncmp(p->buf, "HTTP/1.1 ", 9)) ? atoi(p->buf + 9) : -1;
    }
}

/* One line: p50, p99 and max of each kind's latencies (sorted in place), then forgotten. */
static void report(int reports, double **kept, int *count, const char *token) {
    char out[1024];
    size_t len = 0;
    for (int k = 0; k < PROBE_KINDS; k++) {
        int m = count[k];
        double *v = kept[k];
        if (k == WRITE && !token) continue;
        if (k) len += (size_t)snprintf(out + len, sizeof out - len, "; ");
        qsort(v, (size_t)m, sizeof *v, cmp);
        if (m)
            len += (size_t)snprintf(out + len, sizeof out - len, "%s p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d probes",
                                    probe_names[k], v[m / 2], v[m * 99 / 100], v[m - 1], m);
        else
            len += (size_t)snprintf(out + len, sizeof out - len, "%s no probe answered", probe_names[k]);
        count[k] = 0;
    }
    len += (size_t)snprintf(out + len, sizeof out - len, "\n");
    if (write(reports, out, len) < 0) exit(1);
}

static void prober(int commands, int reports, const char *token) {
    int pep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(pep, EPOLL_CTL_ADD, commands, &e);
    struct probe probes[PROBE_KINDS];
    double next[PROBE_KINDS], *kept[PROBE_KINDS] = {0}, busy_since = 0, report_asked = 0;
    int count[PROBE_KINDS] = {0}, cap[PROBE_KINDS] = {0}, busy = 0, serial = 0, trace = getenv("HELDCLIENT_TRACE") != NULL;
    for (int k = 0; k < PROBE_KINDS; k++) {
        probes[k].fd = -1;
        next[k] = now_ms() + 7 * k; /* staggered */
    }
    char line[256];
    size_t line_len = 0;
    for (;;) {
        double t = now_ms(), wait_ms = 20;
        if (report_asked > 0) {
            /* The probes still running count too (one slowed by a wake ends after it): none starts until they end. */
            int running = 0;
            for (int k = 0; k < PROBE_KINDS; k++) running += probes[k].fd >= 0;
            if (!running || t - report_asked > 5000) {
                report(reports, kept, count, token);
                report_asked = 0;
            }
        }
        for (int k = 0; k < PROBE_KINDS && report_asked == 0; k++) {
            if (k == WRITE && (!token || !busy)) continue;
            if (probes[k].fd < 0 && t >= next[k]) {
                probes[k].fd = open_socket("127.0.0.1");
                probes[k].connecting = 1;
                probes[k].started = t;
                probes[k].len = 0;
                struct epoll_event pe = {.events = EPOLLOUT | EPOLLIN, .data.ptr = &probes[k]};
                epoll_ctl(pep, EPOLL_CTL_ADD, probes[k].fd, &pe);
                next[k] = t + (busy ? 5 : 20);
            }
            if (probes[k].fd < 0 && next[k] - t < wait_ms) wait_ms = next[k] - t;
        }
        struct epoll_event events[8];
        int n = epoll_wait(pep, events, 8, wait_ms < 1 ? 1 : (int)wait_ms);
        for (int i = 0; i < n; i++) {
            struct probe *p = events[i].data.ptr;
            if (!p) {
                ssize_t got = read(commands, line + line_len, sizeof line - 1 - line_len);
                if (got <= 0) exit(0);
                line_len += (size_t)got;
                char *nl;
                while ((nl = memchr(line, '\n', line_len))) {
                    *nl = 0;
                    if (!strcmp(line, "busy")) {
                        busy = 1;
                        busy_since = now_ms();
                        for (int k = 0; k < PROBE_KINDS; k++) next[k] = busy_since + k; /* start at once */
                    } else if (!strcmp(line, "normal")) {
                        busy = 0;
                    } else if (!strcmp(line, "report")) {
                        report_asked = now_ms();
                    }
                    memmove(line, nl + 1, line_len - (size_t)(nl + 1 - line));
                    line_len -= (size_t)(nl + 1 - line);
                }
                continue;
            }
            int k = (int)(p - probes);
            if (p->connecting) {
                if (!(events[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) continue;
                p->connecting = 0;
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (!err) {
                    struct epoll_event pe = {.events = EPOLLIN, .data.ptr = p};
                    epoll_ctl(pep, EPOLL_CTL_MOD, p->fd, &pe);
                    char bytes[2048];
                    size_t blen = probe_request((enum probe_kind)k, token, ++serial, bytes, sizeof bytes);
                    send_all(p->fd, bytes, blen);
                    continue;
                }
                if (err != ECONNREFUSED) /* refused: the server stopped (SIGTERM) */
                    fprintf(stderr, "heldclient: %s: connect: %s\n", probe_names[k], strerror(err));
            } else {
                int status = probe_receive(p);
                if (status == 0) continue;
                double at = now_ms();
                if (status > 0) {
                    if (status >= 300 && !(k == READYZ && status == 503))
                        fprintf(stderr, "heldclient: %s answered %d\n", probe_names[k], status);
                    if (trace && busy)
                        fprintf(stderr, "trace %s at %.1f ms: %.2f ms (%.3f)\n", probe_names[k], p->started - busy_since,
                                at - p->started, p->started);
                    if (count[k] == cap[k]) kept[k] = realloc(kept[k], sizeof *kept[k] * (size_t)(cap[k] = cap[k] * 2 + 1024));
                    kept[k][count[k]++] = at - p->started;
                } else {
                    fprintf(stderr, "heldclient: %s: the connection ended without an answer\n", probe_names[k]);
                }
            }
            epoll_ctl(pep, EPOLL_CTL_DEL, p->fd, NULL);
            close(p->fd);
            p->fd = -1;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) { fprintf(stderr, "usage: heldclient PORT PATH ETAG N ADDRESSES [TOKEN]\n"); return 2; }
    port = atoi(argv[1]);
    path = argv[2];
    nconns = atoi(argv[4]);
    naddrs = atoi(argv[5]);
    build_request(argv[3]);
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
    if ((rlim_t)nconns + 64 > r.rlim_cur) {
        fprintf(stderr, "heldclient: %d connections need more than this process's open-file limit of %lu\n", nconns,
                (unsigned long)r.rlim_cur);
        return 1;
    }
    int to_prober[2], from_prober[2];
    if (pipe(to_prober) || pipe(from_prober)) { perror("pipe"); return 1; }
    pid_t prober_pid = fork();
    if (prober_pid < 0) { perror("fork"); return 1; }
    if (prober_pid == 0) {
        close(to_prober[1]);
        close(from_prober[0]);
        prober(to_prober[0], from_prober[1], argc == 7 ? argv[6] : NULL);
        return 0;
    }
    close(to_prober[0]);
    close(from_prober[1]);
    FILE *prober_commands = fdopen(to_prober[1], "w"), *prober_reports = fdopen(from_prober[0], "r");
#define TELL_PROBER(text) (fputs(text "\n", prober_commands), fflush(prober_commands))
    ep = epoll_create1(0);
    conns = calloc((size_t)nconns, sizeof *conns);
    struct conn input = {.fd = 0, .kind = INPUT};
    add(&input, EPOLLIN);
    struct conn put = {.fd = -1, .kind = PUT};
    int next = 0, answered_polls = 0;
    /* what a command waits for */
    enum { NONE, WAKE, END, QUIET } waiting = NONE;
    double command_at = 0, put_answered_at = 0, last_at = 0, quiet_until = 0;
    int counted_200 = 0, counted_304 = 0, counted_other = 0, closed = 0, put_status = 0;
    char line[4096];
    size_t line_len = 0;
    struct epoll_event events[1024];
    for (;;) {
        while (next < nconns && connecting_now < 256) start_poll(next++);
        double t = now_ms();
        if (waiting == WAKE && (counted_200 + counted_other >= nconns || t - command_at > 30000)) {
            TELL_PROBER("normal");
            printf("woken %d 200s, %.1f ms after the PUT's answer, %d other answers\n", counted_200,
                   last_at - put_answered_at, counted_other);
            fflush(stdout);
            waiting = NONE;
        }
        if (waiting == QUIET && t >= quiet_until) {
            TELL_PROBER("normal");
            printf("quiet\n");
            fflush(stdout);
            waiting = NONE;
        }
        if (waiting == END && (counted_304 + counted_other + closed >= nconns || t - command_at > 60000)) {
            printf("ended %d 304s, %d other answers, %d closed without an answer, %.1f ms after the command\n",
                   counted_304, counted_other, closed, last_at - command_at);
            fflush(stdout);
            waiting = NONE;
        }
        int n = epoll_wait(ep, events, 1024, 5);
        for (int k = 0; k < n; k++) {
            struct conn *c = events[k].data.ptr;
            if (c == &input) {
                ssize_t got = read(0, line + line_len, sizeof line - 1 - line_len);
                if (got <= 0) {
                    kill(prober_pid, SIGTERM);
                    waitpid(prober_pid, NULL, 0);
                    return 0;
                }
                line_len += (size_t)got;
                char *nl;
                while ((nl = memchr(line, '\n', line_len))) {
                    *nl = 0;
                    if (!strcmp(line, "held")) {
                        printf("held %d sent, answered:", sent);
                        for (int s = 100; s < 600; s++)
                            if (status_counts[s]) printf(" %d×%d", status_counts[s], s);
                        printf("\n");
                        fflush(stdout);
                    } else if (!strncmp(line, "put ", 4) || !strncmp(line, "probed-put ", 11)) {
                        int probed = line[0] == 'p' && line[1] == 'r';
                        FILE *f = fopen(line + (probed ? 11 : 4), "rb");
                        static char body[65536];
                        size_t blen = f ? fread(body, 1, sizeof body, f) : 0;
                        if (f) fclose(f);
                        counted_200 = counted_other = 0;
                        put_status = 0;
                        put.fd = open_socket("127.0.0.1");
                        put.len = 0;
                        int flags = fcntl(put.fd, F_GETFL);
                        fcntl(put.fd, F_SETFL, flags & ~O_NONBLOCK);
                        struct epoll_event e = {.events = EPOLLIN, .data.ptr = &put};
                        epoll_ctl(ep, EPOLL_CTL_ADD, put.fd, &e);
                        if (probed) TELL_PROBER("busy");
                        send_all(put.fd, body, blen);
                        fcntl(put.fd, F_SETFL, flags);
                        command_at = now_ms();
                        waiting = WAKE;
                    } else if (!strncmp(line, "repoll ", 7)) {
                        build_request(line + 7);
                        int k2 = 0;
                        for (int i = 0; i < nconns; i++)
                            if (conns[i].answered && conns[i].fd >= 0) {
                                conns[i].answered = 0;
                                send_all(conns[i].fd, request, request_len);
                                k2++;
                            }
                        memset(status_counts, 0, sizeof status_counts);
                        printf("repolled %d\n", k2);
                        fflush(stdout);
                    } else if (!strncmp(line, "quiet ", 6)) {
                        quiet_until = now_ms() + atof(line + 6);
                        waiting = QUIET;
                        TELL_PROBER("busy");
                    } else if (!strcmp(line, "term")) {
                        counted_304 = counted_other = closed = 0;
                        command_at = last_at = now_ms();
                        waiting = END;
                    } else if (!strcmp(line, "probe")) {
                        char report[1024];
                        TELL_PROBER("report");
                        if (!fgets(report, sizeof report, prober_reports)) snprintf(report, sizeof report, "(the prober is gone)\n");
                        fputs(report, stdout);
                        fflush(stdout);
                    }
                    memmove(line, nl + 1, line_len - (size_t)(nl + 1 - line));
                    line_len -= (size_t)(nl + 1 - line);
                }
                continue;
            }
            if (c->connecting && (events[k].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                c->connecting = 0;
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
                if (c->kind == POLL) connecting_now--;
                if (err) {
                    if (c->kind == POLL) {
                        fprintf(stderr, "heldclient: connect: %s\n", strerror(err));
                        closed++;
                        status_counts[599]++;
                    }
                    close(c->fd);
                    c->fd = -1;
                    continue;
                }
                send_all(c->fd, request, request_len);
                sent++;
                continue;
            }
            int status = receive(c);
            if (status == 0) continue;
            double at = now_ms();
            if (c->kind == PUT) {
                put_status = status;
                put_answered_at = at;
                printf("put %d\n", put_status);
                fflush(stdout);
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                continue;
            }
            if (status < 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                if (!c->answered) closed++;
                continue;
            }
            c->answered = status;
            status_counts[status < 600 ? status : 599]++;
            answered_polls++;
            last_at = at;
            if (status == 200) counted_200++;
            else if (status == 304) counted_304++;
            else counted_other++;
        }
    }
}
