package io.tabserver.tabclient;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * The Ed25519 public keys an app pins (docs/rollouts.md, "Signed layouts"): with them, a {@link TabClient} shows a layout or follows a
 * manifest only when its {@code Tabs-Signature} verifies with one of them, from the network, the disk cache or the
 * bundle. Pin the next key as well before the server switches to it (docs/android.md, "Signed layouts").
 *
 * <p>Verification is the platform's {@code java.security.Signature.getInstance("Ed25519")}: JDK 15 and up, Android API 33
 * and up. Where the runtime has no Ed25519, making a {@code SigningKeys} throws: a client is never configured to pin keys
 * it cannot check. Nothing here is cryptography of our own.
 */
public final class SigningKeys {
    /** DER of an X.509 {@code SubjectPublicKeyInfo} for Ed25519 (RFC 8410), before the 32 raw key bytes. */
    private static final byte[] X509_PREFIX = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

    /** Each key by its id. */
    private final Map<String, PublicKey> keys;

    private SigningKeys(Map<String, PublicKey> keys) { this.keys = Collections.unmodifiableMap(keys); }

    /**
     * Keys given as base64 of their 32 raw bytes ({@code publicKey} in {@code GET /v1/keys}).
     *
     * @throws TabClientException INVALID_SIGNING_KEY for no key, a value that is not such a key, or a runtime without
     *     Ed25519 (Android below API 33, a JDK below 15)
     */
    public static SigningKeys fromBase64(List<String> keys) throws TabClientException {
        if (keys.isEmpty()) throw invalid("no keys: pin at least one, or pin none");
        KeyFactory factory;
        try {
            factory = KeyFactory.getInstance("Ed25519");
            Signature.getInstance("Ed25519");
        } catch (NoSuchAlgorithmException e) {
            throw invalid("this runtime has no Ed25519 (Android API 33 or a JDK 15 and up): it cannot check signatures, so it "
                    + "cannot pin keys");
        }
        Map<String, PublicKey> byId = new TreeMap<String, PublicKey>();
        for (int i = 0; i < keys.size(); i++) {
            byte[] raw = Codec.decode(keys.get(i));
            if (raw == null || raw.length != 32) throw invalid("key " + i + " is not base64 of 32 bytes (an Ed25519 public key)");
            byte[] encoded = new byte[X509_PREFIX.length + 32];
            System.arraycopy(X509_PREFIX, 0, encoded, 0, X509_PREFIX.length);
            System.arraycopy(raw, 0, encoded, X509_PREFIX.length, 32);
            try {
                byId.put(keyId(raw), factory.generatePublic(new X509EncodedKeySpec(encoded)));
            } catch (GeneralSecurityException e) {
                throw invalid("key " + i + " is not an Ed25519 public key: " + e.getMessage());
            }
        }
        return new SigningKeys(byId);
    }

    public static SigningKeys fromBase64(String... keys) throws TabClientException {
        List<String> list = new ArrayList<String>();
        Collections.addAll(list, keys);
        return fromBase64(list);
    }

    /**
     * The keys of a {@code GET /v1/keys} document ({@code {"keys": [{"kid", "alg": "Ed25519", "publicKey"}]}}). Ship it
     * in the app: fetched at run time from the server it protects, it would pin nothing.
     *
     * @throws TabClientException INVALID_SIGNING_KEY as {@link #fromBase64(List)}, and for a document that is not one, a
     *     {@code kid} that is not its key's, or an {@code alg} other than Ed25519
     */
    public static SigningKeys fromKeysDocument(String document) throws TabClientException {
        List<String> publicKeys = new ArrayList<String>();
        List<String> ids = new ArrayList<String>();
        try {
            JSONArray array = Json.array(Json.parseObject(document), "keys", "", true);
            for (int i = 0; i < array.length(); i++) {
                JSONObject key = Json.objectAt(array, i, "/keys");
                String alg = Json.string(key, "alg", "/keys/" + i, true);
                if (!alg.equals("Ed25519")) throw invalid("/keys/" + i + "/alg is " + alg + ", not Ed25519");
                ids.add(Json.string(key, "kid", "/keys/" + i, true));
                publicKeys.add(Json.string(key, "publicKey", "/keys/" + i, true));
            }
        } catch (Json.Invalid e) {
            throw invalid("not a /v1/keys document: " + e.getMessage());
        }
        SigningKeys keys = fromBase64(publicKeys);
        for (int i = 0; i < ids.size(); i++) {
            if (!keys.keys.containsKey(ids.get(i))) throw invalid("/keys/" + i + "/kid " + ids.get(i) + " is not the id of its publicKey");
        }
        return keys;
    }

    /** The ids of the pinned keys, sorted. */
    public List<String> keyIds() { return new ArrayList<String>(keys.keySet()); }

    /** Lowercase hex of the first 8 bytes of SHA-256 of a raw public key. */
    static String keyId(byte[] raw) {
        byte[] digest;
        try {
            digest = MessageDigest.getInstance("SHA-256").digest(raw);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every Java platform has SHA-256", e);
        }
        StringBuilder hex = new StringBuilder();
        for (int i = 0; i < 8; i++) hex.append(String.format("%02x", digest[i] & 0xff));
        return hex.toString();
    }

    /** The bytes signed: {@code tabs-signature-v1}, kind, account, environment, each ended by a newline, then the body. */
    static byte[] message(String kind, String account, String environment, byte[] body) {
        byte[] head = ("tabs-signature-v1\n" + kind + "\n" + account + "\n" + environment + "\n").getBytes(CompiledLayout.UTF8);
        byte[] message = new byte[head.length + body.length];
        System.arraycopy(head, 0, message, 0, head.length);
        System.arraycopy(body, 0, message, head.length, body.length);
        return message;
    }

    /**
     * Checks that {@code sig} (base64) is the signature by the pinned key {@code keyId} of {@code body}.
     *
     * @param kind {@code layout} or {@code manifest}
     * @throws TabClientException INVALID_SIGNATURE: missing, by a key not pinned, not base64, or not valid
     */
    void verify(String keyId, String sig, String kind, String account, String environment, byte[] body) throws TabClientException {
        if (keyId == null || sig == null) throw signature("the " + kind + " is not signed (no Tabs-Signature)");
        PublicKey key = keys.get(keyId);
        if (key == null) throw signature("the " + kind + " is signed by key " + keyId + ", which is not pinned (" + Strings.join(", ", keyIds()) + ")");
        byte[] bytes = Codec.decode(sig);
        if (bytes == null) throw signature("the " + kind + "'s signature is not base64");
        boolean valid;
        try {
            Signature verifier = Signature.getInstance("Ed25519");
            verifier.initVerify(key);
            verifier.update(message(kind, account, environment, body));
            valid = verifier.verify(bytes);
        } catch (GeneralSecurityException e) {
            valid = false;
        }
        if (!valid) {
            throw signature("the " + kind + "'s signature by key " + keyId + " does not verify (account " + account + ", environment "
                    + environment + ")");
        }
    }

    /** Checks a {@code Tabs-Signature} header value ({@code keyid="K", sig="S"}) as {@link #verify}. */
    void verifyHeader(String header, String kind, String account, String environment, byte[] body) throws TabClientException {
        String[] parsed = parseHeader(header);
        verify(parsed == null ? null : parsed[0], parsed == null ? null : parsed[1], kind, account, environment, body);
    }

    /** {@code keyid="K", sig="S"} as {@code {K, S}}; null for anything else (then the answer counts as unsigned). */
    static String[] parseHeader(String header) {
        if (header == null) return null;
        String keyId = null;
        String sig = null;
        for (String part : header.split(",")) {
            int equals = part.indexOf('=');
            if (equals < 0) return null;
            String name = part.substring(0, equals).trim();
            String value = part.substring(equals + 1).trim();
            if (value.length() < 2 || value.charAt(0) != '"' || value.charAt(value.length() - 1) != '"') return null;
            value = value.substring(1, value.length() - 1);
            if (name.equalsIgnoreCase("keyid")) keyId = value;
            else if (name.equalsIgnoreCase("sig")) sig = value;
        }
        return keyId == null || sig == null ? null : new String[] {keyId, sig};
    }

    private static TabClientException invalid(String reason) {
        return new TabClientException(TabClientException.Kind.INVALID_SIGNING_KEY, "invalid signing key: " + reason);
    }

    static TabClientException signature(String reason) {
        return new TabClientException(TabClientException.Kind.INVALID_SIGNATURE, "refused: " + reason);
    }

    /** INVALID_SIGNATURE saying where ({@code bundle}, {@code cache file}): {@code e}'s reason, or {@code e} whole. */
    static TabClientException refused(String place, TabClientException e) {
        String message = e.getMessage();
        return signature(place + ": " + (message.startsWith("refused: ") ? message.substring("refused: ".length()) : message));
    }

    /**
     * Base64 (RFC 4648, the standard alphabet, padded), the client's own: {@code java.util.Base64} is Android API 26, and
     * bundles and cache files carry signed bodies in base64 on every API level the client runs on (24 and up).
     */
    static final class Codec {
        private static final char[] ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".toCharArray();

        private Codec() {}

        /** The bytes, or null when {@code text} is not base64 (padding may be left out, as {@code java.util.Base64} allows). */
        static byte[] decode(String text) {
            if (text == null) return null;
            int length = text.length();
            int pad = 0;
            while (pad < 2 && length > 0 && text.charAt(length - 1) == '=') {
                length--;
                pad++;
            }
            if (length % 4 == 1 || (pad > 0 && (length + pad) % 4 != 0)) return null;
            byte[] out = new byte[length * 3 / 4];
            int buffer = 0;
            int bits = 0;
            int n = 0;
            for (int i = 0; i < length; i++) {
                int value = value(text.charAt(i));
                if (value < 0) return null;
                buffer = (buffer << 6) | value;
                bits += 6;
                if (bits >= 8) {
                    bits -= 8;
                    out[n++] = (byte) (buffer >> bits);
                }
            }
            return n == out.length ? out : java.util.Arrays.copyOf(out, n);
        }

        private static int value(char c) {
            if (c >= 'A' && c <= 'Z') return c - 'A';
            if (c >= 'a' && c <= 'z') return c - 'a' + 26;
            if (c >= '0' && c <= '9') return c - '0' + 52;
            if (c == '+') return 62;
            if (c == '/') return 63;
            return -1;
        }

        static String encode(byte[] bytes) {
            StringBuilder out = new StringBuilder((bytes.length + 2) / 3 * 4);
            for (int i = 0; i < bytes.length; i += 3) {
                int b0 = bytes[i] & 0xff;
                int b1 = i + 1 < bytes.length ? bytes[i + 1] & 0xff : 0;
                int b2 = i + 2 < bytes.length ? bytes[i + 2] & 0xff : 0;
                out.append(ALPHABET[b0 >> 2]).append(ALPHABET[((b0 & 3) << 4) | (b1 >> 4)]);
                out.append(i + 1 < bytes.length ? ALPHABET[((b1 & 15) << 2) | (b2 >> 6)] : '=');
                out.append(i + 2 < bytes.length ? ALPHABET[b2 & 63] : '=');
            }
            return out.toString();
        }
    }
}
