import Foundation

/// The layouts a ``TabClient`` receives by long-polling, each different from the one before (see
/// ``TabClient/updates()``), and in manifest mode the prefetched candidate at its step's time (``TabClient/nextSwitch``:
/// the poll or backoff in progress then gives way). It ends only when the iterating task is cancelled.
public struct LayoutUpdates: AsyncSequence, Sendable {
    public typealias Element = CompiledLayout
    let client: TabClient

    public func makeAsyncIterator() -> Iterator { Iterator(client: client, last: client.current) }

    /// Long-polls until the layout changes; backs off on failures.
    public struct Iterator: AsyncIteratorProtocol {
        let client: TabClient
        /// The layout handed out last (at first, the one current when iteration began).
        var last: CompiledLayout
        /// Failures (and answers that came back too soon) in a row: the backoff's exponent.
        var failures = 0

        /// The next layout different from the last one; nil once the task is cancelled.
        public mutating func next() async -> CompiledLayout? {
            let configuration = client.configuration
            let wait = configuration.longPollWait
            // An answer sooner than this was not held.
            let tooSoon = Swift.min(wait / 2, .seconds(1))
            while !Task.isCancelled {
                // Manifest mode: a prefetched candidate whose step's time has come, with no request (offline too).
                client.switchIfDue()
                if client.current != last {
                    failures = 0
                    last = client.current
                    return last
                }
                let sent = client.progress
                let started = ContinuousClock.now
                var delay: Duration?
                // The poll (and the backoff after it) gives way when the device's clock reaches the next switch.
                guard let result = await client.untilSwitch({ [client] in await client.fetchResult(wait: wait) }) else { continue }
                // Queued reports go with the poll, at most once a minute.
                await client.flushReports()
                do {
                    let outcome = try result.get()
                    if case .updated(let layout) = outcome, layout != last {
                        failures = 0
                        last = layout
                        return layout
                    }
                    // A layout published by a concurrent refresh() is news too.
                    let current = client.current
                    if current != last {
                        failures = 0
                        last = current
                        return current
                    }
                    // Nothing new, the ETag unchanged, and sooner than a held poll ends: the server did not hold it
                    // (no long-poll, stopping, or ignoring If-None-Match). Back off rather than ask again at once.
                    if ContinuousClock.now - started < tooSoon && client.progress == sent {
                        failures += 1
                        delay = backoff()
                    } else {
                        failures = 0
                    }
                } catch .cancelled {
                    return nil
                } catch {
                    failures += 1
                    let wanted = backoff()
                    let pause = Swift.max(wanted, error.retryAfter ?? .zero)
                    configuration.onEvent?(.failed(error, retryIn: pause, kept: client.reference))
                    delay = pause
                }
                if let delay {
                    let slept = await client.untilSwitch { (try? await Task.sleep(for: delay)) != nil }
                    if slept == false || Task.isCancelled { return nil }
                }
            }
            return nil
        }

        /// `initialBackoff · 2^(failures−1)`, at most `maximumBackoff`, less a random part of up to half.
        func backoff() -> Duration {
            let configuration = client.configuration
            let exponent = Swift.min(Swift.max(failures - 1, 0), 30)
            let full = Swift.min(configuration.initialBackoff * (1 << exponent), configuration.maximumBackoff)
            return full - full * Double.random(in: 0...0.5)
        }
    }
}
