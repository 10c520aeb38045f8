// A process that holds the test PostgreSQL server for pg_server_test: it starts
// SharedPgServer, prints "POSTMASTER_PID PORT SOCKET_DIR" on one line, and waits for stdin to
// close, then exits normally. The test kills it (the server must die with it) or closes stdin
// (the server must be stopped and its directory removed at exit).
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "support/pg_server.h"

int main() {
  try {
    const quarry::test::PgServer& server = quarry::test::SharedPgServer();
    // The postmaster pid is the first line of postmaster.pid in the data dir.
    std::ifstream pid_file(std::filesystem::path(server.socket_dir).parent_path() / "data" /
                           "postmaster.pid");
    std::string pid;
    std::getline(pid_file, pid);
    std::printf("%s %d %s\n", pid.c_str(), server.port, server.socket_dir.c_str());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  char buffer[64];
  while (::read(0, buffer, sizeof buffer) > 0) {
  }
  return 0;
}
