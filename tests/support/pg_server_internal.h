// Pieces of the test PostgreSQL server shared by pg_server.cc (processes, the template cache)
// and pg_template.cc (what the template cluster holds). Only those two include it.
#pragma once

#include <string>

namespace quarry::test::internal {

// Loads Chinook, creates the roles and the quarry_types database (see pg_server.h) on a fresh
// cluster, connecting as quarry_admin with `admin_conninfo` (no dbname). Throws
// std::runtime_error naming the step and the server's message.
void PopulateTemplate(const std::string& admin_conninfo);

}  // namespace quarry::test::internal
