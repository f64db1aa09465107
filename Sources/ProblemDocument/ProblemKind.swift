/// Every kind of problem the server answers with (the service, and `serve` while it starts): its slug (the last part of
/// the `type` URN), its status and title. One catalogue, so that a slug always means one status and one title.
public enum ProblemKind: String, CaseIterable, Sendable {
    case badRequest = "bad-request"
    case unauthorized = "unauthorized"
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case notAcceptable = "not-acceptable"
    case baseMissing = "base-missing"
    case layoutIsExtended = "layout-is-extended"
    case preconditionFailed = "precondition-failed"
    case tooLarge = "too-large"
    case unsupportedMediaType = "unsupported-media-type"
    case invalidLayout = "invalid-layout"
    case preconditionRequired = "precondition-required"
    case tooManyFailures = "too-many-failures"
    case tooManyReports = "too-many-reports"
    case headerTooLarge = "header-too-large"
    case internalError = "internal"
    case busy = "busy"
    case stopping = "stopping"
    case storeUnavailable = "store-unavailable"
    case tooManyHeld = "too-many-held"
    case insufficientStorage = "insufficient-storage"
    case insufficientScope = "insufficient-scope"
    case invalidFields = "invalid-fields"
    case lastAdminToken = "last-admin-token"
    case tokenInactive = "token-inactive"
    case rolloutConflict = "rollout-conflict"
    case incompatibleBuild = "incompatible-build"
    case changeRequestConflict = "change-request-conflict"
    case tooManyBuilds = "too-many-builds"
    /// A version revoked in every environment (`…/tabs?version=N`): 410 Gone.
    case revoked = "revoked"
    /// A revoke of a version an environment or a rollout serves now.
    case versionServed = "version-served"
    /// `serve` waits for its store (the start-up probes).
    case starting = "starting"

    public var status: Int {
        switch self {
        case .badRequest: 400
        case .unauthorized: 401
        case .notFound: 404
        case .methodNotAllowed: 405
        case .notAcceptable: 406
        case .baseMissing: 409
        case .layoutIsExtended: 409
        case .preconditionFailed: 412
        case .tooLarge: 413
        case .unsupportedMediaType: 415
        case .invalidLayout: 422
        case .preconditionRequired: 428
        case .tooManyFailures, .tooManyReports: 429
        case .headerTooLarge: 431
        case .internalError: 500
        case .busy, .starting: 503
        case .stopping: 503
        case .storeUnavailable: 503
        case .tooManyHeld: 503
        case .insufficientStorage: 507
        case .insufficientScope: 403
        case .invalidFields, .incompatibleBuild: 422
        case .lastAdminToken, .tokenInactive, .rolloutConflict, .changeRequestConflict, .tooManyBuilds, .versionServed: 409
        case .revoked: 410
        }
    }

    public var title: String {
        switch self {
        case .badRequest: "Bad Request"
        case .baseMissing, .layoutIsExtended, .lastAdminToken, .tokenInactive, .rolloutConflict, .changeRequestConflict, .tooManyBuilds,
            .versionServed:
            "Conflict"
        case .revoked: "Gone"
        case .insufficientScope: "Forbidden"
        case .tooLarge: "Content Too Large"
        case .insufficientStorage: "Insufficient Storage"
        case .internalError: "Internal Server Error"
        case .methodNotAllowed: "Method Not Allowed"
        case .notAcceptable: "Not Acceptable"
        case .notFound: "Not Found"
        case .preconditionFailed: "Precondition Failed"
        case .preconditionRequired: "Precondition Required"
        case .headerTooLarge: "Request Header Fields Too Large"
        case .busy, .stopping, .storeUnavailable, .tooManyHeld, .starting: "Service Unavailable"
        case .tooManyFailures, .tooManyReports: "Too Many Requests"
        case .unauthorized: "Unauthorized"
        case .invalidLayout, .invalidFields, .incompatibleBuild: "Unprocessable Content"
        case .unsupportedMediaType: "Unsupported Media Type"
        }
    }
}

extension ProblemKind {
    /// The `type` of its documents: `urn:tabserver:problem:<slug>`.
    public var type: String { "urn:tabserver:problem:\(rawValue)" }

    /// A document of this kind saying `detail`, with further `members` (each already JSON).
    public func document(detail: String, members: [(name: String, json: [UInt8])] = []) -> ProblemDocument {
        ProblemDocument(type: type, title: title, status: status, detail: detail, members: members)
    }
}
