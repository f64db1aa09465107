import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reports from the app (``ReportQueue``): whether a layout worked on this phone, sent to `POST …/tabs/reports` so that a
/// guarded rollout can pause or roll back by itself.
extension TabClient {
    /// Tells the server that tab `id`'s root screen could not be made or failed on open, with the layout shown now
    /// (`reason`: a short text, cut to 200 characters; no personal data). Queued, and sent with the next batch.
    public func reportTabFailed(_ id: String, reason: String) {
        guard let version = current.version else { return }
        queueReport(version: version, kind: "tabFailed", tab: id, reason: reason)
    }

    /// Sends the queued reports now, unless a batch went less than a minute ago or the server asked to wait
    /// (`Retry-After`). ``updates()`` calls it after each answer while it follows the server; an app that only calls
    /// ``refresh()`` calls it too, from a task (it is a request: never wait for it on the main thread).
    public func flushReports() async { await sendReports(force: false) }

    /// The app goes to the background: sends the queued reports now (even within the minute; never before a `Retry-After`),
    /// on a task of its own, off the main thread. On iOS wrap it in a background task
    /// (`UIApplication.beginBackgroundTask`) and end that when the returned task ends.
    @discardableResult
    public func appDidEnterBackground() -> Task<Void, Never> {
        Task.detached { [self] in await sendReports(force: true) }
    }

    /// The reports waiting to be sent, oldest first.
    public var queuedReports: [Report] { reportQueue?.reports ?? [] }

    /// Queues a report of the configuration's clock's time. Returns whether it was queued.
    @discardableResult
    func queueReport(version: Int, kind: String, tab: String? = nil, reason: String? = nil) -> Bool {
        guard let reportQueue else { return false }
        let now = configuration.clock.now
        return reportQueue.add(Report(version: version, kind: kind, tab: tab, reason: reason, at: RFC3339.string(now)), now: now)
    }

    /// A refused answer (signature, JSON, layout) whose body still names its version: a `refused` report.
    func noteRefused(_ body: Data, _ error: TabClientError) {
        guard reportQueue != nil,
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let version = object["version"] as? Int
        else { return }
        queueReport(version: version, kind: "refused", reason: "\(error)")
    }

    /// Posts one batch: `202` (or any `2xx`) and a refusal for good (`4xx` but `429`) take it off the queue; `429` and `503`
    /// keep it until their `Retry-After` (a minute without one); other failures (`5xx`, no network) keep it for the next
    /// batch.
    func sendReports(force: Bool) async {
        guard let reportQueue, let batch = reportQueue.batch(now: configuration.clock.now, force: force) else { return }
        guard
            sendingReports.withLock({ sending in
                if sending { return false }
                sending = true
                return true
            })
        else { return }
        defer { sendingReports.withLock { $0 = false } }
        var document: [String: Any] = ["installId": installID]
        if let platform = configuration.platform { document["platform"] = platform }
        if let appVersion = configuration.appVersion { document["appVersion"] = appVersion }
        document["reports"] = batch.map { report -> [String: Any] in
            var item: [String: Any] = ["version": report.version, "kind": report.kind, "at": report.at]
            if let tab = report.tab { item["tab"] = tab }
            if let reason = report.reason { item["reason"] = reason }
            return item
        }
        guard let body = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]) else { return }
        var request = URLRequest(url: configuration.reportsURL())
        request.httpMethod = "POST"
        request.timeoutInterval = configuration.requestTimeout.timeInterval
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let environment = configuration.environment { request.setValue(environment, forHTTPHeaderField: "Tabs-Environment") }
        request.setValue(installID, forHTTPHeaderField: "X-Install-Id")
        let now = { self.configuration.clock.now }
        do {
            let answer = try await exchange(request)
            switch answer.status {
            case 200..<300:
                reportQueue.sent(batch, now: now())
            case 429, 503:
                let wait = answer.retryAfter.map { $0.timeInterval } ?? ReportQueue.interval
                reportQueue.keep(until: now().addingTimeInterval(wait), now: now())
            case 400..<500:
                reportQueue.sent(batch, now: now())
            default:
                reportQueue.keep(until: nil, now: now())
            }
        } catch {
            reportQueue.keep(until: nil, now: now())
        }
    }
}

extension TabClientConfiguration {
    /// `…/v1/accounts/{account}/tabs/reports`.
    func reportsURL() -> URL {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        let base = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = base + "/v1/accounts/\(account)/tabs/reports"
        components.queryItems = nil
        return components.url ?? server
    }
}
