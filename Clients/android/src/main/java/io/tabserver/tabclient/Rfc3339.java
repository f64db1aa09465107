package io.tabserver.tabclient;

/**
 * RFC 3339 times as the manifest's schedule gives them ({@code 2026-11-26T21:00:00.000Z}), read strictly and the same
 * way as TabClient (Swift) reads them: {@code YYYY-MM-DDTHH:MM:SS}, an optional fraction (read to the millisecond, the
 * rest dropped), and {@code Z} or an offset {@code ±HH:MM}. No {@code java.time} (Android API 26) and no
 * {@code SimpleDateFormat} (its fractions are not decimal).
 */
final class Rfc3339 {
    private Rfc3339() {}

    /** Milliseconds since 1970-01-01T00:00:00Z, or null when {@code text} is not such a time. */
    static Long millis(String text) {
        if (text == null || text.length() < 20) return null;
        int year = number(text, 0, 4);
        int month = number(text, 5, 2);
        int day = number(text, 8, 2);
        int hour = number(text, 11, 2);
        int minute = number(text, 14, 2);
        int second = number(text, 17, 2);
        if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return null;
        if (!at(text, 4, "-") || !at(text, 7, "-") || !at(text, 10, "Tt") || !at(text, 13, ":") || !at(text, 16, ":")) return null;
        if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || second > 59) return null;
        int index = 19;
        int millis = 0;
        if (at(text, index, ".")) {
            index++;
            int start = index;
            while (index < text.length() && text.charAt(index) >= '0' && text.charAt(index) <= '9') index++;
            if (index == start) return null;
            for (int position = 0; position < 3; position++) {
                millis = millis * 10 + (start + position < index ? text.charAt(start + position) - '0' : 0);
            }
        }
        int offsetMinutes = 0;
        if (at(text, index, "Zz")) {
            index++;
        } else if (at(text, index, "+-")) {
            int sign = text.charAt(index) == '-' ? -1 : 1;
            int hours = number(text, index + 1, 2);
            int minutes = number(text, index + 4, 2);
            if (hours < 0 || minutes < 0 || !at(text, index + 3, ":") || hours > 23 || minutes > 59) return null;
            offsetMinutes = sign * (hours * 60 + minutes);
            index += 6;
        } else {
            return null;
        }
        if (index != text.length()) return null;
        long seconds = daysFromCivil(year, month, day) * 86400L + hour * 3600L + minute * 60L + second - offsetMinutes * 60L;
        return seconds * 1000 + millis;
    }

    /** The decimal number of {@code count} digits at {@code start}, or -1. */
    private static int number(String text, int start, int count) {
        if (start + count > text.length()) return -1;
        int value = 0;
        for (int i = start; i < start + count; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') return -1;
            value = value * 10 + (c - '0');
        }
        return value;
    }

    private static boolean at(String text, int index, String characters) {
        return index < text.length() && characters.indexOf(text.charAt(index)) >= 0;
    }

    static int daysIn(int month, int year) {
        switch (month) {
            case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28;
            case 4: case 6: case 9: case 11: return 30;
            default: return 31;
        }
    }

    /** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's {@code days_from_civil}). */
    static long daysFromCivil(int year, int month, int day) {
        int y = month <= 2 ? year - 1 : year;
        int era = (y >= 0 ? y : y - 399) / 400;
        int yearOfEra = y - era * 400;
        int dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
        int dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear;
        return era * 146097L + dayOfEra - 719468;
    }
}
