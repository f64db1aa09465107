package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's known keys are {@code scenario.schema.json}'s: an unknown key anywhere in a scenario is refused by its pointer. */
class ScenarioSchemaTest {
    static final String UNKNOWN = "notAKeyOfTheFormat";

    /** One object of most kinds, and free-form members (headers, file names, a layout's extra, a request's json). */
    static JSONObject scenario() throws Exception {
        return Json.parseObject(("{'about': 'a scenario of most kinds of object', 'covers': ['keys'], 'config': {'account': 'jack'},"
                + " 'bundle': {'version': 1},"
                + " 'files': {'jack.tabs.json': {'cache': {'etag': 'v2', 'layout': {'version': 2, 'extra': {'anything': 1}}}}},"
                + " 'steps': [{'do': 'refresh',"
                + "   'answers': [{'status': 200, 'headers': {'X-Anything': '1'}, 'bodyRepeat': {'text': '[', 'times': 2}}],"
                + "   'expect': {'outcome': 'updated', 'cache': {'etag': 'v2'}, 'colors': {'dark': {'tintColor': '#ffffff'}},"
                + "     'requests': [{'target': '/', 'json': {'anything': {'deep': 1}}}], 'files': {'any-name': 'x'}}}]}").replace('\'', '"'));
    }

    /** The object at a JSON Pointer of the scenario (no escapes: these pointers have none). */
    static JSONObject at(JSONObject scenario, String pointer) throws Exception {
        Object value = scenario;
        for (String part : pointer.substring(1).split("/", -1)) {
            if (part.isEmpty()) continue;
            value = value instanceof JSONArray ? ((JSONArray) value).get(Integer.parseInt(part)) : ((JSONObject) value).get(part);
        }
        return (JSONObject) value;
    }

    @Test
    void aScenarioOfKnownKeysPassesFreeFormMembersIncluded() throws Exception {
        ScenarioSchema.load().checkKeys(scenario());
    }

    @Test
    void anUnknownKeyIsRefusedWhereverItIs() throws Exception {
        ScenarioSchema schema = ScenarioSchema.load();
        List<String> places = Arrays.asList("/", "/config", "/bundle", "/files/jack.tabs.json", "/files/jack.tabs.json/cache",
                "/files/jack.tabs.json/cache/layout", "/steps/0", "/steps/0/answers/0", "/steps/0/answers/0/bodyRepeat", "/steps/0/expect",
                "/steps/0/expect/cache", "/steps/0/expect/colors", "/steps/0/expect/colors/dark", "/steps/0/expect/requests/0");
        for (String place : places) {
            JSONObject scenario = scenario();
            at(scenario, place).put(UNKNOWN, true);
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> schema.checkKeys(scenario), place);
            assertEquals(place + ": unknown key '" + UNKNOWN + "'", refused.getMessage());
        }
    }

    @Test
    void theRunnerRefusesAScenarioWithAnUnknownKeyBeforeItRuns(@TempDir Path directory) throws Exception {
        JSONObject scenario = scenario();
        at(scenario, "/steps/0/expect").put("outcom", "updated");
        Path file = directory.resolve("misspelt.json");
        Files.write(file, scenario.toString().getBytes(StandardCharsets.UTF_8));
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> new ConformanceTest.Run(file).run());
        assertEquals("/steps/0/expect: unknown key 'outcom'", refused.getMessage());
    }
}
