// The web app's questions (serve_internal.h, Runs): a bounded queue in front of a few workers,
// each question one agent::RunTurn, its trace events kept in memory as they happen so any number
// of pages can follow it, and its outcome rendered by the one presenter.
#include <algorithm>
#include <filesystem>

#include "quarry/serve/serve_internal.h"
#include "quarry/trace/trace.h"

namespace quarry::serve::internal {

namespace {

// Finished runs kept for pages that come back to them; older ones are read from their trace.
constexpr size_t kKeptFinished = 200;

}  // namespace

json OutcomeFor(const trace::Trace& t, const std::string& thread, int turn,
                const agent::LiveKnowledge& knowledge) {
  json out = trace::OutcomeJson(t);
  // Figures by file name: the page asks for them by run id and name, never by path.
  json figures = json::array();
  for (const auto& a : t.artifacts) figures.push_back(std::filesystem::path(a).filename().string());
  out["figures"] = figures;
  out["heading"] = trace::StopHeading(t.stop_reason);
  // Typed for the page, which compares no stop reason's name.
  out["answered"] = t.stop_reason == trace::StopReason::kAnswered;
  out["waiting"] = trace::WaitingClarification(t) != nullptr;
  out["run_id"] = t.id;
  out["thread"] = thread;
  out["turn"] = turn;
  out["text"] = trace::OutcomeText(
      t, t.stop_reason == trace::StopReason::kAnswered ? std::vector<std::string>{} : t.notes);
  json offers = json::array();
  for (const auto& offer : knowledge.Offers(t)) {
    offers.push_back({{"term", offer.term.name},
                      {"means", offer.term.means},
                      {"text", agent::OfferText(offer)}});
  }
  out["glossary_offers"] = std::move(offers);
  return out;
}

std::string HideThreadsPath(std::string message, const std::filesystem::path& threads_path) {
  const std::string path = threads_path.string();
  for (size_t at; !path.empty() && (at = message.find(path)) != std::string::npos;) {
    message.replace(at, path.size(), "the threads database");
  }
  return message;
}

Runs::Runs(const ServeOptions& options, engine::Engine& engine)
    : options_(options),
      engine_(engine),
      knowledge_(options.config.knowledge, options.config.glossary_dir) {
  for (size_t i = 0; i < std::max<size_t>(options.max_running, 1); ++i) {
    workers_.emplace_back([this](std::stop_token stop) { Work(stop); });
  }
}

Runs::~Runs() {
  StopAll();
  for (auto& w : workers_) w.request_stop();
  ready_.notify_all();
  workers_.clear();  // joins
}

std::shared_ptr<RunState> Runs::Submit(const std::string& id, const std::string& question,
                                       const std::string& thread) {
  auto state = std::make_shared<RunState>();
  state->id = id;
  state->thread = thread;
  {
    std::lock_guard lock(mu_);
    // A free worker takes the question at once: only questions past the free workers wait.
    const size_t free = std::max<size_t>(options_.max_running, 1) - running_;
    if (stopping_ || queue_.size() >= options_.max_queued + free) return nullptr;
    runs_[state->id] = state;
    queue_.push_back({state, question});
  }
  ready_.notify_one();
  return state;
}

std::shared_ptr<RunState> Runs::Find(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : it->second;
}

void Runs::Retire(const std::string& id) {
  finished_.push_back(id);
  while (finished_.size() > kKeptFinished) {
    runs_.erase(finished_.front());
    finished_.pop_front();
  }
}

Runs::Stopped Runs::Stop(const std::string& id) {
  std::shared_ptr<RunState> dropped;
  {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return Stopped::kUnknown;
    auto queued = std::ranges::find_if(queue_, [&](const Job& j) { return j.state->id == id; });
    if (queued == queue_.end()) {
      std::lock_guard state_lock(it->second->mu);
      if (it->second->finished) return Stopped::kFinished;
      it->second->stop.request_stop();
      return Stopped::kStopping;
    }
    dropped = queued->state;
    queue_.erase(queued);
    Retire(id);
  }
  {
    std::lock_guard lock(dropped->mu);
    dropped->outcome = {{"run_id", dropped->id},
                        {"thread", dropped->thread},
                        {"stop_reason", trace::StopReasonName(trace::StopReason::kInterrupted)},
                        {"heading", trace::StopHeading(trace::StopReason::kInterrupted)},
                        {"answered", false},
                        {"waiting", false},
                        {"text", "Stopped while it waited for its turn: nothing ran."}};
    dropped->finished = true;
  }
  dropped->changed.notify_all();
  idle_.notify_all();
  return Stopped::kDropped;
}

bool Runs::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return running_ == 0 && queue_.empty(); });
}

void Runs::StopAll() {
  std::vector<std::string> queued;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, state] : runs_) state->stop.request_stop();
    for (const Job& j : queue_) queued.push_back(j.state->id);
  }
  for (const auto& id : queued) Stop(id);  // each page following one is told at once
}

void Runs::Work(const std::stop_token& stop) {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      if (!ready_.wait(lock, stop, [this] { return !queue_.empty(); })) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    RunOne(job);
    {
      std::lock_guard lock(mu_);
      --running_;
      Retire(job.state->id);
    }
    idle_.notify_all();
  }
}

void Runs::RunOne(Job& job) {
  RunState& state = *job.state;
  auto finish = [&state](json outcome) {
    {
      std::lock_guard lock(state.mu);
      state.outcome = std::move(outcome);
      state.finished = true;
    }
    state.changed.notify_all();
  };
  auto failed = [&](const std::string& error) {
    const std::string message = HideThreadsPath(error, options_.threads_path);
    // No run, so no stop reason: the page shows the heading and the error.
    finish({{"run_id", state.id},
            {"thread", state.thread},
            {"stop_reason", nullptr},
            {"heading", "The question did not start"},
            {"answered", false},
            {"waiting", false},
            {"error", message},
            {"text", message}});
  };
  auto client = options_.make_client ? options_.make_client()
                                     : Result<std::unique_ptr<llm::Client>>(
                                           Fail(Error::Code::kUsage, "no model is configured"));
  if (!client) return failed(client.error().message);

  agent::TurnInput input;
  input.text = job.question;
  input.thread = state.thread;
  input.run_id = state.id;
  input.stop = state.stop.get_token();
  agent::TurnHooks hooks;
  hooks.event = [&state](const json& event) {
    {
      std::lock_guard lock(state.mu);
      state.events.push_back(event.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    state.changed.notify_all();
  };
  agent::Config config = options_.config;
  config.knowledge = knowledge_.Get();
  auto end = agent::RunTurn(input, config, options_.runs_dir, options_.threads_path, engine_,
                            **client, hooks);
  if (!end) return failed(end.error().message);
  json outcome = OutcomeFor(end->trace, end->thread, end->turn, knowledge_);
  if (!end->record_error.empty()) outcome["record_error"] = end->record_error;
  finish(std::move(outcome));
}

}  // namespace quarry::serve::internal
