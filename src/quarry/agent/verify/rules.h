// The verify gate's matching of one claimed number or value (rules.cc), used by the check of a
// whole answer (check.cc). Internal to the gate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/verify.h"
#include "quarry/agent/verify/index.h"

namespace quarry::agent::internal {

inline constexpr const char* kNotFound = "not in any result you were shown, nor in the question";

// How a number in the answer is written: the words around it.
struct Claim {
  Direction direction = Direction::kNone;  // from the words around it (DirectionAt)
  std::string direction_word;
  std::string reference;   // the word before it ("order" in "order 17")
  bool marked = false;     // "id 17", "no. 17"
  bool entity = false;     // the reference names an entity: only an identifier grounds it
  bool any_kind = false;   // a supporting value: any cell it equals grounds it
  bool count = false;      // "17 orders": only a whole number grounds it
  bool aggregate = false;  // "the average humidity is 55%": a schema card's figure is none
  std::vector<std::string> counted;  // the words after it ("customers" in "59 customers")
  int bound = 0;                     // +1 "over 2,000": the value is at least it; -1 "under $500K"
  // The few words right after and before it, normalised ("usa" in "1 usa, 2 germany", in
  // "CountryId 1 = usa", in "usa (1)"): an id that stands beside the entity it names.
  std::vector<std::string> beside;
};

// The verdict on one value: the rule that grounded it and what it matched (its source and
// column), or kNone and the reason.
struct Match {
  MatchRule rule = MatchRule::kNone;
  std::string matched;
  int source = -1;
  std::string column;
  std::string reason;
};

// A number of the answer, read with `claim`, against the evidence and the question.
Match CheckNumber(const NumberToken& t, const Claim& claim, const Index& ix);
// A supporting value of final_answer (`normalised` by Normalise): equal to a cell, in free
// text or in the question.
Match CheckValue(std::string_view value, const std::string& normalised, const Index& ix);

}  // namespace quarry::agent::internal
