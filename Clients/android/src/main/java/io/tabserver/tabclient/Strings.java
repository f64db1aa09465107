package io.tabserver.tabclient;

import java.util.List;

/** Small string helpers that Android API 24 lacks ({@code String.join} is API 26). */
final class Strings {
    private Strings() {}

    static String join(String separator, List<String> parts) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) text.append(separator);
            text.append(parts.get(i));
        }
        return text.toString();
    }
}
