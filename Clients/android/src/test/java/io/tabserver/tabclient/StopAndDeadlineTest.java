package io.tabserver.tabclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/** stop() closes the held long-poll at once; a server that trickles its answer is cut off at the deadline. */
class StopAndDeadlineTest {
    @Test
    void stopClosesTheHeldRequestAtOnce() throws Exception {
        try (FakeServer server = new FakeServer()) {
            server.play(Collections.<FakeServer.Reply>emptyList(), true);
            TabClient client = new TabClient(TabClientConfig.builder(server.url(), "jack").build(), ConfigTest.bundle());
            client.start();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (server.requests().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(1, server.requests().size());
            assertTrue(server.requests().get(0).target().endsWith("?wait=50"));
            Thread.sleep(200);
            long stopped = System.nanoTime();
            client.stop();
            assertFalse(client.isStarted());
            while (server.heldClosedAt().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            long closedAfter = (server.heldClosedAt().get(0) - stopped) / 1_000_000;
            assertTrue(closedAfter < 1000, "closed " + closedAfter + " ms after stop()");
            Thread.sleep(300);
            assertEquals(1, server.requests().size(), "no request after stop()");
        }
    }

    @Test
    void anAnswerTrickledByteByByteEndsAtTheDeadline() throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"))) {
            Thread trickler = new Thread(() -> {
                try (Socket connection = listener.accept()) {
                    InputStream in = connection.getInputStream();
                    byte[] head = new byte[8192];
                    in.read(head);
                    OutputStream out = connection.getOutputStream();
                    out.write("HTTP/1.1 200 OK\r\nETag: \"slow\"\r\nContent-Length: 100000\r\n\r\n{".getBytes(StandardCharsets.US_ASCII));
                    // Each byte well within the per-read timeout; the whole far beyond the deadline.
                    for (int i = 0; i < 100; i++) {
                        Thread.sleep(200);
                        out.write(' ');
                        out.flush();
                    }
                } catch (Exception gone) {
                    // The client closed the connection.
                }
            });
            trickler.setDaemon(true);
            trickler.start();
            TabClient client = new TabClient(TabClientConfig.builder("http://127.0.0.1:" + listener.getLocalPort(), "jack")
                    .requestTimeoutMillis(1000).build(), ConfigTest.bundle());
            long started = System.nanoTime();
            TabClientException e = assertThrows(TabClientException.class, client::refresh);
            long took = (System.nanoTime() - started) / 1_000_000;
            assertEquals(TabClientException.Kind.TIMED_OUT, e.kind(), e.getMessage());
            assertTrue(took >= 900 && took < 3000, "gave up after " + took + " ms");
            assertEquals(TabClient.Source.BUNDLE, client.source());
        }
    }
}
