// Opening test data for the agent's schema tests: a failure to open is the test's error, thrown
// so a fixture built once (a static) reports it where it is used.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "quarry/engine/engine.h"

namespace quarry::agent::testing {

inline std::unique_ptr<engine::Engine> OpenOrDie(const std::vector<std::filesystem::path>& paths) {
  auto engine = engine::Open(paths);
  if (!engine) throw std::runtime_error(engine.error().message);
  return std::move(*engine);
}

}  // namespace quarry::agent::testing
