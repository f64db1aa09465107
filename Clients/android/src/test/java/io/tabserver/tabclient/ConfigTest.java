package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.Arrays;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/** What the client says about itself by default, and the configurations it refuses before sending anything. */
class ConfigTest {
    static LayoutBundle bundle() throws Exception { return LayoutBundle.parse(Conformance.bundle().toString()); }

    @Test
    void byDefaultItSaysAndroidItsInstallAndTheUsersLanguages() throws Exception {
        try (FakeServer server = new FakeServer()) {
            server.play(Collections.singletonList(FakeServer.Reply.of(304, new byte[0], "ETag", "\"bundled-identity\"")), false);
            java.io.File cache = Files.createTempDirectory("tabclient-config").toFile();
            try {
                TabClientConfig config = TabClientConfig.builder(server.url(), "jack").cacheDirectory(cache).build();
                assertEquals("android", config.platform);
                assertNull(config.appVersion, "a JVM has no versionName");
                TabClient client = new TabClient(config, bundle());
                assertEquals(RefreshOutcome.Kind.NOT_MODIFIED, client.refresh().kind);
                FakeServer.Received request = server.requests().get(0);
                assertEquals("android", request.header("X-Client-Platform"));
                assertEquals(client.installId(), request.header("X-Install-Id"));
                assertTrue(client.installId().matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
                assertEquals(java.util.Locale.getDefault().toLanguageTag(), request.header("Accept-Language"));
                assertNull(request.header("X-App-Version"));
                assertEquals("application/json", request.header("Accept"));
            } finally {
                ConformanceTest.delete(cache);
            }
        }
        // An app version given is sent.
        try (FakeServer server = new FakeServer()) {
            server.play(Collections.singletonList(FakeServer.Reply.of(304, new byte[0], "ETag", "\"bundled-identity\"")), false);
            TabClient client = new TabClient(TabClientConfig.builder(server.url(), "jack").appVersion("4.2.1").build(), bundle());
            client.refresh();
            assertEquals("4.2.1", server.requests().get(0).header("X-App-Version"));
        }
    }

    @Test
    void anInstallIdBeyondAsciiGoesInTheQueryAsUtf8() throws Exception {
        try (FakeServer server = new FakeServer()) {
            server.play(Collections.singletonList(FakeServer.Reply.of(304, new byte[0], "ETag", "\"bundled-identity\"")), false);
            TabClient client = new TabClient(TabClientConfig.builder(server.url(), "jack").installId("ünïcødé-📱").build(), bundle());
            client.refresh();
            FakeServer.Received request = server.requests().get(0);
            assertEquals("/v1/accounts/jack/tabs?installId=%C3%BCn%C3%AFc%C3%B8d%C3%A9-%F0%9F%93%B1", request.target());
            assertNull(request.header("X-Install-Id"));
            assertEquals(7603, Bucket.of(client.installId(), "jack:production:1"));
        }
        try (FakeServer server = new FakeServer()) {
            server.play(Collections.singletonList(FakeServer.Reply.of(304, new byte[0], "ETag", "\"bundled-identity\"")), false);
            TabClient client = new TabClient(TabClientConfig.builder(server.url(), "jack").installId("ascii id~").build(), bundle());
            client.refresh();
            assertEquals("/v1/accounts/jack/tabs", server.requests().get(0).target());
            assertEquals("ascii id~", server.requests().get(0).header("X-Install-Id"));
        }
    }

    @Test
    void aVersionNameSendsItsLeadingDottedNumbers() {
        assertEquals("2.1.0", TabClientConfig.dottedPrefix("2.1.0-beta"));
        assertEquals("3", TabClientConfig.dottedPrefix("3 (build 7)"));
        assertEquals("1.2.3.4", TabClientConfig.dottedPrefix("1.2.3.4.5"));
        assertEquals("1.2", TabClientConfig.dottedPrefix("1.2."));
        assertNull(TabClientConfig.dottedPrefix("v2"));
        assertNull(TabClientConfig.dottedPrefix("1234567890"));
        assertTrue(TabClientConfig.isAppVersion("2.1"));
        assertFalse(TabClientConfig.isAppVersion("2.1-beta"));
    }

    @Test
    void whatCannotBeSentIsRefusedAtOnce() throws Exception {
        LayoutBundle bundle = bundle();
        for (String name : Arrays.asList("", "Staging", "1production", "pre prod", "staging.eu", "prodé", "staging\r\nX-Install-Id: forged",
                "a" + new String(new char[32]).replace('\0', 'b'))) {
            TabClientException e = assertThrows(TabClientException.class,
                    () -> new TabClient(TabClientConfig.builder("http://127.0.0.1:9", "jack").environment(name).build(), bundle));
            assertEquals(TabClientException.Kind.INVALID_ENVIRONMENT, e.kind(), name);
        }
        for (String id : Arrays.asList("", " padded", "new\nline", "nul\0", new String(new char[129]).replace('\0', 'a'))) {
            TabClientException e = assertThrows(TabClientException.class,
                    () -> new TabClient(TabClientConfig.builder("http://127.0.0.1:9", "jack").installId(id).build(), bundle));
            assertEquals(TabClientException.Kind.INVALID_INSTALL_ID, e.kind(), id);
        }
        // 128 code points are fine, surrogate pairs counting once.
        new TabClient(TabClientConfig.builder("http://127.0.0.1:9", "jack").installId(new String(new char[64]).replace("\0", "📱")).build(), bundle);
        TabClientException e = assertThrows(TabClientException.class,
                () -> new TabClient(TabClientConfig.builder("http://127.0.0.1:9", "jack").appVersion("2.1-beta").build(), bundle));
        assertEquals(TabClientException.Kind.INVALID_APP_VERSION, e.kind());
    }

    @Test
    void theJsonReaderIsStrict() {
        for (String text : Arrays.asList("{\"a\":1} trailing", "<html>", "'single'", "{}", "[1]")) {
            assertThrows(TabClientException.class, () -> CompiledLayout.parse(text), text);
        }
    }

    @Test
    void theBundlePicksThePreferredLanguageThenItsBase() throws Exception {
        LayoutBundle bundle = bundle();
        assertEquals("en", bundle.representation(Arrays.asList("de", "en-GB"), null, null).locale);
        assertEquals(bundle.representations.get(0), bundle.representation(Collections.<String>emptyList(), "android", "1.0"));
        assertEquals(Arrays.asList("\"bundled-identity\"", "\"bundled-br\"", "\"bundled-gzip\""), bundle.representations.get(0).validators);
    }
}
