// `quarry knowledge import dbt` through the quarry binary: a dry run prints the files and writes
// nothing; off a terminal nothing is written without --yes; --yes writes them, says what was
// written and what was skipped, and `quarry knowledge check` passes on them against matching
// CSVs; a second import replaces nothing; a file that is no manifest is an error naming it.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace quarry {
namespace {

using quarry::testing::QuarryBinary;
using quarry::testing::RunProcess;
using quarry::testing::TempDir;

// A dbt 1.9 manifest cut to one model with a tested column, a source, a join and two metrics.
constexpr const char* kManifest = R"json({
  "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
  "nodes": {
    "model.shop.orders": {
      "resource_type": "model", "name": "orders", "alias": "orders",
      "config": {"materialized": "table"}, "description": "One row per order.",
      "columns": {
        "amount": {"name": "amount", "description": "Order value in USD.", "meta": {}},
        "status": {"name": "status", "description": "Where the order stands.", "meta": {}}
      }
    },
    "test.shop.accepted_values_orders_status.1": {
      "resource_type": "test", "name": "accepted_values_orders_status",
      "attached_node": "model.shop.orders", "config": {"where": null},
      "test_metadata": {"name": "accepted_values", "namespace": null,
                        "kwargs": {"column_name": "status", "values": ["paid", "refunded"]}}
    },
    "test.shop.relationships_orders_customer_id.2": {
      "resource_type": "test", "name": "relationships_orders_customer_id",
      "attached_node": "model.shop.orders", "config": {"where": null},
      "test_metadata": {"name": "relationships", "namespace": null,
                        "kwargs": {"column_name": "customer_id",
                                   "to": "source('crm', 'customers')", "field": "id"}}
    }
  },
  "sources": {
    "source.shop.crm.customers": {
      "resource_type": "source", "name": "customers", "source_name": "crm",
      "identifier": "customers", "description": "Customers from the CRM.",
      "columns": {"email": {"name": "email", "description": "", "meta": {"pii": true}}}
    }
  },
  "semantic_models": {
    "semantic_model.shop.orders": {
      "name": "orders", "model": "ref('orders')", "node_relation": {"alias": "orders"},
      "defaults": {"agg_time_dimension": "ordered_at"},
      "entities": [{"name": "order_id", "type": "primary"}],
      "dimensions": [{"name": "ordered_at", "type": "time", "expr": null}],
      "measures": [{"name": "order_total", "agg": "sum", "expr": "amount"}]
    }
  },
  "metrics": {
    "metric.shop.revenue": {
      "name": "revenue", "type": "simple", "label": "Turnover", "description": "Paid orders.",
      "type_params": {"measure": {"name": "order_total", "filter": null}},
      "filter": {"where_filters": [{"where_sql_template": "status = 'paid'"}]}
    },
    "metric.shop.paid_share": {
      "name": "paid_share", "type": "ratio",
      "type_params": {"numerator": {"name": "revenue"}, "denominator": {"name": "order_total"}}
    }
  }
})json";

class KnowledgeImportCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cwd_.Write("target/manifest.json", kManifest);
    cwd_.Write("orders.csv",
               "order_id,customer_id,status,amount,ordered_at\n1,10,paid,12.5,2026-01-02\n"
               "2,11,refunded,20,2026-01-03\n");
    cwd_.Write("customers.csv", "id,email\n10,a@x.example\n11,b@x.example\n");
  }
  quarry::testing::ProcessResult Import(const std::vector<std::string>& flags) const {
    std::vector<std::string> argv = {QuarryBinary().string(), "knowledge", "import", "dbt",
                                     "target/manifest.json"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunProcess(argv, cwd_.path());
  }
  TempDir cwd_;
};

TEST_F(KnowledgeImportCliTest, ADryRunPrintsTheFilesAndYesWritesFilesThatCheckClean) {
  const auto dry = Import({"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("# .quarry/metrics.yaml\n"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("  revenue:\n    sql: sum(amount)\n    table: orders\n"
                         "    filter: status = 'paid'\n    time: ordered_at\n"
                         "    description: Paid orders.\n    synonyms: [Turnover]\n"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("    values: [paid, refunded]\n"), std::string::npos) << dry.out;
  EXPECT_NE(dry.err.find("quarry: dbt import (dry run): 2 tables, 1 relationship, 1 metric "
                         "would be written to .quarry; skipped: metric paid_share (ratio "
                         "metrics are not imported)"),
            std::string::npos)
      << dry.err;
  EXPECT_FALSE(std::filesystem::exists(cwd_.path() / ".quarry"));

  // Off a terminal, nothing is written unasked.
  const auto unasked = Import({});
  EXPECT_EQ(unasked.exit_code, 2) << unasked.err;
  EXPECT_NE(unasked.err.find("quarry: dbt import: .quarry/tables/orders.yaml (table orders)"),
            std::string::npos)
      << unasked.err;
  EXPECT_NE(unasked.err.find("nothing written: pass --yes to write these files"), std::string::npos)
      << unasked.err;
  EXPECT_FALSE(std::filesystem::exists(cwd_.path() / ".quarry"));

  const auto written = Import({"--yes"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(written.err,
            "quarry: dbt import: 2 tables, 1 relationship, 1 metric written to .quarry; "
            "skipped: metric paid_share (ratio metrics are not imported)\n");
  EXPECT_EQ(quarry::testing::ReadFile(cwd_.path() / ".quarry/relationships.yaml"),
            "# From the dbt manifest target/manifest.json by quarry knowledge import dbt; "
            "docs/knowledge.md\n\nrelationships:\n  - from: orders.customer_id\n"
            "    to: customers.id\n    cardinality: many-to-one\n");

  const auto check = RunProcess({QuarryBinary().string(), "knowledge", "check", "orders.csv",
                                 "customers.csv", "--knowledge", ".quarry"},
                                cwd_.path());
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.err.find("quarry knowledge check: 4 checked, 0 failed, 0 stale"),
            std::string::npos)
      << check.out << check.err;

  // Again: every file exists, and none is replaced.
  cwd_.Write(".quarry/metrics.yaml", "metrics: {}\n");
  const auto again = Import({"--yes", "--knowledge", ".quarry"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err,
            "quarry: dbt import: nothing written to .quarry; not written: "
            "tables/customers.yaml (it exists), tables/orders.yaml (it exists), "
            "relationships.yaml (it exists), metrics.yaml (it exists); skipped: metric "
            "paid_share (ratio metrics are not imported)\n");
  EXPECT_EQ(quarry::testing::ReadFile(cwd_.path() / ".quarry/metrics.yaml"), "metrics: {}\n");
}

TEST_F(KnowledgeImportCliTest, AFileThatIsNoManifestIsAnErrorNamingIt) {
  cwd_.Write("target/manifest.json", R"({"version": 1})");
  const auto r = Import({"--yes"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "quarry: dbt manifest target/manifest.json: no \"nodes\": it is not a dbt manifest "
            "(dbt compile, dbt build or dbt docs generate write one to target/manifest.json)\n");
  cwd_.Write("target/manifest.json", "{\"nodes\": {\"model.a\": [}}");
  const auto broken = Import({"--yes"});
  EXPECT_EQ(broken.exit_code, 3);
  EXPECT_EQ(broken.err,
            "quarry: dbt manifest target/manifest.json: not valid JSON: parse error at line 1, "
            "column 24: syntax error while parsing value - unexpected '}'; expected '[', '{', or "
            "a literal\n");
  const auto both = Import({"--yes", "--dry-run"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_FALSE(std::filesystem::exists(cwd_.path() / ".quarry"));
}

}  // namespace
}  // namespace quarry
