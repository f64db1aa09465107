package io.tabserver.tabclient;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * What the launch guard keeps in the cache file, under {@code "guard"}, written atomically with the layout, as TabClient
 * (Swift) writes it: {@code {"blocked":[…],"gone":[…],"launches":k,"pending":n,"revoked":[…]}} (each member only when it holds
 * something, keys sorted).
 *
 * <p>A layout newly shown from the network, a prefetch or a switch is <em>pending</em> until the app calls
 * {@link TabClient#markRendered()}. A launch (a new client over the same cache directory) that finds it still pending
 * counts one more launch that ended before it; at {@code launchAttempts} such launches, or after {@code readyTimeout} in one
 * run, the client goes back to the last layout that rendered (else the bundle) and <b>blocks</b> that version: never shown
 * again, from the network, the cache, a prefetch or a switch. The bundle's own version is never blocked (the floor), and
 * a revert never starts another: what the client goes back to is never pending. {@code revoked} holds what the server
 * said is revoked (the manifest's {@code "revoked"}, the {@code Tabs-Revoked} header, a {@code 410 Gone} to {@code …/tabs?version=N}). Immutable: a change makes a new one.
 */
final class LaunchGuard {
    /** At most this many versions are kept blocked (and revoked): the oldest go first. */
    static final int LIMIT = 32;

    final Integer pending;
    final Integer launches;
    final List<Integer> blocked;
    final List<Integer> revoked;
    /** The versions of {@link #revoked} learnt from a {@code 410 Gone} to {@code …/tabs?version=N} that the server's lists have not named yet. */
    final List<Integer> gone;

    static final LaunchGuard EMPTY = new LaunchGuard(null, null, Collections.<Integer>emptyList(), Collections.<Integer>emptyList());

    LaunchGuard(Integer pending, Integer launches, List<Integer> blocked, List<Integer> revoked) {
        this(pending, launches, blocked, revoked, Collections.<Integer>emptyList());
    }

    LaunchGuard(Integer pending, Integer launches, List<Integer> blocked, List<Integer> revoked, List<Integer> gone) {
        this.pending = pending;
        this.launches = launches;
        this.blocked = Collections.unmodifiableList(new ArrayList<Integer>(last(blocked)));
        this.revoked = Collections.unmodifiableList(new ArrayList<Integer>(last(revoked)));
        this.gone = Collections.unmodifiableList(new ArrayList<Integer>(last(gone)));
    }

    private static List<Integer> last(List<Integer> list) {
        return list.size() <= LIMIT ? list : list.subList(list.size() - LIMIT, list.size());
    }

    boolean isEmpty() { return pending == null && blocked.isEmpty() && revoked.isEmpty() && gone.isEmpty(); }

    /** Whether {@code version} must not be shown. */
    boolean refuses(Integer version) { return version != null && (blocked.contains(version) || revoked.contains(version)); }

    LaunchGuard withPending(Integer version, Integer launchCount) { return new LaunchGuard(version, launchCount, blocked, revoked, gone); }

    /** This record with {@code version} blocked (and not pending). */
    LaunchGuard blocking(int version) {
        List<Integer> list = new ArrayList<Integer>(blocked);
        list.remove(Integer.valueOf(version));
        list.add(version);
        return new LaunchGuard(null, null, list, revoked, gone);
    }

    /**
     * This record with the server's newest list of revoked versions, keeping the versions {@link #gone} it does not name
     * yet: a list the server made before a version's revoke must not bring it back. A version the list names leaves
     * {@link #gone} (the server's lists speak for it from now on, an un-revoke too).
     */
    LaunchGuard withRevoked(List<Integer> versions) {
        List<Integer> stillGone = new ArrayList<Integer>();
        for (Integer version : gone) {
            if (!versions.contains(version)) stillGone.add(version);
        }
        List<Integer> list = new ArrayList<Integer>(versions);
        list.addAll(stillGone);
        return new LaunchGuard(pending, launches, blocked, list, stillGone);
    }

    /** This record with {@code version} revoked and {@link #gone}: what a {@code 410 Gone} to {@code …/tabs?version=N} says of it. */
    LaunchGuard withGone(int version) {
        List<Integer> list = new ArrayList<Integer>(revoked);
        list.remove(Integer.valueOf(version));
        list.add(version);
        List<Integer> goneNow = new ArrayList<Integer>(gone);
        if (!goneNow.contains(version)) goneNow.add(version);
        return new LaunchGuard(pending, launches, blocked, list, goneNow);
    }

    /** {@code ,"guard":{…}} to append to a cache file, or "" when the record is empty. */
    String fragment() {
        if (isEmpty()) return "";
        StringBuilder text = new StringBuilder(",\"guard\":{");
        int members = 0;
        if (!blocked.isEmpty()) members = member(text, members, "blocked", list(blocked));
        if (!gone.isEmpty()) members = member(text, members, "gone", list(gone));
        if (launches != null) members = member(text, members, "launches", launches.toString());
        if (pending != null) members = member(text, members, "pending", pending.toString());
        if (!revoked.isEmpty()) member(text, members, "revoked", list(revoked));
        return text.append('}').toString();
    }

    private static int member(StringBuilder text, int members, String name, String value) {
        if (members > 0) text.append(',');
        text.append('"').append(name).append("\":").append(value);
        return members + 1;
    }

    private static String list(List<Integer> values) {
        StringBuilder text = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) text.append(',');
            text.append(values.get(i));
        }
        return text.append(']').toString();
    }

    /** The record of a cache file's document (EMPTY when it has none, or one that does not parse). */
    static LaunchGuard of(JSONObject document) {
        JSONObject member = document == null ? null : document.optJSONObject("guard");
        if (member == null) return EMPTY;
        return new LaunchGuard(integer(member, "pending"), integer(member, "launches"), integers(member.optJSONArray("blocked")),
                integers(member.optJSONArray("revoked")), integers(member.optJSONArray("gone")));
    }

    private static Integer integer(JSONObject object, String name) {
        Object value = object.opt(name);
        return value instanceof Number ? Integer.valueOf(((Number) value).intValue()) : null;
    }

    private static List<Integer> integers(JSONArray array) {
        List<Integer> list = new ArrayList<Integer>();
        if (array == null) return list;
        for (int i = 0; i < array.length(); i++) {
            Object value = array.opt(i);
            if (value instanceof Number) list.add(((Number) value).intValue());
        }
        return list;
    }

    /** The versions of a {@code Tabs-Revoked: 5, 7} header (null when absent; what does not parse is skipped). */
    static List<Integer> revokedHeader(String header) {
        if (header == null) return null;
        List<Integer> list = new ArrayList<Integer>();
        for (String part : header.split(",")) {
            try {
                list.add(Integer.parseInt(part.trim()));
            } catch (NumberFormatException e) {
                // Skipped.
            }
        }
        return list;
    }

    /** The launch's verdict on the cache file's pending layout: null to show it as it is, else the record to write. */
    static final class Verdict {
        final LaunchGuard record;
        /** The version to go back from (blocked in {@link #record}), or null: still pending, this launch counted. */
        final Integer revert;

        Verdict(LaunchGuard record, Integer revert) {
            this.record = record;
            this.revert = revert;
        }
    }

    /** A pure decision: the record, the version the file holds, the bundle's version and {@code launchAttempts}. */
    static Verdict atLaunch(LaunchGuard record, Integer holding, Integer bundleVersion, int attempts) {
        if (attempts <= 0 || record.pending == null || !record.pending.equals(holding)) return null;
        int ended = record.launches == null ? 1 : record.launches;
        if (ended >= attempts && !record.pending.equals(bundleVersion)) return new Verdict(record.blocking(record.pending), record.pending);
        return new Verdict(record.withPending(record.pending, ended + 1), null);
    }

    private static final String PREVIOUS = ",\"previous\":{\"etag\":";

    /** The file's text, or null. */
    static String text(LayoutCache cache) {
        try {
            byte[] bytes = AtomicFile.read(cache.file);
            return bytes == null ? null : new String(bytes, CompiledLayout.UTF8);
        } catch (IOException e) {
            return null;
        }
    }

    /** {@code text} (a cache file as {@link LayoutCache#store} writes it) without its record and its "previous"; null when not in that form. */
    static String strip(String text) {
        int layout = text == null ? -1 : text.indexOf(",\"layout\":{");
        if (layout < 0) return null;
        String head = withoutRecord(text.substring(0, layout));
        String tail = text.substring(layout);
        int previous = tail.lastIndexOf(PREVIOUS);
        if (previous >= 0) tail = tail.substring(0, previous) + "}";
        return head + tail;
    }

    /** {@code head} (a cache file's text before its top-level "layout") without the record's member, which holds no object. */
    private static String withoutRecord(String head) {
        int start = head.indexOf(",\"guard\":{");
        if (start < 0) return head;
        int end = head.indexOf('}', start);
        return end < 0 ? head : head.substring(0, start) + head.substring(end + 1);
    }

    /** The file's "previous" (the last layout that rendered) as a cache file's text, or null. */
    static String previous(LayoutCache cache) {
        String text = text(cache);
        int start = text == null ? -1 : text.lastIndexOf(PREVIOUS);
        if (start < 0 || !text.endsWith("}")) return null;
        return text.substring(start + ",\"previous\":".length(), text.length() - 1);
    }

    /** Makes {@code entry} (a cache file's text) the file again, with {@code record}, atomically; false when it is not one. */
    static boolean restore(LayoutCache cache, String entry, LaunchGuard record) {
        int layout = entry.indexOf(",\"layout\":{");
        if (layout < 0) return false;
        try {
            AtomicFile.write(cache.file, (entry.substring(0, layout) + record.fragment() + entry.substring(layout)).getBytes(CompiledLayout.UTF8));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Writes {@code record} into {@code cache}'s file, keeping its layout ({@code dropLayout}: without it, the bundle
     * shown), atomically. A file as {@link LayoutCache#store} writes it keeps its bytes but for the record (which stands
     * just before the top-level {@code "layout"} and holds no object); another is written again from its JSON. No file is
     * left for an empty record and no layout.
     */
    static void store(LayoutCache cache, LaunchGuard record, boolean dropLayout) throws TabClientException {
        try {
            byte[] bytes = dropLayout ? null : AtomicFile.read(cache.file);
            String text = bytes == null ? null : new String(bytes, CompiledLayout.UTF8);
            int layout = text == null ? -1 : text.indexOf(",\"layout\":{");
            if (layout >= 0) {
                String head = withoutRecord(text.substring(0, layout));
                String tail = text.substring(layout);
                int previous = tail.lastIndexOf(PREVIOUS);
                if (record.pending == null && previous >= 0) {
                    // Nothing pending: the last layout that rendered is the one stored, and its copy goes.
                    tail = tail.substring(0, previous) + "}";
                    cache.previous = null;
                }
                AtomicFile.write(cache.file, (head + record.fragment() + tail).getBytes(CompiledLayout.UTF8));
                return;
            }
            JSONObject object = new JSONObject();
            if (text != null) {
                try {
                    JSONObject read = new JSONObject(text);
                    if (read.has("layout")) object = read;
                } catch (JSONException e) {
                    // Nothing to keep.
                }
            }
            object.remove("guard");
            if (object.length() == 0 && record.isEmpty()) {
                cache.remove();
                return;
            }
            String document = object.toString();
            String fragment = record.fragment();
            if (!fragment.isEmpty()) {
                document = document.substring(0, document.length() - 1) + (object.length() == 0 ? fragment.substring(1) : fragment) + "}";
            }
            AtomicFile.write(cache.file, document.getBytes(CompiledLayout.UTF8));
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + cache.file + ": " + e.getMessage());
        }
    }
}
