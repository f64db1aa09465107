import Foundation

/// One report for `POST …/tabs/reports`: what happened to a layout version on this phone.
public struct Report: Sendable, Equatable, Codable {
    /// `rendered`, `tabFailed`, `reverted` or `refused`.
    public var version: Int
    public var kind: String
    /// `tabFailed`: the tab's id.
    public var tab: String?
    /// At most 200 characters.
    public var reason: String?
    /// When it happened (RFC 3339, by the client's clock).
    public var at: String
}

/// The reports waiting to be sent, in a small file kept across launches (`<account>.tabs.reports.json`, or
/// `<account>@<environment>.tabs.reports.json`): `{"reports":[…],"rendered":[versions],"notBefore":t,"lastSent":t}`, written
/// atomically (temporary file, flush, rename) at each change. Bounded: at most ``capacity`` reports (the oldest dropped),
/// reasons cut to 200 characters, `rendered` once per version (the versions reported are kept, the newest 32), and a
/// report older than 7 days is dropped: a few KiB at most. Sent in batches at most once a minute (``interval``), never before
/// a `Retry-After` the server gave (`notBefore`).
final class ReportQueue: Sendable {
    struct Stored: Codable, Equatable {
        var reports: [Report] = []
        var rendered: [Int]?
        var notBefore: String?
        var lastSent: String?
    }

    static let capacity = 20
    static let maximumAge: TimeInterval = 7 * 24 * 3600
    static let interval: TimeInterval = 60

    /// The queue's file, or nil (memory only).
    let writer: LayoutCache?
    private let stored: Locked<Stored>

    init(directory: URL?, account: String, environment: String?) {
        let name = environment.map { "\(account)@\($0)" } ?? account
        writer = directory.map { LayoutCache(file: $0.appendingPathComponent("\(name).tabs.reports.json", isDirectory: false)) }
        var initial = Stored()
        if let file = writer?.file, let data = FileManager.default.contents(atPath: file.path),
            let read = try? JSONDecoder().decode(Stored.self, from: data)
        {
            initial = read
        }
        stored = Locked(initial)
    }

    /// What the queue holds now (for tests and watchers).
    var reports: [Report] { stored.withLock { $0.reports } }

    /// Queues `report` (unless it is a `rendered` of a version already reported, or the same report is waiting already).
    /// Returns whether it was queued.
    @discardableResult
    func add(_ report: Report, now: Date) -> Bool {
        var report = report
        if let reason = report.reason, reason.count > 200 { report.reason = String(reason.prefix(200)) }
        return update(now: now) { stored in
            if report.kind == "rendered" {
                if (stored.rendered ?? []).contains(report.version) { return false }
                stored.rendered = Array(((stored.rendered ?? []) + [report.version]).suffix(GuardRecord.limit))
            }
            if stored.reports.contains(where: {
                $0.version == report.version && $0.kind == report.kind && $0.tab == report.tab && $0.reason == report.reason
            }) {
                return false
            }
            stored.reports.append(report)
            if stored.reports.count > Self.capacity { stored.reports.removeFirst(stored.reports.count - Self.capacity) }
            return true
        }
    }

    /// The reports to send now (at most 50), or nil: none, too soon after the last batch (unless `force`: the app goes to
    /// the background), or before the server's `Retry-After`.
    func batch(now: Date, force: Bool) -> [Report]? {
        stored.withLock { stored in
            stored.reports.removeAll { Self.expired($0, now: now) }
            guard !stored.reports.isEmpty else { return nil }
            if let notBefore = stored.notBefore.flatMap(RFC3339.date), now < notBefore { return nil }
            if !force, let last = stored.lastSent.flatMap(RFC3339.date), now.timeIntervalSince(last) < Self.interval { return nil }
            return Array(stored.reports.prefix(50))
        }
    }

    /// The server took `reports` (or refused them for good): they leave the queue.
    func sent(_ reports: [Report], now: Date) {
        update(now: now) { stored in
            stored.reports.removeAll { reports.contains($0) }
            stored.lastSent = RFC3339.string(now)
            stored.notBefore = nil
            return true
        }
    }

    /// The server asked to wait (429, 503 with `Retry-After`), or could not take them (5xx, no network): kept, and not
    /// sent again before `until`.
    func keep(until: Date?, now: Date) {
        update(now: now) { stored in
            stored.lastSent = RFC3339.string(now)
            stored.notBefore = until.map(RFC3339.string)
            return true
        }
    }

    private static func expired(_ report: Report, now: Date) -> Bool {
        guard let at = RFC3339.date(report.at) else { return true }
        return now.timeIntervalSince(at) > maximumAge
    }

    /// Changes the queue and writes its file when `change` says it changed something.
    @discardableResult
    private func update(now: Date, _ change: (inout Stored) -> Bool) -> Bool {
        stored.withLock { stored in
            stored.reports.removeAll { Self.expired($0, now: now) }
            guard change(&stored) else { return false }
            if let writer {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                if let data = try? encoder.encode(stored) { try? writer.writeAtomically(data) }
            }
            return true
        }
    }
}

extension RFC3339 {
    /// `date` as RFC 3339 in UTC with milliseconds (`2026-11-26T21:00:00.000Z`).
    static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
