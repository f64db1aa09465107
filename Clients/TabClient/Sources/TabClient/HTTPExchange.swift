import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP answer: status, header fields (read case-insensitively), body.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Whether `Vary` names `X-Install-Id`: the server chose this answer by the install, one arm of a running
    /// rollout (docs/rollouts.md, "What `Vary` does to caches").
    var variesByInstall: Bool {
        guard let vary = header("Vary") else { return false }
        return vary.split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces).caseInsensitiveCompare("X-Install-Id") == .orderedSame
        }
    }

    /// `Retry-After` as a delay: delta-seconds or an HTTP date.
    var retryAfter: Duration? {
        guard let value = header("Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSinceNow * 1000)))
    }

    /// The `detail` (else `title`) of a problem+json body, capped and escaped (``Quoting/capped(_:_:)``).
    var problemDetail: String? {
        guard (try? JSONLimits.checkDepth(body)) != nil,
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let text = (object["detail"] as? String) ?? (object["title"] as? String)
        else { return nil }
        return Quoting.capped(text)
    }
}

/// The delegate of every session a ``TabClient`` makes: it reads each answer's body with a cap, and refuses every
/// redirect. One instance serves any number of tasks at once, each keyed by its `taskIdentifier`.
///
/// Redirects: one off the configured origin (scheme, host, port) would carry the install id and the client's headers to
/// another host, and one to the same origin means a misconfigured server URL (tabserver never redirects): the task
/// ends with the `3xx` as its answer, which ``URLSession/exchange(_:delegate:)`` reports as a fault.
final class ExchangeDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The largest body read (the Java client's limit: a bundle is at most 8 MiB, a layout 2 MiB per locale); a larger
    /// answer is cut off and is a ``TabClientError/transport(_:)`` fault.
    static let maximumBody = 8 << 20

    private struct Running {
        var data = Data()
        var tooLarge = false
        let timeout: TimeInterval
        let continuation: CheckedContinuation<Result<HTTPAnswer, TabClientError>, Never>
    }

    private let running = Locked<[Int: Running]>([:])

    /// Registers `task` (not resumed yet): its answer, or its failure, resumes `continuation` exactly once.
    func register(
        _ task: URLSessionTask, timeout: TimeInterval, continuation: CheckedContinuation<Result<HTTPAnswer, TabClientError>, Never>
    ) {
        running.withLock { $0[task.taskIdentifier] = Running(timeout: timeout, continuation: continuation) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let cut = running.withLock { running -> Bool in
            guard var entry = running[dataTask.taskIdentifier], !entry.tooLarge else { return false }
            if entry.data.count + data.count > Self.maximumBody {
                entry.tooLarge = true
                entry.data = Data()
            } else {
                entry.data.append(data)
            }
            running[dataTask.taskIdentifier] = entry
            return entry.tooLarge
        }
        if cut { dataTask.cancel() }
    }

    #if canImport(FoundationNetworking)
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    #else
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    #endif

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = running.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if entry.tooLarge {
            entry.continuation.resume(returning: .failure(.transport("the answer is larger than \(Self.maximumBody) bytes")))
            return
        }
        if let error {
            entry.continuation.resume(returning: .failure(Self.classify(error, timeout: entry.timeout)))
            return
        }
        guard let http = task.response as? HTTPURLResponse else {
            entry.continuation.resume(returning: .failure(.transport("not an HTTP response")))
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        entry.continuation.resume(returning: .success(HTTPAnswer(status: http.statusCode, headers: headers, body: entry.data)))
    }

    private static func classify(_ error: any Error, timeout: TimeInterval) -> TabClientError {
        guard let urlError = error as? URLError else { return .transport("\(error)") }
        switch urlError.code {
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut(seconds: timeout)
        default: return .transport(urlError.localizedDescription + " (URLError \(urlError.code.rawValue))")
        }
    }
}

extension URLSession {
    /// A session for a ``TabClient``'s exchanges: `configuration` with an ``ExchangeDelegate``.
    static func tabClient(_ configuration: URLSessionConfiguration) -> (URLSession, ExchangeDelegate) {
        let delegate = ExchangeDelegate()
        return (URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil), delegate)
    }

    /// Runs one request on a session made by ``tabClient(_:)``; cancelling the calling task cancels the URLSession
    /// task, which closes its connection. A redirect is refused (``ExchangeDelegate``) and is a fault.
    /// - Throws: ``TabClientError/cancelled``, ``TabClientError/timedOut(seconds:)``, ``TabClientError/transport(_:)``
    ///   (also for a body larger than ``ExchangeDelegate/maximumBody``), or ``TabClientError/unexpectedStatus(_:detail:retryAfter:)``
    ///   for a redirect.
    func exchange(_ request: URLRequest, delegate: ExchangeDelegate) async throws(TabClientError) -> HTTPAnswer {
        let running = Locked<URLSessionDataTask?>(nil)
        let result: Result<HTTPAnswer, TabClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = dataTask(with: request)
                delegate.register(task, timeout: request.timeoutInterval, continuation: continuation)
                running.withLock { $0 = task }
                task.resume()
                // The cancellation handler may have run before the task was stored.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            running.withLock { $0?.cancel() }
        }
        let answer = try result.get()
        if (300..<400).contains(answer.status), answer.status != 304 {
            throw .unexpectedStatus(answer.status, detail: Self.refusedRedirect(answer, from: request.url), retryAfter: answer.retryAfter)
        }
        return answer
    }

    /// The detail of a refused redirect: where it pointed (capped) and whether that is the request's origin.
    private static func refusedRedirect(_ answer: HTTPAnswer, from: URL?) -> String {
        guard let location = answer.header("Location") else { return "a redirect without a Location" }
        let origin: String
        if let from, let to = URL(string: location, relativeTo: from)?.absoluteURL {
            origin = sameOrigin(from, to) ? "the same origin" : "another origin"
        } else {
            origin = "no URL"
        }
        return "a redirect to \(Quoting.capped(location)) (\(origin)), not followed"
    }

    /// Whether two URLs have one origin: scheme, host and port (a default port spelled out or not).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ url: URL) -> Int? {
            url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
        }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && port(a) == port(b)
    }
}

extension Duration {
    /// Seconds as a `TimeInterval`.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
