// OpenAI-style streamed replies for the provider stand-in: the chat.completion.chunk events a
// server sends for the same completion CompletionBody writes whole, so a test can script one
// reply both ways and compare the turns.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "support/provider_server.h"

namespace quarry::testing {

// How the chunks are cut and what surrounds them.
struct StreamShape {
  size_t piece_bytes = 7;   // content and arguments per chunk, at UTF-8 character boundaries
  bool usage = true;        // a final chunk with "choices": [] and the usage (include_usage)
  bool done = true;         // "data: [DONE]" at the end
  bool keep_alive = false;  // ": OPENROUTER PROCESSING" comments before and between chunks
  bool interleave = false;  // argument pieces of parallel calls alternate (by index)
  bool finish = true;       // the chunk with finish_reason
};

// One string per event ("data: {...}\n\n", or a comment), in order: a first chunk with the
// role, the content in pieces, each tool call's id/type/name in its first delta and the
// arguments in pieces, the finish_reason, the usage chunk (prompt_tokens_details.cached_tokens,
// and usage.cost when completion.cost_usd is set), then [DONE].
std::vector<std::string> StreamChunks(const ScriptedCompletion& completion,
                                      const StreamShape& shape = {});
// The chunks joined: the whole event-stream body.
std::string StreamBody(const ScriptedCompletion& completion, const StreamShape& shape = {});
// A scripted streamed response: `chunks` as the pieces, text/event-stream.
ScriptedResponse StreamedResponse(const ScriptedCompletion& completion,
                                  const StreamShape& shape = {});
// OpenRouter's mid-stream failure: {"id", "object": "chat.completion.chunk", "error": {"code",
// "message"}, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}
// as one event.
std::string ErrorChunk(const std::string& message, int code = 502);

}  // namespace quarry::testing
