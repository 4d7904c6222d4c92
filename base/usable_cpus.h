// File: usable_cpus.h
//
// How many CPUs this process can keep busy: the CPUs its affinity mask allows
// (taskset, a container's cpuset), capped by the CPU bandwidth limit of its
// cgroup or of any cgroup above it (a container's CPU limit: cgroup v2
// `cpu.max`, or v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`), rounded up,
// and at least 1. std::thread::hardware_concurrency() counts every CPU of the
// machine instead: in a container limited to 2 CPUs on a 64-core node, one
// planning thread per "core" would be 64 threads taking turns on 2 CPUs, and
// every call would wait for all of them.
//
// Example:
//   const int threads = UsableCpus();  // the server's default planning threads
#ifndef SLACKSWAP_BASE_USABLE_CPUS_H_
#define SLACKSWAP_BASE_USABLE_CPUS_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace slackswap {

// For this process: its affinity mask, /proc/self/cgroup and the cgroup file
// systems under /sys/fs/cgroup. Reads a few small files; call it once.
int UsableCpus();

// The same from given inputs (for tests): `affinity_cpus` CPUs allowed,
// `proc_self_cgroup` the text of /proc/self/cgroup, and the cgroup file
// systems under `cgroup_root`: cgroup v2 mounted there (it holds
// `cgroup.controllers`), or v1 controllers in folders named as in
// /proc/self/cgroup ("cpu,cpuacct"). Files that are missing or unreadable
// set no limit. A container sees its own cgroup at the root of the mount
// while /proc/self/cgroup may name a longer path, so the walk reads every
// folder from the named one up to the root that exists.
int UsableCpus(int affinity_cpus, absl::string_view proc_self_cgroup,
               const std::string& cgroup_root);

// The limit, in CPUs, that the text of a cgroup v2 `cpu.max` file sets
// ("200000 100000": 2; "max 100000": none). nullopt for none, or for text
// that is not a quota and a period.
std::optional<double> CpuMaxLimit(absl::string_view cpu_max);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_USABLE_CPUS_H_
