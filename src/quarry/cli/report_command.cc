// `quarry report`: the figures of many runs (a runs folder, a bench results file, an eval
// output folder) as text or JSON on stdout, and optionally as one HTML page (bench/report.h).
#include <fstream>
#include <iostream>

#include "quarry/bench/report.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/commands.h"
#include "quarry/common/replace_file.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;

bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// Via a temporary file and a rename, so a reader never sees half a page.
Result<void> WritePage(const fs::path& out, const std::string& html) {
  std::error_code dir_ec;
  if (fs::is_directory(out, dir_ec)) {
    return Fail(Error::Code::kUsage, "--html " + out.string() + " is a folder: name a file");
  }
  if (auto replaceable = CheckReplaceable(out); !replaceable) return replaceable;
  const fs::path tmp = out.string() + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    file << html;
    if (!file) return Fail(Error::Code::kUsage, "cannot write " + out.string());
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Fail(Error::Code::kUsage, "cannot write " + out.string() + ": " + ec.message());
  }
  return {};
}

}  // namespace

int RunReport(const ReportOptions& o) {
  if (!o.html.empty() &&
      (SameFile(o.html, o.path) || SameFile(o.html, fs::path(o.path) / "bench_results.json"))) {
    return Report({Error::Code::kUsage, "--html " + o.html +
                                            " is the report's own input; "
                                            "give another file"});
  }
  auto report = bench::BuildReport(o.path);
  if (!report) return Report(report.error());
  if (o.format_name == "json") {
    std::cout << JsonText(bench::ReportJson(*report)) << "\n";
  } else {
    std::cout << TerminalText(bench::ReportText(*report));
  }
  if (!o.html.empty()) {
    auto html = bench::ReportHtml(*report);
    if (!html) return Report(html.error());
    if (auto written = WritePage(o.html, *html); !written) return Report(written.error());
    std::cerr << "quarry: wrote " << TerminalText(o.html) << "\n";
  }
  if (report->runs.empty()) {
    return Report({Error::Code::kData, "no trace under " + o.path + " could be read (" +
                                           std::to_string(report->skipped.size()) +
                                           " skipped; the reasons are listed above)"});
  }
  return kExitOk;
}

}  // namespace quarry::cli
