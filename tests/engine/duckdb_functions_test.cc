// The functions of the pinned DuckDB that the text guard must know about. Each table function,
// and each other function whose name speaks of SQL, files, paths, settings or logs, is either
// refused by the guard or reviewed here as harmless. A DuckDB upgrade that brings a new one
// fails this test until someone decides which it is (issue 22: query() ran SQL from a string
// past the guard).
#include <gtest/gtest.h>

#include <duckdb.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "quarry/engine/engine.h"

namespace quarry::engine {
namespace {

// Reviewed: they read only DuckDB's own catalog and state, or compute from their arguments.
const std::set<std::string> kHarmlessTableFunctions = {"duckdb_approx_database_count",
                                                       "duckdb_columns",
                                                       "duckdb_connection_count",
                                                       "duckdb_constraints",
                                                       "duckdb_databases",
                                                       "duckdb_dependencies",
                                                       "duckdb_extensions",
                                                       "duckdb_external_file_cache",
                                                       "duckdb_functions",
                                                       "duckdb_indexes",
                                                       "duckdb_keywords",
                                                       "duckdb_log_contexts",
                                                       "duckdb_logs",
                                                       "duckdb_logs_parsed",
                                                       "duckdb_memory",
                                                       "duckdb_optimizers",
                                                       "duckdb_prepared_statements",
                                                       "duckdb_schemas",
                                                       "duckdb_secret_types",
                                                       "duckdb_secrets",
                                                       "duckdb_sequences",
                                                       "duckdb_settings",
                                                       "duckdb_table_sample",
                                                       "duckdb_tables",
                                                       "duckdb_temporary_files",
                                                       "duckdb_types",
                                                       "duckdb_variables",
                                                       "duckdb_views",
                                                       "generate_series",
                                                       "icu_calendar_names",
                                                       "json_each",
                                                       "json_tree",
                                                       "pg_timezone_names",
                                                       "pragma_collations",
                                                       "pragma_database_size",
                                                       "pragma_metadata_info",
                                                       "pragma_platform",
                                                       "pragma_show",
                                                       "pragma_storage_info",
                                                       "pragma_table_info",
                                                       "pragma_user_agent",
                                                       "pragma_version",
                                                       "range",
                                                       "repeat",
                                                       "repeat_row",
                                                       "seq_scan",
                                                       "summary",
                                                       "test_all_types",
                                                       "test_vector_types",
                                                       "unnest"};
const std::set<std::string> kHarmlessOtherFunctions = {"current_catalog",
                                                       "current_query",
                                                       "current_query_id",
                                                       "current_setting",
                                                       "getvariable",
                                                       "in_search_path",
                                                       "json_extract_path",
                                                       "json_extract_path_text",
                                                       "log",
                                                       "log10",
                                                       "log2",
                                                       "parse_dirname",
                                                       "parse_dirpath",
                                                       "parse_duckdb_log_message",
                                                       "parse_filename",
                                                       "parse_path",
                                                       "pg_conf_load_time",
                                                       "pg_is_other_temp_schema",
                                                       "pg_my_temp_schema",
                                                       "pg_ts_parser_is_visible",
                                                       "pg_ts_template_is_visible"};

std::vector<std::pair<std::string, std::string>> DuckDbFunctions() {
  duckdb_database db;
  duckdb_connection conn;
  EXPECT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  EXPECT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
  duckdb_result r;
  EXPECT_EQ(duckdb_query(conn,
                         "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
                         "WHERE function_type <> 'pragma' ORDER BY 1",
                         &r),
            DuckDBSuccess);
  std::vector<std::pair<std::string, std::string>> out;
  for (idx_t i = 0; i < duckdb_row_count(&r); ++i) {
    char* name = duckdb_value_varchar(&r, 0, i);
    char* type = duckdb_value_varchar(&r, 1, i);
    out.emplace_back(name, type);
    duckdb_free(name);
    duckdb_free(type);
  }
  duckdb_destroy_result(&r);
  duckdb_disconnect(&conn);
  duckdb_close(&db);
  return out;
}

TEST(DuckDbFunctionsTest, EveryFunctionThatCouldReachOutIsRefusedOrReviewed) {
  const auto functions = DuckDbFunctions();
  ASSERT_GT(functions.size(), 800u);
  const std::regex suspicious(
      ".*(sql|file|path|query|setting|secret|env|variable|extension|log|ptr|pointer|plan|parse|"
      "glob|read|write|exec|serial|load|install|attach|copy|import|export|checkpoint|enable|"
      "disable|sleep|system|shell|cwd|dir|temp|scan).*");
  int table_functions = 0, refused = 0;
  for (const auto& [name, type] : functions) {
    const bool table = type == "table" || type == "table_macro";
    table_functions += table;
    const std::set<std::string>& harmless =
        table ? kHarmlessTableFunctions : kHarmlessOtherFunctions;
    if (!table && !std::regex_match(name, suspicious)) continue;
    const std::string sql = table ? "SELECT * FROM " + name + "('x')" : "SELECT " + name + "('x')";
    const auto v = CheckQueryText(sql, Dialect::kDuckDB, {"t"});
    if (harmless.contains(name)) {
      EXPECT_FALSE(v.has_value()) << name << " is reviewed as harmless but refused: " << v->message;
      continue;
    }
    ++refused;
    EXPECT_TRUE(v.has_value() && v->failure_class == FailureClass::kGuardViolation)
        << "DuckDB's " << type << " function " << name << "() is neither refused by the guard "
        << "(guard.cc: kFileFunctions, kDuckDbFunctionRules) nor reviewed as harmless here";
  }
  EXPECT_GT(table_functions, 80);
  EXPECT_GE(refused, 35);  // the readers, query() and its kin, logging, checkpoints, arrow_scan
}

}  // namespace
}  // namespace quarry::engine
