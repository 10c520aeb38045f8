// Benchmark: what the sandbox costs. From one run, the median wall time of a trivial run_python
// end to end (bubblewrap, seccomp, rlimits, the runner's pandas import, the guard), of the same
// with a 2,065-row table loaded, and of bare `python3 -c "import pandas"`; the ratio is the
// sandbox's overhead against its peer measured alongside. Not a test: machines here are noisy.
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "quarry/sandbox/sandbox.h"

namespace {

using Clock = std::chrono::steady_clock;

double MedianMs(int runs, const std::function<void()>& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The peer gets the environment the sandbox sets (one BLAS thread matters), so the ratio is
// the isolation's cost alone.
void BarePython(const char* code) {
  const char* argv[] = {"/usr/bin/python3", "-I", "-c", code, nullptr};
  const char* envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "OPENBLAS_NUM_THREADS=1",
                        "OMP_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1", nullptr};
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv),
                  const_cast<char**>(envp)) == 0) {
    int status;
    waitpid(pid, &status, 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 11;
  const std::filesystem::path source = QUARRY_SOURCE_DIR;
  const std::filesystem::path work = std::filesystem::temp_directory_path() / "quarry-bench-sandbox";
  quarry::sandbox::Options bare;
  bare.workdir = work;
  quarry::sandbox::Options with_table = bare;
  quarry::sandbox::TableFile sales;
  sales.name = "sales";
  sales.host_path = source / "data" / "sales.csv";
  sales.format = "csv";
  with_table.tables = {sales};
  if (auto why = quarry::sandbox::NamespaceUnavailableReason()) {
    std::printf("no namespaces here (%s): measuring the rlimits-only fallback\n", why->c_str());
    bare.allow_unisolated = with_table.allow_unisolated = true;
  }
  auto run = [](const quarry::sandbox::Options& o) {
    auto r = quarry::sandbox::RunPython("print(1)", o);
    if (!r || r->failure != quarry::FailureClass::kNone) std::fprintf(stderr, "run failed\n");
  };
  constexpr const char* kImport = "import pandas";
  // The runner ends with os._exit (no interpreter teardown); this peer does the same.
  constexpr const char* kImportExit = "import pandas, os; os._exit(0)";
  BarePython(kImport);  // warm the page cache for both
  run(bare);
  const double python_ms = MedianMs(runs, [&] { BarePython(kImport); });
  const double python_exit_ms = MedianMs(runs, [&] { BarePython(kImportExit); });
  const double sandbox_ms = MedianMs(runs, [&] { run(bare); });
  const double table_ms = MedianMs(runs, [&] { run(with_table); });
  std::printf("runs per case                          %d\n", runs);
  std::printf("python3 -c 'import pandas'        %8.1f ms (median)\n", python_ms);
  std::printf("  ... ending with os._exit(0)     %8.1f ms (median)\n", python_exit_ms);
  std::printf("run_python print(1), sandboxed    %8.1f ms (median)\n", sandbox_ms);
  std::printf("  ... with sales.csv loaded       %8.1f ms (median)\n", table_ms);
  std::printf("ratio, trivial run / bare import:              %.2fx\n", sandbox_ms / python_ms);
  std::printf("ratio, trivial run / bare import with os._exit: %.2fx (%+.1f ms: the isolation)\n",
              sandbox_ms / python_exit_ms, sandbox_ms - python_exit_ms);
  std::filesystem::remove_all(work);
  return 0;
}
