// The size budgets of a tools/call result: one cut per cell and one per response, applied alike
// to the text a client's model reads and to structuredContent, so neither form can grow a
// JSON-RPC line past what a client takes (a 200-row query of 100 kB cells used to make 20 MB).
#include <algorithm>
#include <vector>

#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {
namespace {

// Room kept for the JSON-RPC envelope and the result's other keys.
constexpr size_t kEnvelopeBytes = 1024;

size_t Bytes(const json& value) { return DumpLine(value).size(); }

// At most max_bytes of `text`, never ending inside a UTF-8 sequence.
std::string CutUtf8(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// One structuredContent cell within the cell budget. Returns whether it cut.
bool CutCell(json& cell) {
  const size_t budget = engine::kResultCellBytes;
  if (cell.is_string() && cell.get_ref<const std::string&>().size() > budget) {
    cell = CutUtf8(cell.get<std::string>(), budget) + "…";
    return true;
  }
  if (cell.is_object() && cell.contains("base64") && cell["base64"].is_string() &&
      cell["base64"].get_ref<const std::string&>().size() > budget) {
    cell["base64"] = cell["base64"].get<std::string>().substr(0, budget / 4 * 4);
    return true;
  }
  return false;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string Budget() { return std::to_string(kResponseBytes) + "-byte response budget"; }

}  // namespace

BudgetedRows FitRows(const std::string& text, const json& detail) {
  BudgetedRows out;
  out.row_count = detail.value("row_count", int64_t{0});
  json rows = detail.value("rows", json::array());
  bool cell_cut = false;
  for (json& row : rows) {
    for (json& cell : row) cell_cut = CutCell(cell) || cell_cut;
  }
  // The rendering's rows are the `rows.size()` lines just above its count line "(N rows...)".
  const std::vector<std::string> lines = Lines(text);
  const std::string count_start = "(" + std::to_string(out.row_count) + " row";
  size_t count_line = lines.size();
  for (size_t i = lines.size(); i-- > 0;) {
    if (lines[i].starts_with(count_start)) {
      count_line = i;
      break;
    }
  }
  const size_t shown = rows.size();
  if (count_line == lines.size() || count_line < shown) {
    // Not the shape expected (no rows, or a rendering this code does not know): the rows stay
    // as they are and FitText cuts the text if it must.
    out.text = text;
    out.rows = std::move(rows);
    out.truncated = cell_cut || out.row_count > static_cast<int64_t>(out.rows.size());
    return out;
  }
  const size_t first_row = count_line - shown;
  size_t used = kEnvelopeBytes + Bytes(detail.value("columns", json::array())) +
                Bytes(detail.value("types", json::array()));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i < first_row || i >= count_line) used += lines[i].size() + 1;
  }
  size_t keep = 0;
  for (; keep < shown; ++keep) {
    const size_t cost = lines[first_row + keep].size() + 1 + Bytes(rows[keep]) + 1;
    if (used + cost > kResponseBytes) break;
    used += cost;
  }
  for (size_t i = 0; i < first_row + keep; ++i) out.text += lines[i] + "\n";
  if (keep < shown) {
    out.text += "(" + std::to_string(out.row_count) + (out.row_count == 1 ? " row" : " rows") +
                ", first " + std::to_string(keep) + " shown: the rest passed the " + Budget() +
                "; select fewer or narrower columns)\n";
  } else {
    out.text += lines[count_line] + "\n";
  }
  for (size_t i = count_line + 1; i < lines.size(); ++i) out.text += lines[i] + "\n";
  rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end());
  out.rows = std::move(rows);
  out.truncated = cell_cut || out.row_count > static_cast<int64_t>(out.rows.size());
  return out;
}

bool FitText(json& result) {
  if (!result.contains("content") || !result["content"].is_array()) return false;
  size_t used = kEnvelopeBytes;
  if (result.contains("structuredContent")) used += Bytes(result["structuredContent"]);
  size_t text_bytes = 0;
  for (const json& block : result["content"]) {
    if (block.value("type", "") == "text") text_bytes += Bytes(block.value("text", ""));
  }
  if (used + text_bytes <= kResponseBytes) return false;
  const std::string note = "\n… (cut: the result passed quarry's " + Budget() + ")";
  size_t left = kResponseBytes > used + note.size() ? kResponseBytes - used - note.size() : 0;
  bool cut = false;
  for (json& block : result["content"]) {
    if (block.value("type", "") != "text" || !block["text"].is_string()) continue;
    if (cut) {  // the note is on the block that was cut; later text is dropped
      block["text"] = "";
      continue;
    }
    const std::string& text = block["text"].get_ref<const std::string&>();
    // JSON escapes can make the dump longer than the text: budget the dumped size.
    const size_t dumped = Bytes(block["text"]);
    if (dumped <= left) {
      left -= dumped;
      continue;
    }
    const size_t room = text.size() * left / std::max<size_t>(dumped, 1);
    block["text"] = CutUtf8(text, room) + note;
    cut = true;
  }
  if (result.contains("structuredContent") && result["structuredContent"].is_object() &&
      result["structuredContent"].contains("truncated")) {
    result["structuredContent"]["truncated"] = true;
  }
  return true;
}

}  // namespace quarry::mcp
