package io.tabserver.tabclient;

/**
 * What happened to one request of a {@link TabClient} (see {@link TabClientConfig.Builder#onEvent}), naming the layouts
 * it concerns: for logs and tests.
 */
public final class TabClientEvent {
    public enum Kind {
        /** A request went out to revalidate {@link #shown}; {@link #longPoll} when the server may hold it. */
        REQUEST_SENT,
        /** {@code 304}: {@link #shown} is the server's layout. */
        NOT_MODIFIED,
        /** {@code 200} carrying the ETag of the layout shown: nothing changed, nothing was written to disk. */
        UNCHANGED,
        /**
         * {@code 200} with a valid layout ({@link #layout}), now shown and stored, in place of {@link #shown}; or, in
         * manifest mode, the prefetched candidate shown when its step came (its source: this run's server, or the cache).
         */
        UPDATED,
        /**
         * {@code 200} with a lower {@code version} of the layout shown ({@link #layout}), or a prefetched candidate whose step
         * came when a newer version of it was shown: dropped, {@link #shown} stays.
         */
        DROPPED_OLDER,
        /**
         * Manifest mode: a manifest with a lower revision ({@link #revision}) than the one followed ({@link #keptRevision}):
         * ignored.
         */
        DROPPED_OLDER_MANIFEST,
        /** The answer was refused (INVALID_SIGNATURE too) or could not be stored ({@link #error}); {@link #shown} stays; {@link #retryInMillis}. */
        FAILED,
        /**
         * The cache file could not be used and was removed ({@link #error}); {@link #shown} is the bundled layout. (Or the
         * prefetch file: its candidate is not kept, and {@link #shown} is the layout shown.)
         */
        CACHE_IGNORED,
        /**
         * The launch guard went back from {@link #version} (never rendered: {@link #reason} is {@code launchAttempts} or
         * {@code readyTimeout}) to the last layout that rendered, else the bundle ({@link #shown}), and blocked it.
         */
        REVERTED,
        /** An answer (or a manifest's choice, or a prefetch) of a blocked or revoked version ({@link #layout}): refused, nothing changed. */
        BLOCKED,
        /**
         * The server said {@link #version} is revoked (its list, or a {@code 410 Gone} to {@code …/tabs?version=N}, also for a
         * version not shown yet): dropped from the cache, the prefetch and the layout shown ({@link #shown}).
         */
        REVOKED
    }

    public final Kind kind;
    /** The layout shown after the event (for UPDATED: the one replaced). */
    public final LayoutReference shown;
    /** The layout that arrived (UPDATED, DROPPED_OLDER), else null. */
    public final LayoutReference layout;
    /** FAILED and CACHE_IGNORED: why; else null. */
    public final TabClientException error;
    /** FAILED: the delay before the long-poll asks again, or -1 (a refresh, a failed cache write). */
    public final long retryInMillis;
    /** REQUEST_SENT: the URL and whether it is a long-poll. */
    public final String url;
    public final boolean longPoll;
    /** DROPPED_OLDER_MANIFEST: the revision dropped and the one kept; else -1. */
    public final long revision;
    public final long keptRevision;
    /** REVERTED and REVOKED: the version; else -1. */
    public final int version;
    /** REVERTED: why ({@code launchAttempts} or {@code readyTimeout}); else null. */
    public final String reason;

    TabClientEvent(Kind kind, LayoutReference shown, LayoutReference layout, TabClientException error, long retryInMillis, String url,
            boolean longPoll) {
        this.kind = kind;
        this.shown = shown;
        this.layout = layout;
        this.error = error;
        this.retryInMillis = retryInMillis;
        this.url = url;
        this.longPoll = longPoll;
        this.revision = -1;
        this.keptRevision = -1;
        this.version = -1;
        this.reason = null;
    }

    private TabClientEvent(Kind kind, LayoutReference shown, int version, String reason) {
        this.kind = kind;
        this.shown = shown;
        this.layout = null;
        this.error = null;
        this.retryInMillis = -1;
        this.url = null;
        this.longPoll = false;
        this.revision = -1;
        this.keptRevision = -1;
        this.version = version;
        this.reason = reason;
    }

    static TabClientEvent reverted(int version, String reason, LayoutReference shown) { return new TabClientEvent(Kind.REVERTED, shown, version, reason); }

    static TabClientEvent revoked(int version, LayoutReference shown) { return new TabClientEvent(Kind.REVOKED, shown, version, null); }

    private TabClientEvent(LayoutReference shown, long revision, long keptRevision) {
        this.kind = Kind.DROPPED_OLDER_MANIFEST;
        this.shown = shown;
        this.layout = null;
        this.error = null;
        this.retryInMillis = -1;
        this.url = null;
        this.longPoll = false;
        this.revision = revision;
        this.keptRevision = keptRevision;
        this.version = -1;
        this.reason = null;
    }

    static TabClientEvent droppedOlderManifest(LayoutReference shown, long revision, long keptRevision) {
        return new TabClientEvent(shown, revision, keptRevision);
    }

    static TabClientEvent of(Kind kind, LayoutReference shown) { return new TabClientEvent(kind, shown, null, null, -1, null, false); }

    @Override
    public String toString() {
        StringBuilder text = new StringBuilder(kind.name());
        if (layout != null) text.append(' ').append(layout);
        if (error != null) text.append(' ').append(error.getMessage());
        if (version >= 0) text.append(" version ").append(version);
        if (reason != null) text.append(" (").append(reason).append(')');
        if (revision >= 0) text.append(" revision ").append(revision).append(" kept ").append(keptRevision);
        if (retryInMillis >= 0) text.append(" retry in ").append(retryInMillis).append(" ms");
        if (shown != null) text.append(" shown ").append(shown);
        return text.toString();
    }
}
