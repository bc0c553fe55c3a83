// Strictly typed reads of JSON fields, for configuration files written by people or damaged on
// disk. nlohmann's get<int64_t>() on a floating-point value static_casts it — undefined
// behaviour for 1e45 (found by tests/fuzz/fuzz_checkpoint_json). Here an integer field must hold
// a JSON integer within the target type's range; a floating-point field any number; a bool or a
// string its own type. Every failure names the field.
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "tapegrad/error.h"
#include "tapegrad/io/json.h"

namespace tapegrad::io {

// Reads j[key] into `out` if present (leaves `out` untouched otherwise). `what` prefixes errors:
// "config: field 'dim' ..." ("" for none).
template <typename V>
void read_field(const nlohmann::json& j, const char* key, V& out, const char* what) {
  if (!j.contains(key)) return;
  const nlohmann::json& v = j.at(key);
  const auto wrong = [&](const char* expected) {
    // "got string \"wide\"", "got number 1.5"; a null is its own name ("got null").
    return Error(cat(what, *what ? ": " : "", "field '", key, "' must be ", expected, ", got ",
                     v.is_null() ? std::string("null") : cat(v.type_name(), " ", json_excerpt(v))));
  };
  if constexpr (std::is_same_v<V, bool>) {
    if (!v.is_boolean()) throw wrong("true or false");
    out = v.get<bool>();
  } else if constexpr (std::is_same_v<V, std::string>) {
    if (!v.is_string()) throw wrong("a string");
    out = v.get<std::string>();
  } else if constexpr (std::is_integral_v<V>) {
    if (!v.is_number_integer()) throw wrong("an integer");
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<V>::max())
                          : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<V>::min()) &&
                                (std::is_unsigned_v<V> || v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<V>::max()));
    if (!fits) throw wrong("an integer in range");
    out = v.is_number_unsigned() ? static_cast<V>(v.get<uint64_t>()) : static_cast<V>(v.get<int64_t>());
  } else {
    static_assert(std::is_floating_point_v<V>, "read_field: unsupported field type");
    if (!v.is_number()) throw wrong("a number");
    out = static_cast<V>(v.get<double>());
  }
}

}  // namespace tapegrad::io
