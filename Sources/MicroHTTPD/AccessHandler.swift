internal import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

private func parseMethod(_ method: UnsafePointer<CChar>) -> HTTPMethod {
    switch (method[0], method[1], method[2], method[3]) {
    case (0x47, 0x45, 0x54, 0): .get
    case (0x48, 0x45, 0x41, 0x44) where method[4] == 0: .head
    case (0x50, 0x55, 0x54, 0): .put
    case (0x50, 0x4F, 0x53, 0x54) where method[4] == 0: .post
    default:
        switch String(cString: method) {
        case "PATCH": .patch
        case "DELETE": .delete
        case "OPTIONS": .options
        case let other: .other(other)
        }
    }
}

/// The access handler (`MHD_AccessHandlerCallback`). Total: every path returns a queued answer or MHD_Result.YES.
/// First call: headers are in; check syntax and limits, admit, and set `*req_cls`. Later calls: body chunks, then
/// the reply (answering on the first call would make libmicrohttpd drop keep-alive).
let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let cls, let connection, let url, let method, let uploadDataSize, let requestContext else {
        return MHD_Result.NO
    }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let marker = RequestMarker(requestContext.pointee)
    guard let context = requestContext.pointee, marker?.kind != .target else {
        core.inFlight.add(1, ordering: .relaxed)
        return headersReceived(core, connection, url, method, marker ?? RequestMarker(.target), requestContext)
    }
    if let marker, marker.kind == .headersSeen {
        if uploadDataSize.pointee > 0 {
            uploadDataSize.pointee = 0  // a body on GET or HEAD has no meaning here: read and drop it
            return MHD_Result.YES
        }
        return FieldIndex.with { fields in
            let request = HTTPRequest(
                method: parseMethod(method), body: [], connection: connection, url: url, queryOffset: marker.queryOffset,
                fieldIndex: fields)
            return reply(
                core.handler.handle(request), core: core, connection: connection, method: request.method, requestContext: requestContext)
        }
    }
    if marker?.kind == .answered {
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }
    let state = Unmanaged<PendingRequest>.fromOpaque(context).takeUnretainedValue()
    if let pending = state.takePending() {
        core.noteAnswerTaken(state)
        return queue(pending, connection)
    }
    let configuration = core.configuration
    if uploadDataSize.pointee > 0 {
        var keepReading = true
        if let uploadData {
            keepReading = state.append(
                UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee), limit: configuration.maxBodyBytes,
                drainLimit: 4 * configuration.maxBodyBytes, core: core)
        }
        uploadDataSize.pointee = 0
        // libmicrohttpd 0.9.75 cannot queue an answer while a body is still arriving: an overflowing chunked body
        // is read and dropped up to the drain limit and answered at its end; beyond the limit the connection closes.
        return keepReading ? MHD_Result.YES : MHD_Result.NO
    }
    connectionClock(connection)?.enter(.answering)
    switch state.overflow {
    case .tooLarge: return queue(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)), connection)
    case .overBudget:
        return queue(core.handler.refuse(.bodyBudgetExhausted(retryAfterSeconds: configuration.bodyBudgetRetryAfterSeconds)), connection)
    case nil: break
    }
    return FieldIndex.with { fields in
        let request = HTTPRequest(
            method: state.method, body: state.body, connection: connection, url: url, queryOffset: state.queryOffset,
            admission: state.admission, fieldIndex: fields)
        return reply(core.handler.handle(request), core: core, connection: connection, method: state.method, requestContext: requestContext)
    }
}

/// The access handler's first call: the request line and header block are complete, no body byte was read.
/// Refusals are queued now (libmicrohttpd then sends no `100 Continue`, never reads the body, and closes).
private func headersReceived(
    _ core: ServerCore, _ connection: OpaquePointer, _ url: UnsafePointer<CChar>, _ method: UnsafePointer<CChar>,
    _ marker: RequestMarker, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    let configuration = core.configuration
    let target = marker.flags
    let queryOffset = restoreQuery(url, marker)
    func refuse(_ response: HTTPResponse) -> MHD_Result {
        requestContext.pointee = RequestMarker.answered
        return queue(response, connection)
    }
    if target.contains(.malformed) {
        return refuse(
            core.handler.refuse(.malformed("the request target contains a space, a control character or an escaped control character")))
    }
    if target.contains(.tooLong) { return refuse(core.handler.refuse(.targetTooLong(limit: configuration.maxTargetBytes))) }
    if target.contains(.tooManyParameters) {
        return refuse(core.handler.refuse(.tooManyQueryParameters(limit: configuration.maxQueryParameters)))
    }
    let facts = HeaderBlockFacts.scan(connection, requestLine: UnsafeRawPointer(method).assumingMemoryBound(to: UInt8.self))
    if let violation = facts.framingViolation(http11: target.contains(.http11)) { return refuse(core.handler.refuse(violation)) }
    // The request line (target and query included) and every field line.
    if facts.size > configuration.maxHeaderBytes {
        return refuse(core.handler.reject(.headerBlockTooLarge(limit: configuration.maxHeaderBytes)))
    }
    let parsed = parseMethod(method)
    let clock = connectionClock(connection)
    let bodiless = parsed == .get || parsed == .head
    if bodiless && !facts.announcesBody {
        clock?.enter(.answering)
        requestContext.pointee = RequestMarker(.headersSeen, queryOffset: queryOffset).pointer
        return MHD_Result.YES
    }
    if let declared = facts.contentLength, declared > configuration.maxBodyBytes {
        return refuse(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)))
    }
    var admission: (any Sendable)?
    switch core.handler.admit(HTTPRequest(method: parsed, body: [], connection: connection, url: url, queryOffset: queryOffset)) {
    case .refuse(let response): return refuse(response)
    case .proceedNoting(let note): admission = note
    case .proceed: break
    }
    clock?.enter(.receivingBody)
    if bodiless {
        // A GET or HEAD body has no meaning here: read and dropped without buffering.
        requestContext.pointee = RequestMarker(.headersSeen, queryOffset: queryOffset).pointer
        return MHD_Result.YES
    }
    let declared = facts.contentLength ?? 0
    guard core.reserveBody(declared) else {
        return refuse(core.handler.refuse(.bodyBudgetExhausted(retryAfterSeconds: configuration.bodyBudgetRetryAfterSeconds)))
    }
    // Released in `requestCompleted`, which also gives back the reservation.
    requestContext.pointee = Unmanaged.passRetained(
        PendingRequest(method: parsed, reserved: declared, queryOffset: queryOffset, admission: admission)
    ).toOpaque()
    return MHD_Result.YES
}

private func reply(
    _ reply: HTTPReply, core: ServerCore, connection: OpaquePointer, method: HTTPMethod,
    requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    switch reply {
    case .prepared(let prepared):
        return MHD_queue_response(connection, UInt32(prepared.status), prepared.pointer)
    case .response(let response):
        return queue(response, connection)
    case .deferred(let work):
        let state: PendingRequest
        if let existing = requestContext.pointee, !RequestMarker.isMarker(existing) {
            state = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
        } else {
            state = PendingRequest(method: method)
            // Released in `requestCompleted`.
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        }
        guard core.suspend(connection, state) else {
            return queue(core.handler.refuse(.serverStopping), connection)
        }
        core.deferred.add(1, ordering: .relaxed)
        Task {
            let response = await work()
            core.finishDeferred(state, response)
            core.deferred.subtract(1, ordering: .releasing)
        }
        return MHD_Result.YES
    }
}

/// Queues a per-request response; our reference is dropped at once (libmicrohttpd keeps its own). A shared one
/// (``HTTPResponse/init(shared:)``) is queued itself: libmicrohttpd takes its own reference, and ours lives as
/// long as the `PreparedResponse`.
private func queue(_ response: HTTPResponse, _ connection: OpaquePointer) -> MHD_Result {
    if let shared = response.shared { return MHD_queue_response(connection, UInt32(shared.status), shared.pointer) }
    guard let built = makeResponse(response) else { return MHD_Result.NO }
    defer { MHD_destroy_response(built) }
    return MHD_queue_response(connection, UInt32(response.status), built)
}

/// `MHD_RequestCompletedCallback`: the request is over (answered, or the connection is gone). Called for every
/// request whose target callback ran, including those libmicrohttpd refused itself before the access handler.
let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
    guard let cls else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { connectionClock(connection)?.enter(.awaitingHeaders) }
    guard let requestContext, let context = requestContext.pointee else { return }
    requestContext.pointee = nil
    let marker = RequestMarker(context)
    // A target marker: libmicrohttpd answered before the access handler's first call (which counts in-flight).
    guard marker?.kind != .target else { return }
    core.inFlight.subtract(1, ordering: .releasing)
    if marker == nil {
        // Pairs with the passRetained of the access handler's first call (or of a deferred reply).
        let state = Unmanaged<PendingRequest>.fromOpaque(context).takeRetainedValue()
        // A connection resumed by the paced resumer and closed before its answer was taken is done with too.
        core.noteAnswerTaken(state)
        state.release(core: core)
    }
}
