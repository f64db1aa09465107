package io.tabserver.tabclient;

/** Which layout something concerns: its name, {@code version}, {@code ETag} and where the client got it. */
public final class LayoutReference {
    /** The account the layout was compiled from ({@link CompiledLayout#layout}). */
    public final String layout;
    /** {@link CompiledLayout#version}, or null when the server has none. */
    public final Integer version;
    /** Its entity tag (a bundled layout has one per content coding: the first is given), or null. */
    public final String etag;
    public final TabClient.Source source;

    public LayoutReference(String layout, Integer version, String etag, TabClient.Source source) {
        this.layout = layout;
        this.version = version;
        this.etag = etag;
        this.source = source;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof LayoutReference)) return false;
        LayoutReference that = (LayoutReference) other;
        return layout.equals(that.layout) && same(version, that.version) && same(etag, that.etag) && source == that.source;
    }

    private static boolean same(Object a, Object b) { return a == null ? b == null : a.equals(b); }

    @Override
    public int hashCode() { return layout.hashCode() * 31 + (etag == null ? 0 : etag.hashCode()); }

    /** {@code jack v21 "etag" (cache)}. */
    @Override
    public String toString() {
        return layout + " v" + (version == null ? "?" : version.toString()) + " " + (etag == null ? "no ETag" : etag) + " ("
                + source.name().toLowerCase(java.util.Locale.ROOT) + ")";
    }
}
