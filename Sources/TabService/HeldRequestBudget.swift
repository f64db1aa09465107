import MicroHTTPD
import Synchronization

/// Slots for held long-polls, in total and per client address, so that held requests can never take the last
/// connections: `/healthz`, ordinary reads and writes keep the slots the total leaves free, and one address (or
/// one forwarded client behind `--trusted-proxy`) cannot take every held slot from the others.
final class HeldRequestBudget: Sendable {
    /// Requests that may be held at once.
    let total: Int
    /// Requests that one client address may hold at once; 0: no limit but ``total``.
    let perAddress: Int

    private struct State {
        var held = 0
        var byAddress: [String: Int] = [:]
    }

    private let state = Mutex(State())

    init(total: Int, perAddress: Int) {
        self.total = max(0, total)
        self.perAddress = max(0, perAddress)
    }

    /// Why a request could not be held.
    enum Refusal: Equatable {
        case total, address
    }

    /// The answer to a long-poll refused for `refusal` (503, retry in 5 s). It closes its connection (libmicrohttpd
    /// honours the response's `Connection: close`): a refused poll must not keep a slot of the reserve that keeps
    /// /healthz and writes answering.
    func problem(_ refusal: Refusal) -> Problem {
        let whose = refusal == .total ? "this server holds" : "this client address holds"
        let limit = refusal == .total ? total : perAddress
        return Problem(
            .tooManyHeld, detail: "\(whose) \(limit) long-polls already; poll again later or without wait",
            headers: [HTTPHeader("Retry-After", "5"), HTTPHeader("Connection", "close")])
    }

    /// Takes a slot for `address`, or says why there is none.
    func reserve(_ address: String) -> Refusal? {
        state.withLock { state in
            if state.held >= total { return .total }
            let mine = state.byAddress[address, default: 0]
            if perAddress > 0 && mine >= perAddress { return .address }
            state.held += 1
            state.byAddress[address] = mine + 1
            return nil
        }
    }

    /// Gives back a slot ``reserve(_:)`` took for `address`.
    func release(_ address: String) {
        state.withLock { state in
            state.held -= 1
            let mine = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = mine > 0 ? mine : nil
        }
    }

    /// Requests held now.
    var held: Int { state.withLock { $0.held } }
}
