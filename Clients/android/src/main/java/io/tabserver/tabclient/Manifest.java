package io.tabserver.tabclient;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * {@code GET …/tabs/manifest} (docs/rollouts.md, "Manifest mode"): the same bytes for every install, from which a
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
    /** The versions revoked in every environment (the newest 32; empty for none): never shown, dropped at once when shown. */
    public final List<Integer> revoked;

    /** A rollout as the manifest gives it. */
    public static final class Rollout {
        public final int id;
        public final int version;
        public final String seed;
        /** The share now, 0 to 100. */
        public final double percent;
        /** Installs that get the candidate whatever their bucket. */
        public final List<String> installs;
        /** The steps still to come with their times; empty while paused. */
        public final List<Step> schedule;

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
            JSONArray steps = Json.array(json, "schedule", "/rollout", false);
            List<Step> coming = new ArrayList<Step>();
            for (int i = 0; steps != null && i < steps.length(); i++) coming.add(new Step(Json.objectAt(steps, i, "/rollout/schedule"), i));
            schedule = Collections.unmodifiableList(coming);
        }

        /**
         * The share at {@code millis} by the device's clock, in basis points: the share now, or the largest of the steps
         * whose time has come (a manifest is cached no longer than its next step, so a step already past means the clock
         * reached it before the next manifest came; the share only grows).
         */
        long basisPoints(long millis) {
            long share = Math.round(percent * 100);
            for (Step step : schedule) {
                if (step.atMillis <= millis) share = Math.max(share, step.basisPoints());
            }
            return share;
        }
    }

    /** A coming step of a rollout: the share from its time on. */
    public static final class Step {
        /** The share, 0 to 100. */
        public final double percent;
        /** RFC 3339, e.g. {@code 2026-11-26T21:00:00.000Z}, and as milliseconds since 1970. */
        public final String at;
        public final long atMillis;

        Step(JSONObject json, int index) throws Json.Invalid {
            String pointer = "/rollout/schedule/" + index;
            Double share = Json.number(json, "percent", pointer);
            if (share == null) throw new Json.Invalid(pointer + "/percent: required key is missing");
            percent = share;
            at = Json.string(json, "at", pointer, true);
            Long millis = Rfc3339.millis(at);
            if (millis == null) throw new Json.Invalid(pointer + "/at: " + JSONObject.quote(at) + " is not an RFC 3339 time");
            atMillis = millis;
        }

        /** {@link #percent} in basis points, as the server keeps a share (0.07 % is 7). */
        long basisPoints() { return Math.round(percent * 100); }
    }

    /** A coming step that moves an install to the rollout's candidate: the version, and when. */
    static final class Move {
        final int version;
        final long atMillis;
        /** The time as the manifest wrote it (kept with the prefetched candidate). */
        final String at;

        Move(int version, long atMillis, String at) {
            this.version = version;
            this.atMillis = atMillis;
            this.at = at;
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
        List<Integer> list = new ArrayList<Integer>();
        org.json.JSONArray array = json.optJSONArray("revoked");
        for (int i = 0; array != null && i < array.length(); i++) {
            Object value = array.opt(i);
            if (value instanceof Number) list.add(((Number) value).intValue());
        }
        revoked = Collections.unmodifiableList(list);
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

    /**
     * The version {@code installId} gets at {@code millis} by the device's clock: as {@link #versionFor(String)}, with the
     * share of the steps of the schedule whose time has come.
     */
    public int versionFor(String installId, long millis) {
        if (rollout == null) return stableVersion;
        if (rollout.installs.contains(installId)) return rollout.version;
        return Bucket.of(installId, rollout.seed) < rollout.basisPoints(millis) ? rollout.version : stableVersion;
    }

    /**
     * The first step after {@code millis} that moves {@code installId} to the candidate, when it does not have it then:
     * what a client prefetches, and when it switches. Null without a rollout, while paused (no steps), for an install
     * that has the candidate already and for one no coming step reaches.
     */
    Move move(String installId, long millis) {
        if (rollout == null || versionFor(installId, millis) == rollout.version) return null;
        int bucket = Bucket.of(installId, rollout.seed);
        Move first = null;
        for (Step step : rollout.schedule) {
            if (bucket < step.basisPoints() && step.atMillis > millis && (first == null || step.atMillis < first.atMillis)) {
                first = new Move(rollout.version, step.atMillis, step.at);
            }
        }
        return first;
    }
}
