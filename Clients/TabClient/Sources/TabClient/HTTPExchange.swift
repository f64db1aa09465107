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

    /// The `detail` (else `title`) of a problem+json body.
    var problemDetail: String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        return (object["detail"] as? String) ?? (object["title"] as? String)
    }
}

extension URLSession {
    /// Runs one request; cancelling the calling task cancels the URLSession task, which closes its connection.
    /// - Throws: ``TabClientError/cancelled``, ``TabClientError/timedOut(seconds:)`` or
    ///   ``TabClientError/transport(_:)``.
    func exchange(_ request: URLRequest) async throws(TabClientError) -> HTTPAnswer {
        let running = Locked<URLSessionDataTask?>(nil)
        let result: Result<HTTPAnswer, TabClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(returning: .failure(Self.classify(error, timeout: request.timeoutInterval)))
                        return
                    }
                    guard let http = response as? HTTPURLResponse else {
                        continuation.resume(returning: .failure(.transport("not an HTTP response")))
                        return
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name] = value }
                    }
                    continuation.resume(returning: .success(HTTPAnswer(status: http.statusCode, headers: headers, body: data ?? Data())))
                }
                running.withLock { $0 = task }
                task.resume()
                // The cancellation handler may have run before the task was stored.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            running.withLock { $0?.cancel() }
        }
        return try result.get()
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

extension Duration {
    /// Seconds as a `TimeInterval`.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
