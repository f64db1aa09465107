#ifndef TABSERVER_CMICROHTTPD_SHIM_H
#define TABSERVER_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <microhttpd.h>

/// MHD_start_daemon is variadic and is not imported into Swift: this passes every option
/// as one typed MHD_OPTION_ARRAY instead.
static inline struct MHD_Daemon *cmhd_start_daemon(unsigned int flags, uint16_t port,
                                                   MHD_AcceptPolicyCallback policy, void *policy_cls,
                                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                                   const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, policy, policy_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// An option item that carries a function pointer: Swift cannot cast one to intptr_t.
static inline struct MHD_OptionItem cmhd_option_notify_completed(MHD_RequestCompletedCallback callback, void *cls) {
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) callback, cls };
    return item;
}

/// Another option item carrying a function pointer (connection opened / closed notifications).
static inline struct MHD_OptionItem cmhd_option_notify_connection(MHD_NotifyConnectionCallback callback, void *cls) {
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t) callback, cls };
    return item;
}

/// Another option item carrying a function pointer: called with the raw request target once the request line is in.
static inline struct MHD_OptionItem cmhd_option_uri_log(void *(*callback)(void *cls, const char *uri,
                                                                          struct MHD_Connection *connection),
                                                         void *cls) {
    struct MHD_OptionItem item = { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) callback, cls };
    return item;
}

/// Names the calling thread (at most 15 bytes are kept), as `top -H` and perf show it. prctl is variadic.
static inline void cmhd_name_current_thread(const char *name) {
#ifdef __linux__
    prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
#else
    (void) name;
#endif
}

/// MHD_get_connection_info is variadic: the socket of a connection.
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// MHD_get_connection_info is variadic: the peer's address (NULL when unknown).
static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/// MHD_get_connection_info is variadic: the request line and header block's size in bytes, both line ends included
/// (0 before the header block is complete).
static inline size_t cmhd_request_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

/// MHD_get_connection_info is variadic: the per-connection pointer set in the connection notification.
static inline void *cmhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// Never called for the responses below (libmicrohttpd sends no body with a 304 or to HEAD); if it ever were, it
/// ends the response with an error (the connection closes) rather than send bytes. A C function because
/// MHD_CONTENT_READER_END_WITH_ERROR is a cast expression Swift does not import.
static inline ssize_t cmhd_no_body_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void) cls; (void) pos; (void) buf; (void) max;
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

/// A response with no body buffer that announces `Content-Length: length` (what a 304 may repeat of its 200, RFC
/// 9110 §8.6): a content-reader response of known size whose reader is never called for it.
static inline struct MHD_Response *cmhd_create_bodiless_response(uint64_t length) {
    return MHD_create_response_from_callback(length, 1, cmhd_no_body_reader, NULL, NULL);
}

/// MHD_set_response_options is variadic: this sets flags with no further options.
static inline enum MHD_Result cmhd_set_response_flags(struct MHD_Response *response, enum MHD_ResponseFlags flags) {
    return MHD_set_response_options(response, flags, MHD_RO_END);
}

/// MHD_FEATURE_TLS shares its value with MHD_FEATURE_SSL, which Swift does not import as a case: whether this
/// libmicrohttpd was built with GnuTLS (HTTPS).
static inline int cmhd_tls_supported(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/// MHD_get_daemon_info is variadic: the port the daemon listens on (useful after binding port 0).
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// MHD_get_daemon_info is variadic: how many connections the daemon holds open right now.
static inline unsigned int cmhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}
#endif
