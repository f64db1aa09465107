package io.tabserver.tabclient;

/**
 * The rollout bucket of an install, as the server computes it (docs/rollouts.md, "Who gets the candidate") and as
 * GrowthBook's SDKs do: {@code fnv1a32(decimal(fnv1a32(seed + installId))) mod 10000}, FNV-1a 32 bits over the
 * string's UTF-16 code units (each whole 16-bit unit XORed in, not its UTF-8 bytes; for ASCII the two agree).
 * An install gets a rollout's candidate while {@code bucket < percent × 100}.
 */
public final class Bucket {
    private Bucket() {}

    /** The bucket, 0 to 9999, of {@code installId} in the rollout whose seed is {@code seed}. */
    public static int of(String installId, String seed) {
        long first = fnv1a32(seed + installId);
        return (int) (fnv1a32(Long.toString(first)) % 10000);
    }

    /** FNV-1a, 32 bits, over the UTF-16 code units of {@code text} (Java's {@code char}s), as an unsigned value. */
    static long fnv1a32(String text) {
        int hash = 0x811C9DC5; // 2166136261
        for (int i = 0; i < text.length(); i++) {
            hash ^= text.charAt(i);
            hash *= 16777619; // int arithmetic wraps: mod 2^32
        }
        return hash & 0xFFFFFFFFL;
    }
}
