package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.jar.JarFile;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** The jar as a watcher: prints the tab bar, and again within a second of a change (against a scripted server). */
class WatcherTest {
    @Test
    void theJarIsAWatcher() throws Exception {
        try (JarFile jar = new JarFile("build/tabclient.jar")) {
            assertEquals("io.tabserver.tabclient.Watch", jar.getManifest().getMainAttributes().getValue("Main-Class"));
        }
        JSONObject changed = Conformance.layout(new JSONObject().put("version", 2).put("title", "Maison"), Conformance.bundle());
        changed.put("initialIndex", 0);
        long changeDelay = 1500;
        try (FakeServer server = new FakeServer()) {
            server.play(Arrays.asList(
                    FakeServer.Reply.of(200, Conformance.bundle().toString().getBytes(StandardCharsets.UTF_8), "Content-Type", "application/json"),
                    FakeServer.Reply.of(304, new byte[0], "ETag", "\"bundled-identity\""),
                    delayed(FakeServer.Reply.of(200, changed.toString().getBytes(StandardCharsets.UTF_8), "Content-Type", "application/json", "ETag",
                            "\"v2\""), changeDelay)), true);
            try (WatcherProcess watcher = new WatcherProcess(server.url(), "--account", "jack", "--locale", "en", "--install-id", "watcher-1")) {
                WatcherProcess.Print first = watcher.next(30);
                assertNotNull(first, "no first print; stderr: " + watcher.errors);
                assertTrue(first.text().startsWith("jack v1 · en · server · ETag \"bundled-identity\""), first.text());
                assertTrue(first.text().contains("| Bundled home | *Favourites [3]* | Web | News | More ⋯2 |"), first.text());
                WatcherProcess.Print second = watcher.next(30);
                assertNotNull(second, "no second print; stderr: " + watcher.errors);
                assertTrue(second.text().contains("| *Maison* | Favourites [3] | Web | News | More ⋯2 |"), second.text());
                assertTrue(second.text().startsWith("jack v2 · en · server · ETag \"v2\""), second.text());
                // Within a second of the answer leaving the server (it was sent changeDelay after the long-poll came).
                long answered = server.requests().get(2).atNanos() + changeDelay * 1000000;
                long after = (second.atNanos() - answered) / 1000000;
                assertTrue(after < 1000, "printed " + after + " ms after the change");
                assertEquals("/v1/accounts/jack/tabs/bundle?locale=en&platform=android", server.requests().get(0).target());
                assertEquals("/v1/accounts/jack/tabs?wait=50", server.requests().get(2).target());
                for (int i = 1; i < 3; i++) {
                    assertEquals("watcher-1", server.requests().get(i).header("X-Install-Id"));
                    assertEquals("android", server.requests().get(i).header("X-Client-Platform"));
                }
            }
        }
    }

    static FakeServer.Reply delayed(FakeServer.Reply reply, long millis) {
        reply.delayMs = millis;
        return reply;
    }
}
