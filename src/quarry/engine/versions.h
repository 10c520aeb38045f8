// The engine libraries this binary runs on, for `quarry --version`.
#pragma once

#include <string>

namespace quarry::engine {

// "DuckDB v1.4.4, SQLite 3.40.1, libpq 15.14": asks each library; opens nothing.
std::string LibraryVersions();

}  // namespace quarry::engine
