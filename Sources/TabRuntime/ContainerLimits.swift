import Foundation

/// The CPU and memory limits of the control group this process runs in, read from cgroup v2 (`cpu.max`,
/// `memory.max`) or v1 (`cpu.cfs_quota_us` / `cpu.cfs_period_us`, `memory.limit_in_bytes`), so that `serve`
/// sizes its defaults from a container's limits rather than from the node's cores and memory.
///
/// A limit is the smallest one found on the process's own cgroup and on each of its ancestors that exists under
/// the mount (inside a container with its own cgroup namespace that is the mount's root). Missing or unreadable
/// files mean "no limit known": reading never fails, and `sources` says where each limit came from.
public struct ContainerLimits: Equatable, Sendable {
    /// CPUs the cgroup may use (quota ÷ period, 1.5 for `150000 100000`); nil when unlimited or unknown.
    public var cpus: Double?
    /// Bytes of memory the cgroup may use; nil when unlimited or unknown.
    public var memoryBytes: Int?
    /// CPUs in the process's affinity mask (`taskset`, `docker --cpuset-cpus`, a pinned systemd unit): the mask
    /// `sched_getaffinity` returns, read from `Cpus_allowed_list` in `/proc/self/status`; nil when unknown.
    public var affinityCPUs: Int?
    /// The cgroup files the limits were read from, for the start-up log line.
    public var sources: [String] = []

    /// The default cache limit when no memory limit is known, in MiB.
    public static let defaultCacheLimitMiB = 512

    /// The limits of the running process, from `/sys/fs/cgroup` and `/proc/self/cgroup`.
    public static func current() -> ContainerLimits {
        read(cgroupRoot: "/sys/fs/cgroup", procSelfCgroup: "/proc/self/cgroup", procSelfStatus: "/proc/self/status")
    }

    /// Reads the limits under a cgroup mount laid out as Linux mounts it.
    /// - Parameters:
    ///   - cgroupRoot: where the cgroup file systems are mounted (`/sys/fs/cgroup`): cgroup v2 there or under
    ///     `unified/` (hybrid), v1 controllers under `cpu/`, `cpu,cpuacct/` and `memory/`.
    ///   - procSelfCgroup: the process's membership file (`/proc/self/cgroup`), `id:controllers:path` lines.
    ///   - procSelfStatus: the process's status file (`/proc/self/status`), whose `Cpus_allowed_list` is the
    ///     affinity mask; nil or missing: no mask known.
    public static func read(cgroupRoot: String, procSelfCgroup: String, procSelfStatus: String? = nil) -> ContainerLimits {
        let membership = CgroupMembership(text: readSmallFile(procSelfCgroup) ?? "")
        var limits = ContainerLimits()
        if let procSelfStatus, let status = readSmallFile(procSelfStatus) {
            limits.affinityCPUs = parseAllowedCPUs(status: status)
        }

        for v2Root in [cgroupRoot, cgroupRoot + "/unified"] where FileManager.default.fileExists(atPath: v2Root + "/cgroup.controllers") {
            for directory in directories(from: membership.unifiedPath ?? "/", under: v2Root) {
                if let text = readSmallFile(directory + "/cpu.max"), let cpus = parseCPUMax(text) {
                    limits.lower(cpus: cpus, source: directory + "/cpu.max")
                }
                if let text = readSmallFile(directory + "/memory.max"), let bytes = parseMemoryLimit(text) {
                    limits.lower(memoryBytes: bytes, source: directory + "/memory.max")
                }
            }
        }

        for mount in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
            let v1Root = cgroupRoot + "/" + mount
            for directory in directories(from: membership.v1Paths["cpu"] ?? "/", under: v1Root) {
                if let quota = readSmallFile(directory + "/cpu.cfs_quota_us"), let period = readSmallFile(directory + "/cpu.cfs_period_us"),
                    let cpus = parseCFS(quota: quota, period: period)
                {
                    limits.lower(cpus: cpus, source: directory + "/cpu.cfs_quota_us")
                }
            }
        }
        for directory in directories(from: membership.v1Paths["memory"] ?? "/", under: cgroupRoot + "/memory") {
            if let text = readSmallFile(directory + "/memory.limit_in_bytes"), let bytes = parseMemoryLimit(text) {
                limits.lower(memoryBytes: bytes, source: directory + "/memory.limit_in_bytes")
            }
        }
        return limits
    }

    /// libmicrohttpd worker threads: the CPUs this process may use (``usableCPUs(cores:)``).
    public func workerThreads(cores: Int) -> Int { usableCPUs(cores: cores) }

    /// The CPUs this process may run on at once: the affinity mask's CPUs and the cgroup quota rounded up, the
    /// smaller, at most `cores` (the online processors) and at least 1 (the rule of Go's `GOMAXPROCS` and of the
    /// JVM's `activeProcessorCount` in a container). A thread beyond it only waits for a CPU another one of ours
    /// holds, and preempts it when it gets one.
    public func usableCPUs(cores: Int) -> Int {
        var usable = max(1, cores)
        if let affinityCPUs { usable = min(usable, affinityCPUs) }
        if let cpus { usable = min(usable, Int(cpus.rounded(.up))) }
        return max(1, usable)
    }

    /// Which limit chose ``usableCPUs(cores:)``, for the start-up log line: "the affinity mask (1 of 2 CPUs)",
    /// "the cgroup quota (1.5 CPUs)" or "the online CPUs".
    public func usableCPUsReason(cores: Int) -> String {
        let usable = usableCPUs(cores: cores)
        if let cpus, Int(cpus.rounded(.up)) == usable, usable < cores, (affinityCPUs ?? Int.max) >= usable {
            return "the cgroup quota (\((cpus * 100).rounded() / 100) CPUs)"
        }
        if let affinityCPUs, affinityCPUs == usable, usable < cores { return "the affinity mask (\(affinityCPUs) of \(cores) CPUs)" }
        return "the online CPUs (\(cores))"
    }

    /// The compiled-variant cache limit in MiB: a quarter of the memory limit (the rest is the snapshot, the
    /// connections' buffers and the store), at most ``defaultCacheLimitMiB`` and at least 1.
    public func cacheLimitMiB() -> Int {
        guard let memoryBytes else { return Self.defaultCacheLimitMiB }
        return max(1, min(Self.defaultCacheLimitMiB, (memoryBytes / 4) >> 20))
    }

    private mutating func lower(cpus newValue: Double, source: String) {
        guard cpus.map({ newValue < $0 }) ?? true else { return }
        cpus = newValue
        sources.append(source)
    }

    private mutating func lower(memoryBytes newValue: Int, source: String) {
        guard memoryBytes.map({ newValue < $0 }) ?? true else { return }
        memoryBytes = newValue
        sources.append(source)
    }

    /// The CPUs of `Cpus_allowed_list:` in a `/proc/PID/status` text (`0-3,6,8-9` is 7); nil when the line is
    /// missing or not a list of CPUs and ranges.
    static func parseAllowedCPUs(status: String) -> Int? {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return nil }
        let list = line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
        guard !list.isEmpty else { return nil }
        var count = 0
        for item in list.split(separator: ",") {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count <= 2, let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]), low >= 0, high >= low else {
                return nil
            }
            count += high - low + 1
        }
        return count > 0 ? count : nil
    }

    /// `cpu.max`: `QUOTA PERIOD` in microseconds, or `max PERIOD` (unlimited).
    static func parseCPUMax(_ text: String) -> Double? {
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let quota = Double(fields[0]), let period = Double(fields[1]), quota > 0, period > 0 else { return nil }
        return quota / period
    }

    /// `cpu.cfs_quota_us` (`-1` is unlimited) over `cpu.cfs_period_us`.
    static func parseCFS(quota: String, period: String) -> Double? {
        guard let quota = Double(quota.trimmingCharacters(in: .whitespacesAndNewlines)),
            let period = Double(period.trimmingCharacters(in: .whitespacesAndNewlines)), quota > 0, period > 0
        else { return nil }
        return quota / period
    }

    /// `memory.max` (`max` is unlimited) or `memory.limit_in_bytes` (v1 writes "unlimited" as a number near
    /// 2⁶³, rounded down to a page: anything from 2⁶⁰ up counts as unlimited).
    static func parseMemoryLimit(_ text: String) -> Int? {
        guard let bytes = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes > 0, bytes < 1 << 60 else { return nil }
        return bytes
    }

    /// The process's cgroup directory under `root` and each of its ancestors up to `root`, those that exist.
    private static func directories(from path: String, under root: String) -> [String] {
        guard FileManager.default.fileExists(atPath: root) else { return [] }
        var components = path.split(separator: "/").map(String.init)
        var result: [String] = []
        while true {
            let directory = ([root] + components).joined(separator: "/")
            if FileManager.default.fileExists(atPath: directory) { result.append(directory) }
            if components.isEmpty { return result }
            components.removeLast()
        }
    }

    /// A pseudo-file's text (cgroup and proc files are a few bytes; their reported size is 0, so read to the end).
    private static func readSmallFile(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 64 * 1024) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

extension ContainerLimits: CustomStringConvertible {
    /// "2 CPUs, 1024 MiB (from …)" or "no cgroup limits".
    public var description: String {
        guard cpus != nil || memoryBytes != nil else {
            return affinityCPUs.map { "no cgroup limits, \($0) CPUs in the affinity mask" } ?? "no cgroup limits"
        }
        let cpuText = cpus.map { "\(($0 * 100).rounded() / 100) CPUs" } ?? "no CPU limit"
        let memoryText = memoryBytes.map { "\($0 >> 20) MiB" } ?? "no memory limit"
        return "\(cpuText), \(memoryText) (from \(sources.joined(separator: ", ")))"
    }
}

/// `/proc/self/cgroup`: the v2 path (the `0::PATH` line) and each v1 controller's path.
struct CgroupMembership: Equatable, Sendable {
    /// The cgroup v2 path, when the process is in the unified hierarchy.
    var unifiedPath: String?
    /// v1 controller name (`cpu`, `memory`, …) to its path.
    var v1Paths: [String: String] = [:]

    init(text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let path = String(fields[2])
            if fields[0] == "0" && fields[1].isEmpty {
                unifiedPath = path
            } else {
                for controller in fields[1].split(separator: ",") { v1Paths[String(controller)] = path }
            }
        }
    }
}
