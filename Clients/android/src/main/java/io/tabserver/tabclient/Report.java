package io.tabserver.tabclient;

/** One report for {@code POST …/tabs/reports}: what happened to a layout version on this phone. */
public final class Report {
    public final int version;
    /** {@code rendered}, {@code tabFailed}, {@code reverted} or {@code refused}. */
    public final String kind;
    /** {@code tabFailed}: the tab's id; else null. */
    public final String tab;
    /** At most 200 characters, or null. */
    public final String reason;
    /** When it happened (RFC 3339, by the client's clock). */
    public final String at;

    Report(int version, String kind, String tab, String reason, String at) {
        this.version = version;
        this.kind = kind;
        this.tab = tab;
        this.reason = reason != null && reason.length() > 200 ? reason.substring(0, 200) : reason;
        this.at = at;
    }

    /** Whether {@code other} says the same (the time aside). */
    boolean same(Report other) {
        return version == other.version && kind.equals(other.kind) && (tab == null ? other.tab == null : tab.equals(other.tab))
                && (reason == null ? other.reason == null : reason.equals(other.reason));
    }

    @Override
    public String toString() {
        return kind + " v" + version + (tab != null ? " tab " + tab : "") + (reason != null ? " (" + reason + ")" : "") + " at " + at;
    }
}
