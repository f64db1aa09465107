#ifndef TABSERVER_CCURL_SHIM_H
#define TABSERVER_CCURL_SHIM_H
#include <curl/curl.h>
#include <string.h>

/// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: each request tabserver
/// makes (a webhook delivery, a cache purge) is written here whole, and Swift calls these functions.

/// What the body callback counts: the answer's bytes are read up to `limit`, then the transfer stops.
struct ccurl_sink {
    size_t received;
    size_t limit;
};

static size_t ccurl_discard(char *data, size_t size, size_t count, void *context) {
    struct ccurl_sink *sink = (struct ccurl_sink *)context;
    size_t bytes = size * count;
    (void)data;
    sink->received += bytes;
    return sink->received > sink->limit ? 0 : bytes;  /* 0 ends the transfer (CURLE_WRITE_ERROR) */
}

/// Once per process, before the first request (thread-safe in libcurl 7.84 and later).
static inline int ccurl_global_init(void) { return (int)curl_global_init(CURL_GLOBAL_DEFAULT); }

/// The options every request shares: `url` with `list` as its headers, no redirects, no proxy, http and https only,
/// no signals, `timeout_ms` in all, TLS verified against the system's CA store, `agent` as User-Agent, the body read
/// into `sink` (up to its limit, then dropped), and `error` (CURL_ERROR_SIZE bytes) for libcurl's message.
static inline void ccurl_set_common(CURL *curl, const char *url, struct curl_slist *list, long timeout_ms, const char *agent,
                                    struct ccurl_sink *sink, char *error) {
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, agent);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ccurl_discard);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, sink);
}

/// Runs the request and frees the handle: the CURLcode, `*status` the HTTP status (0 when none came), `error` what
/// failed. A body longer than the sink reads is no failure: the status stands.
static inline int ccurl_perform(CURL *curl, long *status, char *error) {
    CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    if (code == CURLE_WRITE_ERROR && *status > 0) code = CURLE_OK;
    if (code != CURLE_OK && error[0] == 0) strncpy(error, curl_easy_strerror(code), CURL_ERROR_SIZE - 1);
    curl_easy_cleanup(curl);
    return (int)code;
}

/// A handle, or nil with `error` saying why; `*status` and `error` cleared.
static inline CURL *ccurl_start(long *status, char *error) {
    *status = 0;
    error[0] = 0;
    CURL *curl = curl_easy_init();
    if (!curl) strncpy(error, "libcurl could not make a handle", CURL_ERROR_SIZE - 1);
    return curl;
}

/// POSTs `body` to `url`, connecting only where `connect_to` says (CURLOPT_CONNECT_TO, "host:port:address:port":
/// the address the policy checked, so no second DNS lookup can move the request), with `headers` ("Name: value"),
/// and the common options (ccurl_set_common). The answer's body is read up to `max_body` bytes and dropped. Returns the
/// CURLcode; `*status` is the HTTP status (0 when none came), `error` (CURL_ERROR_SIZE bytes) says what failed.
static inline int ccurl_post(const char *url, const char *connect_to, const char *const *headers, int header_count,
                             const void *body, long body_length, long timeout_ms, long max_body, long *status, char *error) {
    CURL *curl = ccurl_start(status, error);
    if (!curl) return (int)CURLE_FAILED_INIT;
    struct curl_slist *list = NULL;
    for (int i = 0; i < header_count; i++) list = curl_slist_append(list, headers[i]);
    struct curl_slist *connect = curl_slist_append(NULL, connect_to);
    struct ccurl_sink sink = {0, (size_t)max_body};
    ccurl_set_common(curl, url, list, timeout_ms, "tabserver-webhooks/1", &sink, error);
    curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, body_length);
    int code = ccurl_perform(curl, status, error);
    curl_slist_free_all(list);
    curl_slist_free_all(connect);
    return code;
}

/// Sends a bodiless `method` request (a cache purge: `PURGE`) to `url` with `headers` and the common options. Unlike
/// ccurl_post it connects where the URL's name resolves (purge targets are the operator's own caches, often on
/// loopback; no address policy applies). Returns the CURLcode; `*status` and `error` as ccurl_post.
static inline int ccurl_request(const char *method, const char *url, const char *const *headers, int header_count,
                                long timeout_ms, long max_body, long *status, char *error) {
    CURL *curl = ccurl_start(status, error);
    if (!curl) return (int)CURLE_FAILED_INIT;
    struct curl_slist *list = NULL;
    for (int i = 0; i < header_count; i++) list = curl_slist_append(list, headers[i]);
    struct ccurl_sink sink = {0, (size_t)max_body};
    ccurl_set_common(curl, url, list, timeout_ms, "tabserver-purge/1", &sink, error);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    int code = ccurl_perform(curl, status, error);
    curl_slist_free_all(list);
    return code;
}
#endif
