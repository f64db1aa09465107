#ifndef C_EPOLL_BATCH_H
#define C_EPOLL_BATCH_H

// No declarations: the target defines the process's epoll_wait (see epoll_batch.c), which libmicrohttpd calls.

#endif
