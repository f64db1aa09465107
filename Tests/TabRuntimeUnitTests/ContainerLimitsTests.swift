import Foundation
import Testing

@testable import TabRuntime

/// `ContainerLimits` over cgroup trees laid out as the kernel lays them out, in a temporary directory.
struct ContainerLimitsTests {
    /// A temporary `/sys/fs/cgroup` and `/proc/self/cgroup`, removed at deinit.
    final class FakeHost {
        let root: URL
        var cgroupRoot: String { root.appendingPathComponent("sys/fs/cgroup").path }
        var procSelfCgroup: String { root.appendingPathComponent("proc-self-cgroup").path }

        init(procSelfCgroup: String, files: [String: String]) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("container-limits-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try procSelfCgroup.write(toFile: self.procSelfCgroup, atomically: true, encoding: .utf8)
            for (path, text) in files {
                let url = root.appendingPathComponent("sys/fs/cgroup").appendingPathComponent(path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try text.write(to: url, atomically: true, encoding: .utf8)
            }
        }

        func limits() -> ContainerLimits { ContainerLimits.read(cgroupRoot: cgroupRoot, procSelfCgroup: procSelfCgroup) }

        deinit { try? FileManager.default.removeItem(at: root) }
    }

    @Test func cgroupV2QuotaAndMemoryMaxGiveThreadsAndACacheOfAQuarter() throws {
        // A container with its own cgroup namespace: its cgroup is the mount's root.
        let host = try FakeHost(
            procSelfCgroup: "0::/\n",
            files: ["cgroup.controllers": "cpu memory\n", "cpu.max": "150000 100000\n", "memory.max": "1073741824\n"])
        let limits = host.limits()
        #expect(limits.cpus == 1.5)
        #expect(limits.memoryBytes == 1 << 30)
        #expect(limits.workerThreads(cores: 8) == 2)
        #expect(limits.cacheLimitMiB() == 256)
        #expect(limits.description.hasPrefix("1.5 CPUs, 1024 MiB (from "))
    }

    @Test func cgroupV2MaxMeansNoLimit() throws {
        let host = try FakeHost(
            procSelfCgroup: "0::/\n", files: ["cgroup.controllers": "cpu memory\n", "cpu.max": "max 100000\n", "memory.max": "max\n"])
        let limits = host.limits()
        #expect(limits.cpus == nil)
        #expect(limits.memoryBytes == nil)
        #expect(limits.workerThreads(cores: 6) == 6)
        #expect(limits.cacheLimitMiB() == ContainerLimits.defaultCacheLimitMiB)
        #expect(limits.description == "no cgroup limits")
    }

    @Test func cgroupV2TakesTheSmallestLimitOfTheProcessCgroupAndItsAncestors() throws {
        // No cgroup namespace: the process's path is the full one; the pod's limits sit on the parent directory.
        let host = try FakeHost(
            procSelfCgroup: "0::/kubepods/pod1/ctr\n",
            files: [
                "cgroup.controllers": "cpu memory\n",
                "kubepods/pod1/cpu.max": "300000 100000\n", "kubepods/pod1/memory.max": "536870912\n",
                "kubepods/pod1/ctr/cpu.max": "400000 100000\n", "kubepods/pod1/ctr/memory.max": "max\n",
            ])
        let limits = host.limits()
        #expect(limits.cpus == 3)
        #expect(limits.memoryBytes == 512 << 20)
        #expect(limits.workerThreads(cores: 16) == 3)
        #expect(limits.workerThreads(cores: 2) == 2)
        #expect(limits.cacheLimitMiB() == 128)
    }

    @Test func cgroupV1QuotaAndLimitInBytesOnAHybridHost() throws {
        // systemd's hybrid layout: an empty v2 hierarchy under unified/, the controllers on v1.
        let host = try FakeHost(
            procSelfCgroup: "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n",
            files: [
                "unified/cgroup.controllers": "\n",
                "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "250000\n", "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
                "memory/docker/abc/memory.limit_in_bytes": "268435456\n",
            ])
        let limits = host.limits()
        #expect(limits.cpus == 2.5)
        #expect(limits.memoryBytes == 256 << 20)
        #expect(limits.workerThreads(cores: 8) == 3)
        #expect(limits.cacheLimitMiB() == 64)
    }

    @Test func cgroupV1UnlimitedValuesAreNoLimit() throws {
        // What this machine's kernel writes for "no limit": a quota of -1, and 2^63 rounded down to a page.
        let host = try FakeHost(
            procSelfCgroup: "4:memory:/\n1:cpu:/\n",
            files: [
                "cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n",
                "memory/memory.limit_in_bytes": "9223372036854771712\n",
            ])
        let limits = host.limits()
        #expect(limits.cpus == nil)
        #expect(limits.memoryBytes == nil)
    }

    @Test func aContainerPathMissingUnderTheMountFallsBackToTheMountRoot() throws {
        // Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names /docker/abc, but the mount
        // shows only the container's own cgroup, at the root.
        let host = try FakeHost(
            procSelfCgroup: "4:memory:/docker/abc\n1:cpu:/docker/abc\n",
            files: [
                "cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n",
                "memory/memory.limit_in_bytes": "2097152\n",
            ])
        let limits = host.limits()
        #expect(limits.cpus == 0.5)
        #expect(limits.workerThreads(cores: 4) == 1)
        #expect(limits.cacheLimitMiB() == 1)
    }

    @Test func noCgroupFilesMeanNoLimits() throws {
        let host = try FakeHost(procSelfCgroup: "", files: [:])
        #expect(host.limits() == ContainerLimits())
    }

    @Test func aLargeMemoryLimitKeepsTheDefaultCacheLimit() {
        #expect(ContainerLimits(cpus: nil, memoryBytes: 64 << 30).cacheLimitMiB() == 512)
        #expect(ContainerLimits.parseCPUMax("garbage") == nil)
        #expect(ContainerLimits.parseMemoryLimit("12ab") == nil)
    }

    /// The CPUs the process may use: the affinity mask and the cgroup quota (rounded up), the smaller, within the
    /// online CPUs, never 0.
    @Test(
        arguments: [
            // (affinity, quota, online) -> usable
            (nil, nil, 8, 8),
            (1, nil, 2, 1),  // taskset -c 1 on a 2-core machine
            (2, nil, 2, 2),
            (nil, 1.5, 8, 2),
            (4, 1.5, 8, 2),  // the quota is the smaller
            (1, 4.0, 8, 1),  // the mask is the smaller
            (3, 3.0, 8, 3),  // equal
            (nil, 0.1, 4, 1),  // a tiny quota still runs one
            (16, nil, 4, 4),  // a mask naming offline CPUs
            (nil, 64.0, 2, 2),
            (nil, nil, 0, 1),  // sysconf said nothing sensible
        ] as [(Int?, Double?, Int, Int)])
    func usableCPUsIsTheSmallerOfMaskAndQuota(affinity: Int?, quota: Double?, online: Int, usable: Int) {
        let limits = ContainerLimits(cpus: quota, memoryBytes: nil, affinityCPUs: affinity)
        #expect(limits.usableCPUs(cores: online) == usable)
        #expect(limits.workerThreads(cores: online) == usable)
    }

    @Test func usableCPUsReasonNamesTheLimitThatChose() {
        #expect(ContainerLimits(affinityCPUs: 1).usableCPUsReason(cores: 2) == "the affinity mask (1 of 2 CPUs)")
        #expect(ContainerLimits(cpus: 1.5, affinityCPUs: 4).usableCPUsReason(cores: 8) == "the cgroup quota (1.5 CPUs)")
        #expect(ContainerLimits(affinityCPUs: 2).usableCPUsReason(cores: 2) == "the online CPUs (2)")
    }

    @Test(
        arguments: [
            ("Name:\ttabserver\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n", 1),
            ("Cpus_allowed_list:\t0-1\n", 2),
            ("Cpus_allowed_list:\t0-3,6,8-9\nMems_allowed_list:\t0\n", 7),
            ("Cpus_allowed_list:\t\n", nil),
            ("Cpus_allowed_list:\t3-1\n", nil),
            ("Cpus_allowed_list:\tx\n", nil),
            ("Name:\ttabserver\n", nil),
        ] as [(String, Int?)])
    func allowedCPUsAreReadFromTheStatusFile(status: String, count: Int?) {
        #expect(ContainerLimits.parseAllowedCPUs(status: status) == count)
    }

    @Test func theAffinityMaskIsReadBesideTheCgroupQuota() throws {
        let host = try FakeHost(
            procSelfCgroup: "0::/\n", files: ["cgroup.controllers": "cpu memory\n", "cpu.max": "300000 100000\n"])
        let status = host.root.appendingPathComponent("proc-self-status").path
        try "Name:\ttabserver\nCpus_allowed_list:\t1\n".write(toFile: status, atomically: true, encoding: .utf8)
        let limits = ContainerLimits.read(cgroupRoot: host.cgroupRoot, procSelfCgroup: host.procSelfCgroup, procSelfStatus: status)
        #expect(limits.cpus == 3 && limits.affinityCPUs == 1)
        #expect(limits.workerThreads(cores: 4) == 1)
    }

    @Test func membershipSplitsV1ControllersAndFindsTheUnifiedPath() {
        let membership = CgroupMembership(text: "5:cpu,cpuacct:/a\n3:name=systemd:/b\n0::/c\n")
        #expect(membership.unifiedPath == "/c")
        #expect(membership.v1Paths["cpu"] == "/a")
        #expect(membership.v1Paths["cpuacct"] == "/a")
    }
}
