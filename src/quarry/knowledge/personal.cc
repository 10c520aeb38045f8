// Personal columns kept out of what the model is shown of the schema (knowledge.h,
// PersonalRedaction): samples and ranges are values of real people, and a card is sent to the
// model provider (and to an embeddings API) before any question about them is asked.
#include "quarry/common/text.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

bool HasPersonalColumns(const Knowledge& k) {
  for (const TableDoc& t : k.tables) {
    for (const ColumnDoc& c : t.columns) {
      if (c.personal) return true;
    }
  }
  return false;
}

PersonalRedaction::PersonalRedaction(engine::Engine& inner, const Knowledge& k) : inner_(inner) {
  for (const TableDoc& t : k.tables) {
    for (const ColumnDoc& c : t.columns) {
      if (!c.personal) continue;
      personal_.push_back(Lower(t.table + "." + c.name));
      files_.push_back(t.origin.file);
    }
  }
}

const std::vector<engine::TableCard>& PersonalRedaction::describe() const {
  const std::lock_guard lock(mu_);
  const uint64_t version = inner_.cards_version();
  if (!views_.empty() && views_.back().first == version) return views_.back().second;
  std::vector<engine::TableCard> cards = inner_.describe();
  for (engine::TableCard& card : cards) {
    for (engine::ColumnCard& column : card.columns) {
      const std::string key = Lower(card.name + "." + column.name);
      for (size_t i = 0; i < personal_.size(); ++i) {
        if (personal_[i] != key) continue;
        column.samples.clear();
        column.min.reset();
        column.max.reset();
        column.notes.push_back("personal data (" + files_[i] + "): its values are not shown");
        break;
      }
    }
  }
  views_.emplace_back(version, std::move(cards));
  return views_.back().second;
}

}  // namespace quarry::knowledge
