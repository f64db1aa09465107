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
 *
 * <p>In manifest mode a second file, {@code <account>.tabs.prefetch.json}, holds the candidate a rollout's coming step
 * will give this install, prefetched and not shown yet ({@link Prefetched}), as TabClient writes it:
 * {@code {"etag":…,"at":…,"revision":…,"keyid":…,"sig":…,"body":"…"}}, the answer's bytes as a JSON string (no base64,
 * which Android 24 lacks), so that they are verified and written again exactly.
 */
final class LayoutCache {
    final File file;
    /** The launch guard's record, written with every layout stored ({@link LaunchGuard}). */
    volatile LaunchGuard record = LaunchGuard.EMPTY;
    /**
     * The launch guard: the entry of the last layout that rendered (a cache file's text, without its record), written after
     * the layout as {@code "previous"} while the layout stored is pending; null: none.
     */
    volatile String previous;

    LayoutCache(File directory, String account, String environment) { this(directory, account, environment, false); }

    /** @param prefetch the file of the prefetched candidate instead of the layout's */
    LayoutCache(File directory, String account, String environment, boolean prefetch) {
        file = new File(directory, (environment == null ? account : account + "@" + environment) + (prefetch ? ".tabs.prefetch.json" : ".tabs.json"));
    }

    /** What a prefetch file holds. */
    static final class Prefetched {
        final String etag;
        /** The step's time, as the manifest wrote it. */
        final String at;
        /** The revision of the manifest that scheduled it. */
        final long revision;
        /** With pinned keys: the signature's key id and value; else null. */
        final String keyId;
        final String sig;
        /** The answer's bytes, as text. */
        final String body;

        Prefetched(String etag, String at, long revision, String keyId, String sig, String body) {
            this.etag = etag;
            this.at = at;
            this.revision = revision;
            this.keyId = keyId;
            this.sig = sig;
            this.body = body;
        }
    }

    /** The prefetch file's candidate (its layout is parsed by the caller, after the signature is checked); null when there is no file. */
    Prefetched loadPrefetched() throws TabClientException {
        byte[] bytes;
        try {
            bytes = AtomicFile.read(file);
        } catch (IOException e) {
            throw TabClientException.invalidLayout(Collections.singletonList("prefetch file: " + e.getMessage()));
        }
        if (bytes == null) return null;
        try {
            JSONObject document = Json.parseObject(new String(bytes, CompiledLayout.UTF8));
            Long revision = Json.whole(document, "revision", "");
            if (revision == null) throw new Json.Invalid("/revision: required key is missing");
            return new Prefetched(Json.string(document, "etag", "", true), Json.string(document, "at", "", true), revision,
                    Json.string(document, "keyid", "", false), Json.string(document, "sig", "", false), Json.string(document, "body", "", true));
        } catch (Json.Invalid e) {
            throw TabClientException.invalidLayout(Collections.singletonList("prefetch file: " + e.getMessage()));
        }
    }

    /**
     * Replaces the prefetch file with a candidate's bytes (as text), atomically.
     *
     * @param signature {@code {keyid, sig}} when keys are pinned, or null
     */
    void storePrefetched(String body, String etag, String at, long revision, String[] signature) throws TabClientException {
        StringBuilder document = new StringBuilder("{\"etag\":").append(JSONObject.quote(etag)).append(",\"at\":").append(JSONObject.quote(at))
                .append(",\"revision\":").append(revision);
        if (signature != null) {
            document.append(",\"keyid\":").append(JSONObject.quote(signature[0])).append(",\"sig\":").append(JSONObject.quote(signature[1]));
        }
        document.append(",\"body\":").append(JSONObject.quote(body)).append('}');
        try {
            AtomicFile.write(file, document.toString().getBytes(CompiledLayout.UTF8));
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + file + ": " + e.getMessage());
        }
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
            // What a revert to the bundle leaves: the guard's record and no layout.
            if (!document.has("layout") && document.has("guard")) return null;
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
        head.append(record.fragment()).append(",\"layout\":");
        try {
            String kept = previous;
            byte[] tail = kept == null ? new byte[] {'}'} : (",\"previous\":" + kept + "}").getBytes(CompiledLayout.UTF8);
            AtomicFile.write(file, head.toString().getBytes(CompiledLayout.UTF8), body, tail);
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + file + ": " + e.getMessage());
        }
    }

    /** The guard record of the cache file (EMPTY when there is none, or no file). */
    LaunchGuard loadGuard() {
        try {
            byte[] bytes = AtomicFile.read(file);
            if (bytes == null) return LaunchGuard.EMPTY;
            return LaunchGuard.of(new JSONObject(new String(bytes, CompiledLayout.UTF8)));
        } catch (IOException e) {
            return LaunchGuard.EMPTY;
        } catch (org.json.JSONException e) {
            return LaunchGuard.EMPTY;
        }
    }

    void removeLeftovers() { AtomicFile.removeLeftovers(file); }

    void remove() { file.delete(); }
}
