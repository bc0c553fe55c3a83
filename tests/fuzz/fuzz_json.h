// Shared by the JSON fuzz harnesses: the input as JSON, or nothing when it is not JSON (the
// parser's own errors are nlohmann's business; the harnesses test what tapegrad does with JSON).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

inline std::optional<nlohmann::json> parse_json(const uint8_t* data, size_t size) {
  try {
    return nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}
