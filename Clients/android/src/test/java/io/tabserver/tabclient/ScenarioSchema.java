package io.tabserver.tabclient;

import java.io.IOException;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The known keys of the scenario format, read from {@code Clients/conformance/scenario.schema.json}, the one place they
 * are written: every object a scenario holds is matched to its schema (through {@code $ref}, {@code properties},
 * {@code additionalProperties} and {@code items}) and a key its {@code properties} do not name is refused, so that a
 * scenario never passes by being half read. Not a JSON Schema validator: types and enums are
 * {@code scripts/scenario-schema-check}'s, which validates every scenario fully.
 */
final class ScenarioSchema {
    private static final String DEFINITIONS = "#/$defs/";
    private final JSONObject root;
    private final JSONObject definitions;

    ScenarioSchema(JSONObject root) throws JSONException {
        this.root = root;
        this.definitions = root.getJSONObject("$defs");
    }

    /** {@code scenario.schema.json} beside the scenarios. */
    static ScenarioSchema load() throws IOException, JSONException {
        return new ScenarioSchema(Conformance.read(Conformance.directory().resolve("scenario.schema.json")));
    }

    /** Refuses the first key the schema does not name, with its JSON Pointer: {@code /steps/0/expect: unknown key 'x'}. */
    void checkKeys(JSONObject scenario) throws JSONException {
        check(scenario, root, "");
    }

    private void check(Object value, JSONObject node, String place) throws JSONException {
        String reference = node.optString("$ref", null);
        if (reference != null) {
            String name = reference.startsWith(DEFINITIONS) ? reference.substring(DEFINITIONS.length()) : null;
            if (name == null || !definitions.has(name)) throw new IllegalStateException("scenario.schema.json: no definition " + reference);
            check(value, definitions.getJSONObject(name), place);
        }
        if (value instanceof JSONObject) {
            JSONObject object = (JSONObject) value;
            List<String> keys = Json.keys(object);
            Collections.sort(keys);
            JSONObject properties = node.optJSONObject("properties");
            JSONObject values = node.optJSONObject("additionalProperties");
            for (String key : keys) {
                String at = place + "/" + key.replace("~", "~0").replace("/", "~1");
                if (properties != null) {
                    if (!properties.has(key)) throw new IllegalArgumentException((place.isEmpty() ? "/" : place) + ": unknown key '" + key + "'");
                    check(object.get(key), properties.getJSONObject(key), at);
                }
                if (values != null) check(object.get(key), values, at);
            }
        }
        JSONObject items = node.optJSONObject("items");
        if (value instanceof JSONArray && items != null) {
            JSONArray array = (JSONArray) value;
            for (int i = 0; i < array.length(); i++) check(array.get(i), items, place + "/" + i);
        }
    }
}
