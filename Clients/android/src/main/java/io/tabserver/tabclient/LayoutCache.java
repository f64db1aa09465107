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
 * that does not decode or validate is treated as absent. With pinned keys an answer keeps its exact bytes and signature
 * too, as a bundle entry does ({@code "signed":{"body":base64,"keyid","sig"}}), and the layout is read from those bytes;
 * in manifest mode {@code revision} is the revision of the manifest that chose it.
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
        /** Manifest mode: the revision of the manifest that chose this version, or null. */
        final Long revision;
        /** With pinned keys: the bytes signed, and the signature's key id and value; else null. */
        final byte[] signedBody;
        final String keyId;
        final String sig;

        Entry(String etag, boolean perInstall, CompiledLayout layout, Long revision, byte[] signedBody, String keyId, String sig) {
            this.etag = etag;
            this.perInstall = perInstall;
            this.layout = layout;
            this.revision = revision;
            this.signedBody = signedBody;
            this.keyId = keyId;
            this.sig = sig;
        }
    }

    /**
     * The stored layout; null when there is no file.
     *
     * @param signed keys are pinned: the layout is the one {@code signed.body} holds (verified by the caller)
     */
    Entry load(boolean signed) throws TabClientException {
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
            Long revision = Json.whole(document, "revision", "");
            JSONObject signature = signed ? Json.object(document, "signed", "", false) : null;
            if (signature == null) {
                CompiledLayout layout = CompiledLayout.of(Json.object(document, "layout", "", true));
                return new Entry(etag, perInstall != null && perInstall, layout, revision, null, null, null);
            }
            byte[] body = SigningKeys.Codec.decode(Json.string(signature, "body", "/signed", true));
            if (body == null) throw new Json.Invalid("/signed/body: not base64");
            return new Entry(etag, perInstall != null && perInstall, CompiledLayout.parse(body), revision, body,
                    Json.string(signature, "keyid", "/signed", true), Json.string(signature, "sig", "/signed", true));
        } catch (Json.Invalid e) {
            throw TabClientException.invalidLayout(Collections.singletonList("cache file: " + e.getMessage()));
        }
    }

    /**
     * Replaces the stored layout with {@code body} (a validated layout document) and its ETag, atomically.
     *
     * @param signature the answer's {@code {keyid, sig}} when keys are pinned (kept with the bytes, to verify them again), or null
     * @param revision manifest mode: the revision of the manifest that chose this version, or null
     */
    void store(byte[] body, String etag, boolean perInstall, String[] signature, Long revision) throws TabClientException {
        StringBuilder head = new StringBuilder("{\"etag\":").append(JSONObject.quote(etag));
        if (perInstall) head.append(",\"perInstall\":true");
        if (revision != null) head.append(",\"revision\":").append(revision.longValue());
        if (signature != null) {
            head.append(",\"signed\":{\"body\":").append(JSONObject.quote(SigningKeys.Codec.encode(body))).append(",\"keyid\":")
                    .append(JSONObject.quote(signature[0])).append(",\"sig\":").append(JSONObject.quote(signature[1])).append('}');
        }
        head.append(",\"layout\":");
        try {
            AtomicFile.write(file, head.toString().getBytes(CompiledLayout.UTF8), body, new byte[] {'}'});
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + file + ": " + e.getMessage());
        }
    }

    void removeLeftovers() { AtomicFile.removeLeftovers(file); }

    void remove() { file.delete(); }
}
