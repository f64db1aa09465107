package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** kill -9 of a process in the middle of writing the cache, again and again: the file is always a whole layout. */
class KillDuringWriteTest {
    /** jack's bundled layout at {@code version} with 60 tabs (~15 KB) and a 400 KB parameter, so a write takes a while. */
    static byte[] body(int version) throws Exception {
        JSONObject layout = Conformance.layout(new JSONObject().put("version", version), Conformance.bundle());
        JSONArray tabs = layout.getJSONArray("tabs");
        JSONObject first = tabs.getJSONObject(0);
        StringBuilder filler = new StringBuilder();
        for (int i = 0; i < 400000; i++) filler.append((char) ('a' + i % 26));
        first.put("params", new JSONObject().put("filler", filler.toString()));
        return layout.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aKilledWriteLeavesTheOldCopyOrTheNewOne() throws Exception {
        File directory = Files.createTempDirectory("tabclient-kill").toFile();
        String json = new File(JSONObject.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
        String classPath = Paths.get("build", "classes") + File.pathSeparator + Paths.get("build", "test-classes") + File.pathSeparator + json;
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        Random random = new Random(42);
        int leftovers = 0;
        try {
            for (int round = 0; round < 12; round++) {
                Process writer = new ProcessBuilder(java, "-cp", classPath, "io.tabserver.tabclient.CacheWriter", directory.getPath())
                        .redirectErrorStream(true).start();
                BufferedReader out = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8));
                assertEquals("first write done", out.readLine());
                Thread.sleep(20 + random.nextInt(150));
                writer.destroyForcibly(); // SIGKILL
                assertTrue(writer.waitFor(10, TimeUnit.SECONDS));
                String[] names = directory.list();
                for (String name : names) leftovers += name.startsWith(".jack.tabs.json.tmp-") ? 1 : 0;
                LayoutCache.Entry entry = new LayoutCache(directory, "jack", null).load(false);
                assertNotNull(entry, "round " + round + ": no cache file");
                int version = entry.layout.version;
                assertTrue(version == 1 || version == 2);
                assertEquals("\"v" + version + "\"", entry.etag);
                // A launch shows it, and removes what the kill left.
                TabClient client = new TabClient(TabClientConfig.builder("http://127.0.0.1:9", "jack").cacheDirectory(directory).build(),
                        ConfigTest.bundle());
                assertEquals(TabClient.Source.CACHE, client.source());
                assertEquals(version, (int) client.current().version);
                for (String name : directory.list()) assertTrue(!name.contains(".tmp-"), name);
            }
            System.out.println("kill -9 during writes: 12 rounds, " + leftovers + " killed mid-write (a temporary file left), every cache whole");
        } finally {
            ConformanceTest.delete(directory);
        }
    }
}
