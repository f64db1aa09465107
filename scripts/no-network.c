/*
 * An LD_PRELOAD shim under which a process can open no network socket: socket() for any family but AF_UNIX and
 * AF_NETLINK (what glibc itself uses for nscd and getaddrinfo's interface list), and bind() or connect() to an
 * address of any family but AF_UNIX, fail with EACCES. One caller is let through: Foundation (libFoundation.so, which
 * carries CoreFoundation), whose run loop makes its wakeup pair from two loopback sockets whenever a test runs a
 * Process; that pair reaches nothing outside the process. URLSession (libFoundationNetworking, over libcurl) is refused. Each refusal is written to stderr and, when NO_NETWORK_LOG
 * names a file, appended to it: a caller that swallows the error still leaves a line there.
 *
 * `make test` runs the in-process tests under it (scripts/swift-tests): a test there that starts a server or dials
 * one fails, and the run fails on a non-empty log.
 *
 *   gcc -shared -fPIC -O2 -o no-network.so scripts/no-network.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Whether the call came from Foundation's own code (the run loop's wakeup pair). */
static int from_foundation(const void *caller) {
    Dl_info info;
    if (caller == NULL || dladdr(caller, &info) == 0 || info.dli_fname == NULL) return 0;
    const char *name = strrchr(info.dli_fname, '/');
    name = name == NULL ? info.dli_fname : name + 1;
    return strncmp(name, "libFoundation.so", 16) == 0;
}

static void refused(const char *call, int family) {
    char line[160];
    int n = snprintf(line, sizeof line, "no-network: %s(family %d) refused in pid %d (an in-process test opened a socket)\n",
                     call, family, (int)getpid());
    if (n <= 0) return;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    ssize_t ignored = write(2, line, (size_t)n);
    const char *log = getenv("NO_NETWORK_LOG");
    if (log != NULL && *log != '\0') {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ignored = write(fd, line, (size_t)n);
            close(fd);
        }
    }
    (void)ignored;
}

static int allowed_family(int family) { return family == AF_UNIX || family == AF_NETLINK; }

int socket(int domain, int type, int protocol) {
    static int (*next)(int, int, int);
    if (!allowed_family(domain) && !from_foundation(__builtin_return_address(0))) {
        refused("socket", domain);
        errno = EACCES;
        return -1;
    }
    if (next == NULL) next = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    return next(domain, type, protocol);
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    static int (*next)(int, const struct sockaddr *, socklen_t);
    if (address != NULL && address->sa_family != AF_UNIX && address->sa_family != AF_NETLINK &&
        !from_foundation(__builtin_return_address(0))) {
        refused("bind", address->sa_family);
        errno = EACCES;
        return -1;
    }
    if (next == NULL) next = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    return next(fd, address, length);
}

int connect(int fd, const struct sockaddr *address, socklen_t length) {
    static int (*next)(int, const struct sockaddr *, socklen_t);
    if (address != NULL && address->sa_family != AF_UNIX && !from_foundation(__builtin_return_address(0))) {
        refused("connect", address->sa_family);
        errno = EACCES;
        return -1;
    }
    if (next == NULL) next = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    return next(fd, address, length);
}
