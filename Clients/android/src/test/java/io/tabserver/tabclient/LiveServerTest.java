package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Against a real tabserver ({@code TABSERVER_BIN}, {@code make test-android} passes the debug build's): the first request
 * with the server's own bundle is a 304, a change reaches the long-poll and the watcher within a second.
 */
@EnabledIfEnvironmentVariable(named = "TABSERVER_BIN", matches = ".+")
class LiveServerTest {
    static final String TOKEN = "android-live-test-token-0123456789";
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void jacksLayoutFromALiveServer() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        String url = "http://127.0.0.1:" + port;
        ProcessBuilder builder = new ProcessBuilder(System.getenv("TABSERVER_BIN"), "serve", "--port", String.valueOf(port), "--host", "127.0.0.1",
                "--store", "memory:", "--configs", Paths.get("..", "..", "configs").toString()).redirectErrorStream(true)
                .redirectOutput(new File("build/live-tabserver.log"));
        builder.environment().put("TABSERVER_ADMIN_TOKEN", TOKEN);
        Process server = builder.start();
        File cache = Files.createTempDirectory("tabclient-live").toFile();
        try {
            waitUntilReady(url);
            TabClientConfig config = TabClientConfig.builder(url, "jack").preferredLanguages("en").cacheDirectory(cache).longPollWaitSeconds(30).build();
            LayoutBundle bundle = TabClient.downloadBundle(config);
            TabClient client = new TabClient(config, bundle);
            assertEquals(TabClient.Source.BUNDLE, client.source());
            assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, client.refresh().kind, "the server's own bundle revalidates with a 304");
            assertEquals(TabClient.Source.SERVER, client.source());
            assertEquals("favourites", client.current().initialTab().id);
            // An install id beyond ASCII (sent as ?installId=, UTF-8) is one the server takes.
            TabClient unicode = new TabClient(TabClientConfig.builder(url, "jack").preferredLanguages("en").installId("ünïcødé-📱").build(), bundle);
            assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, unicode.refresh().kind);

            LinkedBlockingQueue<CompiledLayout> received = new LinkedBlockingQueue<>();
            LinkedBlockingQueue<Long> receivedAt = new LinkedBlockingQueue<>();
            client.addListener((layout, source) -> {
                receivedAt.add(System.nanoTime());
                received.add(layout);
            }, Runnable::run);
            client.start();
            Thread.sleep(1500); // held, not polled
            long changed = patchInitialTab(url, "home");
            CompiledLayout layout = received.poll(30, TimeUnit.SECONDS);
            assertNotNull(layout, "the change never reached the long-poll");
            long after = (receivedAt.take() - changed) / 1000000;
            assertTrue(after < 1000, "the change came " + after + " ms after it was acknowledged");
            assertEquals("home", layout.initialTab().id);
            assertEquals(layout, client.current());
            client.stop();

            // The watcher follows it too.
            try (WatcherProcess watcher = new WatcherProcess(url, "--account", "jack", "--locale", "fr", "--wait", "30")) {
                WatcherProcess.Print first = watcher.next(30);
                assertNotNull(first, "no first print; stderr: " + watcher.errors);
                assertTrue(first.text().contains("*Maison*"), first.text());
                Thread.sleep(1000);
                long back = patchInitialTab(url, "favourites");
                WatcherProcess.Print second = watcher.next(30);
                assertNotNull(second, "no second print; stderr: " + watcher.errors);
                long printedAfter = (second.atNanos() - back) / 1000000;
                assertTrue(printedAfter < 1000, "printed " + printedAfter + " ms after the change");
                assertTrue(second.text().contains("| Maison | *Favoris [3]* |"), second.text());
            }
        } finally {
            server.destroy();
            server.waitFor(10, TimeUnit.SECONDS);
            ConformanceTest.delete(cache);
        }
    }

    /** A tabserver signing with the fixtures' {@code current} key, on a free port; its URL. */
    static final class SignedServer implements AutoCloseable {
        final Process process;
        final String url;

        SignedServer() throws Exception {
            int port;
            try (ServerSocket free = new ServerSocket(0)) {
                port = free.getLocalPort();
            }
            url = "http://127.0.0.1:" + port;
            String key = Conformance.directory().resolve("signed").resolve("keys").resolve("current.pem").toString();
            ProcessBuilder builder = new ProcessBuilder(System.getenv("TABSERVER_BIN"), "serve", "--port", String.valueOf(port), "--host",
                    "127.0.0.1", "--store", "memory:", "--configs", Paths.get("..", "..", "configs").toString(), "--signing-key", key)
                    .redirectErrorStream(true).redirectOutput(new File("build/live-tabserver-signed.log"));
            builder.environment().put("TABSERVER_ADMIN_TOKEN", TOKEN);
            process = builder.start();
        }

        @Override
        public void close() { WatcherProcess.stop(process); }
    }

    /** A draft of jack with another initial tab, rolled out to half the installs with the seed {@code fixed-seed}; its version. */
    int rollOutADraft(String url) throws Exception {
        HttpResponse<String> draft = send("PATCH", url + "/v1/accounts/jack/layout?publish=false", etag(url), "application/merge-patch+json",
                "{\"initialTab\":\"home\"}");
        assertEquals(200, draft.statusCode(), draft.body());
        int candidate = Integer.parseInt(draft.headers().firstValue("Layout-Version").orElseThrow());
        HttpResponse<String> rollout = send("POST", url + "/v1/accounts/jack/layout/rollout", etag(url), "application/json",
                "{\"version\":" + candidate + ",\"percent\":50,\"seed\":\"fixed-seed\"}");
        assertEquals(201, rollout.statusCode(), rollout.body());
        return candidate;
    }

    TabClient manifestClient(String url, String installId, LayoutBundle bundle) throws Exception {
        SigningKeys keys = SigningKeys.fromBase64(SigningKeysTest.key("current"), SigningKeysTest.key("next"));
        return new TabClient(TabClientConfig.builder(url, "jack").preferredLanguages("en").signingKeys(keys).manifestMode(true).installId(installId)
                .build(), bundle);
    }

    /**
     * Manifest mode and pinned keys against a server that signs with the fixtures' {@code current} key: the signed bundle
     * shown and revalidated, each install's arm chosen on the device as the server would (bucket 1095 takes the
     * candidate, 9785 the stable version), and a client pinning another key refused at once.
     */
    @Test
    void manifestModeAndSignaturesAgainstALiveServer() throws Exception {
        try (SignedServer server = new SignedServer()) {
            String url = server.url;
            waitUntilReady(url);
            SigningKeys keys = SigningKeys.fromBase64(SigningKeysTest.key("current"), SigningKeysTest.key("next"));
            TabClientConfig plain = TabClientConfig.builder(url, "jack").preferredLanguages("en").signingKeys(keys).build();
            LayoutBundle bundle = TabClient.downloadBundle(plain);
            TabClient signed = new TabClient(plain, bundle);
            assertEquals(TabClient.Source.BUNDLE, signed.source());
            assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, signed.refresh().kind);
            int stable = signed.current().version;
            TabClientException refused = org.junit.jupiter.api.Assertions.assertThrows(TabClientException.class, () -> new TabClient(
                    TabClientConfig.builder(url, "jack").preferredLanguages("en").signingKeys(SigningKeys.fromBase64(SigningKeysTest.key("stranger")))
                            .build(), bundle));
            assertEquals(TabClientException.Kind.INVALID_SIGNATURE, refused.kind());

            int candidate = rollOutADraft(url);
            TabClient inCandidate = manifestClient(url, "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77", bundle);
            assertEquals(RefreshOutcome.Kind.UPDATED, inCandidate.refresh().kind);
            assertEquals(candidate, inCandidate.current().version.intValue());
            assertEquals("home", inCandidate.current().initialTab().id);
            TabClient inStable = manifestClient(url, "install-0", bundle);
            assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, inStable.refresh().kind, "the bundle is the stable version: ?version=N answers 304");
            assertEquals(stable, inStable.current().version.intValue());
            assertEquals(TabClient.Source.SERVER, inStable.source());
        }
    }

    /**
     * docs/rollouts.md ("Manifest mode"): a manifest's {@code revision} grows with every change to it, and a client
     * never follows an older one; so a rollback must give a higher revision, or manifest clients keep the candidate.
     */
    @Test
    void aRollbackReachesManifestClients() throws Exception {
        try (SignedServer server = new SignedServer()) {
            String url = server.url;
            waitUntilReady(url);
            LayoutBundle bundle = TabClient.downloadBundle(TabClientConfig.builder(url, "jack").preferredLanguages("en").build());
            int stable = bundle.representations.get(0).layout.version;
            rollOutADraft(url);
            TabClient inCandidate = manifestClient(url, "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77", bundle);
            assertEquals(RefreshOutcome.Kind.UPDATED, inCandidate.refresh().kind);
            HttpResponse<String> rollback = send("POST", url + "/v1/accounts/jack/layout/rollout/rollback", null, "application/json",
                    "{\"reason\":\"live test\"}");
            assertEquals(200, rollback.statusCode(), rollback.body());
            RefreshOutcome outcome = inCandidate.refresh();
            assertEquals(RefreshOutcome.Kind.UPDATED, outcome.kind, "the manifest after the rollback has a lower revision than the rollout's");
            assertEquals(stable, inCandidate.current().version.intValue(), "a rollback gives the candidate's installs the stable version");
        }
    }

    /**
     * The schedule against a live server: a rollout of one step (50 %, held an hour, then everyone). An install in the
     * stable arm (bucket 9785) prefetches the candidate, signed, from the server's own manifest; with the server gone,
     * when its clock reaches the manifest's step it switches, and a relaunch shows the candidate, offline.
     */
    @Test
    void aStableInstallPrefetchesTheCandidateOfAStepAndSwitchesAtItsTimeWithTheServerGone() throws Exception {
        File cache = Files.createTempDirectory("tabclient-live-schedule").toFile();
        try {
            ManualClock clock = new ManualClock(System.currentTimeMillis());
            SigningKeys keys = SigningKeys.fromBase64(SigningKeysTest.key("current"), SigningKeysTest.key("next"));
            TabClientConfig config;
            LayoutBundle bundle;
            int candidate;
            TabClient client;
            try (SignedServer server = new SignedServer()) {
                String url = server.url;
                waitUntilReady(url);
                bundle = TabClient.downloadBundle(TabClientConfig.builder(url, "jack").preferredLanguages("en").build());
                HttpResponse<String> draft = send("PATCH", url + "/v1/accounts/jack/layout?publish=false", etag(url),
                        "application/merge-patch+json", "{\"initialTab\":\"home\"}");
                assertEquals(200, draft.statusCode(), draft.body());
                candidate = Integer.parseInt(draft.headers().firstValue("Layout-Version").orElseThrow());
                HttpResponse<String> rollout = send("POST", url + "/v1/accounts/jack/layout/rollout", etag(url), "application/json",
                        "{\"version\":" + candidate + ",\"steps\":[{\"percent\":50,\"hold\":\"PT1H\"}],\"seed\":\"fixed-seed\"}");
                assertEquals(201, rollout.statusCode(), rollout.body());
                config = TabClientConfig.builder(url, "jack").preferredLanguages("en").signingKeys(keys).manifestMode(true).installId("install-0")
                        .cacheDirectory(cache).clock(clock).build();
                client = new TabClient(config, bundle);
                assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, client.refresh().kind, "the stable arm: the bundled version");
                long at = client.nextSwitchMillis();
                long hour = System.currentTimeMillis() + 3_600_000;
                assertTrue(Math.abs(at - hour) < 120_000, "the switch at the step, an hour from now: " + at + " vs " + hour);
                assertTrue(new File(cache, "jack.tabs.prefetch.json").isFile());
            }
            clock.set(client.nextSwitchMillis());
            CompiledLayout switched = client.switchIfDue();
            assertNotNull(switched, "no switch at the step's time");
            assertEquals(candidate, switched.version.intValue());
            assertEquals("home", client.current().initialTab().id);
            TabClient relaunched = new TabClient(config, bundle);
            assertEquals(TabClient.Source.CACHE, relaunched.source());
            assertEquals(candidate, relaunched.current().version.intValue());
        } finally {
            ConformanceTest.delete(cache);
        }
    }

    String etag(String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url + "/v1/accounts/jack/layout")).header("Authorization", "Bearer " + TOKEN).build(),
                HttpResponse.BodyHandlers.discarding()).headers().firstValue("ETag").orElseThrow();
    }

    HttpResponse<String> send(String method, String url, String ifMatch, String type, String body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + TOKEN).header("Content-Type", type)
                .method(method, HttpRequest.BodyPublishers.ofString(body));
        if (ifMatch != null) request.header("If-Match", ifMatch);
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    void waitUntilReady(String url) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(url + "/readyz")).build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200) return;
            } catch (java.io.IOException notYet) {
                // Not listening yet.
            }
            Thread.sleep(100);
        }
        throw new AssertionError("tabserver did not become ready; see build/live-tabserver.log");
    }

    /** Sets jack's initialTab with a merge patch (If-Match: the current ETag); returns when it was acknowledged. */
    long patchInitialTab(String url, String tab) throws Exception {
        URI layout = URI.create(url + "/v1/accounts/jack/layout");
        HttpResponse<String> current = http.send(HttpRequest.newBuilder(layout).header("Authorization", "Bearer " + TOKEN).build(),
                HttpResponse.BodyHandlers.ofString());
        String etag = current.headers().firstValue("ETag").orElseThrow();
        HttpResponse<String> patched = http.send(HttpRequest.newBuilder(layout).header("Authorization", "Bearer " + TOKEN).header("If-Match", etag)
                .header("Content-Type", "application/merge-patch+json").method("PATCH", HttpRequest.BodyPublishers.ofString("{\"initialTab\":\"" + tab + "\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        long acknowledged = System.nanoTime();
        assertEquals(200, patched.statusCode(), patched.body());
        return acknowledged;
    }
}
