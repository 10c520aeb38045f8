// The dbt import: a small manifest in dbt's v12 shape (models, a source, columns with meta,
// relationships and accepted_values tests, a semantic model, simple metrics and the kinds that
// are left out) read into knowledge, written as files that Load reads back and that
// knowledge::Check passes against a real DuckDB engine over matching CSVs; existing files kept;
// malformed manifests refused with the field and the problem named.
#include "quarry/knowledge/dbt.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace quarry::knowledge {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ReadFile;
using quarry::testing::TempDir;
namespace fs = std::filesystem;

// As dbt 1.9 writes it, trimmed to what a reader needs and a few fields it does not read
// (raw_code, checksum, depends_on), which the import must pass over.
constexpr const char* kManifest = R"json({
  "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
               "dbt_version": "1.9.1", "project_name": "shop", "adapter_type": "duckdb"},
  "nodes": {
    "model.shop.orders": {
      "database": "shop", "schema": "main", "name": "orders", "resource_type": "model",
      "package_name": "shop", "path": "marts/orders.sql", "unique_id": "model.shop.orders",
      "fqn": ["shop", "marts", "orders"], "alias": "orders",
      "checksum": {"name": "sha256", "checksum": "4f1c"},
      "config": {"enabled": true, "materialized": "table", "meta": {}, "tags": []},
      "tags": [], "description": "One row per order.\nOnly orders that were paid for.",
      "columns": {
        "order_id": {"name": "order_id", "description": "The order's id.", "meta": {},
                     "data_type": null, "constraints": [], "quote": null, "tags": []},
        "customer_id": {"name": "customer_id", "description": "Who placed it.", "meta": {},
                        "data_type": null, "constraints": [], "quote": null, "tags": []},
        "status": {"name": "status", "description": "Where the order stands: 'completed' is final.",
                   "meta": {}, "data_type": "varchar", "constraints": [], "quote": null,
                   "tags": []},
        "amount": {"name": "amount", "description": "Order value in USD # before refunds",
                   "meta": {}, "data_type": null, "constraints": [], "quote": null, "tags": []},
        "ordered_at": {"name": "ordered_at", "description": "", "meta": {}, "data_type": null,
                       "constraints": [], "quote": null, "tags": []}
      },
      "meta": {}, "raw_code": "select * from {{ ref('stg_orders') }}", "language": "sql",
      "refs": [{"name": "stg_orders", "package": null, "version": null}],
      "depends_on": {"macros": [], "nodes": ["model.shop.stg_orders"]},
      "version": null, "latest_version": null
    },
    "model.shop.customers": {
      "database": "shop", "schema": "main", "name": "customers", "resource_type": "model",
      "unique_id": "model.shop.customers", "alias": "customers",
      "config": {"enabled": true, "materialized": "table"},
      "description": "One row per customer.",
      "columns": {
        "customer_id": {"name": "customer_id", "description": "The customer's id.", "meta": {},
                        "tags": []},
        "email": {"name": "email", "description": "Where receipts go.",
                  "meta": {"contains_pii": true}, "tags": []},
        "name": {"name": "name", "description": "", "meta": {}, "tags": ["pii"]}
      },
      "raw_code": "select 1", "version": null, "latest_version": null
    },
    "model.shop.stg_orders": {
      "name": "stg_orders", "resource_type": "model", "unique_id": "model.shop.stg_orders",
      "alias": "stg_orders", "config": {"materialized": "ephemeral"},
      "description": "Orders as the shop's database has them.", "columns": {}
    },
    "model.shop.undocumented": {
      "name": "undocumented", "resource_type": "model", "alias": "undocumented",
      "config": {"materialized": "view"}, "description": "", "columns": {}
    },
    "test.shop.relationships_orders_customer_id__customer_id__ref_customers_.c6ec7f58f2": {
      "name": "relationships_orders_customer_id__customer_id__ref_customers_",
      "resource_type": "test", "config": {"enabled": true, "severity": "ERROR", "where": null},
      "test_metadata": {"name": "relationships", "namespace": null,
                        "kwargs": {"to": "ref('customers')", "field": "customer_id",
                                   "column_name": "customer_id",
                                   "model": "{{ get_where_subquery(ref('orders')) }}"}},
      "column_name": "customer_id", "attached_node": "model.shop.orders",
      "depends_on": {"macros": ["macro.dbt.test_relationships"],
                     "nodes": ["model.shop.customers", "model.shop.orders"]}
    },
    "test.shop.accepted_values_orders_status__placed__shipped__completed__returned.be6b5b5ec3": {
      "name": "accepted_values_orders_status__placed__shipped__completed__returned",
      "resource_type": "test", "config": {"enabled": true, "where": null},
      "test_metadata": {"name": "accepted_values", "namespace": null,
                        "kwargs": {"values": ["placed", "shipped", "completed", "returned"],
                                   "column_name": "status",
                                   "model": "{{ get_where_subquery(ref('orders')) }}"}},
      "column_name": "status", "attached_node": "model.shop.orders"
    },
    "test.shop.not_null_orders_order_id.81cfe2fe64": {
      "name": "not_null_orders_order_id", "resource_type": "test", "config": {},
      "test_metadata": {"name": "not_null", "namespace": null,
                        "kwargs": {"column_name": "order_id"}},
      "column_name": "order_id", "attached_node": "model.shop.orders"
    },
    "test.shop.source_relationships_raw_payments_order_id__order_id__ref_orders_.a1b2c3": {
      "name": "source_relationships_raw_payments_order_id__order_id__ref_orders_",
      "resource_type": "test", "config": {"where": null},
      "test_metadata": {"name": "relationships", "namespace": null,
                        "kwargs": {"to": "ref('orders')", "field": "order_id",
                                   "column_name": "order_id",
                                   "model": "{{ get_where_subquery(source('raw', 'payments')) }}"}},
      "column_name": "order_id", "attached_node": "source.shop.raw.payments"
    }
  },
  "sources": {
    "source.shop.raw.payments": {
      "database": "shop", "schema": "raw", "name": "payments", "resource_type": "source",
      "source_name": "raw", "identifier": "payments", "unique_id": "source.shop.raw.payments",
      "description": "Payments as the processor reports them.",
      "columns": {"amount": {"name": "amount", "description": "Paid, in USD.", "meta": {}}},
      "config": {"enabled": true}
    }
  },
  "semantic_models": {
    "semantic_model.shop.orders": {
      "name": "orders", "resource_type": "semantic_model", "model": "ref('orders')",
      "node_relation": {"alias": "orders", "schema_name": "main", "database": "shop",
                        "relation_name": "\"shop\".\"main\".\"orders\""},
      "defaults": {"agg_time_dimension": "ordered_at"},
      "entities": [{"name": "order_id", "type": "primary", "expr": null},
                   {"name": "customer", "type": "foreign", "expr": "customer_id"}],
      "measures": [
        {"name": "order_total", "agg": "sum", "expr": "amount", "description": "Order values.",
         "agg_time_dimension": null, "non_additive_dimension": null, "agg_params": null},
        {"name": "ordering_customers", "agg": "count_distinct", "expr": "customer_id"},
        {"name": "order_count", "agg": "sum", "expr": "1"},
        {"name": "latest_balance", "agg": "max", "expr": "amount",
         "non_additive_dimension": {"name": "ordered_at", "window_choice": "max"}}
      ],
      "dimensions": [
        {"name": "ordered_at", "type": "time", "expr": null,
         "type_params": {"time_granularity": "day"}},
        {"name": "order_status", "type": "categorical", "expr": "status"}
      ]
    }
  },
  "metrics": {
    "metric.shop.revenue": {
      "name": "revenue", "resource_type": "metric", "label": "Revenue", "type": "simple",
      "description": "Money from completed orders.",
      "type_params": {"measure": {"name": "order_total", "filter": null, "alias": null,
                                  "join_to_timespine": false, "fill_nulls_with": null},
                      "input_measures": [{"name": "order_total"}]},
      "filter": {"where_filters": [
        {"where_sql_template": "{{ Dimension('order_id__order_status') }} = 'completed'"}]}
    },
    "metric.shop.active_customers": {
      "name": "active_customers", "resource_type": "metric", "label": "Ordering customers",
      "type": "simple", "description": "",
      "type_params": {"measure": {"name": "ordering_customers", "filter": null}},
      "filter": null
    },
    "metric.shop.large_orders": {
      "name": "large_orders", "label": "Large orders", "type": "simple",
      "description": "Orders over 100 USD.",
      "type_params": {"measure": {"name": "order_count",
                                  "filter": {"where_filters": [{"where_sql_template": "amount > 100"}]}}},
      "filter": null
    },
    "metric.shop.customer_region_revenue": {
      "name": "customer_region_revenue", "type": "simple",
      "type_params": {"measure": {"name": "order_total"}},
      "filter": {"where_filters": [
        {"where_sql_template": "{{ Dimension('customer__region') }} = 'EU'"}]}
    },
    "metric.shop.balance": {
      "name": "balance", "type": "simple", "type_params": {"measure": {"name": "latest_balance"}}
    },
    "metric.shop.completed_share": {
      "name": "completed_share", "type": "ratio", "label": "Completed share",
      "type_params": {"numerator": {"name": "revenue"}, "denominator": {"name": "order_total"}}
    },
    "metric.shop.revenue_growth": {
      "name": "revenue_growth", "type": "derived",
      "type_params": {"expr": "revenue - revenue_last_month", "metrics": []}
    }
  },
  "macros": {"macro.dbt.test_relationships": {"macro_sql": "{% macro %}...{% endmacro %}"}},
  "parent_map": {}, "child_map": {}, "docs": {}, "exposures": {}, "disabled": {}
})json";

class DbtTest : public ::testing::Test {
 protected:
  fs::path WriteManifest(const std::string& text) const {
    return tmp_.Write("manifest.json", text);
  }
  // The error of parsing `text`, "" when it parsed.
  static std::string ErrorOf(const std::string& text) {
    auto parsed = ParseDbtManifest(text, "target/manifest.json");
    if (parsed) return "";
    EXPECT_EQ(parsed.error().code, Error::Code::kData);
    return parsed.error().message;
  }
  TempDir tmp_;
};

TEST_F(DbtTest, ModelsSourcesTestsAndSimpleMetricsBecomeKnowledge) {
  auto imported = ParseDbtManifest(kManifest, "target/manifest.json");
  ASSERT_TRUE(imported) << imported.error().message;

  ASSERT_EQ(imported->tables.size(), 3u);
  const TableDoc& customers = imported->tables[0];
  EXPECT_EQ(customers.table, "customers");
  EXPECT_EQ(customers.description, "One row per customer.");
  ASSERT_EQ(customers.columns.size(), 3u);
  EXPECT_FALSE(customers.columns[0].personal);
  EXPECT_EQ(customers.columns[1].name, "email");
  EXPECT_TRUE(customers.columns[1].personal);  // meta contains_pii
  EXPECT_EQ(customers.columns[2].name, "name");
  EXPECT_TRUE(customers.columns[2].personal);  // tag pii, no description
  const TableDoc& orders = imported->tables[1];
  EXPECT_EQ(orders.table, "orders");
  EXPECT_EQ(orders.origin.file, "model.shop.orders");
  EXPECT_EQ(orders.description, "One row per order.\nOnly orders that were paid for.");
  ASSERT_EQ(orders.columns.size(), 4u);  // ordered_at has no description
  EXPECT_EQ(orders.columns[2].name, "status");
  EXPECT_EQ(orders.columns[2].values,
            (std::vector<std::pair<std::string, std::string>>{
                {"placed", ""}, {"shipped", ""}, {"completed", ""}, {"returned", ""}}));
  EXPECT_EQ(imported->tables[2].table, "payments");  // the source's identifier

  ASSERT_EQ(imported->relationships.size(), 2u);
  EXPECT_EQ(imported->relationships[0].from, "orders.customer_id");
  EXPECT_EQ(imported->relationships[0].to, "customers.customer_id");
  EXPECT_EQ(imported->relationships[0].cardinality, "many-to-one");
  EXPECT_EQ(imported->relationships[1].from, "payments.order_id");
  EXPECT_EQ(imported->relationships[1].to, "orders.order_id");

  ASSERT_EQ(imported->metrics.size(), 3u);
  const Metric& active = imported->metrics[0];
  EXPECT_EQ(active.name, "active_customers");
  EXPECT_EQ(active.sql, "count(distinct customer_id)");
  EXPECT_EQ(active.table, "orders");
  EXPECT_EQ(active.time, "ordered_at");  // the semantic model's default
  EXPECT_EQ(active.description, "");
  EXPECT_EQ(active.synonyms, (std::vector<std::string>{"Ordering customers"}));
  const Metric& large = imported->metrics[1];
  EXPECT_EQ(large.sql, "sum(1)");
  EXPECT_EQ(large.filter, "amount > 100");  // the input measure's filter, plain SQL
  const Metric& revenue = imported->metrics[2];
  EXPECT_EQ(revenue.sql, "sum(amount)");
  EXPECT_EQ(revenue.filter, "status = 'completed'");  // the dimension's expr
  EXPECT_EQ(revenue.description, "Money from completed orders.");
  EXPECT_TRUE(revenue.synonyms.empty());  // "Revenue" is its name

  EXPECT_EQ(imported->skipped,
            (std::vector<std::string>{
                "model stg_orders (ephemeral: it has no table)",
                "metric customer_region_revenue (its filter uses {{ "
                "Dimension('customer__region') }}, which is not a column of orders)",
                "metric balance (its measure is semi-additive (non_additive_dimension))",
                "metric completed_share (ratio metrics are not imported)",
                "metric revenue_growth (derived metrics are not imported)"}));
}

TEST_F(DbtTest, TheFilesWrittenAreExactLoadBackAndCheckCleanAgainstTheData) {
  auto imported = ParseDbtManifest(kManifest, "target/manifest.json");
  ASSERT_TRUE(imported) << imported.error().message;
  auto files = RenderDbtImport(*imported, "target/manifest.json");
  ASSERT_TRUE(files) << files.error().message;
  std::vector<std::string> paths;
  for (const auto& f : *files) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"tables/customers.yaml", "tables/orders.yaml",
                                             "tables/payments.yaml", "relationships.yaml",
                                             "metrics.yaml"}));
  const fs::path dir = tmp_.path() / ".quarry";
  ImportPlan plan = PlanDbtImport(dir, *files);
  EXPECT_TRUE(plan.kept.empty());
  EXPECT_EQ(plan.existing_problem, "");
  auto written = WriteKnowledgeFiles(dir, plan.write);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written, paths);

  EXPECT_EQ(ReadFile(dir / "tables/orders.yaml"),
            "# From the dbt manifest target/manifest.json (model.shop.orders) by quarry "
            "knowledge import dbt; docs/knowledge.md\n\n"
            "description: \"One row per order.\\nOnly orders that were paid for.\"\n"
            "columns:\n"
            "  order_id: The order's id.\n"
            "  customer_id: Who placed it.\n"
            "  status:\n"
            "    meaning: \"Where the order stands: 'completed' is final.\"\n"
            "    values: [placed, shipped, completed, returned]\n"
            "  amount: \"Order value in USD # before refunds\"\n");
  EXPECT_EQ(ReadFile(dir / "tables/customers.yaml"),
            "# From the dbt manifest target/manifest.json (model.shop.customers) by quarry "
            "knowledge import dbt; docs/knowledge.md\n\n"
            "description: One row per customer.\n"
            "columns:\n"
            "  customer_id: The customer's id.\n"
            "  email:\n"
            "    meaning: Where receipts go.\n"
            "    personal: true\n"
            "  name:\n"
            "    personal: true\n");
  EXPECT_EQ(ReadFile(dir / "relationships.yaml"),
            "# From the dbt manifest target/manifest.json by quarry knowledge import dbt; "
            "docs/knowledge.md\n\n"
            "relationships:\n"
            "  - from: orders.customer_id\n"
            "    to: customers.customer_id\n"
            "    cardinality: many-to-one\n"
            "  - from: payments.order_id\n"
            "    to: orders.order_id\n"
            "    cardinality: many-to-one\n");
  EXPECT_EQ(ReadFile(dir / "metrics.yaml"),
            "# From the dbt manifest target/manifest.json by quarry knowledge import dbt; "
            "docs/knowledge.md\n\n"
            "metrics:\n"
            "  active_customers:\n"
            "    sql: count(distinct customer_id)\n"
            "    table: orders\n"
            "    time: ordered_at\n"
            "    synonyms: [Ordering customers]\n"
            "  large_orders:\n"
            "    sql: sum(1)\n"
            "    table: orders\n"
            "    filter: amount > 100\n"
            "    time: ordered_at\n"
            "    description: Orders over 100 USD.\n"
            "  revenue:\n"
            "    sql: sum(amount)\n"
            "    table: orders\n"
            "    filter: status = 'completed'\n"
            "    time: ordered_at\n"
            "    description: Money from completed orders.\n");

  auto k = Load(dir);
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->tables.size(), 3u);
  EXPECT_EQ(k->tables[1].description, "One row per order.\nOnly orders that were paid for.");
  EXPECT_EQ(k->tables[1].columns[2].values.size(), 4u);
  EXPECT_EQ(k->tables[1].columns[3].meaning, "Order value in USD # before refunds");
  EXPECT_TRUE(k->tables[0].columns[1].personal);
  ASSERT_EQ(k->metrics.size(), 3u);
  EXPECT_EQ(k->metrics[2].filter, "status = 'completed'");
  EXPECT_EQ(k->relationships.size(), 2u);

  // The same tables as the dbt project built them.
  const fs::path orders =
      tmp_.Write("orders.csv",
                 "order_id,customer_id,status,amount,ordered_at\n1,10,completed,120.5,2026-01-02\n"
                 "2,11,placed,20,2026-01-03\n3,10,returned,80,2026-01-04\n");
  const fs::path customers = tmp_.Write(
      "customers.csv", "customer_id,email,name\n10,a@x.example,Ana\n11,b@x.example,Bo\n");
  const fs::path payments =
      tmp_.Write("payments.csv", "payment_id,order_id,amount\n100,1,120.5\n101,3,80\n");
  auto engine = engine::Open({orders, customers, payments});
  ASSERT_TRUE(engine) << engine.error().message;
  const auto findings = Check(*k, **engine, engine::Limits{});
  EXPECT_EQ(findings.size(), 8u);
  for (const auto& f : findings) EXPECT_EQ(f.problem, "") << f.item;
}

TEST_F(DbtTest, AnExistingFileIsNeverReplaced) {
  auto imported = ParseDbtManifest(kManifest, "target/manifest.json");
  ASSERT_TRUE(imported) << imported.error().message;
  auto files = RenderDbtImport(*imported, "target/manifest.json");
  ASSERT_TRUE(files) << files.error().message;
  const fs::path dir = tmp_.path() / ".quarry";
  const std::string mine = "metrics:\n  revenue:\n    sql: sum(amount)\n    table: orders\n";
  tmp_.Write(".quarry/metrics.yaml", mine);
  // A table file of another name that describes orders: a second description would make the
  // folder fail to load.
  tmp_.Write(".quarry/tables/shop_orders.yaml", "table: orders\ndescription: ours\n");
  ImportPlan plan = PlanDbtImport(dir, *files);
  EXPECT_EQ(plan.kept, (std::vector<std::string>{"tables/orders.yaml (table orders is described in "
                                                 "tables/shop_orders.yaml)",
                                                 "metrics.yaml (it exists)"}));
  ASSERT_EQ(plan.write.size(), 3u);
  // A file that appears between the plan and the write is not replaced either.
  tmp_.Write(".quarry/relationships.yaml", "relationships: []\n");
  auto written = WriteKnowledgeFiles(dir, plan.write);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written,
            (std::vector<std::string>{"tables/customers.yaml", "tables/payments.yaml"}));
  EXPECT_EQ(written->kept, (std::vector<std::string>{"relationships.yaml (it exists)"}));
  EXPECT_EQ(ReadFile(dir / "metrics.yaml"), mine);
  EXPECT_EQ(ReadFile(dir / "relationships.yaml"), "relationships: []\n");
  auto k = Load(dir);
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->tables.size(), 3u);
}

TEST_F(DbtTest, MalformedManifestsAreErrorsNamingTheFieldAndTheProblem) {
  struct Case {
    std::string text, error;
  };
  const std::string model = R"("model.shop.orders": {"resource_type": "model", "name": "orders")";
  const std::vector<Case> cases = {
      {"[1, 2]", "the file is a list, not an object: it is not a dbt manifest"},
      {R"({"metadata": {}, "metrics": {}})",
       "no \"nodes\": it is not a dbt manifest (dbt compile, dbt build or dbt docs generate "
       "write one to target/manifest.json)"},
      {R"({"nodes": []})", "nodes is a list, not an object"},
      {R"({"nodes": {"model.shop.orders": 3}})",
       "nodes[\"model.shop.orders\"] is a number, not an object"},
      {R"({"nodes": {)" + model + R"(, "columns": []}}})",
       "nodes[\"model.shop.orders\"].columns is a list, not an object"},
      {R"({"nodes": {)" + model + R"(, "description": 12}}})",
       "nodes[\"model.shop.orders\"].description is a number, not text"},
      {R"({"nodes": {)" + model + R"(, "columns": {"id": {"name": "id", "tags": [{}]}}}}})",
       "nodes[\"model.shop.orders\"].columns.id.tags[0] is an object, not text or a number"},
      {R"({"nodes": {)" + model + R"(}, "test.shop.t": {"resource_type": "test",
          "attached_node": "model.shop.orders", "test_metadata": {"name": "accepted_values",
          "kwargs": {"column_name": "status", "values": ["a", ["b"]]}}}}})",
       "nodes[\"test.shop.t\"].test_metadata.kwargs.values[1] is a list, not text or a "
       "number"},
      {R"j({"nodes": {}, "metrics": {"metric.shop.revenue": "sum(amount)"}})j",
       "metrics[\"metric.shop.revenue\"] is text, not an object"},
      {R"({"nodes": {}, "semantic_models": {"semantic_model.shop.orders": {"measures": {}}}})",
       "semantic_models[\"semantic_model.shop.orders\"].measures is an object, not a list"},
      {R"({"nodes": {}, "metrics": {"metric.shop.revenue": {"name": "revenue", "type": "simple",
          "type_params": {"measure": {"name": "m"}}, "filter": {"where_filters": ["x"]}}}})",
       "metrics[\"metric.shop.revenue\"].filter.where_filters[0] is text, not an object"},
      {R"({"nodes": {"model.shop.orders": {"resource_type": true}}})",
       "nodes[\"model.shop.orders\"].resource_type is true or false, not text"},
      {std::string(300, '[') + std::string(300, ']'),
       "nested more than 256 levels deep: it is not a dbt manifest"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorOf(c.text), "dbt manifest target/manifest.json: " + c.error) << c.text;
  }
  // JSON that does not parse says where it breaks.
  EXPECT_EQ(ErrorOf("{\"nodes\": {\n  \"model.a\": }"),
            "dbt manifest target/manifest.json: not valid JSON: parse error at line 2, column 14: "
            "syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal");
  EXPECT_TRUE(ErrorOf("").starts_with(
      "dbt manifest target/manifest.json: not valid JSON: parse error at line 1, column 1:"))
      << ErrorOf("");
  EXPECT_EQ(ErrorOf("{\"nodes\": {\"\xff\": 1}}"),
            "dbt manifest target/manifest.json: not valid JSON: parse error at line 1, column 13: "
            "syntax error while parsing object key - invalid string: ill-formed UTF-8 byte; "
            "expected string literal");
  // A manifest of nothing documented is no error: nothing to write.
  auto empty = ParseDbtManifest(R"({"nodes": {}, "sources": null})", "m.json");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->tables.empty() && empty->metrics.empty() && empty->skipped.empty());

  // The file itself: missing, a folder, too large to read (a sparse file: nothing is written).
  auto missing = ReadDbtManifest(tmp_.path() / "nope.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "dbt manifest " + (tmp_.path() / "nope.json").string() + " not found");
  auto folder = ReadDbtManifest(tmp_.path());
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.error().message,
            "dbt manifest " + tmp_.path().string() + " is a directory, not a file");
  const fs::path huge = WriteManifest("{}");
  fs::resize_file(huge, kMaxManifestBytes + 1);
  auto big = ReadDbtManifest(huge);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, Error::Code::kData);
  EXPECT_EQ(big.error().message,
            "dbt manifest " + huge.string() + ": 256 MiB is more than the 256 MiB an import reads");
}

// Descriptions, names and values are anything a dbt user typed: each reads back from the
// written YAML exactly as the manifest had it (control characters but newline and tab dropped,
// descriptions trimmed), and a table's name never leaves tables/.
TEST_F(DbtTest, AnyTextReadsBackAsTheManifestHadIt) {
  std::vector<std::string> texts = {
      "yes",    "no",    "null", "~",          "#x",        "a: b",       "- x",       "'q'",
      "\"dq\"", "{x}",   "[y]",  "a\nb",       "lead",      "ünïcødé",    "@at",       "`tick`",
      "%pct",   "*star", "&amp", "!bang",      "|pipe",     ">gt",        "? q",       "1.5",
      "0x10",   "true",  "a\\b", "tab\tin",    "--- x",     "...",        "a #b",      "x:",
      ",",      "[",     "}",    "nel\u0085x", "ls\u2028x", "bom\ufeffx", "\u00a0nbsp"};
  texts.push_back(std::string(1500, 'k'));  // past yaml-cpp's 1024 for a plain key: "? key"
  json nodes = json::object();
  json columns = json::object();
  json values = json::array();
  for (size_t i = 0; i < texts.size(); ++i) {
    columns["c" + std::to_string(i)] = {{"name", texts[i]}, {"description", texts[i]}};
    values.push_back(texts[i]);
    nodes["model.p.m" + std::to_string(i)] = {{"resource_type", "model"},
                                              {"name", "m" + std::to_string(i)},
                                              {"alias", texts[i]},
                                              {"description", texts[i]}};
  }
  values.push_back("");
  values.push_back(" spaced ");
  nodes["model.p.wide"] = {{"resource_type", "model"},
                           {"name", "wide"},
                           {"description", "  many columns\u0007\r "},
                           {"columns", columns}};
  nodes["test.p.values"] = {
      {"resource_type", "test"},
      {"attached_node", "model.p.wide"},
      {"test_metadata",
       {{"name", "accepted_values"}, {"kwargs", {{"column_name", texts[0]}, {"values", values}}}}}};
  nodes["model.p.escape"] = {{"resource_type", "model"},
                             {"name", "escape"},
                             {"alias", "../../etc/passwd"},
                             {"description", "a table whose name is a path"}};
  auto imported = ParseDbtManifest(json{{"nodes", nodes}}.dump(), "m.json");
  ASSERT_TRUE(imported) << imported.error().message;
  auto files = RenderDbtImport(*imported, "m.json\n# not a comment line");
  ASSERT_TRUE(files) << files.error().message;
  const fs::path dir = tmp_.path() / "k";
  auto written = WriteKnowledgeFiles(dir, PlanDbtImport(dir, *files).write);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written.size(), texts.size() + 2);
  EXPECT_TRUE(fs::exists(dir / "tables" / "_._.._etc_passwd.yaml"));
  auto k = Load(dir);
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->tables.size(), texts.size() + 2);
  std::map<std::string, const TableDoc*> by_name;
  for (const auto& t : k->tables) by_name[t.table] = &t;
  for (const auto& text : texts) {
    ASSERT_TRUE(by_name.contains(text)) << text;
    EXPECT_EQ(by_name[text]->description, text);
  }
  ASSERT_TRUE(by_name.contains("../../etc/passwd"));
  const TableDoc& wide = *by_name["wide"];
  EXPECT_EQ(wide.description, "many columns");
  ASSERT_EQ(wide.columns.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(wide.columns[i].name, texts[i]);
    EXPECT_EQ(wide.columns[i].meaning, texts[i]);
  }
  std::vector<std::string> loaded;
  for (const auto& [value, meaning] : wide.columns[0].values) loaded.push_back(value);
  std::vector<std::string> expected = texts;
  expected.push_back("");
  expected.push_back(" spaced ");
  EXPECT_EQ(loaded, expected);
}

// Names of one table, refs to versions and packages, tests that cannot be placed: each is
// resolved or left out with its reason, never guessed.
TEST_F(DbtTest, RefsResolveToTablesAndWhatCannotBePlacedIsSkippedByName) {
  auto model = [](const std::string& name, const std::string& alias, const json& version,
                  const std::string& description) {
    return json{{"resource_type", "model"}, {"name", name},        {"alias", alias},
                {"version", version},       {"latest_version", 2}, {"description", description}};
  };
  // A relationships test on lines.`column`, to `to`.`field`, of dbt's own or of a package.
  auto test = [](const std::string& column, const std::string& to, const std::string& field,
                 const json& ns) {
    const json kwargs = {{"column_name", column}, {"to", to}, {"field", field}};
    return json{
        {"resource_type", "test"},
        {"attached_node", "model.shop.lines"},
        {"test_metadata", {{"name", "relationships"}, {"namespace", ns}, {"kwargs", kwargs}}}};
  };
  json nodes = {{"model.shop.orders_v1", model("orders", "orders_v1", 1, "old")},
                {"model.shop.orders_v2", model("orders", "orders_v2", 2, "new")},
                {"model.shop.lines", model("lines", "", nullptr, "order lines")},
                {"seed.shop.ORDERS_V2", model("ORDERS_V2", "", nullptr, "a seed")},
                {"test.shop.r1", test("order_id", "ref('shop', 'orders')", "id", nullptr)},
                {"test.shop.r2", test("sku", "ref('products')", "sku", nullptr)},
                {"test.shop.r3", test("lower(sku)", "ref('lines')", "sku", nullptr)},
                {"test.shop.r4", test("a", "ref('lines')", "a", "dbt_utils")}};
  nodes["seed.shop.ORDERS_V2"]["resource_type"] = "seed";
  for (const std::string id : {"r1", "r2", "r3", "r4"}) nodes["test.shop." + id]["name"] = id;
  const json manifest = {{"nodes", nodes}};
  auto imported = ParseDbtManifest(manifest.dump(), "m.json");
  ASSERT_TRUE(imported) << imported.error().message;
  ASSERT_EQ(imported->relationships.size(), 1u);
  EXPECT_EQ(imported->relationships[0].from, "lines.order_id");
  EXPECT_EQ(imported->relationships[0].to, "orders_v2.id");  // the latest version
  std::vector<std::string> tables;
  for (const auto& t : imported->tables) tables.push_back(t.table);
  EXPECT_EQ(tables, (std::vector<std::string>{"lines", "orders_v1", "orders_v2"}));
  EXPECT_EQ(imported->skipped,
            (std::vector<std::string>{
                "seed ORDERS_V2 (its table ORDERS_V2 is described by model.shop.orders_v2)",
                "relationships test r2 (cannot tell which table ref('products') is)",
                "relationships test r3 ('lower(sku)' is not a column name)"}));
}

}  // namespace
}  // namespace quarry::knowledge
