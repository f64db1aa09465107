/// What one attempt to deliver got back.
public enum DeliveryAnswer: Sendable, Equatable {
    /// An HTTP status (a redirect is an answer like any other: it is not followed).
    case status(Int)
    /// No answer: refused address, DNS failure, connection error, TLS failure, or no answer within the deadline.
    case noAnswer(String)
}

/// What to do after an attempt: the outcome of `RetrySchedule.next(after:answer:)`.
public enum DeliveryStep: Sendable, Equatable {
    /// A 2xx: done.
    case delivered
    /// Try again this many seconds from now.
    case retry(afterSeconds: Int64)
    /// The last attempt failed: the delivery is failed.
    case failed
    /// `410 Gone`: the delivery is failed and the webhook is disabled (receivers say "stop" this way).
    case disableWebhook
}

/// The published retry schedule: attempt 1 is sent at once; after a failed attempt n (1…7) the next is sent 5 s,
/// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h later; after attempt 8 fails, the delivery is failed.
public enum RetrySchedule {
    /// The waits after attempts 1 to 7, in seconds.
    public static let delays: [Int64] = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600]

    /// The number of attempts before a delivery is failed.
    public static var attempts: Int { delays.count + 1 }

    /// How long an attempt may take before it counts as `noAnswer`.
    public static let attemptDeadlineSeconds: Int64 = 10

    /// What follows attempt number `attempt` (1 is the first) that got `answer`.
    public static func next(after attempt: Int, answer: DeliveryAnswer) -> DeliveryStep {
        if case .status(let status) = answer {
            if (200...299).contains(status) { return .delivered }
            if status == 410 { return .disableWebhook }
        }
        guard attempt >= 1, attempt <= delays.count else { return .failed }
        return .retry(afterSeconds: delays[attempt - 1])
    }
}
