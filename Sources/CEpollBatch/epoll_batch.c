// libmicrohttpd 0.9.75 (and 1.0.1) drains its epoll set in a loop, 128 events at a time (its MAX_EVENTS):
//
//     num_events = MAX_EVENTS;
//     while (MAX_EVENTS == num_events)
//         num_events = epoll_wait (daemon->epoll_fd, events, MAX_EVENTS, timeout_ms);
//
// with the timeout it computed before the loop, when nothing was ready: often -1. When a turn's events are exactly
// 128 (or 256, …), the next call waits for a new event although the connections it just marked ready are not yet
// processed (that happens after the loop). Clients that sent a request and wait for its answer send nothing more:
// with exactly 128 (or 256) busy connections on a worker, the worker waited for good (h2load -c128 and -c256 with one
// worker: ~200 requests a second, the rest after the watchdog's deadlines).
//
// This definition of epoll_wait takes the place of libc's for the whole process (the executable's symbols come first
// when libmicrohttpd's calls are bound). It changes one thing: a call made with room for 128 events right after a
// call of the same thread that returned 128 gets timeout 0, so the loop ends at once and the ready connections are
// served. Every other call goes to the kernel as it was made (libdispatch's ask for 16 events at most).

#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "CEpollBatch.h"

/// libmicrohttpd's MAX_EVENTS (daemon.c).
enum { libmicrohttpd_batch = 128 };

static _Thread_local int previous_was_full_batch;

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (maxevents == libmicrohttpd_batch && previous_was_full_batch) {
        timeout = 0;
    }
    // epoll_pwait with no signal mask is epoll_wait (the only form every architecture has).
    int ready = (int)syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout, NULL, (size_t)(_NSIG / 8));
    previous_was_full_batch = maxevents == libmicrohttpd_batch && ready == libmicrohttpd_batch;
    return ready;
}
