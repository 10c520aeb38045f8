// The only main() of the product; everything happens in quarry::cli::Main.
#include <csignal>

#include "quarry/cli/cli.h"
#include "quarry/cli/terminal.h"

int main(int argc, char** argv) {
  // A reader that goes away (`quarry sql ... | head`) ends the output, not the process: a
  // write then fails with EPIPE (terminal.h FinishOutput), where SIGPIPE's default would kill
  // quarry with status 141.
  std::signal(SIGPIPE, SIG_IGN);
  return quarry::cli::FinishOutput(quarry::cli::Main(argc, argv));
}
