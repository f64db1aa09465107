package io.tabserver.tabclient;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A tiny HTTP/1.1 server on a real socket (127.0.0.1, a free port) that plays a script: each request gets the next
 * {@link Reply} of the current step (then the last again, or none: held). One request per connection
 * ({@code Connection: close}); a thread per connection.
 */
final class FakeServer implements AutoCloseable {
    /** What to do with one request. */
    static final class Reply {
        int status = 200;
        final List<String[]> headers = new ArrayList<>();
        byte[] body = new byte[0];
        long delayMs;
        boolean drop;
        boolean hang;

        static Reply of(int status, byte[] body, String... headers) {
            Reply reply = new Reply();
            reply.status = status;
            reply.body = body;
            for (int i = 0; i + 1 < headers.length; i += 2) reply.headers.add(new String[] {headers[i], headers[i + 1]});
            return reply;
        }
    }

    /** A request as it arrived. */
    record Received(String head, long atNanos, byte[] body) {
        String target() {
            String[] parts = head.split(" ", 3);
            return parts.length > 1 ? parts[1] : "";
        }

        String header(String name) {
            String[] lines = head.split("\r\n");
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                if (colon > 0 && lines[i].substring(0, colon).equalsIgnoreCase(name)) return lines[i].substring(colon + 1).trim();
            }
            return null;
        }
    }

    private final ServerSocket listener;
    private final List<Received> requests = new ArrayList<>();
    private final List<Long> heldClosedAt = new ArrayList<>();
    private List<Reply> replies = new ArrayList<>();
    private boolean holdAfter;
    private int next;
    private volatile boolean closed;

    FakeServer() throws IOException {
        listener = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"));
        Thread accepting = new Thread(this::acceptLoop, "fake-server-accept");
        accepting.setDaemon(true);
        accepting.start();
    }

    /** {@code http://127.0.0.1:PORT}. */
    String url() { return "http://127.0.0.1:" + listener.getLocalPort(); }

    int port() { return listener.getLocalPort(); }

    /** From now on, requests get {@code replies} in order, then the last again ({@code holdAfter}: never an answer). */
    synchronized void play(List<Reply> replies, boolean holdAfter) {
        this.replies = new ArrayList<>(replies);
        this.holdAfter = holdAfter;
        this.next = 0;
        this.requests.clear();
        this.heldClosedAt.clear();
    }

    synchronized List<Received> requests() { return new ArrayList<>(requests); }

    /** When the client closed each held connection (System.nanoTime()). */
    synchronized List<Long> heldClosedAt() { return new ArrayList<>(heldClosedAt); }

    private synchronized Reply take(Received received) {
        requests.add(received);
        Reply reply;
        if (next < replies.size()) reply = replies.get(next);
        else if (holdAfter || replies.isEmpty()) reply = null;
        else reply = replies.get(replies.size() - 1);
        next++;
        return reply;
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket connection = listener.accept();
                Thread serving = new Thread(() -> serve(connection), "fake-server-connection");
                serving.setDaemon(true);
                serving.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket connection) {
        try (connection) {
            connection.setSoTimeout(30000);
            InputStream in = connection.getInputStream();
            StringBuilder head = new StringBuilder();
            while (!head.toString().endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) return;
                head.append((char) b);
            }
            // The head is read as ISO-8859-1 (byte for char); decode as UTF-8 to see what the client meant.
            String text = new String(head.toString().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
            // A body (a POST's), read to its Content-Length.
            String length = new Received(text, 0, new byte[0]).header("Content-Length");
            byte[] body = new byte[length == null ? 0 : Integer.parseInt(length.trim())];
            for (int read = 0; read < body.length; ) {
                int n = in.read(body, read, body.length - read);
                if (n < 0) break;
                read += n;
            }
            Reply reply = take(new Received(text, System.nanoTime(), body));
            if (reply == null || reply.hang) {
                hold(in);
                return;
            }
            if (reply.delayMs > 0) Thread.sleep(reply.delayMs);
            if (reply.drop) return;
            StringBuilder answer = new StringBuilder("HTTP/1.1 ").append(reply.status).append(reply.status == 200 ? " OK" : " Status")
                    .append("\r\nConnection: close\r\nContent-Length: ").append(reply.body.length).append("\r\n");
            for (String[] field : reply.headers) answer.append(field[0]).append(": ").append(field[1]).append("\r\n");
            answer.append("\r\n");
            OutputStream out = connection.getOutputStream();
            out.write(answer.toString().getBytes(StandardCharsets.UTF_8));
            out.write(reply.body);
            out.flush();
        } catch (IOException | InterruptedException e) {
            // The client went away: nothing to answer.
        }
    }

    /** Until the client closes (EOF or a reset), or 30 s. */
    private void hold(InputStream in) {
        byte[] chunk = new byte[1024];
        try {
            while (in.read(chunk) >= 0) {
                // Discard.
            }
        } catch (SocketTimeoutException e) {
            return;
        } catch (IOException reset) {
            // A reset is a close too.
        }
        synchronized (this) {
            heldClosedAt.add(System.nanoTime());
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
    }

}
