import Foundation
import TabLayout

/// One app build: a platform and an app version (`2.0` is `2.0.0`), as clients send them in `X-Client-Platform`
/// and `X-App-Version`.
public struct BuildID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let platform: Platform
    public let appVersion: AppVersion

    public init(platform: Platform, appVersion: AppVersion) {
        self.platform = platform
        self.appVersion = appVersion
    }

    /// The build a path names (`/v1/builds/{platform}/{appVersion}`).
    /// - Throws: ``BuildError/unknownPlatform(_:)`` or ``BuildError/notAVersion(_:)``.
    public init(platform: String, appVersion: String) throws(BuildError) {
        guard let known = Platform(rawValue: platform) else { throw .unknownPlatform(String(platform.prefix(64))) }
        guard let version = AppVersion(appVersion) else { throw .notAVersion(String(appVersion.prefix(64))) }
        self.init(platform: known, appVersion: version)
    }

    public static func < (a: BuildID, b: BuildID) -> Bool {
        a.platform.rawValue != b.platform.rawValue ? a.platform.rawValue < b.platform.rawValue : a.appVersion < b.appVersion
    }

    /// The version as builds are keyed and shown: at least two numbers, trailing zeros beyond them dropped (`2.0`
    /// for `2`, `2.0` and `2.0.0`; `2.1` for `2.1.0`).
    public var version: String {
        let numbers = appVersion.components + Array(repeating: 0, count: max(0, 2 - appVersion.components.count))
        return numbers.map(String.init).joined(separator: ".")
    }

    /// `iphone 2.1`.
    public var description: String { "\(platform.rawValue) \(version)" }
}

/// A build as declared with `PUT /v1/builds/{platform}/{appVersion}`: the view controllers it registers and,
/// optionally, the images it ships (docs/builds.md).
public struct Build: Sendable, Equatable {
    public var id: BuildID
    public var viewControllers: Set<String>
    /// nil: the build did not list its images (images are then not checked).
    public var images: Set<String>?
    public var note: String?
    public var declaredAtMillis: Int64
    public var declaredBy: String
    /// When a client of this build last asked, to the minute; nil when none has yet.
    public var lastSeenMillis: Int64?

    public init(
        id: BuildID, viewControllers: Set<String>, images: Set<String>?, note: String?, declaredAtMillis: Int64, declaredBy: String,
        lastSeenMillis: Int64? = nil
    ) {
        self.id = id
        self.viewControllers = viewControllers
        self.images = images
        self.note = note
        self.declaredAtMillis = declaredAtMillis
        self.declaredBy = declaredBy
        self.lastSeenMillis = lastSeenMillis
    }

    /// Whether the build is live at `now`: declared or seen within `liveDays` days.
    public func isLive(at nowMillis: Int64, liveDays: Int) -> Bool {
        max(declaredAtMillis, lastSeenMillis ?? 0) >= nowMillis - Int64(liveDays) * 86_400_000
    }

    /// What the build declared, as the body of its `PUT` (what the store keeps): `{"viewControllers", "images"?,
    /// "note"?}`, names sorted.
    public var specJSON: [UInt8] {
        var object: [String: Any] = ["viewControllers": viewControllers.sorted()]
        if let images { object["images"] = images.sorted() }
        if let note { object["note"] = note }
        // Strings and arrays of strings: serializing cannot fail.
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }
}

/// The body of `PUT /v1/builds/{platform}/{appVersion}`, checked field by field.
public struct BuildSpec: Sendable, Equatable {
    public static let maximumNames = 2_000
    public static let maximumNameLength = 128
    public static let maximumNoteLength = 1_024

    public var viewControllers: Set<String>
    public var images: Set<String>?
    public var note: String?

    /// Every problem of `body` at its JSON Pointer, or the spec.
    /// - Throws: ``BuildError/invalidBody(_:)`` listing every problem; ``BuildError/notJSON``.
    public static func decode(_ body: [UInt8]) throws(BuildError) -> BuildSpec {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(body)), let object = parsed as? [String: Any] else {
            throw .notJSON
        }
        var problems: [FieldError] = []
        for key in object.keys.sorted() where !["viewControllers", "images", "note"].contains(key) {
            problems.append(FieldError(pointer: "/" + key, message: "unknown field (viewControllers, images and note are known)"))
        }
        func names(_ key: String) -> Set<String>? {
            guard let value = object[key] else { return nil }
            guard let list = value as? [Any] else {
                problems.append(FieldError(pointer: "/\(key)", message: "an array of names"))
                return nil
            }
            if list.count > maximumNames {
                problems.append(FieldError(pointer: "/\(key)", message: "at most \(maximumNames) names, not \(list.count)"))
                return nil
            }
            var result: Set<String> = []
            for (index, item) in list.enumerated() {
                guard let name = item as? String, !(item is NSNumber) else {
                    problems.append(FieldError(pointer: "/\(key)/\(index)", message: "a name is a string"))
                    continue
                }
                guard !name.isEmpty, name.count <= maximumNameLength,
                    name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
                else {
                    problems.append(
                        FieldError(
                            pointer: "/\(key)/\(index)",
                            message: "a name is 1 to \(maximumNameLength) characters without control characters"))
                    continue
                }
                result.insert(name)
            }
            return result
        }
        let viewControllers = names("viewControllers")
        if object["viewControllers"] == nil {
            problems.append(FieldError(pointer: "/viewControllers", message: "required: the view controllers the build registers"))
        }
        let images = names("images")
        var note: String?
        if let value = object["note"] {
            if let text = value as? String, text.count <= maximumNoteLength {
                note = text
            } else {
                problems.append(FieldError(pointer: "/note", message: "a string of at most \(maximumNoteLength) characters"))
            }
        }
        guard problems.isEmpty, let viewControllers else { throw .invalidBody(problems) }
        return BuildSpec(viewControllers: viewControllers, images: images, note: note)
    }
}

/// Why a build could not be declared or named.
public enum BuildError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownPlatform(String)
    case notAVersion(String)
    case notJSON
    case invalidBody([FieldError])

    public var description: String {
        switch self {
        case .unknownPlatform(let text):
            "'\(text)' is not a platform (\(Platform.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .notAVersion(let text): "'\(text)' is not an app version such as 2.1 or 2.10.3"
        case .notJSON: "the body is not a JSON object"
        case .invalidBody(let problems): problems.map { $0.described(whole: "") }.joined(separator: "; ")
        }
    }
}
