import MicroHTTPD
import TabAccess

/// Who may call a route: anyone, or a token whose grant reaches the scope on the target. A management route
/// cannot be declared without its scope (``RouteTableTests`` walks the table).
enum Access: Sendable, Equatable {
    /// Anyone (mobile clients, probes).
    case open
    /// `Authorization: Bearer <token>` whose grant allows `Scope` on the target (docs/security.md, "Scoped API tokens").
    case scoped(Scope, AccessTarget)

    /// Whether anyone may call it.
    var isOpen: Bool { self == .open }

    /// The scope needed, nil on open routes.
    var scope: Scope? {
        if case .scoped(let scope, _) = self { scope } else { nil }
    }
}

/// What a scoped route touches, for the grant's `accounts` (and `environments`, when the template has an
/// `{environment}`).
enum AccessTarget: Sendable, Equatable {
    /// Nothing that belongs to one account (tokens, validate, preview); lists keep only the entries the grant may read.
    case service
    /// The account in the template's `{account}`.
    case account
    /// What every account shares (global strings tables): needs `accounts` `*`.
    case allAccounts
    /// What every account shares in every environment (the declared builds): needs `accounts` `*` and no narrowing
    /// by environments.
    case everything
}

/// What a route is, apart from its handler: a method on a path template (OpenAPI's syntax), who may call it, its
/// metrics label and its OpenAPI operation. The route table is a list of these, known without any service: dispatch,
/// 404/405 with `Allow`, HEAD, the token check made before a body is read, metrics, the scope table and `openapi.yaml`
/// are all read off it.
struct Endpoint: Sendable {
    let method: HTTPMethod
    let template: String
    let access: Access
    /// The `route` label of `tabserver_http_requests_total` (routes on one template share it).
    let label: String
    /// Answers are representations: the same bytes however they were reached (cached, built for this request, or
    /// after a long-poll), so 2xx and 304 carry no per-request header.
    let isRepresentation: Bool
    /// A request that changes what the service serves (logged as a committed change).
    let changesState: Bool
    /// What the router parses for the handler, before it runs (``RouteInputs``), unless ``readsItsInputs``;
    /// `openapi.yaml`'s parameters.
    let inputs: [RouteInput]
    /// The handler reads its declared inputs itself, each typed (``RouteInputs/read(_:as:_:_:wrong:)``): the read
    /// path's routes, whose inputs are then held in no box and looked up by no name.
    let readsItsInputs: Bool
    /// Whether it reads or writes the store: then it can answer 503 (no answer) and 507 (disk full), listed in
    /// `openapi.yaml` from this.
    let touchesStore: Bool
    /// The environments it touches are named by its body (a promotion's `from` and `to`), checked by the handler:
    /// the token check before the body covers only the account.
    let environmentsInBody: Bool
    let operation: APIOperation

    /// Whether the request's body is read (only for operations that declare one); other requests' bodies are refused.
    var takesBody: Bool { operation.requestBody != nil }
}

/// Runs a matched request: a route's handler bound to what its collection holds. HEAD runs the GET route's handler
/// (the server sends no body). A problem it throws is the answer, written by the dispatcher (``Router``).
typealias RouteHandler = @Sendable (borrowing HTTPRequest, RouteMatch) throws(Problem) -> HTTPReply

/// One route of the collection `Owner` (``RouteCollection``): its endpoint, and its handler, which is given the
/// collection's value, and so only what the collection holds.
struct Route<Owner: Sendable>: Sendable {
    let endpoint: Endpoint
    let handler: @Sendable (Owner, borrowing HTTPRequest, RouteMatch) throws(Problem) -> HTTPReply

    /// - Parameters:
    ///   - inputs: the path, query and header inputs the handler reads (``RouteMatch/inputs``).
    ///   - readsItsInputs: the handler reads `inputs` itself (``Endpoint/readsItsInputs``); the router does not.
    ///   - touchesStore: whether the handler reads or writes the store (503 and 507 in `openapi.yaml`).
    init(
        _ method: HTTPMethod, _ template: String, _ access: Access, label: String, representation: Bool = false,
        changesState: Bool? = nil, inputs: [RouteInput] = [], readsItsInputs: Bool = false, touchesStore: Bool = false,
        environmentsInBody: Bool = false,
        _ operation: APIOperation,
        handler: @escaping @Sendable (Owner, borrowing HTTPRequest, RouteMatch) throws(Problem) -> HTTPReply
    ) {
        endpoint = Endpoint(
            method: method, template: template, access: access, label: label, isRepresentation: representation,
            changesState: changesState ?? [.put, .patch, .delete, .post].contains(method), inputs: inputs, readsItsInputs: readsItsInputs,
            touchesStore: touchesStore, environmentsInBody: environmentsInBody, operation: operation)
        self.handler = handler
    }

    /// The handler with `owner` captured.
    func bound(to owner: Owner) -> RouteHandler {
        let handler = self.handler
        return { request, match throws(Problem) in try handler(owner, request, match) }
    }
}

/// A capability's routes as a value holding what their handlers need, and nothing else (Hummingbird's and Vapor's
/// `RouteCollection`): its routes are declared once, as static values, so that the route table, `openapi.yaml` and the
/// scope table are known without a value; a value binds them (``handlers``). A collection is run in process on its own
/// with a ``Router`` over it, without a whole service.
protocol RouteCollection: Sendable {
    /// The collection's routes, in the order their templates are tried.
    static var routes: [Route<Self>] { get }
}

extension RouteCollection {
    /// The routes' endpoints.
    static var endpoints: [Endpoint] { routes.map(\.endpoint) }

    /// The routes' handlers, each capturing this value.
    var handlers: [RouteHandler] { Self.routes.map { $0.bound(to: self) } }
}

/// What a handler gets besides the request: the path's `{…}` parameters, its route's declared inputs, and who called.
struct RouteMatch: Sendable {
    /// The template's parameter names, in order.
    let names: [String]
    /// Their values as sent (percent-decoded); no template has more than two.
    let first: String?
    let second: String?
    /// What the request's token may do (nil on open routes).
    let grant: Grant?
    /// The template's slot in `tabserver_http_requests_total`.
    let slot: Int
    /// The route's declared inputs, typed (parsed by the router before the handler runs).
    private(set) var inputs = RouteInputs()

    init(names: [String], first: String?, second: String?, grant: Grant?, slot: Int) {
        self.names = names
        self.first = first
        self.second = second
        self.grant = grant
        self.slot = slot
    }

    /// This match with its route's inputs.
    func with(_ inputs: RouteInputs) -> RouteMatch {
        var match = self
        match.inputs = inputs
        return match
    }

    /// The slot a memoised answer is counted under (``ReadMemo``): only on open routes, whose answers no token chose.
    var memoSlot: Int? { grant == nil ? slot : nil }

    /// The name behind the token ("" on open routes): the author of a change.
    var author: String { grant?.name ?? "" }

    /// The value of the parameter `{name}`, "" when the template has none of that name.
    subscript(_ name: String) -> String {
        if names.first == name { return first ?? "" }
        if names.count > 1, names[1] == name { return second ?? "" }
        return ""
    }
}
