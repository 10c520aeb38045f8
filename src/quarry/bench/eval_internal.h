// Shared by the Spider and BIRD loaders (eval_spider.cc, eval_bird.cc): reading the question
// file, required fields, and finding each question's database. Not part of eval.h.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "quarry/bench/eval.h"

namespace quarry::bench::eval_internal {

// `path` as a JSON array. Errors (kData): missing, unreadable, not JSON, not an array; the
// message names the file and says what the layout should be (`layout`).
Result<nlohmann::ordered_json> ReadQuestionFile(const std::filesystem::path& path,
                                                const std::string& layout);

// entry[key] as a string. Errors (kData): "FILE: entry N has no string field 'key'".
Result<std::string> StringField(const nlohmann::ordered_json& entry, const char* key,
                                const std::filesystem::path& file, size_t index);

// Fills db_path and suite_paths of every question from `databases`/<db_id>/<db_id>.sqlite; a
// question whose file is absent gets db_missing (db_path the expected file, no suite_paths).
// Errors (kData): the folder missing, or a db_id that is not a folder name.
Result<void> FindDatabases(const std::filesystem::path& databases, const std::string& layout,
                           std::vector<EvalQuestion>& questions);

// Errors (kUsage) unless `dir` is a directory.
Result<void> CheckDir(const std::filesystem::path& dir, std::string_view benchmark);

}  // namespace quarry::bench::eval_internal
