import TabDelivery

// The types the client plane's route inputs are read as (``RouteInputValue``), each refusing a bad value with the
// problem `…/tabs` has always answered.

/// `?installId=` or `X-Install-Id`: which arm of a rollout the install gets; none for an empty value (the stable
/// version), 400 for one over 128 characters or with a control character.
struct InstallChoice: RouteInputValue {
    let install: InstallID?

    init(input text: String, named name: String) throws(InputRefusal) {
        do throws(RolloutError) {
            install = try InstallID.parse(text)
        } catch {
            throw .problem(.rollout(error))
        }
    }

    static var schema: APISchema { .string() }
}

/// `?version=N` of `…/tabs`: a version number of 1 to 9 digits (400 otherwise).
struct PinnedVersion: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Self.digits(text), value > 0 else {
            throw .problem(.badRequest("version is a version number (1, 2, …), not '\(text.prefix(64))'"))
        }
        self.value = value
    }

    /// The number `text` writes in 1 to 9 decimal digits, nil for anything else ("+5", "", ten digits).
    static func digits(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    static var schema: APISchema { .integer(minimum: 1) }
}

/// `?wait=N`, or the `wait` preference of `Prefer` (RFC 7240) in its absence: how long a long-poll may be held, in
/// seconds, before the service's bound lowers it (400 for anything but whole seconds).
struct WaitRequest: RouteInputValue {
    /// Nil when `Prefer` has no `wait` preference.
    let seconds: Int?
    /// Asked for by `Prefer` (the answer then says `Preference-Applied`).
    let byPreference: Bool

    init(input text: String, named name: String) throws(InputRefusal) {
        byPreference = name == "Prefer"
        guard let asked = byPreference ? Self.preferredWait(text) : text else {
            seconds = nil
            return
        }
        guard let seconds = PinnedVersion.digits(asked) else {
            throw .problem(.badRequest("wait is a whole number of seconds ≥ 0, not '\(asked)'"))
        }
        self.seconds = seconds
    }

    static var schema: APISchema { .integer(minimum: 0) }

    /// The value of the `wait` preference in a `Prefer` field (RFC 7240 §2: `token [BWS "=" BWS word]` and
    /// `;`-separated parameters, which are ignored; a word may be a quoted string). The last `wait` wins.
    static func preferredWait(_ field: String) -> String? {
        var found: String?
        for preference in field.split(separator: ",") {
            let head = preference.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let parts = head.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].trimmingCharacters(in: " \t").lowercased() == "wait" else { continue }
            var value = parts[1].trimmingCharacters(in: " \t")
            if value.utf8.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            found = value
        }
        return found
    }
}

/// `?environment=` or `Tabs-Environment` of a client-plane request, as sent: which of them names the environment,
/// and whether the service has it, is ``ClientPlaneRoutes/environment(_:)``'s to say (404).
struct EnvironmentChoice: RouteInputValue {
    let text: String

    init(input text: String, named name: String) { self.text = text }

    static var schema: APISchema { .string() }

    /// An environment the service does not have.
    static var refusals: [Int] { [404] }
}
