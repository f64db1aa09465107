import Foundation

/// Thousands of connections each holding one request, opened by a Python process of their own (its own open-file
/// limit, so that the server side keeps this test process's): it opens them all and sends the request on each,
/// prints `sent`, waits for a line on standard input when ``start(port:count:request:spreadSources:)`` was asked to
/// hold, then reads every answer to its end (its `Content-Length`, or the server closing; 30 s deadline) and prints
/// one line, ``Outcome``.
public enum HeldConnections {
    /// Starts the clients. `spreadSources`: each 400 connections from their own source address (127.0.0.2, .3, …),
    /// so that a per-address limit or the ephemeral ports of one address do not bind.
    public static func start(port: UInt16, count: Int, request: String, holdUntilGo: Bool = true, spreadSources: Bool = false)
        throws -> LineProcess
    {
        var options: [String] = []
        if holdUntilGo { options.append("hold") }
        if spreadSources { options.append("spread") }
        return try LineProcess("/usr/bin/python3", ["-c", script, String(port), String(count), request] + options)
    }

    /// What the clients saw: how many connections ended with each status (`none` for no answer, `partial` for an
    /// answer cut short), and when the last answer ended (Python's `time.monotonic()`, the clock of CLOCK_MONOTONIC).
    public struct Outcome: Sendable, CustomStringConvertible {
        public let statuses: [String: Int]
        public let last: Double

        /// The line `statuses 200:A 503:B none:C last T`, nil if it is not one.
        public init?(_ line: String) {
            let words = line.split(separator: " ")
            guard words.count >= 3, words.first == "statuses", words[words.count - 2] == "last", let last = Double(words[words.count - 1])
            else { return nil }
            var statuses: [String: Int] = [:]
            for word in words.dropFirst().dropLast(2) {
                let pair = word.split(separator: ":")
                guard pair.count == 2, let count = Int(pair[1]) else { return nil }
                statuses[String(pair[0])] = count
            }
            self.statuses = statuses
            self.last = last
        }

        /// The connections answered with `status` in whole.
        public subscript(_ status: String) -> Int { statuses[status] ?? 0 }

        public var description: String {
            statuses.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ") + " last \(last)"
        }
    }

    /// Waits for the clients' outcome line.
    public static func outcome(_ clients: LineProcess, seconds: Double = 60) async throws -> Outcome {
        let line = try await clients.readLine(seconds: seconds)
        guard let outcome = Outcome(line) else { throw RawConnection.Failure(description: "not an outcome: \(line)") }
        return outcome
    }

    static let script = """
        import selectors, socket, sys, time
        port, n, request = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode("latin-1")
        options = sys.argv[4:]
        socks = []
        for i in range(n):
            s = socket.socket()
            if "spread" in options:
                s.bind(("127.0.0.%d" % (2 + i // 400), 0))
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            socks.append(s)
        print("sent", flush=True)
        if "hold" in options:
            sys.stdin.readline()
        selector = selectors.DefaultSelector()
        received, whole = {}, {}
        for s in socks:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
            received[s], whole[s] = b"", False
        open_count, last, deadline = n, 0.0, time.time() + 30
        while open_count and time.time() < deadline:
            for key, _ in selector.select(timeout=1):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    data = b""
                received[s] += data
                head_end = received[s].find(b"\\r\\n\\r\\n")
                if head_end >= 0:
                    length = 0
                    for line in received[s][:head_end].decode("latin-1").lower().split("\\r\\n"):
                        if line.startswith("content-length:"):
                            length = int(line.split(":")[1])
                    whole[s] = len(received[s]) >= head_end + 4 + length
                if whole[s] or not data:
                    last = time.monotonic()
                    open_count -= 1
                    selector.unregister(s)
        counts = {}
        for s, data in received.items():
            if not data:
                status = "none"
            elif not whole[s] or not data.startswith(b"HTTP/1.1 "):
                status = "partial"
            else:
                status = data[9:12].decode()
            counts[status] = counts.get(status, 0) + 1
        print("statuses", " ".join(f"{k}:{v}" for k, v in sorted(counts.items())), "last", last, flush=True)
        """
}
