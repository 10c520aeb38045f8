// Ctrl-C and SIGTERM as a stop request: while an InterruptScope lives, the first SIGINT or
// SIGTERM requests a stop on its token (the running query is interrupted, the Python child
// killed, the model request aborted, and the trace written with stop_reason "interrupted");
// a second one ends the process at once with kExitInterrupted, leaving events.jsonl, from which
// `quarry trace` rebuilds the run.
#pragma once

#include <stop_token>
#include <thread>

#include "quarry/common/common.h"

namespace quarry::cli {

class InterruptScope {
 public:
  // Installs the handlers (the previous ones come back when the scope ends). One at a time.
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  StopToken token() const { return source_.get_token(); }
  // Which signal requested the stop (0: none yet).
  int signal_number() const;

 private:
  std::stop_source source_;
  std::jthread watcher_;
};

}  // namespace quarry::cli
