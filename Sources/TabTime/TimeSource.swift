#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one clock of the server, injected into what reads the time: the wall clock (what times are written and
/// compared as: versions, tokens, rollouts, audit entries) and the monotonic clock (what durations and deadlines are
/// measured with, unaffected by the wall clock being set). ``system`` reads the machine's; tests pass their own
/// (``fixed(_:)``, or one they move).
public struct TimeSource: Sendable {
    /// The wall-clock instant now.
    public let wall: @Sendable () -> Timestamp
    /// Nanoseconds since an arbitrary fixed start (the machine's boot), never going back.
    public let monotonic: @Sendable () -> UInt64

    /// A clock reading `wall` and `monotonic`.
    public init(wall: @escaping @Sendable () -> Timestamp, monotonic: @escaping @Sendable () -> UInt64) {
        self.wall = wall
        self.monotonic = monotonic
    }

    /// The machine's clocks: `CLOCK_REALTIME` and `CLOCK_MONOTONIC`.
    public static let system = TimeSource(wall: { systemWall() }, monotonic: { systemMonotonic() })

    /// A clock that stays at `instant` (its monotonic reading stays at the instant's nanoseconds since 1970).
    public static func fixed(_ instant: Timestamp) -> TimeSource {
        let nanoseconds = UInt64(max(0, instant.unixMillis)) &* 1_000_000
        return TimeSource(wall: { instant }, monotonic: { nanoseconds })
    }

    /// The wall-clock instant now (``wall``).
    public var now: Timestamp { wall() }

    /// Milliseconds since 1970-01-01 UTC by the wall clock.
    public var unixMillis: Int64 { wall().unixMillis }

    /// Whole seconds since 1970-01-01 UTC by the wall clock.
    public var unixSeconds: Int64 { wall().unixSeconds }

    /// The monotonic clock in nanoseconds (``monotonic``).
    public var nanoseconds: UInt64 { monotonic() }

    /// The monotonic clock in seconds.
    public var seconds: Double { Double(monotonic()) / 1e9 }

    /// `CLOCK_REALTIME` in milliseconds.
    private static func systemWall() -> Timestamp {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Timestamp(unixMillis: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000)
    }

    /// `CLOCK_MONOTONIC` in nanoseconds.
    private static func systemMonotonic() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
