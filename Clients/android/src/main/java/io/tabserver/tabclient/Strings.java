package io.tabserver.tabclient;

import java.util.List;
import java.util.Locale;

/** Small string helpers that Android API 24 lacks ({@code String.join} is API 26). */
final class Strings {
    private Strings() {}

    /** What an error quotes of an answer at most (UTF-8 bytes): a few hundred, never the body. */
    static final int QUOTED_BYTES = 300;
    /** An error message at most (UTF-8 bytes, before the note of what was cut). */
    static final int MESSAGE_BYTES = 700;

    /**
     * {@code text} for an error message or a log line: control characters (line breaks included) escaped as {@code \\n},
     * {@code \\uXXXX}, so that a server's text cannot forge lines, and at most {@code maxBytes} of UTF-8, then {@code …}
     * and the length in all. Null stays null.
     */
    static String capped(String text, int maxBytes) {
        if (text == null) return null;
        StringBuilder out = new StringBuilder();
        int bytes = 0;
        for (int i = 0; i < text.length();) {
            int c = text.codePointAt(i);
            String piece;
            int size;
            if (c == '\n') {
                piece = "\\n";
            } else if (c == '\r') {
                piece = "\\r";
            } else if (c == '\t') {
                piece = "\\t";
            } else if (c < 0x20 || (c >= 0x7F && c < 0xA0) || c == 0x2028 || c == 0x2029) {
                piece = String.format(Locale.ROOT, "\\u%04x", c);
            } else {
                piece = null;
            }
            size = piece != null ? piece.length() : c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            if (bytes + size > maxBytes) {
                return out.append("… (").append(text.length()).append(" characters in all)").toString();
            }
            if (piece != null) out.append(piece);
            else out.appendCodePoint(c);
            bytes += size;
            i += Character.charCount(c);
        }
        return out.toString();
    }

    static String join(String separator, List<String> parts) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) text.append(separator);
            text.append(parts.get(i));
        }
        return text.toString();
    }
}
