package io.tabserver.tabclient;

import java.util.Collections;
import java.util.List;

/** Everything that can go wrong between a {@link TabClient} and its server, disk or bundle (TabClientError in Swift). */
public final class TabClientException extends Exception {
    private static final long serialVersionUID = 1L;

    /** What went wrong. */
    public enum Kind {
        /** The document is not a layout a tab bar can show; {@link #problems()} lists every problem. */
        INVALID_LAYOUT,
        /** The bundled {@code …/tabs/bundle} document cannot be used. */
        INVALID_BUNDLE,
        /** A status the client does not accept (4xx, 5xx, or an unexpected one): {@link #status()}. */
        UNEXPECTED_STATUS,
        /** A {@code 200} without an {@code ETag}: the client could never revalidate it. */
        MISSING_ETAG,
        /** The request did not complete: no connection, reset, TLS, DNS, a connection closed mid-answer. */
        TRANSPORT,
        /** No complete answer before the request's deadline. */
        TIMED_OUT,
        /** A file could not be written to the cache directory (the previous copy is intact). */
        CACHE_WRITE_FAILED,
        /** The configured environment is not an environment name ({@code [a-z][a-z0-9_-]{0,31}}). */
        INVALID_ENVIRONMENT,
        /** The configured install id cannot be sent as {@code X-Install-Id}. */
        INVALID_INSTALL_ID,
        /** The configured app version is not a dotted version ({@code 2.1}, {@code 3.0.2}). */
        INVALID_APP_VERSION,
        /**
         * With pinned {@link SigningKeys}: a layout or manifest (from the network, the cache file or the bundle) whose
         * signature is missing, by a key not pinned, or does not verify. It is refused and the last good layout kept.
         */
        INVALID_SIGNATURE,
        /** {@link SigningKeys} given something that is not an Ed25519 public key, no key, or a runtime without Ed25519. */
        INVALID_SIGNING_KEY,
        /** A {@code …/tabs/manifest} answer that is not a manifest (manifest mode). */
        INVALID_MANIFEST,
        /** The client was stopped while the request was in flight. */
        CANCELLED
    }

    private final Kind kind;
    private final int status;
    private final String detail;
    private final long retryAfterMillis;
    private final List<String> problems;

    TabClientException(Kind kind, String message) {
        this(kind, message, 0, null, -1, Collections.<String>emptyList());
    }

    /** {@code message} is capped and escaped ({@link Strings#capped}): an error never carries a whole answer. */
    TabClientException(Kind kind, String message, int status, String detail, long retryAfterMillis, List<String> problems) {
        super(Strings.capped(message, Strings.MESSAGE_BYTES));
        this.kind = kind;
        this.status = status;
        this.detail = detail;
        this.retryAfterMillis = retryAfterMillis;
        this.problems = Collections.unmodifiableList(problems);
    }

    static TabClientException invalidLayout(List<String> problems) {
        return new TabClientException(Kind.INVALID_LAYOUT, "invalid layout: " + Strings.join("; ", problems), 0, null, -1, problems);
    }

    static TabClientException status(int status, String quoted, long retryAfterMillis) {
        String detail = Strings.capped(quoted, Strings.QUOTED_BYTES);
        StringBuilder text = new StringBuilder("HTTP ").append(status);
        if (detail != null) text.append(": ").append(detail);
        if (retryAfterMillis >= 0) text.append(" (retry after ").append(retryAfterMillis).append(" ms)");
        return new TabClientException(Kind.UNEXPECTED_STATUS, text.toString(), status, detail, retryAfterMillis,
                Collections.<String>emptyList());
    }

    public Kind kind() { return kind; }

    /** The HTTP status of {@link Kind#UNEXPECTED_STATUS}, else 0. */
    public int status() { return status; }

    /** The problem+json {@code detail} (else {@code title}) of an error answer, or null. */
    public String detail() { return detail; }

    /** The delay {@code Retry-After} asked for, in milliseconds, or -1 when it asked for none. */
    public long retryAfterMillis() { return retryAfterMillis; }

    /** What is wrong with an invalid layout: {@code "/tabs/1/tag: the tag is 9, expected 1"}, one per problem. */
    public List<String> problems() { return problems; }
}
