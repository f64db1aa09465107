package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** What the client needs of Android 24 and no more: its own base64, and no reflection an app can spare it. */
class PlatformTest {
    @Test
    void theCodecAgreesWithJavaUtilBase64() {
        Random random = new Random(7);
        for (int length = 0; length < 70; length++) {
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            String text = java.util.Base64.getEncoder().encodeToString(bytes);
            assertEquals(text, SigningKeys.Codec.encode(bytes));
            assertArrayEquals(bytes, SigningKeys.Codec.decode(text));
            assertArrayEquals(bytes, SigningKeys.Codec.decode(text.replace("=", "")), "padding may be left out");
        }
        assertNull(SigningKeys.Codec.decode("ab$d"));
        assertNull(SigningKeys.Codec.decode("abcde"));
        assertNull(SigningKeys.Codec.decode("ab=c"));
        assertNull(SigningKeys.Codec.decode("abc=="));
    }

    @Test
    void anAppThatGivesItsVersionCostsNoReflection() {
        int before = AndroidApp.versionLookups.get();
        TabClientConfig.Builder builder = TabClientConfig.builder("http://127.0.0.1:1", "jack");
        assertEquals(before, AndroidApp.versionLookups.get(), "builder() looks nothing up");
        assertEquals("2.1", builder.appVersion("2.1").build().appVersion);
        assertEquals(before, AndroidApp.versionLookups.get(), "build() with an app version looks nothing up");
        builder = TabClientConfig.builder("http://127.0.0.1:1", "jack");
        builder.build();
        assertEquals(before + 1, AndroidApp.versionLookups.get(), "without one, build() reads the app's versionName once");
    }
}
