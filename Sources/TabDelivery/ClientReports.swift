import TabGuard
import TabJSON

/// The body of `POST …/tabs/reports`: what one install says about the versions it was given
/// (`{"installId", "platform"?, "appVersion"?, "reports": [{"version", "kind", "tab"?, "reason"?, "at"?}]}`).
public struct ClientReports: Sendable, Hashable {
    public var install: InstallID
    public var platform: String?
    public var appVersion: String?
    public var reports: [Report]

    /// One report.
    public struct Report: Sendable, Hashable {
        public var version: Int
        public var kind: ReportKind
        /// The tab that failed (`tabFailed` only; nil for the other kinds).
        public var tab: String?
        public var reason: String?
        public var at: Timestamp?
    }

    public static let maximumBodyBytes = 16 * 1024
    public static let maximumReports = 50
    public static let maximumReasonLength = 200
    public static let maximumTabLength = 128

    /// Reads the body; nothing is counted from a body with any problem.
    /// - Throws: ``RolloutError/tooLarge(limit:)`` over 16 KiB, ``RolloutError/invalidBody(_:)`` (422) with every
    ///   problem at its JSON Pointer.
    public static func decode(_ body: [UInt8]) throws(RolloutError) -> ClientReports {
        let object = try BodyReader.object(body, limit: maximumBodyBytes)
        var reader = BodyReader()
        reader.refuseUnknown(object, known: ["installId", "platform", "appVersion", "reports"], at: "")
        var install: InstallID?
        if let value = object["installId"] {
            if let text = reader.string(value, at: "/installId", maximumLength: .max) {
                if let problem = InstallID.problem(with: text) {
                    reader.fail("/installId", problem)
                } else {
                    install = try? InstallID(text)
                }
            }
        } else {
            reader.fail("", "\"installId\" is required: the id the app made once and keeps")
        }
        let platform = object["platform"].flatMap { reader.string($0, at: "/platform", maximumLength: 32) }
        let appVersion = object["appVersion"].flatMap { reader.string($0, at: "/appVersion", maximumLength: 64) }
        var reports: [Report] = []
        switch object["reports"] {
        case nil:
            reader.fail("", "\"reports\" is required")
        case .array(let items)?:
            if items.count > maximumReports { reader.fail("/reports", "has \(items.count) reports; at most \(maximumReports)") }
            for (index, item) in items.prefix(maximumReports).enumerated() {
                if let report = readReport(item, at: BodyReader.pointer("/reports", index), &reader) { reports.append(report) }
            }
        case let value?:
            reader.fail("/reports", "must be an array of reports, not \(value.kind)")
        }
        try reader.finish()
        // `install` is nil only after a problem was recorded, and `finish` threw for any.
        return ClientReports(install: install!, platform: platform, appVersion: appVersion, reports: reports)
    }

    private static func readReport(_ value: JSONValue, at base: String, _ reader: inout BodyReader) -> Report? {
        guard case .object(let object) = value else {
            reader.fail(base, "must be an object {\"version\", \"kind\", \"tab\"?, \"reason\"?, \"at\"?}, not \(value.kind)")
            return nil
        }
        let before = reader.problems.count
        reader.refuseUnknown(object, known: ["version", "kind", "tab", "reason", "at"], at: base)
        let version = object["version"].flatMap { reader.version($0, at: BodyReader.pointer(base, "version")) }
        if object["version"] == nil { reader.fail(base, "\"version\" is required: the version reported on") }
        let kind = reader.oneOf(ReportKind.self, object, "kind", at: base)
        if object["kind"] == nil { reader.fail(base, "\"kind\" is required (rendered, tabFailed, reverted or refused)") }
        let tab = reader.nonEmptyString(object, "tab", at: base, maximumLength: maximumTabLength)
        if kind == .tabFailed, object["tab"] == nil { reader.fail(base, "\"tab\" is required for tabFailed: the tab that failed") }
        let reason = object["reason"].flatMap {
            reader.string($0, at: BodyReader.pointer(base, "reason"), maximumLength: maximumReasonLength)
        }
        let at = object["at"].flatMap { reader.time($0, at: BodyReader.pointer(base, "at")) }
        guard reader.problems.count == before, let version, let kind else { return nil }
        return Report(version: version, kind: kind, tab: kind == .tabFailed ? tab : nil, reason: reason, at: at)
    }
}
