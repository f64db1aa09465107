import MicroHTTPD
import Synchronization
import TabLayout
import TabStore

extension TabService {
    /// `GET /readyz`: 200 while this replica can serve reads from its snapshot, even when the store is down (the
    /// body says whether the store answers); 503 while stopping. The store is asked with a deadline.
    func readiness() -> HTTPReply {
        if isStopping {
            return .response(
                Problem(.stopping, detail: "this replica is stopping").response)
        }
        let store = self.store
        let layouts = snapshot.entries.count
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
        var text = metrics.render(snapshotEntries: snapshot.entries.count, budget: budget)
        text += "# HELP tabserver_long_polls_held Long-poll requests held now.\n"
        text += "# TYPE tabserver_long_polls_held gauge\n"
        text += "tabserver_long_polls_held \(publisher.waiters.held)\n"
        text += "# HELP tabserver_snapshot_sequence The sequence number of the published snapshot.\n"
        text += "# TYPE tabserver_snapshot_sequence counter\n"
        text += "tabserver_snapshot_sequence \(snapshot.sequence)\n"
        text += webhookWorker.counters.text
        text += rolloutGauges()
        text += "# HELP tabserver_tabs_withheld_total Answers to a declared build that held back tabs it cannot open.\n"
        text += "# TYPE tabserver_tabs_withheld_total counter\n"
        text += builds.withheldLines.map { $0 + "\n" }.joined()
        text += changeRequestGauges
        return HTTPResponse(
            status: 200, headers: [HTTPHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.utf8))
    }

    /// Counts and logs a store failure (a full disk, a store that does not answer), and after a deadline catches up
    /// later (the write may have committed); a refused precondition or a record not found is no failure. The answer is
    /// ``Problem/store(_:)``'s.
    func noteStoreFailure(_ error: StoreError) {
        switch error {
        case .diskFull, .unsupportedURL, .unavailable, .timedOut, .schemaTooNew, .targetNotEmpty, .copyMismatch:
            metrics.storeErrors.add()
            logger.error("store failure: \(error)")
            if case .timedOut = error { catchUpLater() }
        case .notFound, .preconditionRequired, .conflict, .preconditionFailed, .extended, .missingBase, .refused:
            break
        }
    }

    /// Whether ``beginStopping()`` was called.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// The first step of a graceful stop: `/readyz` answers 503, every held long-poll answers 304 at once, and
    /// change-feed readers get what they have. Call it before stopping the HTTP server.
    public func beginStopping() {
        stopping.store(true, ordering: .relaxed)
        publisher.waiters.stop()
        publisher.feed.stop()
        webhookWorker.cancel()
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
