// Benchmark: what the sandbox costs. From one run, the median wall time of a trivial run_python
// end to end (bubblewrap, seccomp, rlimits, the runner's pandas import, the guard), of the same
// with a 2,065-row table loaded, and of bare `python3 -c "import pandas"`; the ratio is the
// sandbox's overhead against its peer measured alongside. Then the warm kernel against that
// cold path (a second call and later ones), and what copying a large CSV for Python costs
// against opening it in the engine. Not a test: machines here are noisy.
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/engine/engine.h"
#include "quarry/sandbox/kernel.h"
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
  const char* envp[] = {"PATH=/usr/bin:/bin",        "LANG=C.UTF-8",
                        "OPENBLAS_NUM_THREADS=1",    "OMP_NUM_THREADS=1",
                        "PYTHONDONTWRITEBYTECODE=1", nullptr};
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv),
                  const_cast<char**>(envp)) == 0) {
    int status;
    waitpid(pid, &status, 0);
  }
}

double Ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A CSV like a user's export: an id, a zip code with leading zeros, a date, a price, a name.
std::filesystem::path LargeCsv(const std::filesystem::path& dir, int rows) {
  const auto path = dir / "large.csv";
  std::ofstream out(path);
  out << "id,zip,day,price,name\n";
  for (int i = 0; i < rows; ++i) {
    char line[128];
    std::snprintf(line, sizeof line, "%d,%05d,2024-%02d-%02d,%d.%02d,customer %d\n", i, i % 99999,
                  1 + i % 12, 1 + i % 28, i % 1000, i % 100, i % 5000);
    out << line;
  }
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 11;
  const int large_rows = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1000000;
  const std::filesystem::path source = QUARRY_SOURCE_DIR;
  const std::filesystem::path work =
      std::filesystem::temp_directory_path() / "quarry-bench-sandbox";
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

  // The warm kernel: the same calls, the imports and the table paid once.
  quarry::sandbox::Options warm = with_table;
  warm.workdir = work / "kernel";
  quarry::sandbox::Kernel kernel(warm);
  const auto start = Clock::now();
  (void)kernel.Start();
  auto call = [&](const char* code) {
    auto r = kernel.Run(code, std::nullopt);
    if (!r || r->failure != quarry::FailureClass::kNone)
      std::fprintf(stderr, "kernel call failed\n");
  };
  call("print(1)");
  const double first_ms = Ms(start);
  const double later_ms = MedianMs(runs, [&] { call("print(1)"); });
  const double work_ms = MedianMs(runs, [&] { call("print(round(df['revenue'].sum(), 2))"); });
  kernel.Shutdown();
  // The goal's figure: the second call of a fresh kernel, over `runs` kernels.
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    quarry::sandbox::Kernel k(warm);
    (void)k.Start();
    (void)k.Run("print(1)", std::nullopt);
    const auto t = Clock::now();
    (void)k.Run("print(1)", std::nullopt);
    seconds.push_back(Ms(t));
  }
  std::sort(seconds.begin(), seconds.end());
  const double second_ms = seconds[seconds.size() / 2];
  std::printf("kernel: start + first call         %8.1f ms (once)\n", first_ms);
  std::printf("kernel: second call print(1)      %8.1f ms (median over %d kernels)\n", second_ms,
              runs);
  std::printf("kernel: later calls print(1)      %8.1f ms (median)\n", later_ms);
  std::printf("kernel: df['revenue'].sum()       %8.1f ms (median)\n", work_ms);
  std::printf("ratio, cold run with table / second call: %.1fx\n", table_ms / second_ms);

  // Copying a large CSV for Python, against opening it in the engine (sniff + cards).
  const auto csv = LargeCsv(work, large_rows);
  auto open_start = Clock::now();
  auto engine = quarry::engine::Open({csv});
  const double open_ms = Ms(open_start);
  if (engine) {
    auto export_start = Clock::now();
    auto tables = quarry::agent::SandboxTables(**engine, work / "tables", 1'000'000);
    const double export_ms = Ms(export_start);
    quarry::sandbox::Options big = bare;
    big.workdir = work / "big";
    big.tables_dir = work / "tables";
    if (tables) big.tables = *tables;
    quarry::sandbox::Kernel loaded(big);
    auto load_start = Clock::now();
    auto r = loaded.Run("print(len(df))", std::nullopt);
    const double load_ms = Ms(load_start);
    std::printf("large CSV: %d rows, %.1f MB\n", large_rows,
                static_cast<double>(std::filesystem::file_size(csv)) / 1e6);
    std::printf("  engine open (sniff + cards)     %8.1f ms\n", open_ms);
    std::printf(
        "  typed copy for Python           %8.1f ms (%.1f MB)\n", export_ms,
        tables && !tables->empty()
            ? static_cast<double>(std::filesystem::file_size(tables->front().host_path)) / 1e6
            : 0.0);
    std::printf("  kernel start + pandas load      %8.1f ms (%s)\n", load_ms,
                r && r->failure == quarry::FailureClass::kNone ? "ok" : "failed");
    std::printf("ratio, copy / engine open: %.2fx\n", export_ms / open_ms);
  }
  std::filesystem::remove_all(work);
  return 0;
}
