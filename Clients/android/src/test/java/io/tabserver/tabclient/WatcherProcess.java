package io.tabserver.tabclient;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** {@code java -jar build/tabclient.jar …} as a process, its output read a tab bar at a time, each with when it came. */
final class WatcherProcess implements AutoCloseable {
    /** One print: its lines, and System.nanoTime() when its last line was read. */
    record Print(String text, long atNanos) {}

    final Process process;
    private final LinkedBlockingQueue<Print> prints = new LinkedBlockingQueue<>();
    final StringBuilder errors = new StringBuilder();

    WatcherProcess(String... arguments) throws IOException {
        Path jar = Paths.get("build", "tabclient.jar");
        List<String> command = new ArrayList<>(Arrays.asList(Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
                jar.toString()));
        command.addAll(Arrays.asList(arguments));
        process = new ProcessBuilder(command).start();
        Thread reading = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                StringBuilder print = new StringBuilder();
                for (String line; (line = out.readLine()) != null;) {
                    // A print is a header line, the bar, and indented lines; the next header starts the next print.
                    if (!line.startsWith("|") && !line.startsWith("  ") && print.length() > 0) print.setLength(0);
                    print.append(line).append('\n');
                    if (line.startsWith("|")) prints.add(new Print(print.toString(), System.nanoTime()));
                }
            } catch (IOException ended) {
                // The process was stopped.
            }
        });
        reading.setDaemon(true);
        reading.start();
        Thread draining = new Thread(() -> {
            try (BufferedReader err = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = err.readLine()) != null;) {
                    synchronized (errors) {
                        errors.append(line).append('\n');
                    }
                }
            } catch (IOException ended) {
                // The process was stopped.
            }
        });
        draining.setDaemon(true);
        draining.start();
    }

    /** The next tab bar printed, or null after {@code seconds}. */
    Print next(int seconds) throws InterruptedException { return prints.poll(seconds, TimeUnit.SECONDS); }

    @Override
    public void close() { stop(process); }

    /** Ends a process this test started and waits (at most 10 s) until it is gone. */
    static void stop(Process process) {
        process.destroy();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
