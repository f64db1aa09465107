import MicroHTTPD
import Synchronization

/// The answers of held long-polls, prepared once per representation form and extra header fields (`Preference-Applied`,
/// a signature) and shared by every poll they answer: one change wakes thousands of polls for the same form, and each queued a copy of the
/// body and header fields of its own (a libmicrohttpd response built, filled and destroyed per poll) before.
///
/// The answer is ``HTTPResponse/init(longPoll:extra:)``'s (`Cache-Control: no-store`). An entry holds its source
/// form, so the source's `ObjectIdentifier` (the key) is not reused while the entry exists; the table is emptied when
/// it reaches ``capacity`` (forms of older snapshots go then).
final class LongPollResponses: Sendable {
    private struct Key: Hashable {
        let source: ObjectIdentifier
        let extra: [String]
    }

    private struct Entry {
        let source: PreparedResponse
        let answer: PreparedResponse
    }

    /// Entries kept at most.
    let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    init(capacity: Int = 1024) { self.capacity = capacity }

    /// The long-poll answer for `form` with `extra` header fields after its own.
    func answer(_ form: PreparedResponse, extra: [HTTPHeader]) -> HTTPResponse {
        let key = Key(source: ObjectIdentifier(form), extra: extra.flatMap { [$0.name, $0.value] })
        let shared = entries.withLock { entries -> PreparedResponse? in
            if let found = entries[key] { return found.answer }
            // Built under the lock: the thousands of polls one change wakes wait a few microseconds for the first
            // one's answer instead of each building their own.
            let copy = HTTPResponse(longPoll: form, extra: extra)
            let built: PreparedResponse? =
                if copy.body.isEmpty, let length = copy.announcedLength {
                    try? PreparedResponse(status: copy.status, headers: copy.headers, announcingLength: length)
                } else {
                    try? PreparedResponse(status: copy.status, headers: copy.headers, body: copy.body)
                }
            guard let built else { return nil }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(source: form, answer: built)
            return built
        }
        var response = shared.map(HTTPResponse.init(shared:)) ?? HTTPResponse(longPoll: form, extra: extra)
        // One of the many one change (or the stop) answers at once: resumed in its turn, a slice at a time.
        response.resumption = .paced
        return response
    }
}
