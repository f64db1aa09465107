import Logging
import MicroHTTPD
import ProblemDocument
import Synchronization

/// What `serve` answers while it waits for its store and builds its first snapshot: `/healthz` 200 (the process
/// is alive), `/readyz` 503 saying what it waits for, anything else 503 with `Retry-After`. A platform's probes
/// then see a live process waiting for its database, not a dead one.
final class StartupProbes: HTTPHandler, Sendable {
    private let reason: Mutex<String>

    init(reason: String) { self.reason = Mutex(reason) }

    /// What `/readyz` says from now on.
    func waiting(for why: String) { reason.withLock { $0 = why } }

    var currentReason: String { reason.withLock { $0 } }

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        switch (request.method, request.path) {
        case (.get, "/healthz"), (.head, "/healthz"):
            return .response(Self.healthy)
        case (.get, "/readyz"), (.head, "/readyz"):
            return .response(Self.problem("not ready: \(currentReason)"))
        default:
            return .response(Self.problem("the server is starting: \(currentReason); retry later"))
        }
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse {
        Self.problem("the server is starting: \(currentReason); retry later")
    }

    /// `{"status":"ok"}` of `/healthz`, not to be stored.
    static let healthy = HTTPResponse(
        status: 200, headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Cache-Control", "no-store")],
        body: Array(#"{"status":"ok"}"#.utf8))

    /// A 503 ``ProblemKind/starting`` problem (RFC 9457) with `Retry-After`, not to be stored.
    static func problem(_ detail: String) -> HTTPResponse {
        HTTPResponse(
            status: ProblemKind.starting.status,
            headers: [
                HTTPHeader("Content-Type", ProblemDocument.mediaType), HTTPHeader("Cache-Control", "no-store"),
                HTTPHeader("Retry-After", "5"),
            ],
            body: ProblemKind.starting.document(detail: detail).json)
    }
}

/// The port the start-up probes answer on, bound only when the store is slow: at its first failure, or when it has
/// not answered within a second. A store that answers at once changes nothing in how `serve` starts (`/healthz`
/// answers when the service does), and a platform's probes still see a live process while it waits.
final class StartupProbeServer: Sendable {
    private struct State {
        var server: HTTPServer?
        var stopped = false
    }
    private let state = Mutex(State())
    private let configuration: HTTPServerConfiguration
    let probes: StartupProbes
    let logger: Logger

    init(configuration: HTTPServerConfiguration, probes: StartupProbes, logger: Logger) {
        self.configuration = configuration
        self.probes = probes
        self.logger = logger
    }

    /// Binds the port and answers the probes (once; not after ``stop()``).
    func start() {
        state.withLock { state in
            guard state.server == nil, !state.stopped else { return }
            do {
                let started = try HTTPServer(configuration: configuration, handler: probes)
                state.server = started
                logger.info(
                    "starting: /healthz answers 200 and /readyz 503 at \(configuration.host) port \(started.port) until the store answers")
            } catch {
                logger.warning("the start-up probes could not listen: \(error)")
            }
        }
    }

    /// The port the probes took (the service takes it over), nil when they never started.
    var port: UInt16? { state.withLock { $0.server?.port } }

    /// Frees the port for the service.
    func stop() {
        let running = state.withLock { state -> HTTPServer? in
            state.stopped = true
            return state.server.take()
        }
        running?.stop()
    }
}
