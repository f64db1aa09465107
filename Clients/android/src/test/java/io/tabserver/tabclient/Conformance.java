package io.tabserver.tabclient;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/** Reading the shared scenarios of {@code Clients/conformance} (its README describes the format). */
final class Conformance {
    private Conformance() {}

    /** {@code Clients/conformance}: {@code TABCLIENT_CONFORMANCE}, else {@code ../conformance} from Clients/android. */
    static Path directory() {
        String override = System.getenv("TABCLIENT_CONFORMANCE");
        Path path = override != null ? Paths.get(override) : Paths.get("..", "conformance");
        if (!Files.isDirectory(path.resolve("scenarios"))) {
            throw new IllegalStateException("no conformance scenarios at " + path.toAbsolutePath() + " (set TABCLIENT_CONFORMANCE)");
        }
        return path;
    }

    static JSONObject read(Path file) throws IOException {
        try {
            return Json.parseObject(new String(Files.readAllBytes(file), StandardCharsets.UTF_8));
        } catch (Json.Invalid e) {
            throw new IOException(file + ": " + e.getMessage());
        }
    }

    /** {@code signed/fixtures.json}'s fixtures: exact bodies with their signatures, made by {@code signed/make-fixtures.py}. */
    static JSONObject signedFixtures() throws IOException, JSONException {
        return read(directory().resolve("signed").resolve("fixtures.json")).getJSONObject("fixtures");
    }

    /**
     * A signed fixture's body (with {@code tamper} [from, to] replacing the first {@code from}, after signing) and its
     * {@code Tabs-Signature}.
     */
    static String[] signed(JSONObject fixtures, String name, JSONArray tamper) throws JSONException {
        if (!fixtures.has(name)) throw new IllegalArgumentException("no signed fixture " + name);
        JSONObject fixture = fixtures.getJSONObject(name);
        String body = fixture.getString("body");
        if (tamper != null) {
            int at = body.indexOf(tamper.getString(0));
            if (tamper.length() != 2 || at < 0) throw new IllegalArgumentException("tamper " + tamper + " does not apply to " + name);
            body = body.substring(0, at) + tamper.getString(1) + body.substring(at + tamper.getString(0).length());
        }
        return new String[] {body, fixture.getString("signature")};
    }

    /** {@code {"body": base64, "keyid", "sig"}}: how bundles and cache files keep a signed body. */
    static JSONObject signedMember(String body, String signature) throws JSONException {
        String[] parsed = SigningKeys.parseHeader(signature);
        JSONObject member = new JSONObject();
        member.put("body", java.util.Base64.getEncoder().encodeToString(body.getBytes(StandardCharsets.UTF_8)));
        member.put("keyid", parsed[0]);
        member.put("sig", parsed[1]);
        return member;
    }

    /** The bundle document as an app ships it. */
    static JSONObject bundle() throws IOException { return read(directory().resolve("jack.bundle.json")); }

    /** A layout of the scenario format: the bundle's first layout with {@code version}, {@code title}, {@code name}, {@code brokenTag}. */
    static JSONObject layout(JSONObject spec, JSONObject bundle) throws JSONException {
        JSONObject layout = new JSONObject(bundle.getJSONArray("representations").getJSONObject(0).getJSONObject("layout").toString());
        if (spec.has("version")) {
            layout.put("version", spec.getInt("version"));
            layout.getJSONArray("tabs").getJSONObject(0).put("title", "Version " + spec.getInt("version"));
        }
        if (spec.has("title")) layout.getJSONArray("tabs").getJSONObject(0).put("title", spec.getString("title"));
        if (spec.has("name")) layout.put("layout", spec.getString("name"));
        if (spec.optBoolean("brokenTag")) layout.getJSONArray("tabs").getJSONObject(1).put("tag", 9);
        // Keys of newer layouts: merged into the appearance, the first tab, the document.
        JSONObject appearance = spec.optJSONObject("appearance");
        for (String key : appearance == null ? Collections.<String>emptyList() : Json.keys(appearance)) {
            layout.getJSONObject("appearance").put(key, appearance.get(key));
        }
        JSONObject firstTab = spec.optJSONObject("firstTab");
        for (String key : firstTab == null ? Collections.<String>emptyList() : Json.keys(firstTab)) {
            layout.getJSONArray("tabs").getJSONObject(0).put(key, firstTab.get(key));
        }
        JSONObject extra = spec.optJSONObject("extra");
        for (String key : extra == null ? Collections.<String>emptyList() : Json.keys(extra)) layout.put(key, extra.get(key));
        return layout;
    }

    /** What differs between a layout and an expected one (only the keys given), or null. */
    static String compare(JSONObject expected, CompiledLayout actual) throws JSONException {
        List<String> differences = new ArrayList<>();
        if (expected.has("version") && (actual.version == null || actual.version != expected.getInt("version"))) {
            differences.add("version " + actual.version + ", expected " + expected.getInt("version"));
        }
        if (expected.has("title") && !actual.tabs.get(0).title.equals(expected.getString("title"))) {
            differences.add("first title '" + actual.tabs.get(0).title + "', expected '" + expected.getString("title") + "'");
        }
        if (expected.has("name") && !actual.layout.equals(expected.getString("name"))) {
            differences.add("layout '" + actual.layout + "', expected '" + expected.getString("name") + "'");
        }
        return differences.isEmpty() ? null : String.join(", ", differences);
    }

    static List<String> strings(JSONArray array) throws JSONException {
        List<String> list = new ArrayList<>();
        for (int i = 0; i < array.length(); i++) list.add(array.getString(i));
        return list;
    }

    static List<String> directoryListing(File directory) {
        String[] names = directory.list();
        List<String> list = names == null ? new ArrayList<>() : new ArrayList<>(Arrays.asList(names));
        Collections.sort(list);
        return list;
    }
}
