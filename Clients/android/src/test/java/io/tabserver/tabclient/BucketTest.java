package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.charset.StandardCharsets;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** The rollout bucket is the server's and GrowthBook's: FNV-1a over UTF-16 code units (the vectors of docs/rollouts.md). */
class BucketTest {
    @Test
    void theSharedVectors() throws Exception {
        JSONArray vectors = Conformance.read(Conformance.directory().resolve("bucket-vectors.json")).getJSONArray("vectors");
        assertEquals(5, vectors.length());
        for (int i = 0; i < vectors.length(); i++) {
            JSONObject v = vectors.getJSONObject(i);
            assertEquals(v.getInt("bucket"), Bucket.of(v.getString("installId"), v.getString("seed")), v.toString());
        }
    }

    @Test
    void fnvOverCodeUnitsIsFnvOverBytesForAsciiOnly() {
        assertEquals(2166136261L, Bucket.fnv1a32(""));
        assertEquals(0xE40C292CL, Bucket.fnv1a32("a"));
        for (String ascii : new String[] {"a", "install-0", "jack:production:13f1c9e2a"}) assertEquals(bytesHash(ascii), Bucket.fnv1a32(ascii));
        // é is one UTF-16 unit (0x00E9) but two UTF-8 bytes; 📱 two surrogates, four bytes.
        assertNotEquals(bytesHash("é"), Bucket.fnv1a32("é"));
        assertNotEquals(bytesHash("📱"), Bucket.fnv1a32("📱"));
    }

    /** FNV-1a 32 over UTF-8 bytes: what the bucket is not. */
    static long bytesHash(String text) {
        int hash = 0x811C9DC5;
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            hash ^= b & 0xFF;
            hash *= 16777619;
        }
        return hash & 0xFFFFFFFFL;
    }
}
