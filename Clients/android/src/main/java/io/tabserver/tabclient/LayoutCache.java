package io.tabserver.tabclient;

import java.io.File;
import java.io.IOException;
import java.util.Collections;
import org.json.JSONObject;

/**
 * The last good layout of one account in one environment on disk, in one file, the format TabClient (Swift) writes:
 * {@code {"etag":"…","perInstall":true,"layout":{…the body as the server sent it…}}} ({@code perInstall} only when the
 * answer was one arm of a running rollout). The file is {@code <account>.tabs.json} for the server's default
 * environment and {@code <account>@<environment>.tabs.json} for a named one. Written with {@link AtomicFile}; a file
 * that does not decode or validate is treated as absent.
 */
final class LayoutCache {
    final File file;

    LayoutCache(File directory, String account, String environment) {
        file = new File(directory, (environment == null ? account : account + "@" + environment) + ".tabs.json");
    }

    /** What a cache file holds. */
    static final class Entry {
        final String etag;
        final boolean perInstall;
        final CompiledLayout layout;

        Entry(String etag, boolean perInstall, CompiledLayout layout) {
            this.etag = etag;
            this.perInstall = perInstall;
            this.layout = layout;
        }
    }

    /** The stored layout; null when there is no file. */
    Entry load() throws TabClientException {
        byte[] bytes;
        try {
            bytes = AtomicFile.read(file);
        } catch (IOException e) {
            throw TabClientException.invalidLayout(Collections.singletonList("cache file: " + e.getMessage()));
        }
        if (bytes == null) return null;
        try {
            JSONObject document = Json.parseObject(new String(bytes, CompiledLayout.UTF8));
            String etag = Json.string(document, "etag", "", true);
            Boolean perInstall = Json.bool(document, "perInstall", "");
            CompiledLayout layout = CompiledLayout.of(Json.object(document, "layout", "", true));
            return new Entry(etag, perInstall != null && perInstall, layout);
        } catch (Json.Invalid e) {
            throw TabClientException.invalidLayout(Collections.singletonList("cache file: " + e.getMessage()));
        }
    }

    /** Replaces the stored layout with {@code body} (a validated layout document) and its ETag, atomically. */
    void store(byte[] body, String etag, boolean perInstall) throws TabClientException {
        String head = "{\"etag\":" + JSONObject.quote(etag) + (perInstall ? ",\"perInstall\":true" : "") + ",\"layout\":";
        try {
            AtomicFile.write(file, head.getBytes(CompiledLayout.UTF8), body, new byte[] {'}'});
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + file + ": " + e.getMessage());
        }
    }

    void removeLeftovers() { AtomicFile.removeLeftovers(file); }

    void remove() { file.delete(); }
}
