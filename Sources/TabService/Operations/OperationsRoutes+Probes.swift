import MicroHTTPD
import TabStore

extension OperationsRoutes {
    /// `GET /readyz`: 200 while this replica can serve reads from its snapshot, even when the store is down (the
    /// body says whether the store answers); 503 while stopping. The store is asked with a deadline.
    func readiness() -> HTTPReply {
        if isStopping() {
            return .response(
                Problem(.stopping, detail: "this replica is stopping").response)
        }
        let store = self.store
        let layouts = publisher.snapshot.entries.count
        return .deferred {
            let answers = await withDeadline(seconds: 2) { await store.ping() } ?? false
            return json(
                200,
                [
                    "status": .string("ready"), "store": .string(answers ? "up" : "down"),
                    "layouts": .integer(Int64(layouts)),
                ])
        }
    }

    /// `GET /metrics`.
    func metricsText() -> HTTPResponse {
        let snapshot = publisher.snapshot
        var text = metrics.render(snapshotEntries: snapshot.entries.count, budget: budget)
        text += "# HELP tabserver_long_polls_held Long-poll requests held now.\n"
        text += "# TYPE tabserver_long_polls_held gauge\n"
        text += "tabserver_long_polls_held \(publisher.waiters.held)\n"
        text += "# HELP tabserver_snapshot_sequence The sequence number of the published snapshot.\n"
        text += "# TYPE tabserver_snapshot_sequence counter\n"
        text += "tabserver_snapshot_sequence \(snapshot.sequence)\n"
        text += capabilityMetrics()
        return HTTPResponse(
            status: 200, headers: [HTTPHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.utf8))
    }
}

/// The value of `body`, or nil when it takes longer than `seconds` (the work is abandoned, not awaited).
func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
    let once = OneOutcome<T?>()
    return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        once.set(continuation)
        Task { once.resume(returning: await body()) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            once.resume(returning: nil)
        }
    }
}
