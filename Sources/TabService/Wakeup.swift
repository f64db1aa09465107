import Synchronization

/// A background loop's sleep that ends at its deadline or at the first ``signal()``, whichever comes first, so that
/// a loop with nothing to do sleeps long instead of waking often to look for work: every wake of an idle loop is a
/// dispatch thread scheduled, which preempts a libmicrohttpd worker on a one-CPU host.
///
/// One waiter at a time. A signal with no waiter is kept, and the next ``wait(upTo:)`` returns at once: a signal is
/// never lost between a loop's look for work and its sleep.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        var timer: Task<Void, Never>?
        var lastID: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Ends the current wait, or the next one if none waits.
    func signal() {
        let (continuation, timer) = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return (CheckedContinuation<Void, Never>?.none, Task<Void, Never>?.none)
            }
            state.waiter = nil
            defer { state.timer = nil }
            return (waiter.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume()
    }

    /// Returns after `duration`, at a ``signal()``, or when the calling task is cancelled, whichever is first.
    func wait(upTo duration: Duration) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let id = state.withLock { state -> UInt64? in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return nil
                    }
                    state.lastID += 1
                    state.waiter = (state.lastID, continuation)
                    return state.lastID
                }
                guard let id else { return continuation.resume() }
                // The deadline: one sleeping task, cancelled (and so woken once, early) by a signal.
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: duration)
                    self?.expire(id)
                }
                state.withLock { state in
                    if state.waiter?.id == id { state.timer = timer } else { timer.cancel() }
                }
            }
        } onCancel: {
            signal()
        }
    }

    /// Ends wait `id` at its deadline, if it still waits.
    private func expire(_ id: UInt64) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            state.timer = nil
            return waiter.continuation
        }
        continuation?.resume()
    }
}
