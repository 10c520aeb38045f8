// One question as every front end runs it (threads.h, RunTurn): the thread's turn started
// before the run and recorded after it, so `ask`, `chat`, MCP and the web app cannot drift
// apart in how a conversation is kept.
#include <optional>
#include <system_error>

#include "quarry/agent/threads.h"

namespace quarry::agent {

namespace fs = std::filesystem;

namespace {

Result<ThreadStore> OpenStore(const fs::path& threads_path) {
  if (threads_path.empty()) {
    return Fail(Error::Code::kUsage,
                "threads need a state directory: set HOME or XDG_STATE_HOME, or give --runs-dir");
  }
  return ThreadStore::Open(threads_path);
}

std::string ReplaceRun(std::string name, const std::string& id) {
  const std::string key = "{run}";
  if (const size_t at = name.find(key); at != std::string::npos) name.replace(at, key.size(), id);
  return name;
}

}  // namespace

Result<TurnEnd> RunTurn(const TurnInput& in, const Config& base, const fs::path& runs_dir,
                        const fs::path& threads_path, engine::Engine& engine, llm::Client& client,
                        const TurnHooks& hooks) {
  std::optional<ThreadStore> store;
  if (!in.thread.empty()) {
    if (auto v = ValidateThreadName(in.thread); !v) return std::unexpected(v.error());
    auto opened = OpenStore(threads_path);
    if (!opened) return std::unexpected(opened.error());
    store.emplace(std::move(*opened));
  }
  const std::string id = in.run_id.empty() ? trace::NewRunId() : in.run_id;
  auto writer = trace::Writer::Create(runs_dir, id);
  if (!writer) return std::unexpected(writer.error());

  RunInput input;
  input.question = in.text;
  TurnBegun begun{id, writer->dir(), "", 0, std::nullopt, in.text, {}};
  TurnEnd end;
  if (store) {
    auto start = store->StartTurn(in.thread, in.text, id, engine.sources());
    if (!start) {
      // Nothing ran: leave no empty run folder for `quarry trace latest` to find.
      std::error_code ec;
      fs::remove_all(writer->dir(), ec);
      return std::unexpected(start.error());
    }
    end.thread = in.thread;
    end.turn = start->number;
    end.resumed = start->resume.has_value();
    begun.thread = in.thread;
    begun.turn = start->number;
    begun.resume = start->resume;
    begun.question = start->question;
    begun.data_notes = start->data_notes;
    input.question = start->question;
    input.history = std::move(start->history);
    input.resume = std::move(start->resume);
    input.thread = in.thread;
    input.thread_turn = start->number;
  }
  if (hooks.begun) hooks.begun(begun);

  input.run_id = id;
  input.load_ms = in.load_ms;
  input.stop = in.stop;
  input.ask_user = in.ask_user;
  if (hooks.event) writer->SetListener(hooks.event);
  const Config config = ConfigForRun(base, writer->dir());
  end.trace = Run(input, engine, client, config, hooks.observer, &*writer);
  end.trace_path = writer->dir() / "trace.json";

  if (store) {
    if (auto f = store->FinishTurn(in.thread, end.turn, end.trace); !f) {
      end.record_error = f.error().message;
    }
  } else if (!in.clarification_thread.empty() &&
             end.trace.stop_reason == trace::StopReason::kClarification) {
    // A question asked outside a thread still needs somewhere to wait for its reply.
    const std::string name = ReplaceRun(in.clarification_thread, id);
    auto opened = OpenStore(threads_path);
    auto kept = opened ? opened->KeepClarification(name, in.text, engine.sources(), end.trace)
                       : Result<void>(std::unexpected(opened.error()));
    if (kept) {
      end.thread = name;
      end.turn = end.trace.thread_turn;
    } else {
      end.record_error = kept.error().message;
    }
  }
  if (!end.record_error.empty()) end.thread.clear();  // nothing to continue
  return end;
}

}  // namespace quarry::agent
