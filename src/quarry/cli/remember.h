// Offering a run's clarification replies for the glossary (agent/remember.h) on the terminal:
// `ask` and `chat` after a run, and `quarry remember` for a run already done.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "quarry/agent/remember.h"

namespace quarry::cli {

// Where a kept reply goes: the knowledge folder in use (`given`, else discovered beside the
// data or here), else ./.quarry (created on the first save).
std::filesystem::path GlossaryDir(const std::string& given, const std::vector<std::string>& data);

// Reads the user's y/N to a prompt; nullopt when no answer can be had (no terminal, end of input).
using AskLine = std::function<std::optional<std::string>(const std::string& prompt)>;

// Offers each of `offers` to be kept in dir/glossary.yaml: with `ask`, asks y/N for each and
// saves on yes; without, says on stderr the command that keeps them. Returns how many were saved.
int OfferGlossary(const std::vector<agent::GlossaryOffer>& offers, const std::filesystem::path& dir,
                  const AskLine& ask);

}  // namespace quarry::cli
