// Internals shared by the trace module's files; not part of its public surface.
#pragma once

#include <ctime>
#include <string>

#include "quarry/trace/trace.h"

namespace quarry::trace {

// PruneWorkdirs on the runs directory open as `runs_fd`, sparing the run named `current` (the
// one being created) whatever its age (retention.cc). Returns how many workdirs were pruned.
int PruneWorkdirsAt(int runs_fd, const Retention& keep, std::time_t now,
                    const std::string& current);

}  // namespace quarry::trace
