package io.tabserver.tabclient;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URL;
import java.text.ParseException;
import java.text.SimpleDateFormat;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.json.JSONObject;

/** One HTTP exchange over {@link HttpURLConnection}, with a deadline for the whole of it and cancellation. */
final class Http {
    /** The largest body read (a bundle is at most 8 MiB; a layout 2 MiB per locale). */
    static final int MAXIMUM_BODY = 8 << 20;

    /** Ends exchanges that outlive their deadline (a server that trickles bytes defeats a per-read timeout alone). */
    private static final ScheduledThreadPoolExecutor WATCHDOG = new ScheduledThreadPoolExecutor(1, new ThreadFactory() {
        @Override
        public Thread newThread(Runnable task) {
            Thread thread = new Thread(task, "tabclient-deadline");
            thread.setDaemon(true);
            return thread;
        }
    });

    static {
        WATCHDOG.setRemoveOnCancelPolicy(true);
    }

    private Http() {}

    /** One answer: status, header fields (read case-insensitively), body. */
    static final class Answer {
        final int status;
        final Map<String, List<String>> headers;
        final byte[] body;

        Answer(int status, Map<String, List<String>> headers, byte[] body) {
            this.status = status;
            this.headers = headers;
            this.body = body;
        }

        /** The field's value; several lines are one comma-separated list (RFC 9110 §5.3). */
        String header(String name) {
            for (Map.Entry<String, List<String>> field : headers.entrySet()) {
                if (field.getKey() != null && field.getKey().equalsIgnoreCase(name)) return Strings.join(", ", field.getValue());
            }
            return null;
        }

        /** Whether {@code Vary} names {@code X-Install-Id}: one arm of a running rollout. */
        boolean variesByInstall() {
            String vary = header("Vary");
            if (vary == null) return false;
            for (String name : vary.split(",")) {
                if (name.trim().equalsIgnoreCase("X-Install-Id")) return true;
            }
            return false;
        }

        /** {@code Retry-After} in milliseconds (delta-seconds or an HTTP date), or -1. */
        long retryAfterMillis() {
            String value = header("Retry-After");
            if (value == null) return -1;
            value = value.trim();
            try {
                long seconds = Long.parseLong(value);
                return seconds >= 0 ? seconds * 1000 : -1;
            } catch (NumberFormatException notSeconds) {
                SimpleDateFormat format = new SimpleDateFormat("EEE, dd MMM yyyy HH:mm:ss zzz", Locale.US);
                format.setTimeZone(TimeZone.getTimeZone("GMT"));
                try {
                    Date date = format.parse(value);
                    return Math.max(0, date.getTime() - System.currentTimeMillis());
                } catch (ParseException notADate) {
                    return -1;
                }
            }
        }

        /** The {@code detail} (else {@code title}) of a problem+json body, or null. */
        String problemDetail() {
            try {
                JSONObject problem = Json.parseObject(new String(body, CompiledLayout.UTF8));
                String detail = Json.string(problem, "detail", "", false);
                return detail != null ? detail : Json.string(problem, "title", "", false);
            } catch (Json.Invalid e) {
                return null;
            }
        }
    }

    /** One request in flight; {@link #cancel()} from any thread ends it. */
    static final class Call {
        private final HttpURLConnection connection;
        /** 0 running, 1 past its deadline, 2 cancelled. */
        private volatile int ended;
        /**
         * The head has arrived and the body is being read. The watchdog then leaves the connection alone: on a JVM a
         * disconnect in the middle of a body hands the socket to the keep-alive cleaner, which holds the stream's lock
         * while it drains what a trickling server still sends, and the reader waits on that lock (seen: 20 s for a
         * 1 s deadline). {@link #readAll} checks the deadline between reads instead.
         */
        private volatile boolean reading;

        Call(URL url, Map<String, String> headers, int timeoutMillis) throws TabClientException {
            try {
                connection = (HttpURLConnection) url.openConnection();
            } catch (IOException e) {
                throw new TabClientException(TabClientException.Kind.TRANSPORT, "no answer: " + e);
            }
            connection.setUseCaches(false);
            // Redirects are answers, never followed (see run): a redirect off the configured origin would take the
            // install id and the client's headers to another host.
            connection.setInstanceFollowRedirects(false);
            connection.setConnectTimeout(timeoutMillis);
            connection.setReadTimeout(timeoutMillis);
            for (Map.Entry<String, String> field : headers.entrySet()) connection.setRequestProperty(field.getKey(), field.getValue());
        }

        void cancel() {
            ended = 2;
            connection.disconnect();
        }

        /** Sends the request and reads the whole answer within {@code deadlineMillis}. */
        Answer run(long deadlineMillis) throws TabClientException {
            if (ended != 0) throw ended(deadlineMillis);
            long started = System.nanoTime();
            ScheduledFuture<?> deadline = WATCHDOG.schedule(new Runnable() {
                @Override
                public void run() {
                    if (ended == 0 && !reading) {
                        ended = 1;
                        connection.disconnect();
                    }
                }
            }, deadlineMillis, TimeUnit.MILLISECONDS);
            boolean complete = false;
            try {
                // Connected before the request is written: a cancel() that came before the socket existed (and so
                // closed nothing) is seen here, and one that comes later closes the socket.
                connection.connect();
                if (ended != 0) throw ended(deadlineMillis);
                int status = connection.getResponseCode();
                reading = true;
                if (ended != 0) throw ended(deadlineMillis);
                InputStream stream = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
                byte[] body = stream == null ? new byte[0] : readAll(stream, started + deadlineMillis * 1000000);
                if (ended != 0) throw ended(deadlineMillis);
                complete = true;
                Answer answer = new Answer(status, connection.getHeaderFields(), body);
                if (status >= 300 && status < 400 && status != 304) throw redirect(answer, connection.getURL());
                return answer;
            } catch (SocketTimeoutException e) {
                if (ended == 2) throw ended(deadlineMillis);
                throw new TabClientException(TabClientException.Kind.TIMED_OUT, "no answer within " + deadlineMillis + " ms");
            } catch (IOException e) {
                if (ended != 0) throw ended(deadlineMillis);
                throw new TabClientException(TabClientException.Kind.TRANSPORT, "no answer: " + e);
            } finally {
                deadline.cancel(false);
                // A complete answer leaves its connection to the keep-alive pool; anything else closes it.
                if (!complete) connection.disconnect();
            }
        }

        /**
         * A redirect, refused: to another origin (scheme, host, port) it would carry the install id away, and to the same
         * origin it means a misconfigured server URL (tabserver never redirects). The detail says which.
         */
        private static TabClientException redirect(Answer answer, URL from) {
            String location = answer.header("Location");
            String where;
            if (location == null) {
                where = "a redirect without a Location";
            } else {
                String origin;
                try {
                    URL to = new URL(from, location);
                    origin = sameOrigin(from, to) ? "the same origin" : "another origin";
                } catch (java.net.MalformedURLException e) {
                    origin = "no URL";
                }
                where = "a redirect to " + Strings.capped(location, Strings.QUOTED_BYTES) + " (" + origin + "), not followed";
            }
            return TabClientException.status(answer.status, where, answer.retryAfterMillis());
        }

        private TabClientException ended(long deadlineMillis) {
            return ended == 2 ? new TabClientException(TabClientException.Kind.CANCELLED, "cancelled")
                    : new TabClientException(TabClientException.Kind.TIMED_OUT, "no answer within " + deadlineMillis + " ms");
        }
    }

    /** Whether two URLs have one origin: scheme, host and port (a default port spelled out or not). */
    static boolean sameOrigin(URL a, URL b) {
        int portA = a.getPort() == -1 ? a.getDefaultPort() : a.getPort();
        int portB = b.getPort() == -1 ? b.getDefaultPort() : b.getPort();
        return a.getProtocol().equalsIgnoreCase(b.getProtocol()) && a.getHost().equalsIgnoreCase(b.getHost()) && portA == portB;
    }

    /** Whether {@code etag} is one of {@code sent} (weak comparison: {@code W/} is ignored on either side). */
    static boolean sentETag(String etag, java.util.List<String> sent) {
        String bare = etag.trim().startsWith("W/") ? etag.trim().substring(2) : etag.trim();
        for (String tag : sent) {
            String other = tag.trim().startsWith("W/") ? tag.trim().substring(2) : tag.trim();
            if (bare.equals(other)) return true;
        }
        return false;
    }

    /**
     * The whole body, before {@code deadlineNanos} ({@link System#nanoTime()}) or a {@link SocketTimeoutException}: a
     * disconnect from another thread does not end a body being read on a JVM, and the read timeout bounds each read
     * only, so the deadline is checked between reads (a server trickling bytes is cut off at most one read late).
     */
    static byte[] readAll(InputStream stream, long deadlineNanos) throws IOException {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] chunk = new byte[16384];
            for (int n; (n = stream.read(chunk)) > 0;) {
                if (System.nanoTime() - deadlineNanos > 0) throw new SocketTimeoutException("the answer took longer than its deadline");
                bytes.write(chunk, 0, n);
                if (bytes.size() > MAXIMUM_BODY) throw new IOException("the answer is larger than " + MAXIMUM_BODY + " bytes");
            }
            return bytes.toByteArray();
        } finally {
            stream.close();
        }
    }
}
