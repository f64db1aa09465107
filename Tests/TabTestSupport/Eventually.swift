/// Waits up to `seconds` for `condition`, checking it every 5 ms; whether it came to hold.
public func eventually(seconds: Double = 3, _ condition: () -> Bool) async throws -> Bool {
    let deadline = now() + seconds
    while !condition() {
        if now() > deadline { return false }
        try await Task.sleep(for: .milliseconds(5))
    }
    return true
}
