package io.tabserver.tabclient;

/**
 * The device's wall clock, as a {@link TabClient} in manifest mode reads it: a rollout's coming steps are times
 * ({@code rollout.schedule[].at}), and an install that a step moves switches to its prefetched candidate when this
 * clock reaches it. {@link #SYSTEM} (the default) is the system's; tests give a clock of their own that they move.
 */
public interface DeviceClock {
    /** Milliseconds since 1970-01-01T00:00:00Z, now. */
    long currentTimeMillis();

    /** Returns once {@link #currentTimeMillis()} has reached {@code deadlineMillis} (at once when it has already). */
    void sleepUntil(long deadlineMillis) throws InterruptedException;

    /**
     * The system's clock ({@link System#currentTimeMillis()}). A wait for a time reads the clock again at least every
     * minute, so that a clock set forward (by the user or by time synchronization) is followed.
     */
    DeviceClock SYSTEM = new DeviceClock() {
        @Override
        public long currentTimeMillis() { return System.currentTimeMillis(); }

        @Override
        public void sleepUntil(long deadlineMillis) throws InterruptedException {
            for (long remaining; (remaining = deadlineMillis - System.currentTimeMillis()) > 0;) Thread.sleep(Math.min(remaining, 60000));
        }

        @Override
        public String toString() { return "DeviceClock.SYSTEM"; }
    };
}
