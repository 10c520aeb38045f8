// A user's reply to a clarification, offered to be kept in the knowledge folder's glossary so
// that a later question is answered from it instead of asking again (docs/knowledge.md).
// Written only when the user agrees: ask and chat ask on the terminal, `quarry remember` saves
// a run's replies, MCP and serve save through a call the user makes.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quarry/common/common.h"
#include "quarry/knowledge/knowledge.h"
#include "quarry/trace/trace.h"

namespace quarry::agent {

// One reply that could be kept: the term (name: the phrase the clarification asked about;
// means: the user's reply; metric: the metric the reply names, when it names one), what was
// asked, and the run that asked.
struct GlossaryOffer {
  knowledge::Term term;
  std::string question;
  std::string run_id;
};

// The replies of `trace`'s clarifications worth keeping: answered, about a term the model
// named, and not already a term or metric of `known` (null: none known). One per term, the
// last reply.
std::vector<GlossaryOffer> GlossaryOffers(const trace::Trace& trace,
                                          const knowledge::Knowledge* known);

// Where a kept reply goes: the knowledge folder in use (`given`, else discovered beside the
// data or in `cwd`: knowledge::Discover), else cwd/.quarry (created on the first save).
std::filesystem::path GlossaryDir(const std::filesystem::path& given,
                                  const std::vector<std::filesystem::path>& data,
                                  const std::filesystem::path& cwd);

// "top customer = by revenue", as the offer shows it.
std::string OfferText(const GlossaryOffer& offer);

// Saves `offer` to dir/glossary.yaml (knowledge::SaveTerm), after a comment naming the day,
// the run and the question asked. Errors: knowledge::SaveTerm's.
Result<knowledge::Origin> KeepInGlossary(const std::filesystem::path& dir,
                                         const GlossaryOffer& offer);

// The knowledge a long-lived server (MCP, serve) gives each run: read again after a reply is
// kept, so the next question already uses it. Thread-safe.
class LiveKnowledge {
 public:
  // `known`: the knowledge loaded at start (null: none); `dir`: Config::glossary_dir.
  LiveKnowledge(std::shared_ptr<const knowledge::Knowledge> known, std::filesystem::path dir)
      : known_(std::move(known)), dir_(std::move(dir)) {}
  std::shared_ptr<const knowledge::Knowledge> Get() const;
  // Whether replies can be kept here (Config::glossary_dir was set).
  bool keeps() const { return !dir_.empty(); }
  // The replies of `trace` that could be kept now (GlossaryOffers; none when !keeps()).
  std::vector<GlossaryOffer> Offers(const trace::Trace& trace) const;
  // Keeps the reply of run `run_id` (its trace found under `runs_dir`) about `term` ("" : its
  // only reply to keep) and reads the folder again. Errors: kUsage when keeping is off (no
  // dir), the run is not found, or it has no such reply to keep (defined already, or the model
  // named no term); SaveTerm's.
  Result<knowledge::Origin> Keep(const std::filesystem::path& runs_dir, const std::string& run_id,
                                 const std::string& term);

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const knowledge::Knowledge> known_;
  std::filesystem::path dir_;
};

}  // namespace quarry::agent
