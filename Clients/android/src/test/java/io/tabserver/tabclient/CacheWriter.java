package io.tabserver.tabclient;

import java.io.File;

/**
 * Run as a process of its own by {@link KillDuringWriteTest}: stores two large layouts in turn, as fast as it can, until
 * it is killed.
 */
public final class CacheWriter {
    private CacheWriter() {}

    public static void main(String[] arguments) throws Exception {
        LayoutCache cache = new LayoutCache(new File(arguments[0]), "jack", null);
        byte[][] bodies = {KillDuringWriteTest.body(1), KillDuringWriteTest.body(2)};
        for (long n = 0;; n++) {
            cache.store(bodies[(int) (n % 2)], "\"v" + (n % 2 + 1) + "\"", false, null, null);
            if (n == 0) System.out.println("first write done");
        }
    }
}
