package io.tabserver.tabclient;

/**
 * A device clock that only the test moves ({@link #set}): what the schedule's tests and scenarios run on, so that a step
 * an hour away is reached at once, and never by a real wait.
 */
final class ManualClock implements DeviceClock {
    private long now;
    private int sleeping;

    ManualClock(long millis) { now = millis; }

    /** A clock at an RFC 3339 time. */
    static ManualClock at(String text) {
        Long millis = Rfc3339.millis(text);
        if (millis == null) throw new IllegalArgumentException("not an RFC 3339 time: " + text);
        return new ManualClock(millis);
    }

    @Override
    public synchronized long currentTimeMillis() { return now; }

    /** Moves the clock to {@code millis} (forward or back) and wakes the sleepers whose time has come. */
    synchronized void set(long millis) {
        now = millis;
        notifyAll();
    }

    /** How many threads are waiting for a time to come. */
    synchronized int sleeping() { return sleeping; }

    @Override
    public synchronized void sleepUntil(long deadlineMillis) throws InterruptedException {
        sleeping++;
        try {
            while (now < deadlineMillis) wait();
        } finally {
            sleeping--;
        }
    }
}
