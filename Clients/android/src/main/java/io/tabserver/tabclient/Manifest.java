package io.tabserver.tabclient;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * {@code GET …/tabs/manifest} (API.md, "One answer for every install"): the same bytes for every install, from which a
 * client in manifest mode chooses its arm of a rollout itself ({@link #versionFor}) and fetches that version by number.
 */
public final class Manifest {
    public final String account;
    public final String environment;
    /** The layout served: the account's, or {@code default}; null when not said. */
    public final String layout;
    /** Grows with every change to this manifest; an older one never replaces a newer one. */
    public final long revision;
    public final int stableVersion;
    /** The running (or scheduled) rollout, or null. */
    public final Rollout rollout;

    /** A rollout as the manifest gives it. */
    public static final class Rollout {
        public final int id;
        public final int version;
        public final String seed;
        /** The share now, 0 to 100. */
        public final double percent;
        /** Installs that get the candidate whatever their bucket. */
        public final List<String> installs;

        Rollout(JSONObject json) throws Json.Invalid {
            id = required(Json.integer(json, "id", "/rollout"), "/rollout/id");
            version = required(Json.integer(json, "version", "/rollout"), "/rollout/version");
            seed = Json.string(json, "seed", "/rollout", true);
            Double share = Json.number(json, "percent", "/rollout");
            if (share == null) throw new Json.Invalid("/rollout/percent: required key is missing");
            percent = share;
            JSONArray array = Json.array(json, "installs", "/rollout", false);
            List<String> list = new ArrayList<String>();
            for (int i = 0; array != null && i < array.length(); i++) {
                Object value = array.opt(i);
                if (!(value instanceof String)) throw new Json.Invalid("/rollout/installs/" + i + ": expected a string");
                list.add((String) value);
            }
            installs = Collections.unmodifiableList(list);
        }
    }

    private Manifest(JSONObject json) throws Json.Invalid {
        account = Json.string(json, "account", "", true);
        environment = Json.string(json, "environment", "", true);
        layout = Json.string(json, "layout", "", false);
        Long changed = Json.whole(json, "revision", "");
        if (changed == null) throw new Json.Invalid("/revision: required key is missing");
        revision = changed;
        stableVersion = required(Json.integer(Json.object(json, "stable", "", true), "version", "/stable"), "/stable/version");
        JSONObject running = Json.object(json, "rollout", "", false);
        rollout = running == null ? null : new Rollout(running);
    }

    private static int required(Integer value, String pointer) throws Json.Invalid {
        if (value == null) throw new Json.Invalid(pointer + ": required key is missing");
        return value;
    }

    /** Decodes a manifest; INVALID_MANIFEST when it is not one. */
    public static Manifest parse(byte[] body) throws TabClientException {
        try {
            return new Manifest(Json.parseObject(new String(body, CompiledLayout.UTF8)));
        } catch (Json.Invalid e) {
            throw new TabClientException(TabClientException.Kind.INVALID_MANIFEST, "invalid manifest: " + e.getMessage());
        }
    }

    /**
     * The version {@code installId} gets: the rollout's when its {@link Bucket#of bucket} is below {@code percent × 100}
     * or it is one of {@code installs}, else the stable one.
     */
    public int versionFor(String installId) {
        if (rollout == null) return stableVersion;
        if (rollout.installs.contains(installId)) return rollout.version;
        // In basis points as the server keeps the share (0.07 % is 7, although 0.07 × 100 is 7.000000000000001).
        return Bucket.of(installId, rollout.seed) < Math.round(rollout.percent * 100) ? rollout.version : stableVersion;
    }
}
