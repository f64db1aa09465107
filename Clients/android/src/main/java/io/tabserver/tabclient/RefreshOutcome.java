package io.tabserver.tabclient;

/** What {@link TabClient#refresh()} found. */
public final class RefreshOutcome {
    public enum Kind {
        /** {@code 304}: the current layout is the server's. */
        NOT_MODIFIED,
        /** {@code 200} carrying the ETag of the current layout: it stays, the cache file is not written again. */
        UNCHANGED,
        /** {@code 200} with {@link #layout}, now current and stored. */
        UPDATED,
        /** {@code 200} with a lower {@code version} of the layout shown ({@link #dropped}): the current one stays ({@link #kept}). */
        DROPPED_OLDER,
        /** Manifest mode: a manifest with a lower revision than the one followed (a lagging cache): ignored. */
        DROPPED_OLDER_MANIFEST,
        /** {@code 200} (or a manifest's choice) of a version the launch guard blocked or the server revoked ({@link #dropped}): nothing changed. */
        BLOCKED,
        /**
         * Manifest mode: {@code …/tabs?version=N} answered {@code 410 Gone}: version N ({@link #dropped}) was revoked
         * meanwhile. It is refused from now on ({@link TabClient#revokedVersions()}) as if the server had listed it, with a
         * REVOKED event; {@link #kept} is the layout shown now: the one before, or, when it was N, the last layout that
         * rendered, else the bundle.
         */
        REVOKED
    }

    public final Kind kind;
    /** UPDATED: the new layout. */
    public final CompiledLayout layout;
    /** DROPPED_OLDER: what arrived and what stayed; BLOCKED: what was refused and what stayed; REVOKED: the version revoked and what is shown. */
    public final LayoutReference dropped;
    public final LayoutReference kept;

    RefreshOutcome(Kind kind, CompiledLayout layout, LayoutReference dropped, LayoutReference kept) {
        this.kind = kind;
        this.layout = layout;
        this.dropped = dropped;
        this.kept = kept;
    }

    @Override
    public String toString() {
        switch (kind) {
            case UPDATED: return "UPDATED " + layout.layout + " v" + layout.version;
            case DROPPED_OLDER: return "DROPPED_OLDER " + dropped + " kept " + kept;
            case REVOKED: return "REVOKED " + dropped + " shown " + kept;
            default: return kind.name();
        }
    }
}
