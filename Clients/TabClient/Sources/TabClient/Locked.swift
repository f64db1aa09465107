import Foundation

/// A value behind a lock (`Mutex` needs iOS 18 / macOS 15; this library promises iOS 16 / macOS 13).
final class Locked<Value>: @unchecked Sendable {
    // Safety: every access to `value` goes through `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
