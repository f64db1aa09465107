package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * Manifest mode's schedule (docs/android.md, "Manifest mode"), as TabClient's ScheduleTests: step times read as the Swift
 * client reads them, the share a step gives at the device clock's time, the prefetched candidate used, dropped and
 * switched to, and the timer of {@code start()}. The conformance scenarios {@code schedule-*} cover the rest, for both
 * clients. Every test runs on a {@link ManualClock}: no test waits for a step.
 */
class ScheduleTest {
    static final String STABLE = "install-0"; // bucket 9785 in fixed-seed
    static final String CANDIDATE = "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77"; // bucket 1095
    static final String STEP = "2026-11-26T21:00:00.000Z";
    static final long STEP_MILLIS = Rfc3339.millis(STEP);

    /** A manifest of jack: stable 1, and (unless {@code schedule} is null) a rollout of version 2 with seed fixed-seed. */
    static byte[] manifest(long revision, double percent, String schedule) {
        String rollout = schedule == null ? "null"
                : "{\"id\":1,\"version\":2,\"seed\":\"fixed-seed\",\"percent\":" + percent + ",\"installs\":[\"tester-0\"],\"schedule\":" + schedule + "}";
        return ("{\"account\":\"jack\",\"environment\":\"production\",\"layout\":\"jack\",\"revision\":" + revision
                + ",\"stable\":{\"version\":1},\"rollout\":" + rollout + "}").getBytes(StandardCharsets.UTF_8);
    }

    static String step(double percent, String at) { return "{\"percent\":" + percent + ",\"at\":\"" + at + "\"}"; }

    static byte[] layout(int version) throws Exception {
        JSONObject spec = new JSONObject();
        spec.put("version", version);
        return Conformance.layout(spec, Conformance.bundle()).toString().getBytes(StandardCharsets.UTF_8);
    }

    static FakeServer.Reply answer(byte[] body, String etag) { return FakeServer.Reply.of(200, body, "Content-Type", "application/json", "ETag", etag); }

    static TabClientConfig config(String server, File cache, DeviceClock clock, boolean manifest, List<TabClientEvent> events) {
        return TabClientConfig.builder(server, "jack").preferredLanguages("en").platform(null).appVersion(null).installId(STABLE)
                .cacheDirectory(cache).requestTimeoutMillis(5000).longPollWaitSeconds(30).backoffMillis(50, 2000).manifestMode(manifest)
                .clock(clock).onEvent(events == null ? null : events::add).build();
    }

    // Step times

    @Test
    void stepTimesAreReadAsTheSwiftClientReadsThem() throws Exception {
        JSONObject vectors = Conformance.read(Conformance.directory().resolve("rfc3339-vectors.json"));
        JSONArray valid = vectors.getJSONArray("valid");
        JSONArray invalid = vectors.getJSONArray("invalid");
        assertTrue(valid.length() >= 10 && invalid.length() >= 20);
        for (int i = 0; i < valid.length(); i++) {
            JSONObject vector = valid.getJSONObject(i);
            assertEquals(Long.valueOf(vector.getLong("millis")), Rfc3339.millis(vector.getString("text")),
                    vector.getString("text") + ": " + vector.getString("note"));
        }
        for (int i = 0; i < invalid.length(); i++) {
            JSONObject vector = invalid.getJSONObject(i);
            assertNull(Rfc3339.millis(vector.getString("text")), vector.getString("text") + " was read: " + vector.getString("note"));
        }
    }

    @Test
    void aStepWhoseTimeIsNotAnRfc3339TimeMakesTheManifestInvalid() {
        TabClientException e = assertThrows(TabClientException.class, () -> Manifest.parse(manifest(1, 50, "[" + step(100, "tomorrow") + "]")));
        assertEquals(TabClientException.Kind.INVALID_MANIFEST, e.kind());
        assertEquals("invalid manifest: /rollout/schedule/0/at: \"tomorrow\" is not an RFC 3339 time", e.getMessage());
        assertThrows(TabClientException.class, () -> Manifest.parse(manifest(1, 50, "[{\"percent\":100}]")));
    }

    // The share by the device's clock

    @Test
    void theShareCountsTheStepsWhoseTimeHasComeAndTheFirstComingStepMovesTheInstall() throws Exception {
        // 5 % now; 10 % at 20:00, 15 % at 21:00 and 100 % at 22:00, listed out of order.
        Manifest manifest = Manifest.parse(manifest(1, 5, "[" + step(100, "2026-11-26T22:00:00Z") + "," + step(15, "2026-11-26T21:00:00Z") + ","
                + step(10, "2026-11-26T20:00:00Z") + "]"));
        long before = Rfc3339.millis("2026-11-26T19:00:00Z");
        long at20 = Rfc3339.millis("2026-11-26T20:00:00Z");
        long at21 = Rfc3339.millis("2026-11-26T21:00:00Z");
        long at22 = Rfc3339.millis("2026-11-26T22:00:00Z");
        // Bucket 1095: not in at 5 % or 10 %, in from 15 %: the 20:00 step does not move it, the 21:00 one does.
        assertEquals(1, manifest.versionFor(CANDIDATE, before));
        assertEquals(1, manifest.versionFor(CANDIDATE, at20));
        Manifest.Move move = manifest.move(CANDIDATE, before);
        assertEquals(2, move.version);
        assertEquals(at21, move.atMillis);
        assertEquals("2026-11-26T21:00:00Z", move.at);
        assertEquals(2, manifest.versionFor(CANDIDATE, at21));
        assertNull(manifest.move(CANDIDATE, at21));
        // Bucket 9785: only the last step.
        assertEquals(at22, manifest.move(STABLE, before).atMillis);
        assertEquals(1, manifest.versionFor(STABLE, at21));
        assertEquals(2, manifest.versionFor(STABLE, at22));
        // A tester has the candidate already; versionFor(id) alone reads no step.
        assertEquals(2, manifest.versionFor("tester-0", before));
        assertNull(manifest.move("tester-0", before));
        assertEquals(1, manifest.versionFor(CANDIDATE));
        // Paused: no step, no move.
        assertNull(Manifest.parse(manifest(2, 50, "[]")).move(STABLE, before));
        assertNull(Manifest.parse(manifest(3, 50, null)).move(STABLE, before));
    }

    @Test
    void aStepsShareIsInBasisPointsAndTheBucketMustBeBelowIt() throws Exception {
        long before = Rfc3339.millis("2026-11-26T20:59:59Z");
        assertNotNull(Manifest.parse(manifest(1, 0, "[" + step(10.96, "2026-11-26T21:00:00Z") + "]")).move(CANDIDATE, before)); // 1096 > 1095
        assertNull(Manifest.parse(manifest(1, 0, "[" + step(10.95, "2026-11-26T21:00:00Z") + "]")).move(CANDIDATE, before)); // not below
    }

    // The prefetched candidate

    /** The replies of a server that gives v1 and, for 21:00, v2; then {@code later}. */
    static List<FakeServer.Reply> prefetching(FakeServer.Reply... later) throws Exception {
        List<FakeServer.Reply> replies = new ArrayList<>(Arrays.asList(answer(manifest(1, 50, "[" + step(100, STEP) + "]"), "\"m1\""),
                answer(layout(1), "\"v1\""), answer(layout(2), "\"v2\"")));
        replies.addAll(Arrays.asList(later));
        return replies;
    }

    @Test
    void aManifestThatGivesTheCandidateNowUsesThePrefetchedCopyWithNoRequest() throws Exception {
        File cache = Files.createTempDirectory("tabclient-schedule").toFile();
        try (FakeServer server = new FakeServer()) {
            server.play(prefetching(answer(manifest(2, 100, "[]"), "\"m2\"")), false);
            TabClient client = new TabClient(config(server.url(), cache, ManualClock.at("2026-11-26T20:00:00Z"), true, null), ConfigTest.bundle());
            RefreshOutcome first = client.refresh();
            assertEquals(RefreshOutcome.Kind.UPDATED, first.kind);
            assertEquals(Integer.valueOf(1), first.layout.version);
            assertEquals(STEP_MILLIS, client.nextSwitchMillis());
            // The share raised to 100 % at once: the candidate is the one kept, not asked for again.
            RefreshOutcome second = client.refresh();
            assertEquals(RefreshOutcome.Kind.UPDATED, second.kind);
            assertEquals(Integer.valueOf(2), second.layout.version);
            assertEquals(4, server.requests().size());
            assertEquals(-1, client.nextSwitchMillis());
            assertEquals(Collections.singletonList("\"v2\""), client.validators());
            assertEquals(Collections.singletonList("jack.tabs.json"), Conformance.directoryListing(cache));
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    @Test
    void aRefreshAfterTheStepSwitchesFirstEvenWhenItsRequestFails() throws Exception {
        File cache = Files.createTempDirectory("tabclient-schedule").toFile();
        List<TabClientEvent> events = Collections.synchronizedList(new ArrayList<TabClientEvent>());
        try (FakeServer server = new FakeServer()) {
            FakeServer.Reply drop = new FakeServer.Reply();
            drop.drop = true;
            server.play(prefetching(drop), false);
            ManualClock clock = ManualClock.at("2026-11-26T20:00:00Z");
            TabClient client = new TabClient(config(server.url(), cache, clock, true, events), ConfigTest.bundle());
            client.refresh();
            assertEquals(STEP_MILLIS, client.nextSwitchMillis());
            clock.set(STEP_MILLIS);
            assertThrows(TabClientException.class, client::refresh);
            assertEquals(Integer.valueOf(2), client.current().version);
            assertEquals(-1, client.nextSwitchMillis());
            List<TabClientEvent.Kind> kinds = new ArrayList<>();
            synchronized (events) {
                for (TabClientEvent event : events) kinds.add(event.kind);
            }
            assertTrue(kinds.lastIndexOf(TabClientEvent.Kind.UPDATED) < kinds.lastIndexOf(TabClientEvent.Kind.FAILED), kinds.toString());
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    @Test
    void stopWhileASwitchIsScheduledEndsThePollAndTheTimer() throws Exception {
        File cache = Files.createTempDirectory("tabclient-schedule").toFile();
        try (FakeServer server = new FakeServer()) {
            server.play(prefetching(), true);
            ManualClock clock = ManualClock.at("2026-11-26T20:00:00Z");
            TabClient client = new TabClient(config(server.url(), cache, clock, true, null), ConfigTest.bundle());
            client.refresh();
            client.start();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while ((server.requests().size() < 4 || clock.sleeping() != 1) && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(4, server.requests().size());
            assertEquals(1, clock.sleeping(), "the switch timer waits for 21:00");
            client.stop();
            deadline = System.nanoTime() + 5_000_000_000L;
            while ((clock.sleeping() != 0 || server.heldClosedAt().isEmpty() || switchTimers() > 0) && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(0, clock.sleeping());
            assertFalse(server.heldClosedAt().isEmpty(), "the held poll was closed");
            assertEquals(0, switchTimers());
            assertEquals(Integer.valueOf(1), client.current().version);
            assertEquals(STEP_MILLIS, client.nextSwitchMillis());
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    static int switchTimers() {
        int count = 0;
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.isAlive() && thread.getName().startsWith("tabclient-switch-")) count++;
        }
        return count;
    }

    // The prefetch file at launch

    static File files(Long mainRevision, long prefetchRevision, String prefetchEtag) throws Exception {
        File cache = Files.createTempDirectory("tabclient-schedule").toFile();
        new LayoutCache(cache, "jack", null).store(layout(1), "\"v1\"", false, null, mainRevision);
        new LayoutCache(cache, "jack", null, true).storePrefetched(new String(layout(2), StandardCharsets.UTF_8), prefetchEtag, STEP,
                prefetchRevision, null);
        return cache;
    }

    @Test
    void aPrefetchFileIsKeptAtLaunchUntilItsStep() throws Exception {
        File cache = files(5L, 5, "\"v2\"");
        try {
            TabClient client = new TabClient(config("http://127.0.0.1:9", cache, ManualClock.at("2026-11-26T20:00:00Z"), true, null), ConfigTest.bundle());
            assertEquals(Integer.valueOf(1), client.current().version);
            assertEquals(STEP_MILLIS, client.nextSwitchMillis());
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    @Test
    void aPrefetchFileOfAnOlderManifestThanTheLayoutsIsDroppedAtLaunch() throws Exception {
        File cache = files(6L, 5, "\"v2\"");
        try {
            TabClient client = new TabClient(config("http://127.0.0.1:9", cache, ManualClock.at("2026-11-26T22:00:00Z"), true, null), ConfigTest.bundle());
            assertEquals(Integer.valueOf(1), client.current().version);
            assertEquals(-1, client.nextSwitchMillis());
            assertEquals(Collections.singletonList("jack.tabs.json"), Conformance.directoryListing(cache));
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    @Test
    void aPrefetchFileHoldingTheLayoutStoredIsDroppedAtLaunch() throws Exception {
        // A crash between storing the switched candidate and removing its prefetch file.
        File cache = files(5L, 5, "\"v1\"");
        try {
            TabClient client = new TabClient(config("http://127.0.0.1:9", cache, ManualClock.at("2026-11-26T20:00:00Z"), true, null), ConfigTest.bundle());
            assertEquals(-1, client.nextSwitchMillis());
            assertEquals(Collections.singletonList("jack.tabs.json"), Conformance.directoryListing(cache));
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    @Test
    void withoutManifestModeAPrefetchFileIsRemovedAndNothingSwitches() throws Exception {
        File cache = files(5L, 5, "\"v2\"");
        try {
            TabClient client = new TabClient(config("http://127.0.0.1:9", cache, ManualClock.at("2026-11-26T22:00:00Z"), false, null), ConfigTest.bundle());
            assertEquals(Integer.valueOf(1), client.current().version);
            assertEquals(-1, client.nextSwitchMillis());
            assertNull(client.switchIfDue());
            assertEquals(Collections.singletonList("jack.tabs.json"), Conformance.directoryListing(cache));
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    // The system's clock

    @Test
    void theSystemClockWaitsForATimeAndStopsWhenInterrupted() throws Exception {
        long started = System.nanoTime();
        DeviceClock.SYSTEM.sleepUntil(System.currentTimeMillis() - 60000);
        assertTrue((System.nanoTime() - started) / 1_000_000 < 100);
        started = System.nanoTime();
        DeviceClock.SYSTEM.sleepUntil(System.currentTimeMillis() + 200);
        long waited = (System.nanoTime() - started) / 1_000_000;
        assertTrue(waited >= 190 && waited < 5000, waited + " ms");
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> DeviceClock.SYSTEM.sleepUntil(System.currentTimeMillis() + 3_600_000));
    }
}
