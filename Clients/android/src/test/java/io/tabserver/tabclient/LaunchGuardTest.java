package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The launch guard's decisions as tables: what a launch does with the cache file's record, and the record's bounds. */
class LaunchGuardTest {
    private static LaunchGuard record(Integer pending, Integer launches, Integer... blocked) {
        return new LaunchGuard(pending, launches, Arrays.asList(blocked), Collections.<Integer>emptyList());
    }

    @Test
    void aLaunchDecides() {
        // Nothing pending, the guard off, or another version in the file: shown as it is.
        assertNull(LaunchGuard.atLaunch(LaunchGuard.EMPTY, 2, 1, 2));
        assertNull(LaunchGuard.atLaunch(record(2, 5), 2, 1, 0));
        assertNull(LaunchGuard.atLaunch(record(2, 1), 3, 1, 2));
        // One launch ended before markRendered(): this one counts.
        LaunchGuard.Verdict counted = LaunchGuard.atLaunch(record(2, 1), 2, 1, 2);
        assertNull(counted.revert);
        assertEquals(",\"guard\":{\"launches\":2,\"pending\":2}", counted.record.fragment());
        // launchAttempts launches ended before it: reverted and blocked, older blocks kept.
        LaunchGuard.Verdict reverted = LaunchGuard.atLaunch(record(2, 2, 7), 2, 1, 2);
        assertEquals(Integer.valueOf(2), reverted.revert);
        assertEquals(",\"guard\":{\"blocked\":[7,2]}", reverted.record.fragment());
        // The bundle's version is the floor: never reverted.
        LaunchGuard.Verdict floor = LaunchGuard.atLaunch(record(1, 9), 1, 1, 2);
        assertNull(floor.revert);
    }

    @Test
    void theBlockedListKeepsTheNewest32() {
        LaunchGuard record = LaunchGuard.EMPTY;
        for (int version = 1; version <= 40; version++) record = record.blocking(version);
        record = record.blocking(40);
        List<Integer> newest = new ArrayList<>();
        for (int version = 9; version <= 40; version++) newest.add(version);
        assertEquals(newest, record.blocked);
        assertTrue(record.refuses(9));
        assertFalse(record.refuses(8));
        assertFalse(record.refuses(null));
    }

    @Test
    void theRecordIsWrittenAsTabClientWritesIt() {
        assertEquals("", LaunchGuard.EMPTY.fragment());
        LaunchGuard record = new LaunchGuard(3, 1, Arrays.asList(2), Arrays.asList(5, 7));
        assertEquals(",\"guard\":{\"blocked\":[2],\"launches\":1,\"pending\":3,\"revoked\":[5,7]}", record.fragment());
        assertEquals(Arrays.asList(5, 9), LaunchGuard.revokedHeader("5,x, 9"));
        assertNull(LaunchGuard.revokedHeader(null));
    }

    @Test
    void aVersionGoneOutlivesOlderListsUntilTheServerNamesIt() throws Exception {
        LaunchGuard record = new LaunchGuard(null, null, Collections.<Integer>emptyList(), Arrays.asList(5)).withGone(7);
        assertEquals(Arrays.asList(5, 7), record.revoked);
        assertEquals(Arrays.asList(7), record.gone);
        assertTrue(record.refuses(7));
        assertEquals(Arrays.asList(7), record.withGone(7).gone);
        assertEquals(",\"guard\":{\"gone\":[7],\"revoked\":[5,7]}", record.fragment());
        LaunchGuard read = LaunchGuard.of(new org.json.JSONObject("{" + record.fragment().substring(1) + "}"));
        assertEquals(record.fragment(), read.fragment());
        // A list made before the revoke (it does not name 7) keeps it.
        record = record.withRevoked(Collections.<Integer>emptyList());
        assertEquals(Arrays.asList(7), record.revoked);
        assertEquals(Arrays.asList(7), record.gone);
        // Once the server's list names it, the list speaks for it: a later list without it un-revokes it.
        record = record.withRevoked(Arrays.asList(7));
        assertEquals(Arrays.asList(7), record.revoked);
        assertTrue(record.gone.isEmpty());
        record = record.withRevoked(Collections.<Integer>emptyList());
        assertFalse(record.refuses(7));
        assertTrue(record.isEmpty());
    }
}
