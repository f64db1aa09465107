package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What the client does with what a server should never send: JSON nested too deep, text too long. */
class HardeningTest {
    @Test
    void jsonDeeperThan64IsRefusedUnread() throws Exception {
        StringBuilder ok = new StringBuilder("{\"a\":");
        for (int i = 1; i < Json.MAXIMUM_DEPTH; i++) ok.append('[');
        for (int i = 1; i < Json.MAXIMUM_DEPTH; i++) ok.append(']');
        Json.parseObject(ok.append('}').toString());
        String deep = "{\"a\":" + new String(new char[Json.MAXIMUM_DEPTH]).replace('\0', '[');
        Json.Invalid refused = assertThrows(Json.Invalid.class, () -> Json.parseObject(deep));
        assertTrue(refused.getMessage().contains("nested deeper than 64"), refused.getMessage());
        Json.parseObject("{\"a\":\"" + new String(new char[3000]).replace('\0', '[') + "\"}");
    }

    @Test
    void errorTextIsCappedAndEscaped() {
        String text = new String(new char[100000]).replace('\0', 'é');
        TabClientException e = TabClientException.status(500, text, -1);
        assertTrue(e.detail().getBytes(StandardCharsets.UTF_8).length < 400, e.detail());
        assertTrue(e.getMessage().getBytes(StandardCharsets.UTF_8).length < 1024);
        assertEquals("a\\nb\\u001b[31m", Strings.capped("a\nb\u001b[31m", 300));
    }
}
