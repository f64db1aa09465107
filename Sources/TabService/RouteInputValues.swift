import TabBuilds
import TabDelivery
import TabLayout
import TabPreview
import TabReview
import TabTime

// The types the write side's route inputs are read as (``RouteInputValue``), each refusing a bad value with the
// problem its routes have always answered.

/// An `{account}` of a path: `[A-Za-z0-9._-]{1,128}` (400 otherwise).
extension AccountName: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        guard let accepted = AccountName(text) else { throw .problem(.invalidAccount) }
        self = accepted
    }

    static var schema: APISchema { .string(pattern: "^[A-Za-z0-9._-]{1,128}$") }
}

/// A `{version}` of a path: a version number, an integer ≥ 1 (400 otherwise).
struct VersionNumber: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int(text), value >= 1 else {
            throw .problem(.badRequest("a version number is an integer ≥ 1, not '\(text)'"))
        }
        self.value = value
    }

    static var schema: APISchema { .integer(minimum: 1) }
}

/// A `{locale}` of a strings table's path: a locale tag such as `en` or `fr-CA` (400 otherwise).
struct LocaleTag: RouteInputValue {
    let text: String

    init(input text: String, named name: String) throws(InputRefusal) {
        guard isValidLocale(text) else { throw .problem(.badRequest("'\(text)' is not a locale tag such as en or fr-CA")) }
        self.text = text
    }

    static var schema: APISchema { .string(pattern: "^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$") }
}

/// Text that names something (an environment, a build's platform or version): a value that names nothing that
/// exists, or can, is refused with 404.
protocol NamingInputValue: RouteInputValue {}

extension NamingInputValue {
    static var schema: APISchema { .string() }

    static var refusals: [Int] { [404] }
}

/// `?environment=` of a management request: the name asked for, nil when empty (the entry environment then). Whether
/// the service has it is the configuration's to say (404 from ``ManagementInputs/environment(_:in:)``).
struct EnvironmentQuery: NamingInputValue {
    let named: String?

    init(input text: String, named name: String) { named = text.isEmpty ? nil : text }
}

/// `?publish=`: `true` moves the pointer, `false` stores a draft (400 for anything else).
extension PublishMode: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        do throws(RolloutError) {
            self = try PublishMode(query: text)
        } catch {
            throw .problem(.rollout(error))
        }
    }

    static var schema: APISchema { .boolean }
}

/// A query flag that only `true` turns on (`?dryRun=true`, `?allowIncompatible=true`): any other value leaves it off,
/// as it always has.
struct OptIn: RouteInputValue {
    let isOn: Bool

    init(input text: String, named name: String) { isOn = text == "true" }

    static var schema: APISchema { .boolean }
}

/// `If-Match`: the entity tags listed (`*` among them matches any).
struct IfMatchTags: RouteInputValue {
    let tags: [String]

    init(input text: String, named name: String) { tags = ManagementHeaders.entityTags(text) }

    static var schema: APISchema { .string() }
}

/// `If-None-Match`: whether it is `*` (create only); any other value asks nothing of a write.
struct IfNoneMatchAny: RouteInputValue {
    let isAny: Bool

    init(input text: String, named name: String) { isAny = text.trimmingCharacters(in: " \t") == "*" }

    static var schema: APISchema { .string(values: ["*"]) }
}

/// An `Apply-At` (or a body's `applyAt`): an RFC 3339 time (422 at the field's pointer otherwise); how far ahead it
/// may be is ``ManagementInputs/applyAtMillis(_:pointer:clock:)``'s to check, against the clock.
struct ApplyAt: RouteInputValue {
    let time: Timestamp

    init(input text: String, named name: String) throws(InputRefusal) {
        do throws(Problem) {
            try self.init(text, pointer: "/" + name)
        } catch {
            throw .problem(error)
        }
    }

    /// The time `text` names; a 422 at `pointer` when it is not RFC 3339.
    init(_ text: String, pointer: String) throws(Problem) {
        guard let time = Timestamp.parseRFC3339(text) else {
            throw ManagementInputs.invalidField(pointer, "an RFC 3339 time such as 2026-12-01T09:00:00Z, not '\(text.prefix(64))'")
        }
        self.time = time
    }

    static var schema: APISchema { .string(format: "date-time") }

    /// Not an RFC 3339 time, at the field's pointer.
    static var refusals: [Int] { [422] }
}

/// A `{platform}` of a build's path (404 for one that is none: no such build can exist).
struct BuildPlatform: NamingInputValue {
    let platform: Platform

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let platform = Platform(rawValue: text) else {
            throw .problem(.notFound(BuildError.unknownPlatform(String(text.prefix(64))).description))
        }
        self.platform = platform
    }
}

/// An `{appVersion}` of a build's path (404 for one that is not an app version).
struct BuildVersion: NamingInputValue {
    let version: AppVersion

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let version = AppVersion(text) else { throw .problem(.notFound(BuildError.notAVersion(String(text.prefix(64))).description)) }
        self.version = version
    }
}

/// `?state=` of the change-request list (400 for a state there is none of).
extension ChangeRequestState: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        try self.init(case: text) { "state is one of \($0)" }
    }
}

/// `?limit=` of the accounts and version lists: an integer from 1 to 1000 (400 otherwise).
struct ListPageSize: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int(text), (1...1000).contains(value) else {
            throw .problem(.badRequest("limit is an integer from 1 to 1000"))
        }
        self.value = value
    }

    static var schema: APISchema { .integer(minimum: 1, maximum: 1000) }
}

/// `?limit=` of the change-request list: brought within 1–500; a value that is no integer is the default, 100.
struct ChangeRequestPageSize: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) { value = Int(text).map { min(max($0, 1), 500) } ?? 100 }

    static var schema: APISchema { .integer(minimum: 1) }
}

/// `?before=` of the version list: a version number ≥ 1 (400 otherwise).
struct VersionCursor: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int(text), value >= 1 else { throw .problem(.badRequest("\(name) is a version number ≥ 1, not '\(text)'")) }
        self.value = value
    }

    static var schema: APISchema { .integer(minimum: 1) }
}

/// `?platform=` of a drawing: a client platform, as `X-Client-Platform` names one (400 otherwise, as on `…/tabs`).
struct ClientPlatform: RouteInputValue {
    let platform: Platform

    init(input text: String, named name: String) throws(InputRefusal) {
        do throws(Problem) { try self.init(text) } catch { throw .problem(error) }
    }

    /// The platform `text` names (any case), as the client plane reads `?platform=` and `X-Client-Platform`.
    init(_ text: String) throws(Problem) {
        guard let platform = Platform(rawValue: text.lowercased()) else {
            throw .badRequest("platform '\(text)' is not one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.platform = platform
    }

    static var schema: APISchema { .string(values: Platform.allCases.map(\.rawValue)) }
}

/// `?appVersion=` of a drawing: a dotted version, as `X-App-Version` names one (400 otherwise, as on `…/tabs`).
struct ClientAppVersion: RouteInputValue {
    let version: AppVersion
    /// The text as `?appVersion=` gave it; nil when `X-App-Version` did (a bundle repeats the query's).
    private(set) var query: String?

    init(input text: String, named name: String) throws(InputRefusal) {
        do throws(Problem) { try self.init(text) } catch { throw .problem(error) }
        if name == "appVersion" { query = text }
    }

    /// The version `text` names, as the client plane reads `?appVersion=` and `X-App-Version`.
    init(_ text: String) throws(Problem) {
        guard let version = AppVersion(text) else {
            throw .badRequest("app version '\(text)' is not a dotted version such as 2.1 or 3.0.2")
        }
        self.version = version
    }

    static var schema: APISchema { .string() }
}

/// `Last-Event-ID` (or `?lastEventId=`) of the change feed: a sequence number this feed gave, in decimal digits (400
/// otherwise; UInt64 alone would also take "+5").
struct EventPosition: RouteInputValue {
    let sequence: UInt64

    init(input text: String, named name: String) throws(InputRefusal) {
        let digits = text.trimmingCharacters(in: " \t")
        guard !digits.isEmpty, digits.utf8.count <= 20, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let parsed = UInt64(digits)
        else {
            throw .problem(.badRequest("Last-Event-ID is a sequence number given by this feed, not '\(text.prefix(64))'"))
        }
        sequence = parsed
    }

    static var schema: APISchema { .string() }
}

/// `?scheme=` of a drawing: `light` or `dark` (400 otherwise).
extension ColourScheme: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        try self.init(case: text) { "\(name) '\(text)' is not one of \($0)" }
    }
}

/// An input that names one case of a string enumeration: its schema lists the cases.
extension RouteInputValue where Self: RawRepresentable & CaseIterable, RawValue == String {
    static var schema: APISchema { .string(values: allCases.map(\.rawValue)) }

    /// The case `text` names; else 400 whose detail is `refusal` of the cases' names ("a, b").
    init(case text: String, else refusal: (String) -> String) throws(InputRefusal) {
        guard let value = Self(rawValue: text) else {
            throw .problem(.badRequest(refusal(Self.allCases.map(\.rawValue).joined(separator: ", "))))
        }
        self = value
    }
}
