#include "tapegrad/io/json.h"

#include "tapegrad/error.h"

namespace tapegrad::io {

namespace {
struct TooDeep {};  // thrown out of the parser's callback, caught right below
}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what, int max_depth) {
  const auto limit_depth = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const TooDeep&) {
    throw Error(cat(what, ": JSON nested deeper than ", max_depth, " levels"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(what, ": not valid JSON (", std::string(e.what()).substr(0, 200), ")"));
  }
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

std::string string_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace tapegrad::io
