// The `quarry` command: subcommands ask, chat, threads, schema, sql, trace and more. Results
// go to stdout, progress and errors to stderr; exit codes tell scripts what went wrong.
#pragma once

#include "quarry/common/exit_codes.h"  // the exit codes Main returns

namespace quarry::cli {

int Main(int argc, char** argv);

}  // namespace quarry::cli
