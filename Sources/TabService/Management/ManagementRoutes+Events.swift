import MicroHTTPD
import TabAccess
import TabLayout
import TabStore

extension ManagementRoutes {
    /// How long a change-feed answer is held waiting for events before it ends with a heartbeat.
    static let eventHoldSeconds = 25

    /// `GET /v1/events`: server-sent events, one per stored version, `id:` the publication's sequence number.
    ///
    /// Each answer holds until there are events after the reader's position (its `Last-Event-ID`, or now), or a
    /// heartbeat interval passes, then ends; EventSource clients reconnect on their own (`retry:`) with the
    /// `Last-Event-ID` of the last event seen, and every answer carries an `id:` so that none is missed between
    /// answers. A position older than the ring of events kept gets `event: reset` (start over from the store).
    /// Events the token may not read (another account's, another environment's, or a strings table without
    /// `accounts` `*`) are left out.
    func eventStream(_ match: RouteMatch) -> HTTPReply {
        let grant = match.grant
        let position =
            (match.inputs.header("Last-Event-ID", as: EventPosition.self) ?? match.inputs.query("lastEventId", as: EventPosition.self))?
            .sequence
        let publisher = changes.publisher
        let feed = publisher.feed
        let start = position ?? publisher.sequence
        return .deferred {
            let deadline = ContinuousClock.now + .seconds(Self.eventHoldSeconds)
            var text = "retry: 1000\n\n"
            switch feed.events(after: start, current: publisher.sequence) {
            case .reset:
                text +=
                    "event: reset\nid: \(publisher.sequence)\ndata: {\"reason\":\"Last-Event-ID is older than the events kept\"}\n\n"
            case .events(let ready):
                var events = ready
                if events.isEmpty {
                    await feed.waitForEvents(after: start, until: deadline)
                    if case .events(let arrived) = feed.events(after: start, current: publisher.sequence) { events = arrived }
                }
                let readable = events.filter { grant?.mayRead(account: $0.account, environment: $0.environment) ?? true }
                for event in readable { text += Self.serverSentEvent(event) }
                // Past the events left out too, so that the reader does not ask for them again at once.
                if readable.isEmpty { text += ": heartbeat\nid: \(events.last?.sequence ?? start)\n\n" }
            }
            return HTTPResponse(
                status: 200,
                headers: [
                    HTTPHeader("Content-Type", "text/event-stream; charset=utf-8"), HTTPHeader("Cache-Control", "no-store"),
                    HTTPHeader("X-Accel-Buffering", "no"),
                ], body: Array(text.utf8))
        }
    }

    /// One event in the text/event-stream format: `event:`, `id:` and a one-line JSON `data:`.
    static func serverSentEvent(_ event: ChangeEvent) -> String {
        // The same bytes a webhook's payload carries as `data` (one source: ChangeEventData).
        let data =
            event.data
            ?? ChangeEventData.encode(
                account: event.account, locale: event.locale, environment: event.environment, version: event.version,
                etag: event.etag, author: event.author, atMillis: event.atMillis, deleted: event.deleted)
        let line = String(decoding: data, as: UTF8.self)
        return "event: \(event.kind.rawValue)\nid: \(event.sequence)\ndata: \(line)\n\n"
    }
}
