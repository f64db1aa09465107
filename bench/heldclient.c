/* Holds N long-polls on one server from several loopback source addresses, in one epoll loop, for bench/held.sh.
 *
 *   heldclient PORT PATH ETAG N ADDRESSES
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
 *   repoll ETAG           every connection whose poll was answered polls again with ETAG (keep-alive); "repolled K"
 *   term                  (the caller sends SIGTERM to the server) "ended K 304s, OTHER other answers, CLOSED closed
 *                         without an answer, LAST ms after the command" once every connection answered or closed,
 *                         or after 60 s
 *   probe                 "/healthz p50 A ms, p99 B ms, max C ms over K probes": /healthz is asked every 20 ms on a
 *                         new connection from 127.0.0.1 from the start, each latency kept
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
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum kind { POLL, PUT, PROBE };
struct conn {
    int fd;
    enum kind kind;
    int connecting;
    int answered;  /* status of the last complete answer, 0 while none */
    char *buf;     /* a partial answer */
    size_t len, cap;
    double started; /* PROBE: when it was opened */
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

static double *probes;
static int nprobes, probes_cap;
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: heldclient PORT PATH ETAG N ADDRESSES\n"); return 2; }
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
    ep = epoll_create1(0);
    conns = calloc((size_t)nconns, sizeof *conns);
    struct conn input = {.fd = 0, .kind = PROBE};
    add(&input, EPOLLIN);
    struct conn put = {.fd = -1, .kind = PUT}, probe = {.fd = -1, .kind = PROBE};
    int next = 0, answered_polls = 0;
    /* what a command waits for */
    enum { NONE, WAKE, END } waiting = NONE;
    double command_at = 0, put_answered_at = 0, last_at = 0, next_probe = now_ms();
    int counted_200 = 0, counted_304 = 0, counted_other = 0, closed = 0, put_status = 0;
    char line[4096];
    size_t line_len = 0;
    struct epoll_event events[1024];
    for (;;) {
        while (next < nconns && connecting_now < 256) start_poll(next++);
        double t = now_ms();
        if (t >= next_probe && probe.fd < 0) {
            probe.fd = open_socket("127.0.0.1");
            probe.started = t;
            probe.connecting = 1;
            probe.len = 0;
            add(&probe, EPOLLOUT | EPOLLIN);
            next_probe = t + 20;
        }
        if (waiting == WAKE && (counted_200 + counted_other >= nconns || t - command_at > 30000)) {
            printf("woken %d 200s, %.1f ms after the PUT's answer, %d other answers\n", counted_200,
                   last_at - put_answered_at, counted_other);
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
                if (got <= 0) return 0;
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
                    } else if (!strncmp(line, "put ", 4)) {
                        FILE *f = fopen(line + 4, "rb");
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
                    } else if (!strcmp(line, "term")) {
                        counted_304 = counted_other = closed = 0;
                        command_at = last_at = now_ms();
                        waiting = END;
                    } else if (!strcmp(line, "probe")) {
                        qsort(probes, (size_t)nprobes, sizeof *probes, cmp);
                        if (nprobes)
                            printf("/healthz p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d probes\n", probes[nprobes / 2],
                                   probes[nprobes * 99 / 100], probes[nprobes - 1], nprobes);
                        else
                            printf("/healthz no probe answered\n");
                        fflush(stdout);
                        nprobes = 0;
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
                if (c->kind == POLL) {
                    send_all(c->fd, request, request_len);
                    sent++;
                } else {
                    static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
                    send_all(c->fd, hz, sizeof hz - 1);
                }
                continue;
            }
            int status = receive(c);
            if (status == 0) continue;
            double at = now_ms();
            if (c->kind == PROBE) {
                if (status > 0) {
                    if (nprobes == probes_cap) probes = realloc(probes, sizeof *probes * (size_t)(probes_cap = probes_cap * 2 + 1024));
                    probes[nprobes++] = at - c->started;
                }
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                continue;
            }
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
