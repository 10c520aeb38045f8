// Linked into every executable of the sanitizer build (-DQUARRY_SANITIZE=ON) only: the
// sanitizers' default options, read at start-up. ASAN_OPTIONS / UBSAN_OPTIONS in the
// environment still add to or override them.

// Leaks are reported at exit (the tests' binaries and the quarry binary they start);
// initialization-order bugs between translation units are caught at start-up.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=1:check_initialization_order=1:strict_init_order=1";
}

// A report names where, with the stack; -fno-sanitize-recover already makes it fatal.
extern "C" const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

// fontconfig (under pango, drawing chart text) loses blocks it allocates inside itself while
// loading its configuration and fonts, once per process; every such report is allocated in
// libfontconfig, and quarry holds no fontconfig object it could free.
// libedit (quarry chat's line editor) keeps wide-character copies (wcsdup) it never frees,
// even after el_end and history_end, which quarry calls; quarry itself never calls wcsdup.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\nleak:libedit.so\nleak:wcsdup\n";
}
