import TabDelivery
import Testing

/// The error `body` throws, or nil when it returns (an error of another type fails the test).
func failure<T>(_ body: () throws -> T) -> RolloutError? {
    do {
        _ = try body()
        return nil
    } catch let error as RolloutError {
        return error
    } catch {
        Issue.record("expected a RolloutError, got \(error)")
        return nil
    }
}

/// The JSON Pointers of a 422's problems (empty for any other outcome).
func pointers(_ error: RolloutError?) -> [String] {
    guard case .invalidBody(let problems) = error else { return [] }
    return problems.map(\.pointer)
}

/// The messages of a 422's problems, joined.
func messages(_ error: RolloutError?) -> String {
    guard case .invalidBody(let problems) = error else { return "" }
    return problems.map(\.message).joined(separator: " | ")
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A time written in RFC 3339 (tests only use valid ones).
func time(_ text: String) -> Timestamp { Timestamp.parseRFC3339(text)! }

func percent(_ value: Double) -> Percent { Percent(value)! }

func install(_ text: String) -> InstallID { try! InstallID(text) }
