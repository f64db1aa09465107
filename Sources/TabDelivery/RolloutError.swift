import TabJSON

/// Why a rollout-side decision refused: every refusal of environments, drafts, promotions, rollouts and alerts is one
/// of these, and ``status`` is the HTTP status it is answered with (docs/delivery.md).
public enum RolloutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `--environments` cannot be used (the server does not start).
    case invalidEnvironmentList(String)
    /// A query parameter or header names an environment that is not configured (404).
    case unknownEnvironment(String)
    /// `X-Install-Id` or `?installId=` is over 128 characters or holds a control character (400).
    case invalidInstallID(String)
    /// A query parameter has a value it cannot take, such as `?publish=maybe` (400).
    case invalidParameter(name: String, message: String)
    /// The body is not what the route takes; every problem found, each at its JSON Pointer (422).
    case invalidBody([FieldError])
    /// The body is over the route's limit (413).
    case tooLarge(limit: Int)
    /// The target exists and the request had no `If-Match` (428).
    case preconditionRequired
    /// `If-Match` did not match, or `If-None-Match: *` met an existing pointer; carries the current tag (412).
    case preconditionFailed(current: String?)
    /// The thing acted on does not exist (404).
    case notFound(Missing)
    /// The request contradicts the current state (409).
    case conflict(Conflict)

    /// What was not found.
    public enum Missing: Sendable, Equatable {
        /// The account has no layout in that environment (a promotion's `from`).
        case layout(account: String, environment: String)
        /// The strings table of that locale has no version in that environment (a promotion's `from`).
        case stringsTable(locale: String, environment: String)
        /// No rollout runs or ran for the account in that environment.
        case rollout(account: String, environment: String)
    }

    /// Which state the request contradicts.
    public enum Conflict: Sendable, Equatable {
        /// A rollout is under way: a second one, or a write that would move the pointer, waits for its end.
        case rolloutInProgress(id: Int, environment: String)
        /// The rollout has ended (`completed` or `rolledBack`); it can no longer change.
        case rolloutEnded(id: Int, state: RolloutState)
        /// `PATCH` may raise the percent, never lower it: installs that got the candidate keep it.
        case percentDownward(current: Percent, requested: Percent)
        /// A scheduled rollout cannot be paused (roll it back to cancel it, or wait for its start).
        case rolloutNotStarted(id: Int)
        /// The rollout's last hold has ended but its completion (the pointer's move) is not recorded yet: the pointer
        /// read is about to change. Record ``Rollout/advanced(to:)`` first (the stepper does within a second).
        case completionNotRecorded(id: Int)
        /// A rollout needs a stable version to serve the installs outside its share.
        case noStableVersion(account: String, environment: String)
    }

    /// The HTTP status this error is answered with.
    public var status: Int {
        switch self {
        case .invalidEnvironmentList: 500
        case .unknownEnvironment, .notFound: 404
        case .invalidInstallID, .invalidParameter: 400
        case .invalidBody: 422
        case .tooLarge: 413
        case .preconditionRequired: 428
        case .preconditionFailed: 412
        case .conflict: 409
        }
    }

    public var description: String {
        switch self {
        case .invalidEnvironmentList(let why): "--environments: \(why)"
        case .unknownEnvironment(let name): "there is no environment '\(name)'"
        case .invalidInstallID(let why): why
        case .invalidParameter(let name, let message): "?\(name): \(message)"
        case .invalidBody(let problems): problems.map { $0.described(whole: "(body)") }.joined(separator: "; ")
        case .tooLarge(let limit): "the body is over \(limit) bytes"
        case .preconditionRequired: "the layout exists in that environment: send If-Match with its current ETag"
        case .preconditionFailed(let current): "precondition failed (current ETag \(current ?? "none"))"
        case .notFound(.layout(let account, let environment)): "'\(account)' has no layout in \(environment)"
        case .notFound(.stringsTable(let locale, let environment)): "there is no '\(locale)' strings table in \(environment)"
        case .notFound(.rollout(let account, let environment)): "'\(account)' has no rollout in \(environment)"
        case .conflict(.rolloutInProgress(let id, let environment)):
            "rollout \(id) is under way in \(environment): complete it or roll it back first (drafts with ?publish=false are fine)"
        case .conflict(.rolloutEnded(let id, let state)): "rollout \(id) has ended (\(state.rawValue)) and can no longer change"
        case .conflict(.percentDownward(let current, let requested)):
            "the percent only grows during a rollout (it is \(current), \(requested) was asked): installs that got the candidate keep it; roll back instead"
        case .conflict(.completionNotRecorded(let id)):
            "rollout \(id) has just completed and the environment's pointer is moving to its candidate: retry in a second"
        case .conflict(.rolloutNotStarted(let id)): "rollout \(id) has not started yet: roll it back to cancel it"
        case .conflict(.noStableVersion(let account, let environment)):
            "'\(account)' has no layout in \(environment) to keep serving outside the rollout: publish or promote one first"
        }
    }
}
