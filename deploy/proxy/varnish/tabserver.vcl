vcl 4.1;
# Varnish 7 in front of tabserver (docs/deployment.md, "Behind a proxy or cache"). scripts/proxy-test runs this
# file as it is, changing only the line marked "proxy-test".
#
# Start varnishd with `-p http_gzip_support=off`: with it on, Varnish rewrites every Accept-Encoding to gzip and
# tabserver's brotli forms are never asked for. Run every replica with
# `--cache-control "max-age=0, s-maxage=5"`: Varnish then keeps a layout for 5 s (the longest a write takes to show
# through it) and answers 304 itself; apps revalidate every time (max-age=0).
#
# Purges: run tabserver with `--purge-url http://VARNISH:PORT/` and it sends `PURGE` with the keys a change made
# stale in `Surrogate-Key` (docs/delivery.md, "Purging caches"); this file drops every object carrying one of them
# (xkey, from Debian's varnish-modules). A rollback then reaches apps at once, not after the manifest's max-age.

import std;
import xkey;

# Who may purge: tabserver's addresses only (every replica's).
acl tabserver_purgers {
    "127.0.0.1";  # proxy-test
    "::1";
}

backend tabserver {
    .host = "127.0.0.1";
    .port = "8080";  # proxy-test
    .first_byte_timeout = 330s;  # a long-poll is held up to tabserver's --max-wait (300 s by default)
    .between_bytes_timeout = 1h;  # /v1/events is a stream
    .probe = {
        .request = "GET /readyz HTTP/1.1" "Host: tabserver" "Connection: close";
        .expected_response = 200;
        .interval = 2s;
        .timeout = 1s;
        .window = 3;
        .threshold = 2;
    }
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ tabserver_purgers) {
            return (synth(403, "Forbidden"));
        }
        if (!req.http.Surrogate-Key) {
            return (synth(400, "Surrogate-Key names the keys to purge"));
        }
        return (synth(200, "Purged " + xkey.purge(req.http.Surrogate-Key) + " objects"));
    }
    # Client plane only (the compiled layout, the legacy plist, the preview); everything else is passed.
    if (req.url !~ "^/v1/accounts/[A-Za-z0-9._-]+/(tabs|tabs/manifest|tabs/preview\.svg|ApplicationHierarchy\.plist)(\?|$)") {
        return (pass);
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.http.Authorization) {
        return (pass);
    }
    # A long-poll keeps the client's If-None-Match and is held by tabserver: never from the cache.
    if (req.url ~ "[?&]wait=" || req.http.Prefer ~ "(?i)(^|[,; \t])wait=") {
        return (pass);
    }
    unset req.http.Cookie;

    # A field sent on several lines is one list (RFC 9110 §5.3), as tabserver reads it.
    std.collect(req.http.Accept);
    std.collect(req.http.Accept-Language);
    std.collect(req.http.Accept-Encoding);
    std.collect(req.http.X-Client-Platform);
    std.collect(req.http.X-App-Version);
    std.collect(req.http.If-None-Match);

    # Accept-Language reduced to the locale the server would choose, so that `fr-FR` and `fr-CA,fr;q=0.9,en;q=0.8`
    # share one cached copy: only a first language without a q-value (the client's first choice), to the first
    # locale tested here that it starts with. Test a language only when it has a global strings table (every layout
    # then has it), and before it each regional locale of it that any layout has (fr-CA before fr). Anything else is
    # kept as it came. Varnish keys on these values through tabserver's Vary, and tabserver receives the same ones.
    if (req.http.Accept-Language ~ "(?i)^[ \t]*fr([-_][a-z0-9]+)*[ \t]*(,|$)") {
        set req.http.Accept-Language = "fr";
    } elsif (req.http.Accept-Language ~ "(?i)^[ \t]*en([-_][a-z0-9]+)*[ \t]*(,|$)") {
        set req.http.Accept-Language = "en";
    }

    # Accept-Encoding reduced to the coding tabserver will pick: br or gzip when named without a q-value (or with
    # q=1); anything else as it came.
    if (req.http.Accept-Encoding ~ "(?i)(^|,)[ \t]*br[ \t]*(;[ \t]*q=1(\.0{0,3})?[ \t]*)?(,|$)") {
        set req.http.Accept-Encoding = "br";
    } elsif (req.http.Accept-Encoding ~ "(?i)(^|,)[ \t]*(x-)?gzip[ \t]*(;[ \t]*q=1(\.0{0,3})?[ \t]*)?(,|$)") {
        set req.http.Accept-Encoding = "gzip";
    } elsif (req.http.Accept-Encoding ~ "^[ \t]*$") {
        unset req.http.Accept-Encoding;
    }
    return (hash);
}

sub vcl_backend_response {
    if (bereq.uncacheable) {
        return (deliver);
    }
    # xkey indexes each object by the keys of its xkey field (space-separated).
    set beresp.http.xkey = beresp.http.Surrogate-Key;
    # No grace: a copy older than s-maxage is never served while a new one is fetched, so a write shows within
    # s-maxage. Expired copies are kept an hour to revalidate them with If-None-Match (a 304 from tabserver).
    set beresp.grace = 0s;
    set beresp.keep = 1h;
}

sub vcl_deliver {
    unset resp.http.xkey;
    if (obj.uncacheable) {
        set resp.http.X-Cache = "pass";
    } elsif (obj.hits > 0) {
        set resp.http.X-Cache = "hit";
    } else {
        set resp.http.X-Cache = "miss";
    }
}
