// Internals shared by the agent's files; not part of its public surface.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace quarry::agent {

// The prompt file prompts/<name>.md with each {{key}} replaced by its value.
std::string Prompt(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace quarry::agent
