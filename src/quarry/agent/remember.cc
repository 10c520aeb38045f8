// Clarification replies kept as glossary terms (remember.h).
#include "quarry/agent/remember.h"

#include <algorithm>

#include "quarry/engine/rank.h"

namespace quarry::agent {

namespace {

// The metric a reply names ("revenue", "by revenue"), or "".
std::string MetricNamed(const knowledge::Knowledge* known, const std::string& reply) {
  if (!known) return "";
  std::string words = engine::JoinWords(reply);
  if (words.starts_with("by ")) words = words.substr(3);
  for (const knowledge::Metric& m : known->metrics) {
    const auto is = [&](const std::string& n) { return engine::JoinWords(n) == words; };
    if (is(m.name) || std::any_of(m.synonyms.begin(), m.synonyms.end(), is)) return m.name;
  }
  return "";
}

}  // namespace

std::vector<GlossaryOffer> GlossaryOffers(const trace::Trace& trace,
                                          const knowledge::Knowledge* known) {
  std::vector<GlossaryOffer> out;
  for (const trace::ClarificationRecord& c : trace.clarifications) {
    if (engine::JoinWords(c.term).empty() || engine::JoinWords(c.reply).empty()) continue;
    if (known && knowledge::Define(*known, c.term, "")) continue;
    GlossaryOffer offer;
    offer.term.name = c.term;
    offer.term.means = c.reply;
    offer.term.metric = MetricNamed(known, c.reply);
    offer.question = c.question;
    offer.run_id = trace.id;
    const auto same = std::find_if(out.begin(), out.end(), [&](const GlossaryOffer& o) {
      return engine::JoinWords(o.term.name) == engine::JoinWords(c.term);
    });
    if (same != out.end()) {
      *same = std::move(offer);
    } else {
      out.push_back(std::move(offer));
    }
  }
  return out;
}

std::filesystem::path GlossaryDir(const std::filesystem::path& given,
                                  const std::vector<std::filesystem::path>& data,
                                  const std::filesystem::path& cwd) {
  return knowledge::Discover(given, data, cwd).value_or(cwd / ".quarry");
}

std::string OfferText(const GlossaryOffer& offer) {
  return offer.term.name + " = " + offer.term.means +
         (offer.term.metric.empty() ? "" : " (metric " + offer.term.metric + ")");
}

Result<knowledge::Origin> KeepInGlossary(const std::filesystem::path& dir,
                                         const GlossaryOffer& offer) {
  const std::string comment = "the reply to \"" + offer.question + "\" (run " + offer.run_id +
                              ", " + trace::UtcTimestamp().substr(0, 10) + ")";
  return knowledge::SaveTerm(dir, offer.term, comment);
}

std::shared_ptr<const knowledge::Knowledge> LiveKnowledge::Get() const {
  const std::lock_guard lock(mu_);
  return known_;
}

std::vector<GlossaryOffer> LiveKnowledge::Offers(const trace::Trace& trace) const {
  if (dir_.empty()) return {};
  return GlossaryOffers(trace, Get().get());
}

Result<knowledge::Origin> LiveKnowledge::Keep(const std::filesystem::path& runs_dir,
                                              const std::string& run_id, const std::string& term) {
  if (dir_.empty()) {
    return Fail(Error::Code::kUsage, "knowledge files are off here (--no-knowledge): nothing kept");
  }
  // A run id, never a path: the caller is a client of the server.
  if (run_id.empty() ||
      run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos) {
    return Fail(Error::Code::kUsage, "'" + run_id + "' is not a run id");
  }
  auto path = trace::FindTrace(runs_dir, run_id);
  if (!path) return std::unexpected(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return std::unexpected(t.error());
  const std::lock_guard lock(mu_);  // one save at a time, each against the folder as it is
  std::vector<GlossaryOffer> offers = GlossaryOffers(*t, known_.get());
  if (!term.empty()) {
    std::erase_if(offers, [&](const GlossaryOffer& o) {
      return engine::JoinWords(o.term.name) != engine::JoinWords(term);
    });
  }
  if (offers.size() != 1) {
    return Fail(Error::Code::kUsage,
                offers.empty() ? "run " + run_id + " has no clarification reply to keep" +
                                     (term.empty() ? "" : " about '" + term + "'") +
                                     " (none answered, no term named, or it is defined already)"
                               : "run " + run_id + " has several replies to keep: name the term");
  }
  auto kept = KeepInGlossary(dir_, offers.front());
  if (!kept) return std::unexpected(kept.error());
  auto reloaded = knowledge::Load(dir_);
  if (!reloaded) return std::unexpected(reloaded.error());
  known_ = std::make_shared<const knowledge::Knowledge>(std::move(*reloaded));
  return kept;
}

}  // namespace quarry::agent
