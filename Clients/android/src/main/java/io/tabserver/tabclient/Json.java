package io.tabserver.tabclient;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;
import org.json.JSONTokener;

/**
 * Strict reading over {@code org.json} (Android's, which is lenient: unquoted strings, comments, trailing text, "5"
 * read as 5): one value and nothing after it, and typed getters that refuse a value of another type.
 */
final class Json {
    private Json() {}

    /** Thrown for a document that is not the expected shape; the message is {@code "/pointer: what"}. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) { super(message); }
    }

    /** The deepest nesting of arrays and objects read; org.json recurses once per level, so deeper is refused unread. */
    static final int MAXIMUM_DEPTH = 64;

    /** The one JSON object {@code text} holds. */
    static JSONObject parseObject(String text) throws Invalid {
        checkDepth(text);
        JSONTokener tokener = new JSONTokener(text);
        Object value;
        try {
            value = tokener.nextValue();
            if (tokener.nextClean() != 0) throw new Invalid("not JSON: text after the document");
        } catch (JSONException e) {
            throw new Invalid("not JSON: " + Strings.capped(e.getMessage(), Strings.QUOTED_BYTES));
        }
        if (!(value instanceof JSONObject)) throw new Invalid("not JSON: not an object");
        return (JSONObject) value;
    }

    /** Refuses text whose arrays and objects nest deeper than {@link #MAXIMUM_DEPTH} (brackets in strings do not count). */
    static void checkDepth(String text) throws Invalid {
        int depth = 0;
        boolean inString = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') inString = false;
            } else if (c == '"') {
                inString = true;
            } else if (c == '[' || c == '{') {
                if (++depth > MAXIMUM_DEPTH) throw new Invalid("not JSON: nested deeper than " + MAXIMUM_DEPTH);
            } else if (c == ']' || c == '}') {
                depth--;
            }
        }
    }

    /** The value at {@code key}; null when it is absent or JSON {@code null}. */
    static Object opt(JSONObject object, String key) {
        Object value = object.opt(key);
        return value == JSONObject.NULL ? null : value;
    }

    static String string(JSONObject object, String key, String pointer, boolean required) throws Invalid {
        return typed(object, key, pointer, required, String.class, "a string");
    }

    /** The value at {@code key} when it is a {@code type}; null when absent (an error when {@code required}). */
    private static <T> T typed(JSONObject object, String key, String pointer, boolean required, Class<T> type, String expected)
            throws Invalid {
        Object value = opt(object, key);
        if (value == null) {
            if (required) throw new Invalid(pointer + "/" + key + ": required key is missing");
            return null;
        }
        if (!type.isInstance(value)) throw new Invalid(pointer + "/" + key + ": expected " + expected);
        return type.cast(value);
    }

    static Integer integer(JSONObject object, String key, String pointer) throws Invalid {
        Long number = whole(object, key, pointer);
        if (number == null) return null;
        if (number < Integer.MIN_VALUE || number > Integer.MAX_VALUE) throw new Invalid(pointer + "/" + key + ": expected an integer");
        return number.intValue();
    }

    /** A whole number of up to 53 bits (what a JSON number holds exactly), e.g. tabserver's millisecond revisions. */
    static Long whole(JSONObject object, String key, String pointer) throws Invalid {
        Object value = opt(object, key);
        if (value == null) return null;
        if (value instanceof Integer || value instanceof Long) return ((Number) value).longValue();
        if (value instanceof Double) {
            double number = (Double) value;
            if (number == Math.rint(number) && Math.abs(number) <= 9007199254740992.0) return (long) number;
        }
        throw new Invalid(pointer + "/" + key + ": expected an integer");
    }

    static Double number(JSONObject object, String key, String pointer) throws Invalid {
        Object value = opt(object, key);
        if (value == null) return null;
        if (!(value instanceof Number)) throw new Invalid(pointer + "/" + key + ": expected a number");
        return ((Number) value).doubleValue();
    }

    static Boolean bool(JSONObject object, String key, String pointer) throws Invalid {
        Object value = opt(object, key);
        if (value == null) return null;
        if (!(value instanceof Boolean)) throw new Invalid(pointer + "/" + key + ": expected true or false");
        return (Boolean) value;
    }

    static JSONObject object(JSONObject object, String key, String pointer, boolean required) throws Invalid {
        return typed(object, key, pointer, required, JSONObject.class, "an object");
    }

    static JSONArray array(JSONObject object, String key, String pointer, boolean required) throws Invalid {
        return typed(object, key, pointer, required, JSONArray.class, "an array");
    }

    static JSONObject objectAt(JSONArray array, int index, String pointer) throws Invalid {
        Object value = array.opt(index);
        if (!(value instanceof JSONObject)) throw new Invalid(pointer + "/" + index + ": expected an object");
        return (JSONObject) value;
    }

    static List<String> keys(JSONObject object) {
        List<String> keys = new ArrayList<String>();
        for (Iterator<String> it = object.keys(); it.hasNext();) keys.add(it.next());
        return keys;
    }

    /** Whether two parsed JSON values are the same value (object key order and 1 vs 1.0 do not matter). */
    static boolean same(Object a, Object b) {
        if (a == JSONObject.NULL || a == null) return b == JSONObject.NULL || b == null;
        if (a instanceof JSONObject) {
            if (!(b instanceof JSONObject)) return false;
            JSONObject x = (JSONObject) a;
            JSONObject y = (JSONObject) b;
            if (x.length() != y.length()) return false;
            for (String key : keys(x)) {
                if (!y.has(key) || !same(x.opt(key), y.opt(key))) return false;
            }
            return true;
        }
        if (a instanceof JSONArray) {
            if (!(b instanceof JSONArray)) return false;
            JSONArray x = (JSONArray) a;
            JSONArray y = (JSONArray) b;
            if (x.length() != y.length()) return false;
            for (int i = 0; i < x.length(); i++) {
                if (!same(x.opt(i), y.opt(i))) return false;
            }
            return true;
        }
        if (a instanceof Number && b instanceof Number) return ((Number) a).doubleValue() == ((Number) b).doubleValue();
        return a.equals(b);
    }
}
