// Schema cards as text for the model: the dense rendering, the escaping that keeps every value
// from the data on one line of the prompt, and the token estimate the schema budget is kept with.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "quarry/common/text.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine {
namespace {

constexpr std::string_view kEllipsis = "\u2026";

// Characters that are invisible or reorder the text around them: shown as \uNNNN so a value
// cannot hide or reverse what follows it (Trojan Source, CVE-2021-42574).
// Also the characters that render as nothing but a model still reads: Unicode tags
// (U+E0000..E007F, "ASCII smuggling"), variation selectors, fillers and the soft hyphen.
bool IsFormatControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0xAD || cp == 0x034F || cp == 0x061C || cp == 0x115F ||
         cp == 0x1160 || cp == 0x17B4 || cp == 0x17B5 || (cp >= 0x180B && cp <= 0x180F) ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0x3164 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         cp == 0xFEFF || cp == 0xFFA0 || (cp >= 0xFFF9 && cp <= 0xFFFB) ||
         (cp >= 0x1D173 && cp <= 0x1D17A) || (cp >= 0xE0000 && cp <= 0xE007F) ||
         (cp >= 0xE0100 && cp <= 0xE01EF);
}

// The length of the well-formed UTF-8 sequence at `i` and its code point; 0 when malformed
// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

std::string Hex(const char* format, uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// The escaped text and, for each output byte, whether a character starts there (so a cut
// never splits a character or an escape).
std::string Escape(std::string_view text, std::vector<size_t>* starts) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (starts) starts->push_back(out.size());
    if (c < 0x80) {
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        out += Hex("\\x%02x", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t len = DecodeUtf8(text, i, cp);
    if (len == 0) {
      out += Hex("\\x%02x", c);
      ++i;
    } else if (IsFormatControl(cp)) {
      out += Hex(cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

// Cuts escaped text at the last character start at or before `max_bytes`.
std::string CutAt(const std::string& escaped, const std::vector<size_t>& starts, size_t max_bytes) {
  if (escaped.size() <= max_bytes) return escaped;
  size_t end = 0;
  for (size_t s : starts) {
    if (s > max_bytes) break;
    end = s;
  }
  return escaped.substr(0, end) + std::string(kEllipsis);
}

// A note is a sentence for the model: when it must be cut, it ends at the last clause ("; ",
// ": ", ", ") in its second half, else at the last space, never inside a word ("be…" reads as
// neither "before" nor "between"). A note without a space in reach is cut as any text is.
std::string NoteText(std::string_view note) {
  std::vector<size_t> starts;
  const std::string escaped = Escape(note, &starts);
  const size_t max_bytes = kCardNoteBytes;
  if (escaped.size() <= max_bytes) return escaped;
  const std::string_view head = std::string_view(escaped).substr(0, max_bytes + 1);
  size_t cut = std::string_view::npos;
  for (std::string_view clause : {"; ", ": ", ", "}) {
    const size_t at = head.rfind(clause);
    if (at != std::string_view::npos && at >= max_bytes / 2 &&
        (cut == std::string_view::npos || at > cut)) {
      cut = at;
    }
  }
  if (cut == std::string_view::npos) {
    const size_t space = head.rfind(' ');
    if (space != std::string_view::npos && space >= max_bytes / 2) cut = space;
  }
  if (cut == std::string_view::npos) return CutAt(escaped, starts, max_bytes);
  return escaped.substr(0, cut) + std::string(kEllipsis);
}

// `notes` as card lines, at most `max` (0: all): past it, those that change a result first,
// in their order, then the others, and one line that counts what was left out.
std::string NoteLines(const std::vector<std::string>& notes, size_t max, const char* indent) {
  std::string out;
  if (max == 0 || notes.size() <= max) {
    for (const std::string& note : notes)
      out += std::string(indent) + "note: " + NoteText(note) + "\n";
    return out;
  }
  std::vector<const std::string*> order;
  for (const auto& n : notes) {
    if (NoteChangesAResult(n)) order.push_back(&n);
  }
  const size_t changing = order.size();
  for (const auto& n : notes) {
    if (!NoteChangesAResult(n)) order.push_back(&n);
  }
  for (size_t i = 0; i < max - 1; ++i)
    out += std::string(indent) + "note: " + NoteText(*order[i]) + "\n";
  const size_t rest = notes.size() - (max - 1);
  const size_t rest_changing = changing > max - 1 ? changing - (max - 1) : 0;
  out += std::string(indent) + "note: " + std::to_string(rest) + " more notes (" +
         (rest_changing > 0 ? std::to_string(rest_changing) +
                                  " of them on rows or values that change a sum or a count"
                            : std::string("none of them changes a sum or a count")) +
         "); inspect_schema with this table shows them all\n";
  return out;
}

bool HasWord(const std::string& upper, std::string_view word) {
  return upper.find(word) != std::string::npos;
}

bool IsTemporalType(const std::string& type) {
  const std::string u = Upper(type);
  return HasWord(u, "DATE") || HasWord(u, "TIME");
}

bool IsNumericType(const std::string& type) {
  const std::string u = Upper(type);
  if (IsTemporalType(type) || HasWord(u, "POINT") || HasWord(u, "INTERVAL") || HasWord(u, "[]")) {
    return false;
  }
  for (const char* word : {"INT", "REAL", "FLOA", "DOUB", "DEC", "NUMERIC"}) {
    if (HasWord(u, word)) return true;
  }
  return false;
}

// A name is cut in its middle: names that differ only at their end ("... - Week 1", "... -
// Week 4") stay apart.
std::string Name(std::string_view name) {
  std::vector<size_t> starts;
  const std::string escaped = Escape(name, &starts);
  if (escaped.size() <= kCardNameBytes) return escaped;
  const size_t half = (kCardNameBytes - kEllipsis.size()) / 2;
  std::string head = CutAt(escaped, starts, half);
  if (head.ends_with(kEllipsis)) head.resize(head.size() - kEllipsis.size());
  size_t from = escaped.size() - half;
  while (from < escaped.size() && !std::binary_search(starts.begin(), starts.end(), from)) ++from;
  return head + std::string(kEllipsis) + escaped.substr(from);
}

// Whether a stored bound reads as a number, a date or a time, whatever the declared type:
// with --no-samples only those are shown ("NINETYK" in an INTEGER column is a text value).
bool LooksQuantitative(std::string_view v) {
  if (v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
           c == ':' || c == ' ' || c == 'T' || c == 'Z' || c == 'e' || c == 'E';
  });
}

// A text type without its declared length (NVARCHAR(200) -> NVARCHAR): no query needs it, and
// SQLite does not enforce it. Precision and scale of numbers stay.
std::string ShownType(const std::string& type) {
  const std::string u = Upper(type);
  const size_t open = type.find('(');
  if (open == std::string::npos || !type.ends_with(')') ||
      !(HasWord(u, "CHAR") || HasWord(u, "TEXT"))) {
    return type;
  }
  const std::string inside = type.substr(open + 1, type.size() - open - 2);
  if (inside.empty() || !std::all_of(inside.begin(), inside.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch));
      })) {
    return type;
  }
  return type.substr(0, open);
}

// A file is shortened to its end (its name says most); a server's redacted spec is shown whole,
// since its database is at the end and its host at the start.
std::string SourceText(const std::string& source) {
  return IsServerSpec(source) ? PromptText(source, 160) : PromptPath(source);
}

// One column's line: name, type, foreign key, then what the statistics say.
std::string ColumnLine(const ColumnCard& c, const ForeignKey* fk, int64_t rows, bool estimated,
                       const CardOptions& o) {
  std::string out = "  " + Name(c.name) + " " + Name(ShownType(c.type));
  if (fk) out += " -> " + Name(fk->ref_table) + "." + Name(fk->ref_column);
  if (!o.statistics || !c.profiled) return out + "\n";
  const bool numeric = IsNumericType(c.type);
  const bool temporal = IsTemporalType(c.type) || !c.date_format.empty();
  const bool unique =
      !c.distinct_approx && c.distinct_count > 1 && c.distinct_count == rows - c.null_count;
  if (c.null_count > 0) out += (estimated ? ", ~" : ", ") + std::to_string(c.null_count) + " null";
  // A column of one value gets no "1 distinct": the range or the sample says it.
  if (c.distinct_approx) {
    // An estimate of 0 is no estimate (PostgreSQL's n_distinct for json): nothing is said.
    if (c.distinct_count > 0) out += ", ~" + std::to_string(c.distinct_count) + " distinct";
  } else if (c.distinct_count == 0 && rows > 0) {
    out += ", all null";
  } else if (c.distinct_count > 1) {
    out += unique ? ", unique" : ", " + std::to_string(c.distinct_count) + " distinct";
  }
  const bool ranged = (numeric || temporal) && c.min && c.max &&
                      (o.samples || (LooksQuantitative(*c.min) && LooksQuantitative(*c.max)));
  if (ranged) {
    // Timestamps at midnight at both ends are dates for the model's purposes; the type still
    // says DATETIME.
    std::string lo = *c.min, hi = *c.max;
    constexpr std::string_view kMidnight = " 00:00:00";
    if (temporal && lo.ends_with(kMidnight) && hi.ends_with(kMidnight)) {
      lo.resize(lo.size() - kMidnight.size());
      hi.resize(hi.size() - kMidnight.size());
    }
    out += lo == hi
               ? ", only " + PromptText(lo, kCardRangeBytes)
               : ", " + PromptText(lo, kCardRangeBytes) + ".." + PromptText(hi, kCardRangeBytes);
  }
  // Numbers and dates are read from their range; text needs examples of its spelling. A column
  // with a note (numbers stored as text) keeps its samples: the note is about them.
  const bool few = !unique && c.distinct_count >= 3 && c.distinct_count <= 5;
  const bool show_samples =
      o.samples && !c.samples.empty() && (!ranged || (numeric && few) || !c.notes.empty());
  if (show_samples) {
    // Of a unique or many-valued column the samples show a format, not the values one would
    // filter on: one or two suffice. A column of few repeated values shows them all.
    const bool all =
        !unique && c.distinct_count > 0 && c.distinct_count <= static_cast<int64_t>(kCardFewValues);
    const bool many = !all && (c.distinct_approx || c.distinct_count > 25);
    const size_t n = std::min(c.samples.size(), all      ? kCardFewValues
                                                : unique ? size_t{1}
                                                : many   ? size_t{2}
                                                         : size_t{3});
    out += ", e.g.";
    for (size_t s = 0; s < n; ++s) {
      const std::string v = PromptText(c.samples[s], kCardValueBytes);
      out += (s ? ", " : " ") + (numeric && c.notes.empty() ? v : internal::QuoteLiteral(v));
    }
  }
  out += "\n";
  out += NoteLines(c.notes, o.max_column_notes, "    ");
  return out;
}

}  // namespace

bool NoteChangesAResult(std::string_view note) {
  std::string lower(note);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // The loader's own wording for what a SUM or COUNT would get wrong (csv_quality.cc,
  // csv_columns.cc, csv_loader.cc, workbook.cc).
  static constexpr std::string_view kMarks[] = {
      "total",        "exact cop",    "duplicate", "group apart",   "read as null",
      "as null",      "missing",      "padded",    "extra columns", "repeated",
      "mixed units",  "no unit",      "minus",     "negative",      "no saved result",
      "excel errors", "kept as text", "dropped",   "sum(",          "count("};
  for (std::string_view mark : kMarks) {
    if (lower.find(mark) != std::string::npos) return true;
  }
  return false;
}

std::string PromptText(std::string_view text, size_t max_bytes) {
  std::vector<size_t> starts;
  const std::string escaped = Escape(text, &starts);
  return CutAt(escaped, starts, max_bytes);
}

std::string PromptPath(std::string_view path, size_t max_bytes) {
  const std::string whole = Escape(path, nullptr);
  if (whole.size() <= max_bytes) return whole;
  const size_t slash = path.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::vector<size_t> starts;
  const std::string escaped = Escape(base, &starts);
  const std::string dirs = slash == std::string_view::npos ? "" : std::string(kEllipsis) + "/";
  if (escaped.size() + 4 <= max_bytes) return dirs + escaped;
  // Keep the start and the end of the basename: its extension and any date or number at the end
  // tell files apart.
  const size_t half = max_bytes > 12 ? (max_bytes - 6) / 2 : 3;
  std::string head = CutAt(escaped, starts, half);
  if (head.ends_with(kEllipsis)) head.resize(head.size() - kEllipsis.size());
  size_t from = escaped.size() > half ? escaped.size() - half : 0;
  while (from < escaped.size() && !std::binary_search(starts.begin(), starts.end(), from)) ++from;
  return dirs + head + std::string(kEllipsis) + escaped.substr(from);
}

int64_t EstimateTokens(std::string_view text) {
  auto alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  auto punct = [&](char c) {
    return !alpha(c) && !digit(c) && c != ' ' && c != '\n' && static_cast<unsigned char>(c) < 0x80;
  };
  int64_t tokens = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const char c = text[i];
    size_t j = i + 1;
    if (alpha(c)) {
      // A camelCase hump starts a new word: "InvoiceLineId" is three tokens.
      while (j < n && alpha(text[j]) && !(upper(text[j]) && !upper(text[j - 1]))) ++j;
      tokens += static_cast<int64_t>((j - i + 6) / 7);
    } else if (digit(c)) {
      while (j < n && digit(text[j])) ++j;  // o200k splits digits in groups of three
      tokens += static_cast<int64_t>((j - i + 2) / 3);
    } else if (c == ' ') {
      while (j < n && text[j] == ' ') ++j;
      if (j - i > 1) ++tokens;  // one space joins what follows; indentation is a token
    } else if (c == '\n') {
      while (j < n && text[j] == '\n') ++j;
      ++tokens;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      while (j < n && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) ++j;
      ++tokens;
    } else {
      while (j < n && punct(text[j])) ++j;  // "', '" and "..": punctuation pairs merge
      tokens += static_cast<int64_t>((j - i + 1) / 2);
    }
    i = j;
  }
  return tokens;
}

std::string RenderCards(const std::vector<TableCard>& cards, const CardOptions& o) {
  std::string out;
  const bool one_source =
      !cards.empty() && std::all_of(cards.begin(), cards.end(), [&](const TableCard& t) {
        return t.source == cards.front().source;
      });
  const bool per_table = o.sources == CardOptions::Sources::kPerTable ||
                         (o.sources == CardOptions::Sources::kAuto && !one_source);
  if (o.sources == CardOptions::Sources::kAuto && one_source) {
    out += "data: " + SourceText(cards.front().source) + "\n";
  }
  for (const TableCard& t : cards) {
    const bool wide = o.max_columns > 0 && t.columns.size() > o.max_columns && o.only.empty();
    std::string header;
    if (t.profiled && o.statistics) {
      header = (t.estimated ? "~" : "") + std::to_string(t.row_count) +
               (t.row_count == 1 ? " row" : " rows");
    }
    if (per_table) {
      header += (header.empty() ? "from " : ", from ") + SourceText(t.source);
    }
    out += "table " + Name(t.name) + (header.empty() ? "" : " (" + header + ")") + "\n";
    std::map<std::string, const ForeignKey*> fk_of;
    std::vector<const ForeignKey*> loose;  // keys on a column the card does not list
    for (const ForeignKey& fk : t.foreign_keys) {
      const bool listed = std::any_of(t.columns.begin(), t.columns.end(),
                                      [&](const ColumnCard& c) { return c.name == fk.column; });
      if (listed && !fk_of.contains(fk.column)) {
        fk_of[fk.column] = &fk;
      } else {
        loose.push_back(&fk);
      }
    }
    std::string rest;
    size_t rest_count = 0;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const ColumnCard& c = t.columns[i];
      if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.name) == o.only.end()) {
        continue;
      }
      const auto fk = fk_of.find(c.name);
      if (wide && i >= o.max_columns && c.notes.empty() && fk == fk_of.end()) {
        rest += (rest.empty() ? "" : ", ") + Name(c.name) + " " + Name(c.type);
        ++rest_count;
        continue;
      }
      out += ColumnLine(c, fk == fk_of.end() ? nullptr : fk->second, t.row_count, t.estimated, o);
    }
    if (rest_count > 0) {
      out += "  ... " + std::to_string(rest_count) +
             " more columns (inspect_schema with `table` "
             "and `columns` shows their statistics): " +
             rest + "\n";
    }
    for (const ForeignKey* fk : loose) {
      out += "  foreign key " + Name(fk->column) + " -> " + Name(fk->ref_table) + "." +
             Name(fk->ref_column) + "\n";
    }
    out += NoteLines(t.notes, o.max_table_notes, "  ");
  }
  return out;
}

std::string RenderCards(const std::vector<TableCard>& cards, size_t max_columns,
                        const std::vector<std::string>& only) {
  CardOptions options;
  options.max_columns = max_columns;
  options.only = only;
  return RenderCards(cards, options);
}

}  // namespace quarry::engine
