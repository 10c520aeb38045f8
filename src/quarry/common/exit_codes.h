// The process's exit codes: one table for every command and the MCP server, so scripts can
// tell what went wrong. Every code of 128 or more is a bug (a signal's death), never a choice.
#pragma once

namespace quarry {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUsage = 2;     // bad flags or arguments, nothing configured
inline constexpr int kExitData = 3;      // a data source or a query failed
inline constexpr int kExitModel = 4;     // the model provider failed
inline constexpr int kExitNoAnswer = 5;  // the run ended without a grounded answer
// Ctrl-C or SIGTERM stopped it (not 130: see above), a run or `quarry mcp` serving.
inline constexpr int kExitInterrupted = 6;
// The model asked the user a question (ask_user) and no reply could be had during the run: the
// question is printed, the turn waits in its thread, and the next `ask --thread` continues it.
inline constexpr int kExitClarification = 7;
// The model declined the question (a write on a read-only connection, data that cannot answer
// it): its reply is printed as declined, never as an answer.
inline constexpr int kExitDeclined = 8;

}  // namespace quarry
