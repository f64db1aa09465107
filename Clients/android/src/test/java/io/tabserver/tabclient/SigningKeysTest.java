package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * Pinned keys, manifests and build manifests against the shared fixtures ({@code Clients/conformance/signed}, made by
 * Python's and openssl's Ed25519), checked with the JDK's verifier.
 */
class SigningKeysTest {
    static JSONObject document() throws Exception { return Conformance.read(Conformance.directory().resolve("signed").resolve("fixtures.json")); }

    static String key(String name) throws Exception { return document().getJSONObject("keys").getString(name); }

    static JSONObject fixture(String name) throws Exception { return document().getJSONObject("fixtures").getJSONObject(name); }

    @Test
    void keyIdsAreTheFirstEightBytesOfTheSha256OfTheRawKey() throws Exception {
        JSONObject ids = document().getJSONObject("keyIds");
        for (String name : Arrays.asList("current", "next", "stranger")) {
            assertEquals(ids.getString(name), SigningKeys.keyId(Base64.getDecoder().decode(key(name))));
        }
        SigningKeys keys = SigningKeys.fromBase64(key("next"), key("current"));
        assertEquals(Arrays.asList(ids.getString("next"), ids.getString("current")).stream().sorted().collect(java.util.stream.Collectors.toList()),
                keys.keyIds());
    }

    @Test
    void aGoodSignatureVerifiesAndAChangedByteDoesNot() throws Exception {
        SigningKeys keys = SigningKeys.fromBase64(key("current"));
        JSONObject layout = fixture("layout-v2");
        byte[] body = layout.getString("body").getBytes(StandardCharsets.UTF_8);
        String header = layout.getString("signature");
        keys.verifyHeader(header, "layout", "jack", "production", body);
        byte[] flipped = body.clone();
        flipped[flipped.length / 2] ^= 1;
        assertRefused(() -> keys.verifyHeader(header, "layout", "jack", "production", flipped));
        // The kind, account and environment are signed too.
        assertRefused(() -> keys.verifyHeader(header, "manifest", "jack", "production", body));
        assertRefused(() -> keys.verifyHeader(header, "layout", "jill", "production", body));
        assertRefused(() -> keys.verifyHeader(header, "layout", "jack", "staging", body));
        assertRefused(() -> keys.verifyHeader(null, "layout", "jack", "production", body));
        assertRefused(() -> keys.verifyHeader(fixture("layout-v5-stranger").getString("signature"), "layout", "jack", "production",
                fixture("layout-v5-stranger").getString("body").getBytes(StandardCharsets.UTF_8)));
    }

    interface Call {
        void run() throws Exception;
    }

    static void assertRefused(Call call) {
        TabClientException e = assertThrows(TabClientException.class, call::run);
        assertEquals(TabClientException.Kind.INVALID_SIGNATURE, e.kind(), e.getMessage());
    }

    @Test
    void whatIsNotAKeyFailsAtConfiguration() throws Exception {
        for (Call call : Arrays.<Call>asList(() -> SigningKeys.fromBase64(Collections.<String>emptyList()),
                () -> SigningKeys.fromBase64("not base64!"), () -> SigningKeys.fromBase64(Base64.getEncoder().encodeToString(new byte[31])),
                () -> SigningKeys.fromKeysDocument("{\"keys\":[{\"kid\":\"0000000000000000\",\"alg\":\"Ed25519\",\"publicKey\":\"" + key("current") + "\"}]}"),
                () -> SigningKeys.fromKeysDocument("{\"keys\":[{\"kid\":\"e0c6403a229eab24\",\"alg\":\"RS256\",\"publicKey\":\"" + key("current") + "\"}]}"),
                () -> SigningKeys.fromKeysDocument("[]"))) {
            TabClientException e = assertThrows(TabClientException.class, call::run);
            assertEquals(TabClientException.Kind.INVALID_SIGNING_KEY, e.kind(), e.getMessage());
        }
        SigningKeys fromDocument = SigningKeys.fromKeysDocument(
                "{\"keys\":[{\"kid\":\"e0c6403a229eab24\",\"alg\":\"Ed25519\",\"publicKey\":\"" + key("current") + "\"}]}");
        assertEquals(Collections.singletonList("e0c6403a229eab24"), fromDocument.keyIds());
    }

    @Test
    void theSignatureHeaderIsParsedAsTheServerWritesIt() {
        assertArrayEquals(new String[] {"abc", "ZGF0YQ=="}, SigningKeys.parseHeader("keyid=\"abc\", sig=\"ZGF0YQ==\""));
        assertArrayEquals(new String[] {"abc", "ZGF0YQ=="}, SigningKeys.parseHeader("sig=\"ZGF0YQ==\",  keyid=\"abc\""));
        assertNull(SigningKeys.parseHeader("keyid=abc, sig=ZGF0YQ=="));
        assertNull(SigningKeys.parseHeader("keyid=\"abc\""));
    }

    @Test
    void aManifestGivesTheArmByBucketAndTesters() throws Exception {
        Manifest manifest = Manifest.parse(fixture("manifest-r5").getString("body").getBytes(StandardCharsets.UTF_8));
        assertEquals(1795000000005L, manifest.revision); // tabserver's revisions are milliseconds: beyond 32 bits
        assertEquals(2, manifest.versionFor("3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77")); // bucket 1095 < 5000
        assertEquals(1, manifest.versionFor("install-0")); // bucket 9785
        assertEquals(2, manifest.versionFor("tester-0")); // a tester, bucket 7237
        assertEquals(1, Manifest.parse(fixture("manifest-r6").getString("body").getBytes(StandardCharsets.UTF_8)).versionFor("tester-0"));
        // The share in basis points, as the server compares it: 0.07 × 100 is 7.000000000000001, and bucket 7 is not below 7.
        assertEquals(7, Bucket.of("install-13381", "fixed-seed"));
        for (String[] share : new String[][] {{"0.07", "1"}, {"0.08", "2"}}) {
            String body = "{\"account\":\"jack\",\"environment\":\"production\",\"layout\":\"jack\",\"revision\":1,"
                    + "\"rollout\":{\"id\":1,\"installs\":[],\"percent\":" + share[0] + ",\"schedule\":[],\"seed\":\"fixed-seed\","
                    + "\"version\":2},\"stable\":{\"version\":1}}";
            assertEquals(Integer.parseInt(share[1]), Manifest.parse(body.getBytes(StandardCharsets.UTF_8)).versionFor("install-13381"), share[0]);
        }
        TabClientException e = assertThrows(TabClientException.class, () -> Manifest.parse("{}".getBytes(StandardCharsets.UTF_8)));
        assertEquals(TabClientException.Kind.INVALID_MANIFEST, e.kind());
    }

    @Test
    void aBuildManifestIsThePutBodyAsTabClientWritesIt() {
        BuildManifest build = new BuildManifest("android", "4.2.0",
                Arrays.asList("SearchViewController", "HomeViewController", "HomeViewController"), Collections.singletonList("house"), null);
        assertEquals("/v1/builds/android/4.2.0", build.path());
        assertEquals("{\"images\":[\"house\"],\"viewControllers\":[\"HomeViewController\",\"SearchViewController\"]}", build.body());
    }
}
