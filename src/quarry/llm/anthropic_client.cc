// Anthropic's Messages API client (placeholder until the client lands: refuses every request).
#include "quarry/llm/llm.h"

namespace quarry::llm {
namespace {

class AnthropicClient final : public Client {
 public:
  explicit AnthropicClient(ClientConfig config) : config_(std::move(config)) {}
  Result<Turn> Complete(const Request&) override {
    return Fail(Error::Code::kModel, "anthropic: the Messages API client is not built yet");
  }
  std::string provider() const override { return config_.provider; }
  std::string model() const override { return config_.model; }

 private:
  ClientConfig config_;
};

}  // namespace

std::unique_ptr<Client> MakeAnthropicClient(ClientConfig config) {
  return std::make_unique<AnthropicClient>(std::move(config));
}

}  // namespace quarry::llm
