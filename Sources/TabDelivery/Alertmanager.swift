import TabJSON

/// The webhook payload Prometheus Alertmanager sends (`"version": "4"`), as `POST /v1/alerts` takes it: what decides
/// a rollback (each alert's status, labels and annotations) and what names the notification in a log (receiver,
/// group key, truncated alerts, each alert's fingerprint and start); every other member is ignored.
///
/// ```json
/// {"version": "4", "groupKey": "{}:{alertname=\"TabCrashRate\"}", "truncatedAlerts": 0, "status": "firing",
///  "receiver": "tabserver", "groupLabels": {…}, "commonLabels": {…}, "commonAnnotations": {…},
///  "externalURL": "http://alertmanager:9093",
///  "alerts": [{"status": "firing", "labels": {"alertname": "TabCrashRate", "account": "jack",
///              "environment": "production"}, "annotations": {"summary": "crash rate above 2%"},
///              "startsAt": "…", "endsAt": "…", "generatorURL": "…", "fingerprint": "…"}]}
/// ```
public struct AlertmanagerPayload: Sendable, Hashable {
    /// One alert of the group.
    public struct Alert: Sendable, Hashable {
        public var firing: Bool
        public var labels: [String: String]
        public var annotations: [String: String]
        /// Alertmanager's identity of the alert (its label set's hash), when sent.
        public var fingerprint: String?
        /// When the alert started firing, when sent and readable as RFC 3339.
        public var startsAt: Timestamp?

        public init(
            firing: Bool, labels: [String: String], annotations: [String: String] = [:], fingerprint: String? = nil,
            startsAt: Timestamp? = nil
        ) {
            self.firing = firing
            self.labels = labels
            self.annotations = annotations
            self.fingerprint = fingerprint
            self.startsAt = startsAt
        }
    }

    public var alerts: [Alert]
    /// The receiver of Alertmanager's configuration that sent it.
    public var receiver: String?
    /// The group's key (which notification this is, for logs).
    public var groupKey: String?
    /// How many alerts Alertmanager left out (`max_alerts`): a firing alert left out orders nothing.
    public var truncatedAlerts: Int

    /// The largest payload taken (Alertmanager's `max_alerts` keeps real ones far below).
    public static let maximumBodyBytes = 1024 * 1024

    public init(alerts: [Alert], receiver: String? = nil, groupKey: String? = nil, truncatedAlerts: Int = 0) {
        self.alerts = alerts
        self.receiver = receiver
        self.groupKey = groupKey
        self.truncatedAlerts = truncatedAlerts
    }

    /// Reads a webhook body.
    /// - Throws: ``RolloutError/tooLarge(limit:)`` (413) over ``maximumBodyBytes``; ``RolloutError/invalidBody(_:)``
    ///   (422) for a body that is not Alertmanager's: not JSON, `version` other than `"4"`, no `alerts` array, an
    ///   alert without `status` (`firing` or `resolved`) or `labels`, labels or annotations that are not strings, a
    ///   `receiver`, `groupKey` or `fingerprint` that is not a string, a `truncatedAlerts` that is not a count.
    public static func decode(_ body: [UInt8]) throws(RolloutError) -> AlertmanagerPayload {
        let object = try BodyReader.object(body, limit: maximumBodyBytes)
        var reader = BodyReader()
        switch object["version"] {
        case .string("4"): break
        case nil: reader.fail("", "\"version\" is missing: this is not an Alertmanager webhook payload (version 4)")
        case let other?: reader.fail("/version", "must be \"4\" (Alertmanager's webhook payload), not \(BodyReader.shown(other))")
        }
        var alerts: [Alert] = []
        switch object["alerts"] {
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let alert = readAlert(item, at: "/alerts/\(index)", &reader) { alerts.append(alert) }
            }
        case nil: reader.fail("", "\"alerts\" is missing: this is not an Alertmanager webhook payload")
        case let other?: reader.fail("/alerts", "must be an array of alerts, not \(other.kind)")
        }
        let receiver = optionalString(object["receiver"], at: "/receiver", &reader)
        let groupKey = optionalString(object["groupKey"], at: "/groupKey", &reader)
        var truncated = 0
        switch object["truncatedAlerts"] {
        case nil: break
        case .integer(let count) where count >= 0 && count <= Int64(Int32.max): truncated = Int(count)
        case let other?: reader.fail("/truncatedAlerts", "must be a count of alerts, not \(BodyReader.shown(other))")
        }
        try reader.finish()
        return AlertmanagerPayload(alerts: alerts, receiver: receiver, groupKey: groupKey, truncatedAlerts: truncated)
    }

    private static func optionalString(_ value: JSONValue?, at pointer: String, _ reader: inout BodyReader) -> String? {
        guard let value else { return nil }
        return reader.string(value, at: pointer, maximumLength: .max)
    }

    private static func readAlert(_ value: JSONValue, at base: String, _ reader: inout BodyReader) -> Alert? {
        guard case .object(let members) = value else {
            reader.fail(base, "an alert must be an object, not \(value.kind)")
            return nil
        }
        let before = reader.problems.count
        var firing = false
        switch members["status"] {
        case .string("firing"): firing = true
        case .string("resolved"): firing = false
        default: reader.fail(BodyReader.pointer(base, "status"), "must be \"firing\" or \"resolved\"")
        }
        let labels = readStrings(members["labels"], at: BodyReader.pointer(base, "labels"), required: true, &reader)
        let annotations = readStrings(members["annotations"], at: BodyReader.pointer(base, "annotations"), required: false, &reader)
        let fingerprint = optionalString(members["fingerprint"], at: BodyReader.pointer(base, "fingerprint"), &reader)
        var startsAt: Timestamp?
        if case .string(let text) = members["startsAt"] { startsAt = Timestamp.parseRFC3339(text) }
        guard reader.problems.count == before else { return nil }
        return Alert(firing: firing, labels: labels, annotations: annotations, fingerprint: fingerprint, startsAt: startsAt)
    }

    private static func readStrings(_ value: JSONValue?, at pointer: String, required: Bool, _ reader: inout BodyReader)
        -> [String: String]
    {
        guard let value else {
            if required { reader.fail(pointer, "is missing") }
            return [:]
        }
        guard case .object(let members) = value else {
            reader.fail(pointer, "must be an object of strings, not \(value.kind)")
            return [:]
        }
        var strings: [String: String] = [:]
        for (key, member) in members {
            if case .string(let text) = member {
                strings[key] = text
            } else {
                reader.fail(BodyReader.pointer(pointer, key), "must be a string")
            }
        }
        return strings
    }
}

/// What one firing alert asks for: roll back the running rollouts of `account` (in `environment` only, when the
/// alert has that label), giving its name and summary as the reason.
public struct RollbackOrder: Sendable, Hashable {
    public var account: String
    public var environment: String?
    /// `"{alertname}: {summary}"` (either alone when the other is missing).
    public var reason: String

    /// Whether this order names `rollout` and the rollout is serving its candidate at `now` (running or paused; a
    /// scheduled rollout has served nothing an alert could be about, and an ended one has nothing to undo).
    public func applies(to rollout: Rollout, at now: Timestamp) -> Bool {
        guard rollout.account == account, environment == nil || environment == rollout.environment.text else { return false }
        let state = rollout.status(at: now).state
        return state == .running || state == .paused
    }
}

extension AlertmanagerPayload {
    /// The orders of the firing alerts that carry an `account` label, in the payload's order; resolved alerts and
    /// alerts without the label order nothing.
    public var rollbackOrders: [RollbackOrder] {
        alerts.compactMap { alert in
            guard alert.firing, let account = alert.labels["account"], !account.isEmpty else { return nil }
            let name = alert.labels["alertname"].map(Self.printable).flatMap { $0.isEmpty ? nil : $0 }
            let summary = alert.annotations["summary"].map(Self.printable).flatMap { $0.isEmpty ? nil : $0 }
            var reason = [name, summary].compactMap { $0 }.joined(separator: ": ")
            if reason.unicodeScalars.count > RollbackRequest.maximumReasonLength {
                reason = String(String.UnicodeScalarView(reason.unicodeScalars.prefix(RollbackRequest.maximumReasonLength - 1))) + "…"
            }
            return RollbackOrder(
                account: account, environment: alert.labels["environment"], reason: reason.isEmpty ? "alert without a name" : reason)
        }
    }

    /// `text` without control characters, line and paragraph separators and format characters (bidi overrides and
    /// isolates, zero-width marks), as token names refuse them: a reason is shown in the console, the audit log and
    /// webhook payloads.
    static func printable(_ text: String) -> String {
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator: continue
            default: kept.append(scalar)
            }
        }
        return String(kept)
    }

    /// The rollouts among `rollouts` that the firing alerts roll back at `now`, each once with the reason of the first
    /// alert that names it.
    public func rollbacks(among rollouts: [Rollout], at now: Timestamp) -> [(rollout: Rollout, reason: String)] {
        var chosen: [(rollout: Rollout, reason: String)] = []
        for order in rollbackOrders {
            for rollout in rollouts
            where order.applies(to: rollout, at: now)
                && !chosen.contains(where: {
                    $0.rollout.id == rollout.id && $0.rollout.account == rollout.account && $0.rollout.environment == rollout.environment
                })
            {
                chosen.append((rollout, order.reason))
            }
        }
        return chosen
    }
}
