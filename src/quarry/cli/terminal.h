// What the CLI does with a terminal: colour (--color, NO_COLOR) and a pager for long output.
#pragma once

#include <string>

namespace quarry::cli {

// --color: auto (a terminal, and NO_COLOR unset: https://no-color.org), always, never.
enum class ColorMode { kAuto, kAlways, kNever };
void SetColorMode(ColorMode mode);
ColorMode GetColorMode();

// --no-pager: long output is printed straight.
void SetPagerEnabled(bool enabled);

// The pager's command: QUARRY_PAGER, else PAGER, else "less -S -R -F -X" (long lines cut, not
// wrapped; colours kept; quit at once when the text fits; the screen kept after). "" (either
// variable set empty) or "cat" turns paging off.
std::string PagerCommand();

// Writes `text` to stdout: through the pager when stdout and stdin are terminals, paging is
// on, and the text has more lines than the terminal or a line wider than it; else straight.
// A pager that cannot start, or exits non-zero, is said on stderr and the text printed
// straight; one quit early (q in less) ends the output quietly. Returns false only when
// stdout could not be written (a closed pipe is no failure).
bool PageOrPrint(const std::string& text);

// After a command: flushes stdout and turns a write that failed (a full disk, /dev/full) into
// a message and exit code 3; a reader that went away (`| head`, EPIPE) is no failure.
int FinishOutput(int code);

}  // namespace quarry::cli
