// Shared by the JSON fuzz harnesses: the input parsed as tapegrad parses untrusted JSON (bounded
// nesting, io/json.h), or nothing when that refuses it; the harnesses test what tapegrad does with
// JSON it accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "tapegrad/error.h"
#include "tapegrad/io/json.h"

inline std::optional<nlohmann::json> parse_json(const uint8_t* data, size_t size) {
  try {
    return tapegrad::io::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  } catch (const tapegrad::Error&) {
    return std::nullopt;
  }
}
