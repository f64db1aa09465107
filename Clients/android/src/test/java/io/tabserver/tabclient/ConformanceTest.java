package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** Every scenario of {@code Clients/conformance/scenarios}, against a {@link FakeServer} on a real socket. */
class ConformanceTest {
    @TestFactory
    Stream<DynamicTest> everyScenario() throws IOException {
        List<Path> files;
        try (Stream<Path> listing = Files.list(Conformance.directory().resolve("scenarios"))) {
            files = listing.filter(p -> p.toString().endsWith(".json")).sorted().collect(Collectors.toList());
        }
        assertFalse(files.size() < 12, "at least 12 scenarios, found " + files.size());
        return files.stream().map(file -> DynamicTest.dynamicTest(file.getFileName().toString(), () -> new Run(file).run()));
    }

    /** One scenario's run: its server, cache directory, client and what happened. */
    static final class Run {
        final Path file;
        final JSONObject scenario;
        final JSONObject bundleDocument;
        final JSONObject signedFixtures;
        /** The scenario format's known keys ({@code scenario.schema.json}). */
        final ScenarioSchema schema;
        final List<String> failures = new ArrayList<>();
        final List<TabClientEvent> events = Collections.synchronizedList(new ArrayList<>());
        TabClientConfig config;
        LayoutBundle bundle;
        File cacheDirectory;
        TabClient client;
        String previousInstallId;
        /** The cache file's bytes and inode at the end of the last step (null: no file). */
        Object[] cacheSnapshot;
        /** The device's clock: {@code config.clock}, moved only by a step's {@code clock}. */
        ManualClock clock;

        Run(Path file) throws IOException, JSONException {
            this.file = file;
            scenario = Conformance.read(file);
            bundleDocument = Conformance.bundle();
            signedFixtures = Conformance.signedFixtures();
            schema = ScenarioSchema.load();
        }

        void run() throws Exception {
            schema.checkKeys(scenario);
            JSONObject c = scenario.optJSONObject("config") == null ? new JSONObject() : scenario.getJSONObject("config");
            clock = ManualClock.at(c.optString("clock", "2026-01-01T00:00:00Z"));
            if (scenario.has("bundle")) {
                JSONObject changes = scenario.getJSONObject("bundle");
                JSONObject representation = bundleDocument.getJSONArray("representations").getJSONObject(0);
                if (changes.has("signed")) {
                    String[] signed = Conformance.signed(signedFixtures, changes.getString("signed"), changes.optJSONArray("tamper"));
                    String original = Conformance.signed(signedFixtures, changes.getString("signed"), null)[0];
                    representation.put("layout", new JSONObject(original));
                    representation.put("signed", Conformance.signedMember(signed[0], signed[1]));
                }
                if (changes.has("version")) representation.getJSONObject("layout").put("version", changes.getInt("version"));
            }
            SigningKeys keys = null;
            if (c.has("signingKeys")) keys = SigningKeys.fromBase64(Conformance.strings(c.getJSONArray("signingKeys")));
            if (c.has("signingKeysDocument")) keys = SigningKeys.fromKeysDocument(c.getJSONObject("signingKeysDocument").toString());
            bundle = LayoutBundle.parse(bundleDocument.toString());
            cacheDirectory = c.optBoolean("cache", true) ? Files.createTempDirectory("tabclient-conformance").toFile() : null;
            try (FakeServer server = new FakeServer()) {
                TabClientConfig.Builder builder = TabClientConfig.builder(server.url(), c.optString("account", "jack"))
                        .preferredLanguages(c.has("languages") ? Conformance.strings(c.getJSONArray("languages")) : Arrays.asList("en"))
                        .platform(string(c, "platform")).appVersion(string(c, "appVersion")).environment(string(c, "environment"))
                        .installId(string(c, "installId")).cacheDirectory(cacheDirectory)
                        .requestTimeoutMillis(c.optInt("requestTimeoutMs", 5000)).longPollWaitSeconds(c.optInt("longPollWaitSeconds", 30))
                        .backoffMillis(c.optLong("initialBackoffMs", 50), c.optLong("maximumBackoffMs", 2000)).onEvent(events::add)
                        .manifestMode(c.optBoolean("manifest", false)).signingKeys(keys).clock(clock)
                        // The launch guard is off unless a scenario sets it, so that the scenarios written before it still
                        // prove what they say.
                        .launchAttempts(c.optInt("launchAttempts", 0)).readyTimeoutMillis(c.optLong("readyTimeoutMs", 0))
                        // Nothing is sent in tests unless a scenario asks.
                        .reports(c.optBoolean("reports", false));
                config = builder.build();
                if (scenario.has("files")) writeFiles(scenario.getJSONObject("files"));
                if (scenario.has("initError")) {
                    try {
                        new TabClient(config, bundle);
                        failures.add("the client was made, expected the error " + scenario.getString("initError"));
                    } catch (TabClientException e) {
                        if (!errorName(e).equals(scenario.getString("initError"))) {
                            failures.add("the client was refused with " + e.getMessage() + ", expected " + scenario.getString("initError"));
                        }
                    }
                    if (!failures.isEmpty()) fail(file.getFileName() + ":\n  " + String.join("\n  ", failures));
                    return;
                }
                client = new TabClient(config, bundle);
                JSONArray steps = scenario.getJSONArray("steps");
                for (int i = 0; i < steps.length(); i++) step(i, steps.getJSONObject(i), server);
            } finally {
                if (client != null) client.endRun();
                if (cacheDirectory != null) delete(cacheDirectory);
            }
            if (!failures.isEmpty()) fail(file.getFileName() + ":\n  " + String.join("\n  ", failures));
        }

        static String string(JSONObject object, String key) throws JSONException { return object.isNull(key) ? null : object.getString(key); }

        void writeFiles(JSONObject files) throws IOException, JSONException {
            for (String name : Json.keys(files)) {
                JSONObject spec = files.getJSONObject(name);
                String text;
                if (spec.has("text")) {
                    text = spec.getString("text");
                } else if (spec.has("prefetch")) {
                    JSONObject entry = spec.getJSONObject("prefetch");
                    JSONObject document = new JSONObject();
                    document.put("etag", entry.getString("etag"));
                    document.put("at", entry.getString("at"));
                    document.put("revision", entry.getLong("revision"));
                    if (entry.has("signed")) {
                        String[] signed = Conformance.signed(signedFixtures, entry.getString("signed"), entry.optJSONArray("tamper"));
                        String[] signature = SigningKeys.parseHeader(signed[1]);
                        document.put("body", signed[0]);
                        document.put("keyid", signature[0]);
                        document.put("sig", signature[1]);
                    } else {
                        document.put("body", Conformance.layout(entry.getJSONObject("layout"), bundleDocument).toString());
                    }
                    text = document.toString();
                } else {
                    JSONObject entry = spec.getJSONObject("cache");
                    JSONObject document = new JSONObject();
                    document.put("etag", entry.getString("etag"));
                    if (entry.optBoolean("perInstall")) document.put("perInstall", true);
                    if (entry.has("revision")) document.put("revision", entry.getInt("revision"));
                    if (entry.has("signed")) {
                        String[] signed = Conformance.signed(signedFixtures, entry.getString("signed"), entry.optJSONArray("tamper"));
                        document.put("layout", new JSONObject(Conformance.signed(signedFixtures, entry.getString("signed"), null)[0]));
                        document.put("signed", Conformance.signedMember(signed[0], signed[1]));
                    } else {
                        document.put("layout", Conformance.layout(entry.getJSONObject("layout"), bundleDocument));
                    }
                    text = document.toString();
                }
                Files.write(new File(cacheDirectory, name).toPath(), text.getBytes(StandardCharsets.UTF_8));
            }
        }

        List<FakeServer.Reply> replies(JSONArray answers) throws JSONException {
            List<FakeServer.Reply> replies = new ArrayList<>();
            for (int i = 0; i < answers.length(); i++) {
                JSONObject answer = answers.getJSONObject(i);
                FakeServer.Reply reply = new FakeServer.Reply();
                reply.status = answer.optInt("status", 200);
                boolean contentType = false;
                JSONObject headers = answer.optJSONObject("headers");
                if (headers != null) {
                    for (String name : Json.keys(headers)) {
                        reply.headers.add(new String[] {name, headers.getString(name)});
                        contentType |= name.equalsIgnoreCase("Content-Type");
                    }
                }
                if (answer.has("signed")) {
                    String[] signed = Conformance.signed(signedFixtures, answer.getString("signed"), answer.optJSONArray("tamper"));
                    reply.body = signed[0].getBytes(StandardCharsets.UTF_8);
                    reply.headers.add(new String[] {"Content-Type", "application/json"});
                    if (!answer.optBoolean("unsigned")) reply.headers.add(new String[] {"Tabs-Signature", signed[1]});
                } else if (answer.has("layout")) {
                    reply.body = Conformance.layout(answer.getJSONObject("layout"), bundleDocument).toString().getBytes(StandardCharsets.UTF_8);
                    if (!contentType) reply.headers.add(new String[] {"Content-Type", "application/json"});
                } else if (answer.has("body")) {
                    reply.body = answer.getString("body").getBytes(StandardCharsets.UTF_8);
                } else if (answer.has("bodyRepeat")) {
                    JSONObject spec = answer.getJSONObject("bodyRepeat");
                    StringBuilder text = new StringBuilder(spec.optString("before"));
                    for (int n = spec.optInt("times"); n > 0; n--) text.append(spec.optString("text"));
                    reply.body = text.append(spec.optString("after")).toString().getBytes(StandardCharsets.UTF_8);
                }
                if (answer.has("truncate")) reply.body = Arrays.copyOf(reply.body, Math.min(reply.body.length, answer.getInt("truncate")));
                reply.delayMs = answer.optLong("delayMs");
                reply.drop = answer.optBoolean("drop");
                reply.hang = answer.optBoolean("hang");
                replies.add(reply);
            }
            return replies;
        }

        void step(int index, JSONObject step, FakeServer server) throws Exception {
            String where = "step " + index + " (" + step.getString("do") + ")";
            server.play(replies(step.optJSONArray("answers") == null ? new JSONArray() : step.getJSONArray("answers")),
                    "hold".equals(step.optString("then", "repeat")));
            RefreshOutcome outcome = null;
            TabClientException error = null;
            CompiledLayout delivered = null;
            CompiledLayout switched = null;
            Long moveTo = null;
            if (step.has("clock")) {
                moveTo = Rfc3339.millis(step.getString("clock"));
                if (moveTo == null) throw new IllegalArgumentException(where + ": clock " + step.getString("clock") + " is not an RFC 3339 time");
            }
            // While following (next, poll) the clock moves once the step's first request has come, so that the switch wakes
            // a poll in progress; else before the action.
            boolean following = step.getString("do").equals("next") || step.getString("do").equals("poll");
            if (moveTo != null && !following) clock.set(moveTo);
            Thread mover = null;
            if (moveTo != null && following) {
                final long to = moveTo;
                final int before = server.requests().size();
                mover = new Thread(() -> {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                    try {
                        while (server.requests().size() <= before && System.nanoTime() < deadline) Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                    clock.set(to);
                }, "conformance-clock");
                mover.start();
            }
            long started = System.nanoTime();
            switch (step.getString("do")) {
                case "check":
                    break;
                case "switch":
                    switched = client.switchIfDue();
                    break;
                case "refresh":
                    try {
                        outcome = client.refresh();
                    } catch (TabClientException e) {
                        error = e;
                    }
                    break;
                case "next": {
                    LinkedBlockingQueue<CompiledLayout> layouts = new LinkedBlockingQueue<>();
                    // Stopped from the listener, on the polling thread, before it could ask again: as Swift's
                    // iterator, which asks only when next() is called.
                    TabClient stopping = client;
                    TabClient.Listener listener = (layout, source) -> {
                        stopping.stop();
                        layouts.add(layout);
                    };
                    client.addListener(listener, Runnable::run);
                    client.start();
                    delivered = layouts.poll(15, TimeUnit.SECONDS);
                    client.stop();
                    client.removeListener(listener);
                    if (delivered == null) {
                        failures.add(where + ": no layout delivered within 15 s; requests: " + server.requests() + "; events: " + events);
                    }
                    break;
                }
                case "poll": {
                    int wanted = step.getInt("requests");
                    client.start();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (server.requests().size() < wanted && System.nanoTime() < deadline) Thread.sleep(5);
                    client.stop();
                    break;
                }
                case "markRendered":
                    client.markRendered();
                    break;
                case "reportTabFailed":
                    client.reportTabFailed(step.optString("tab", ""), step.optString("reason", ""));
                    break;
                case "flushReports":
                    client.flushReports();
                    break;
                case "background":
                    client.appDidEnterBackground().join(20000);
                    break;
                case "wait": {
                    String kind = step.optString("for", "");
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                    boolean came = false;
                    while (!came && System.nanoTime() < deadline) {
                        synchronized (events) {
                            for (TabClientEvent event : events) came |= camel(event.kind.name()).equals(kind);
                        }
                        if (!came) Thread.sleep(5);
                    }
                    if (!came) failures.add(where + ": no " + kind + " event within 5 s");
                    break;
                }
                case "relaunch":
                    previousInstallId = client.installId();
                    client.endRun();  // the app's process ended: its client does nothing more
                    client = new TabClient(config, bundle);
                    break;
                default:
                    throw new IllegalArgumentException(where + ": unknown action");
            }
            if (mover != null) mover.join(20000);
            long elapsedMs = (System.nanoTime() - started) / 1000000;
            List<TabClientEvent> stepEvents;
            synchronized (events) {
                stepEvents = new ArrayList<>(events);
                events.clear();
            }
            JSONObject expect = step.optJSONObject("expect") == null ? new JSONObject() : step.getJSONObject("expect");
            check(where, expect, outcome, error, delivered, switched, elapsedMs, stepEvents, server.requests());
            cacheSnapshot = snapshot();
        }

        File cacheFile() {
            return new File(cacheDirectory, config.account + (config.environment == null ? "" : "@" + config.environment) + ".tabs.json");
        }

        /** The prefetched candidate's file: {@code <account>.tabs.prefetch.json}. */
        File prefetchFile() {
            return new File(cacheDirectory, config.account + (config.environment == null ? "" : "@" + config.environment) + ".tabs.prefetch.json");
        }

        Object[] snapshot() throws IOException {
            if (cacheDirectory == null || !cacheFile().isFile()) return null;
            Path path = cacheFile().toPath();
            return new Object[] {Files.readAllBytes(path), Files.getAttribute(path, "unix:ino")};
        }

        String bundleValidators() {
            return String.join(", ", bundle.representation(config.preferredLanguages, config.platform, config.appVersion).validators);
        }

        /** A header value of the format: {@code $installId}, {@code $bundleValidators}, or itself. */
        String resolve(String value) {
            if (value.equals("$installId")) return client.installId();
            if (value.equals("$bundleValidators")) return bundleValidators();
            return value;
        }

        static String camel(String constant) {
            StringBuilder text = new StringBuilder();
            boolean upper = false;
            for (char c : constant.toLowerCase(Locale.ROOT).toCharArray()) {
                if (c == '_') {
                    upper = true;
                } else {
                    text.append(upper ? Character.toUpperCase(c) : c);
                    upper = false;
                }
            }
            return text.toString();
        }

        /** Where {@code actual} (a request's JSON) lacks what {@code expected} holds (objects: the keys given; arrays: each element), or null. */
        String contains(Object actual, Object expected, String pointer) throws JSONException {
            if (expected instanceof JSONObject) {
                if (!(actual instanceof JSONObject)) return pointer + ": not an object";
                for (String key : Json.keys((JSONObject) expected)) {
                    String difference = contains(((JSONObject) actual).opt(key), ((JSONObject) expected).get(key), pointer + "/" + key);
                    if (difference != null) return difference;
                }
                return null;
            }
            if (expected instanceof JSONArray) {
                JSONArray e = (JSONArray) expected;
                if (!(actual instanceof JSONArray) || ((JSONArray) actual).length() != e.length()) return pointer + ": " + actual + ", expected " + e;
                for (int i = 0; i < e.length(); i++) {
                    String difference = contains(((JSONArray) actual).get(i), e.get(i), pointer + "/" + i);
                    if (difference != null) return difference;
                }
                return null;
            }
            if (expected instanceof String) {
                return resolve((String) expected).equals(actual) ? null : pointer + ": " + actual + ", expected " + resolve((String) expected);
            }
            return String.valueOf(expected).equals(String.valueOf(actual)) ? null : pointer + ": " + actual + ", expected " + expected;
        }

        static List<Integer> integers(JSONArray array) throws JSONException {
            List<Integer> list = new ArrayList<>();
            for (int i = 0; i < array.length(); i++) list.add(array.getInt(i));
            return list;
        }

        /** Whether two objects of numbers and arrays of numbers (a guard record) have the same members; null is none. */
        static boolean sameMembers(JSONObject a, JSONObject b) throws JSONException {
            if (a == null || b == null) return a == b;
            if (a.length() != b.length()) return false;
            for (String key : Json.keys(a)) {
                if (!b.has(key) || !a.get(key).toString().equals(b.get(key).toString())) return false;
            }
            return true;
        }

        static String errorName(TabClientException e) {
            switch (e.kind()) {
                case UNEXPECTED_STATUS: return "status";
                case MISSING_ETAG: return "missingETag";
                default: return camel(e.kind().name());
            }
        }

        void check(String where, JSONObject expect, RefreshOutcome outcome, TabClientException error, CompiledLayout delivered,
                CompiledLayout switched, long elapsedMs, List<TabClientEvent> stepEvents, List<FakeServer.Received> requests)
                throws IOException, JSONException {
            List<String> f = failures;
            JSONObject colours = expect.optJSONObject("colors");
            for (Scheme scheme : colours == null ? new Scheme[0] : Scheme.values()) {
                JSONObject wanted = colours.optJSONObject(scheme.name().toLowerCase(Locale.ROOT));
                if (wanted == null) continue;
                Colors actual = client.current().appearance.getColors(scheme);
                String[][] values = {{"backgroundColor", actual.backgroundColor}, {"tintColor", actual.tintColor},
                        {"unselectedTintColor", actual.unselectedTintColor}};
                for (String[] value : values) {
                    if (wanted.has(value[0]) && !wanted.getString(value[0]).equals(value[1])) {
                        f.add(where + ": " + scheme + " " + value[0] + " " + value[1] + ", expected " + wanted.getString(value[0]));
                    }
                }
            }
            if (expect.has("firstTab")) {
                JSONObject wanted = expect.getJSONObject("firstTab");
                CompiledLayout.Tab tab = client.current().tabs.get(0);
                String[][] values = {{"accessibilityLabel", tab.accessibilityLabel()}, {"accessibilityLabelKey", tab.accessibilityLabelKey()},
                        {"accessibilityHint", tab.accessibilityHint()}, {"role", tab.role()}};
                for (String[] value : values) {
                    if (wanted.has(value[0]) && !wanted.getString(value[0]).equals(value[1])) {
                        f.add(where + ": first tab " + value[0] + " " + value[1] + ", expected " + wanted.getString(value[0]));
                    }
                }
            }
            if (expect.has("groups")) {
                JSONArray wanted = expect.getJSONArray("groups");
                List<TabGroup> groups = client.current().groups();
                boolean same = groups.size() == wanted.length();
                for (int i = 0; same && i < groups.size(); i++) {
                    JSONObject w = wanted.getJSONObject(i);
                    same = w.getString("id").equals(groups.get(i).id) && w.getString("title").equals(groups.get(i).title)
                            && Conformance.strings(w.getJSONArray("tabs")).equals(groups.get(i).tabs);
                }
                if (!same) f.add(where + ": groups " + groups.size() + " not as expected " + wanted);
            }
            if (expect.has("queued")) {
                JSONArray wanted = expect.getJSONArray("queued");
                List<Report> queued = client.queuedReports();
                if (queued.size() != wanted.length()) f.add(where + ": " + queued.size() + " reports queued (" + queued + "), expected " + wanted.length());
                for (int i = 0; i < Math.min(queued.size(), wanted.length()); i++) {
                    JSONObject w = wanted.getJSONObject(i);
                    Report r = queued.get(i);
                    boolean same = (!w.has("version") || w.getInt("version") == r.version) && (!w.has("kind") || w.getString("kind").equals(r.kind))
                            && (!w.has("tab") || w.getString("tab").equals(r.tab)) && (!w.has("reason") || w.getString("reason").equals(r.reason));
                    if (!same) f.add(where + ": queued " + r + ", expected " + w);
                }
            }
            if (expect.has("blocked") && !integers(expect.getJSONArray("blocked")).equals(client.blockedVersions())) {
                f.add(where + ": blocked " + client.blockedVersions() + ", expected " + expect.get("blocked"));
            }
            if (expect.has("revoked") && !integers(expect.getJSONArray("revoked")).equals(client.revokedVersions())) {
                f.add(where + ": revoked " + client.revokedVersions() + ", expected " + expect.get("revoked"));
            }
            if (expect.has("pendingRender") && expect.getBoolean("pendingRender") != client.isPendingRender()) {
                f.add(where + ": pending render " + client.isPendingRender() + ", expected " + expect.get("pendingRender"));
            }
            if (expect.has("guard")) {
                JSONObject stored = cacheDirectory != null && cacheFile().isFile()
                        ? new JSONObject(new String(Files.readAllBytes(cacheFile().toPath()), StandardCharsets.UTF_8)) : null;
                JSONObject actual = stored == null ? null : stored.optJSONObject("guard");
                JSONObject wanted = expect.optJSONObject("guard");
                if (!sameMembers(actual, wanted)) f.add(where + ": cache file guard " + actual + ", expected " + wanted);
            }
            if (expect.has("reverted")) {
                JSONObject wanted = expect.getJSONObject("reverted");
                boolean found = false;
                for (TabClientEvent event : stepEvents) {
                    found |= event.kind == TabClientEvent.Kind.REVERTED && event.version == wanted.getInt("version")
                            && wanted.getString("reason").equals(event.reason);
                }
                if (!found) f.add(where + ": no reverted event " + wanted + " among " + stepEvents);
            }
            if (expect.has("outcome")) {
                String actual = outcome != null ? camel(outcome.kind.name()) : "error " + (error == null ? "none" : error.getMessage());
                if (!actual.equals(expect.getString("outcome"))) f.add(where + ": outcome " + actual + ", expected " + expect.getString("outcome"));
            }
            if (expect.has("error")) {
                String actual = error != null ? errorName(error) : "no error (" + outcome + ")";
                if (!actual.equals(expect.getString("error"))) {
                    f.add(where + ": error " + actual + (error != null ? " (" + error.getMessage() + ")" : "") + ", expected " + expect.getString("error"));
                }
            }
            if (expect.has("status") && (error == null || error.status() != expect.getInt("status"))) {
                f.add(where + ": status " + (error == null ? "none" : error.status()) + ", expected " + expect.getInt("status"));
            }
            if (expect.has("detail") && (error == null || !expect.getString("detail").equals(error.detail()))) {
                f.add(where + ": detail " + (error == null ? "none" : error.detail()) + ", expected " + expect.getString("detail"));
            }
            if (expect.has("errorTextAtMostBytes")) {
                String text = error == null ? "" : String.valueOf(error.getMessage());
                int bytes = text.getBytes(StandardCharsets.UTF_8).length;
                if (error == null || bytes > expect.getInt("errorTextAtMostBytes")) {
                    f.add(where + ": error text of " + bytes + " bytes (" + text.substring(0, Math.min(200, text.length())) + "…), expected at most "
                            + expect.getInt("errorTextAtMostBytes"));
                }
            }
            if (expect.has("layout")) {
                String difference = Conformance.compare(expect.getJSONObject("layout"), client.current());
                if (difference != null) f.add(where + ": the layout shown: " + difference);
            }
            if (expect.has("delivered")) {
                String difference = delivered == null ? "none" : Conformance.compare(expect.getJSONObject("delivered"), delivered);
                if (difference != null) f.add(where + ": the layout delivered: " + difference);
            }
            if (expect.has("source")) {
                String actual = client.source().name().toLowerCase(Locale.ROOT);
                if (!actual.equals(expect.getString("source"))) f.add(where + ": source " + actual + ", expected " + expect.getString("source"));
            }
            if (expect.has("nextSwitch")) {
                long wanted = expect.isNull("nextSwitch") ? -1 : Rfc3339.millis(expect.getString("nextSwitch"));
                if (client.nextSwitchMillis() != wanted) f.add(where + ": next switch " + client.nextSwitchMillis() + ", expected " + wanted + " (" + expect.opt("nextSwitch") + ")");
            }
            if (expect.has("switched") && (switched != null) != expect.getBoolean("switched")) {
                f.add(where + ": " + (switched == null ? "did not switch" : "switched to v" + switched.version));
            }
            if (expect.has("prefetch")) {
                File file = prefetchFile();
                if (expect.isNull("prefetch")) {
                    if (file.exists()) f.add(where + ": a prefetch file exists: " + file.getName());
                } else if (!file.isFile()) {
                    f.add(where + ": no prefetch file " + file.getName());
                } else {
                    JSONObject wanted = expect.getJSONObject("prefetch");
                    JSONObject stored;
                    JSONObject body;
                    try {
                        stored = Json.parseObject(new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8));
                        body = Json.parseObject(stored.getString("body"));
                    } catch (Json.Invalid e) {
                        throw new AssertionError(where + ": the prefetch file is not JSON: " + e.getMessage());
                    }
                    if (wanted.has("etag") && !wanted.getString("etag").equals(stored.optString("etag"))) {
                        f.add(where + ": prefetch etag " + stored.optString("etag") + ", expected " + wanted.getString("etag"));
                    }
                    if (wanted.has("version") && body.optInt("version") != wanted.getInt("version")) {
                        f.add(where + ": prefetch version " + body.opt("version") + ", expected " + wanted.getInt("version"));
                    }
                    if (wanted.has("at") && !wanted.getString("at").equals(stored.optString("at"))) {
                        f.add(where + ": prefetch at " + stored.optString("at") + ", expected " + wanted.getString("at"));
                    }
                    if (wanted.has("revision") && stored.optLong("revision") != wanted.getLong("revision")) {
                        f.add(where + ": prefetch revision " + stored.opt("revision") + ", expected " + wanted.getLong("revision"));
                    }
                }
            }
            if (expect.has("validators")) {
                Object wanted = expect.get("validators");
                String expected = wanted instanceof String ? resolve((String) wanted) : String.join(", ", Conformance.strings((JSONArray) wanted));
                String actual = String.join(", ", client.validators());
                if (!actual.equals(expected)) f.add(where + ": validators " + actual + ", expected " + expected);
            }
            if (expect.has("cache")) {
                File cacheFile = cacheFile();
                if (expect.isNull("cache")) {
                    if (cacheFile.exists()) f.add(where + ": a cache file exists: " + cacheFile.getName());
                } else if (!cacheFile.isFile()) {
                    f.add(where + ": no cache file " + cacheFile.getName());
                } else {
                    JSONObject wanted = expect.getJSONObject("cache");
                    JSONObject stored;
                    try {
                        stored = Json.parseObject(new String(Files.readAllBytes(cacheFile.toPath()), StandardCharsets.UTF_8));
                    } catch (Json.Invalid e) {
                        throw new AssertionError(where + ": the cache file is not JSON: " + e.getMessage());
                    }
                    if (wanted.has("etag") && !wanted.getString("etag").equals(stored.optString("etag"))) {
                        f.add(where + ": cache etag " + stored.optString("etag") + ", expected " + wanted.getString("etag"));
                    }
                    if (wanted.has("version") && stored.getJSONObject("layout").optInt("version") != wanted.getInt("version")) {
                        f.add(where + ": cache version " + stored.getJSONObject("layout").opt("version") + ", expected " + wanted.getInt("version"));
                    }
                    if (wanted.has("perInstall") && stored.optBoolean("perInstall") != wanted.getBoolean("perInstall")) {
                        f.add(where + ": cache perInstall " + stored.optBoolean("perInstall") + ", expected " + wanted.getBoolean("perInstall"));
                    }
                }
            }
            if (expect.optBoolean("cacheUnchanged")) {
                Object[] now = snapshot();
                boolean same = cacheSnapshot == null ? now == null
                        : now != null && Arrays.equals((byte[]) cacheSnapshot[0], (byte[]) now[0]) && cacheSnapshot[1].equals(now[1]);
                if (!same) f.add(where + ": the cache file was written (or removed)");
            }
            if (expect.has("directory")) {
                List<String> actual = Conformance.directoryListing(cacheDirectory);
                List<String> wanted = Conformance.strings(expect.getJSONArray("directory"));
                if (!actual.equals(wanted)) f.add(where + ": cache directory " + actual + ", expected " + wanted);
            }
            if (expect.has("files")) {
                JSONObject files = expect.getJSONObject("files");
                for (String name : Json.keys(files)) {
                    File file = new File(cacheDirectory, name);
                    String actual = file.isFile() ? new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8) : null;
                    String wanted = resolve(files.getString(name));
                    if (!wanted.equals(actual)) f.add(where + ": file " + name + " holds " + actual + ", expected " + wanted);
                }
            }
            if (expect.has("installId")) {
                String wanted = expect.getString("installId");
                String actual = client.installId();
                boolean ok = wanted.equals("$uuid4") ? actual.matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
                        : wanted.equals("$previousInstallId") ? actual.equals(previousInstallId) : actual.equals(wanted);
                if (!ok) f.add(where + ": install id " + actual + ", expected " + wanted + (previousInstallId != null ? " (" + previousInstallId + ")" : ""));
            }
            if (expect.has("events")) {
                List<String> kinds = new ArrayList<>();
                for (TabClientEvent event : stepEvents) kinds.add(camel(event.kind.name()));
                for (String wanted : Conformance.strings(expect.getJSONArray("events"))) {
                    if (!kinds.contains(wanted)) f.add(where + ": no " + wanted + " event among " + kinds);
                }
            }
            if (expect.has("errors")) {
                List<String> kinds = new ArrayList<>();
                for (TabClientEvent event : stepEvents) {
                    if (event.error != null && (event.kind == TabClientEvent.Kind.FAILED || event.kind == TabClientEvent.Kind.CACHE_IGNORED)) {
                        kinds.add(errorName(event.error));
                    }
                }
                for (String wanted : Conformance.strings(expect.getJSONArray("errors"))) {
                    if (!kinds.contains(wanted)) f.add(where + ": no failure " + wanted + " among " + kinds);
                }
            }
            List<Long> delays = new ArrayList<>();
            for (TabClientEvent event : stepEvents) {
                if (event.kind == TabClientEvent.Kind.FAILED && event.retryInMillis >= 0) delays.add(event.retryInMillis);
            }
            if (expect.has("retryIn")) {
                List<Long> wanted = new ArrayList<>();
                JSONArray array = expect.getJSONArray("retryIn");
                for (int i = 0; i < array.length(); i++) wanted.add(array.getLong(i));
                if (!delays.equals(wanted)) f.add(where + ": retry delays " + delays + ", expected " + wanted);
            }
            if (expect.has("retryInBetween")) {
                JSONArray bounds = expect.getJSONArray("retryInBetween");
                for (int i = 0; i < bounds.length(); i++) {
                    long low = bounds.getJSONArray(i).getLong(0);
                    long high = bounds.getJSONArray(i).getLong(1);
                    if (i >= delays.size()) {
                        f.add(where + ": only " + delays.size() + " retry delays");
                        break;
                    }
                    if (delays.get(i) < low || delays.get(i) > high) f.add(where + ": retry delay " + i + " is " + delays.get(i) + " ms, expected " + low + "–" + high);
                }
                // Jitter: the draws are not all the exact doubling.
                boolean allFull = true;
                for (int i = 0; i < Math.min(delays.size(), bounds.length()); i++) allFull &= delays.get(i) == bounds.getJSONArray(i).getLong(1);
                if (allFull) f.add(where + ": no jitter in " + delays);
            }
            if (expect.has("requestCount") && requests.size() != expect.getInt("requestCount")) {
                f.add(where + ": " + requests.size() + " requests, expected " + expect.getInt("requestCount"));
            }
            if (expect.has("requests")) {
                JSONArray wanted = expect.getJSONArray("requests");
                for (int i = 0; i < wanted.length(); i++) {
                    JSONObject w = wanted.getJSONObject(i);
                    if (i >= requests.size()) {
                        f.add(where + ": request " + i + " never came (" + requests.size() + " requests)");
                        break;
                    }
                    FakeServer.Received r = requests.get(i);
                    if (w.has("method") && !r.head().startsWith(w.getString("method") + " ")) {
                        f.add(where + ": request " + i + " is " + r.head().split(" ", 2)[0] + ", expected " + w.getString("method"));
                    }
                    if (w.has("json")) {
                        Object body;
                        try {
                            body = new org.json.JSONTokener(new String(r.body(), StandardCharsets.UTF_8)).nextValue();
                        } catch (JSONException e) {
                            body = null;
                        }
                        String difference = contains(body, w.get("json"), "");
                        if (difference != null) f.add(where + ": request " + i + " body " + difference);
                    }
                    if (w.has("target") && !w.getString("target").equals(r.target())) {
                        f.add(where + ": request " + i + " target " + r.target() + ", expected " + w.getString("target"));
                    }
                    JSONObject headers = w.optJSONObject("headers");
                    if (headers != null) {
                        for (String name : Json.keys(headers)) {
                            String expected = resolve(headers.getString(name));
                            if (!expected.equals(r.header(name))) {
                                f.add(where + ": request " + i + " " + name + ": " + r.header(name) + ", expected " + expected);
                            }
                        }
                    }
                    JSONArray absent = w.optJSONArray("absent");
                    if (absent != null) {
                        for (String name : Conformance.strings(absent)) {
                            if (r.header(name) != null) f.add(where + ": request " + i + " sent " + name + ": " + r.header(name));
                        }
                    }
                    if (w.has("gapAtLeastMs") && i > 0) {
                        long gap = (r.atNanos() - requests.get(i - 1).atNanos()) / 1000000;
                        if (gap < w.getLong("gapAtLeastMs")) f.add(where + ": request " + i + " came " + gap + " ms after the one before, expected ≥ " + w.getLong("gapAtLeastMs"));
                    }
                }
            }
            if (expect.has("elapsedAtLeastMs") && elapsedMs < expect.getLong("elapsedAtLeastMs")) {
                f.add(where + ": took " + elapsedMs + " ms, expected ≥ " + expect.getLong("elapsedAtLeastMs"));
            }
            if (expect.has("elapsedAtMostMs") && elapsedMs > expect.getLong("elapsedAtMostMs")) {
                f.add(where + ": took " + elapsedMs + " ms, expected ≤ " + expect.getLong("elapsedAtMostMs"));
            }
        }
    }

    static void delete(File directory) throws IOException {
        try (Stream<Path> walk = Files.walk(directory.toPath())) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) Files.deleteIfExists(path);
        }
    }
}
