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
    /// The files the limits were read from, for the start-up log line.
    public var sources: [String] = []

    /// The default cache limit when no memory limit is known, in MiB.
    public static let defaultCacheLimitMiB = 512

    /// The limits of the running process, from `/sys/fs/cgroup` and `/proc/self/cgroup`.
    public static func current() -> ContainerLimits {
        read(cgroupRoot: "/sys/fs/cgroup", procSelfCgroup: "/proc/self/cgroup")
    }

    /// Reads the limits under a cgroup mount laid out as Linux mounts it.
    /// - Parameters:
    ///   - cgroupRoot: where the cgroup file systems are mounted (`/sys/fs/cgroup`): cgroup v2 there or under
    ///     `unified/` (hybrid), v1 controllers under `cpu/`, `cpu,cpuacct/` and `memory/`.
    ///   - procSelfCgroup: the process's membership file (`/proc/self/cgroup`), `id:controllers:path` lines.
    public static func read(cgroupRoot: String, procSelfCgroup: String) -> ContainerLimits {
        let membership = CgroupMembership(text: readSmallFile(procSelfCgroup) ?? "")
        var limits = ContainerLimits()

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

    /// libmicrohttpd worker threads: the CPU limit rounded up, at most `cores`, and never fewer than 2 (a pool of
    /// one thread stops reading ready connections under load, docs/operations.md). Without a limit, `cores`.
    public func workerThreads(cores: Int) -> Int {
        guard let cpus else { return max(2, cores) }
        return max(2, min(cores, Int(cpus.rounded(.up))))
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
        guard cpus != nil || memoryBytes != nil else { return "no cgroup limits" }
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
