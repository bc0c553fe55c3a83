// Untrusted JSON: checkpoints, safetensors headers, config files, sweep records.
//
// nlohmann's parser is iterative, but much of what follows a parse is not — dump(), which error
// messages used, recursive walks, the destructor of older versions — so 200,000 nested '[' in a
// 300 KB file overflowed the stack after parsing. Nesting is bounded at parse time instead, and
// error messages quote values through json_excerpt, never whole.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tapegrad::io {

inline constexpr int kMaxJsonDepth = 64;  // tapegrad's own files nest 4 deep

// Parses `text`; a syntax error or nesting deeper than max_depth is an Error that names `what`
// (a path, usually).
nlohmann::json parse_json(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth);

// j[key] when j is an object holding a string there, else "". Never throws — unlike nlohmann's
// value(key, ""), which raises type_error.302 for {"key": 5} — so a file's field can be compared
// with what is expected and the mismatch reported in tapegrad's words.
std::string string_field(const nlohmann::json& j, const char* key);

// A value as compact JSON for an error message, cut to about max_chars ("...": cut).
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 60);

}  // namespace tapegrad::io
