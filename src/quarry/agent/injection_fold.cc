// The folding the prompt-injection patterns read text through (injection_internal.h): case and
// whitespace runs folded with each byte's origin kept, and look-alike letters, fullwidth forms
// and invisible format characters normalised.
#include <string>
#include <vector>

#include "quarry/agent/injection_internal.h"

namespace quarry::agent {
namespace {

// Lower case for a two-byte UTF-8 character (lead, trail) in the blocks where case is common
// in data: Latin-1, Latin Extended-A, Greek, Cyrillic. The length never changes.
void LowerTwoByte(unsigned char& lead, unsigned char& trail) {
  const unsigned cp = ((lead & 0x1Fu) << 6) | (trail & 0x3Fu);
  unsigned lower = cp;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2)) {
    lower = cp + 0x20;
  } else if (cp >= 0x100 && cp <= 0x17F && cp % 2 == 0 && cp != 0x130 && cp != 0x138) {
    lower = cp + 1;  // Latin Extended-A pairs upper, lower (a few odd ones aside)
  } else if (cp >= 0x410 && cp <= 0x42F) {
    lower = cp + 0x20;
  } else if (cp >= 0x400 && cp <= 0x40F) {
    lower = cp + 0x50;
  }
  lead = static_cast<unsigned char>(0xC0 | (lower >> 6));
  trail = static_cast<unsigned char>(0x80 | (lower & 0x3F));
}

// Bytes of a whitespace character at `i` (ASCII, NBSP, U+2000-U+200B, U+3000), or 0. A line
// break is reported through `newline`.
size_t SpaceAt(std::string_view s, size_t i, bool& newline) {
  const auto b = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  newline = false;
  switch (b(i)) {
    case '\n':
    case '\r':
    case '\v':
    case '\f':
      newline = true;
      return 1;
    case ' ':
    case '\t':
      return 1;
    case 0xC2:
      return b(i + 1) == 0xA0 ? 2 : 0;
    case 0xE2:
      return b(i + 1) == 0x80 && b(i + 2) >= 0x80 && b(i + 2) <= 0x8B ? 3 : 0;
    case 0xE3:
      return b(i + 1) == 0x80 && b(i + 2) == 0x80 ? 3 : 0;
    default:
      return 0;
  }
}

size_t DecodeAt(std::string_view s, size_t i, char32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    cp = c;
    return 1;
  }
  cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      cp = c;
      return 1;
    }
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  return n;
}

bool FormatCharacter(char32_t cp) {
  return cp == 0xAD || cp == 0x61C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF ||
         (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0000 && cp <= 0xE007F);
}

// The Latin letter a Cyrillic or Greek letter (or a Latin variant) is drawn like, case kept;
// 0 when none.
char LookAlike(char32_t cp) {
  static const std::vector<std::pair<char32_t, char>> table = {// Cyrillic
                                                               {0x0430, 'a'},
                                                               {0x0435, 'e'},
                                                               {0x043E, 'o'},
                                                               {0x0440, 'p'},
                                                               {0x0441, 'c'},
                                                               {0x0443, 'y'},
                                                               {0x0445, 'x'},
                                                               {0x0456, 'i'},
                                                               {0x0458, 'j'},
                                                               {0x0455, 's'},
                                                               {0x0501, 'd'},
                                                               {0x051B, 'q'},
                                                               {0x051D, 'w'},
                                                               {0x04BB, 'h'},
                                                               {0x04CF, 'l'},
                                                               {0x0475, 'v'},
                                                               {0x0410, 'A'},
                                                               {0x0412, 'B'},
                                                               {0x0415, 'E'},
                                                               {0x041A, 'K'},
                                                               {0x041C, 'M'},
                                                               {0x041D, 'H'},
                                                               {0x041E, 'O'},
                                                               {0x0420, 'P'},
                                                               {0x0421, 'C'},
                                                               {0x0422, 'T'},
                                                               {0x0425, 'X'},
                                                               {0x0423, 'Y'},
                                                               {0x0406, 'I'},
                                                               {0x0408, 'J'},
                                                               {0x0405, 'S'},
                                                               {0x04C0, 'I'},
                                                               // Greek
                                                               {0x03B1, 'a'},
                                                               {0x03B5, 'e'},
                                                               {0x03B9, 'i'},
                                                               {0x03BA, 'k'},
                                                               {0x03BD, 'v'},
                                                               {0x03BF, 'o'},
                                                               {0x03C1, 'p'},
                                                               {0x03C4, 't'},
                                                               {0x03C5, 'u'},
                                                               {0x03C7, 'x'},
                                                               {0x03B3, 'y'},
                                                               {0x0391, 'A'},
                                                               {0x0392, 'B'},
                                                               {0x0395, 'E'},
                                                               {0x0396, 'Z'},
                                                               {0x0397, 'H'},
                                                               {0x0399, 'I'},
                                                               {0x039A, 'K'},
                                                               {0x039C, 'M'},
                                                               {0x039D, 'N'},
                                                               {0x039F, 'O'},
                                                               {0x03A1, 'P'},
                                                               {0x03A4, 'T'},
                                                               {0x03A5, 'Y'},
                                                               {0x03A7, 'X'},
                                                               // Latin variants
                                                               {0x0131, 'i'},
                                                               {0x0261, 'g'},
                                                               {0x0251, 'a'},
                                                               {0x1D00, 'A'},
                                                               {0x0280, 'R'}};
  for (const auto& [from, to] : table) {
    if (from == cp) return to;
  }
  return 0;
}

enum class Script { kNone, kLatin, kCyrillic, kGreek, kOther };

Script ScriptOf(char32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
      (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) || (cp >= 0x250 && cp <= 0x2AF) ||
      (cp >= 0x1D00 && cp <= 0x1D7F)) {
    return Script::kLatin;
  }
  if (cp >= 0x400 && cp <= 0x52F) return Script::kCyrillic;
  if (cp >= 0x370 && cp <= 0x3FF) return Script::kGreek;
  if (cp < 0x80 || (cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x303F)) {
    return Script::kNone;  // digits, punctuation, spaces, symbols: not part of a word
  }
  return Script::kOther;
}

}  // namespace

Folded Fold(std::string_view s, bool lower) {
  Folded f;
  f.text.reserve(s.size());
  f.origin.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    bool newline = false;
    if (size_t n = SpaceAt(s, i, newline)) {
      // A run of whitespace becomes one character: a line break when it holds one.
      const size_t start = i;
      bool any_newline = false;
      while (n) {
        any_newline = any_newline || newline;
        i += n;
        n = SpaceAt(s, i, newline);
      }
      f.text += any_newline ? '\n' : ' ';
      f.origin.push_back(start);
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (lower && c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c + 32);
    if (lower && c >= 0xC0 && c < 0xE0 && i + 1 < s.size() &&
        (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
      unsigned char trail = static_cast<unsigned char>(s[i + 1]);
      LowerTwoByte(c, trail);
      f.text += static_cast<char>(c);
      f.text += static_cast<char>(trail);
      f.origin.push_back(i);
      f.origin.push_back(i + 1);
      i += 2;
      continue;
    }
    f.text += static_cast<char>(c);
    f.origin.push_back(i);
    ++i;
  }
  f.origin.push_back(s.size());
  return f;
}

Normalised Normalise(std::string_view s, bool format_as_space) {
  struct Unit {
    char32_t cp;
    size_t at;
    size_t len;
  };
  std::vector<Unit> units;
  units.reserve(s.size());
  Normalised n;
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    size_t len = DecodeAt(s, i, cp);
    // Where the model reads data, PromptText has written these characters as escapes
    // ("ig\u200bnore"): the escape of a format or C1 character is one too.
    if (cp == '\\' && i + 6 <= s.size() && s[i + 1] == 'u') {
      const std::string hex(s.substr(i + 2, 4));
      if (hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
        const auto escaped = static_cast<char32_t>(std::stoul(hex, nullptr, 16));
        if (FormatCharacter(escaped) || (escaped >= 0x80 && escaped <= 0x9F)) {
          cp = escaped;
          len = 6;
        }
      }
    }
    if (cp >= 0xFF01 && cp <= 0xFF5E) cp -= 0xFEE0;  // fullwidth ASCII
    if (FormatCharacter(cp) || (cp >= 0x80 && cp <= 0x9F)) {
      n.had_format = true;
      if (format_as_space) units.push_back({U' ', i, len});
    } else {
      units.push_back({cp, i, len});
    }
    i += len;
  }
  n.text.reserve(s.size());
  n.origin.reserve(s.size() + 1);
  for (size_t w = 0; w < units.size();) {
    // A word: a run of letters of any script. Mixed Latin/Cyrillic/Greek: look-alikes fold.
    size_t end = w;
    bool latin = false, cyrillic = false, greek = false;
    while (end < units.size() && ScriptOf(units[end].cp) != Script::kNone) {
      const Script sc = ScriptOf(units[end].cp);
      latin = latin || sc == Script::kLatin;
      cyrillic = cyrillic || sc == Script::kCyrillic;
      greek = greek || sc == Script::kGreek;
      ++end;
    }
    const bool mixed = (latin ? 1 : 0) + (cyrillic ? 1 : 0) + (greek ? 1 : 0) >= 2;
    if (end == w) end = w + 1;  // not a letter: one unit as it is
    for (size_t k = w; k < end; ++k) {
      const Unit& u = units[k];
      const char alike = mixed ? LookAlike(u.cp) : 0;
      if (alike || u.cp < 0x80) {  // a look-alike, ASCII, fullwidth ASCII, a format space
        n.text += alike ? alike : static_cast<char>(u.cp);
        n.origin.push_back(u.at);
        continue;
      }
      for (size_t b = 0; b < u.len; ++b) {
        n.text += s[u.at + b];
        n.origin.push_back(u.at + b);
      }
    }
    w = end;
  }
  n.origin.push_back(s.size());
  return n;
}

}  // namespace quarry::agent
