package io.tabserver.tabclient;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.util.UUID;

/**
 * The opaque id an install names itself with in {@code X-Install-Id} (docs/client.md, "Install id and environments"): at most 128 characters (code points),
 * no control character, no space at either end. Kept in the file {@code install-id} in the cache directory (its UTF-8
 * bytes, nothing else), as TabClient (Swift) keeps it: made once, read back at every launch.
 */
final class InstallId {
    static final int MAXIMUM_LENGTH = 128;
    /** One process makes the first id once, even when two clients start together. */
    private static final Object LOCK = new Object();

    private InstallId() {}

    /** What is wrong with {@code text} as an install id, or null. */
    static String problem(String text) {
        if (text.isEmpty()) return "an install id is empty";
        int length = text.codePointCount(0, text.length());
        if (length > MAXIMUM_LENGTH) return "an install id has at most " + MAXIMUM_LENGTH + " characters; this one has " + length;
        for (int i = 0; i < text.length();) {
            int c = text.codePointAt(i);
            if (Character.getType(c) == Character.CONTROL) {
                return "an install id may not contain control characters (" + String.format("U+%04X", c) + ")";
            }
            i += Character.charCount(c);
        }
        if (text.charAt(0) == ' ' || text.charAt(text.length() - 1) == ' ') {
            return "an install id may not begin or end with a space: a header value loses it";
        }
        return null;
    }

    /** A new random id: a version 4 UUID in lower case, from {@code SecureRandom}; nothing derived from the device. */
    static String random() { return UUID.randomUUID().toString(); }

    /** The outcome of {@link #resolve}: the id, and why it could not be kept on disk (or null). */
    static final class Resolution {
        final String id;
        final TabClientException notStored;

        Resolution(String id, TabClientException notStored) {
            this.id = id;
            this.notStored = notStored;
        }
    }

    /** The id stored in {@code directory}, else a new one, stored. A file that holds no valid id is replaced. */
    static Resolution resolve(File directory) {
        File file = new File(directory, "install-id");
        synchronized (LOCK) {
            String stored = read(file);
            if (stored != null) return new Resolution(stored, null);
            String made = random();
            try {
                AtomicFile.write(file, made.getBytes(CompiledLayout.UTF8));
            } catch (IOException e) {
                return new Resolution(made,
                        new TabClientException(TabClientException.Kind.CACHE_WRITE_FAILED, "could not store " + file + ": " + e.getMessage()));
            }
            return new Resolution(made, null);
        }
    }

    /** The valid id in {@code file}, or null (no file, unreadable, not UTF-8, not a valid id). */
    static String read(File file) {
        try {
            byte[] bytes = AtomicFile.read(file);
            if (bytes == null) return null;
            String text = CompiledLayout.UTF8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
            return problem(text) == null ? text : null;
        } catch (CharacterCodingException e) {
            return null;
        } catch (IOException e) {
            return null;
        }
    }
}
