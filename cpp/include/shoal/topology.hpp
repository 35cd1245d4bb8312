// shoal/topology.hpp — the CPUs this process may use and the physical cores behind them.
//
// The one place that counts cores: the pool sizes its spin tokens from allowed_cpus(), and
// Python's default thread/worker counts ask physical_core_count() through _native.physical_cores().
// Both follow what the OS allows this process (affinity masks, cgroup cpusets), not the machine's
// total; how each OS is asked is in shoal/platform/cpus.hpp. A cgroup CPU quota (Docker --cpus) is
// read in Python (shoal/cpus.py): its defaults cap these counts by it, and a Vector's owner passes it
// as VectorOptions::cpu_limit, which caps the pool's spin tokens.
#pragma once

#include "shoal/platform/cpus.hpp"

namespace shoal {

using platform::allowed_cpus;
using platform::physical_core_count;

}  // namespace shoal
