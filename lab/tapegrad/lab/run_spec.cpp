#include "tapegrad/lab/run_spec.h"

#include "tapegrad/error.h"
#include "tapegrad/lab/grid.h"

namespace tapegrad::lab {

const std::vector<IdentityPart>& run_identity() {
  static const std::vector<IdentityPart> parts = {
      {"norm", "", "norms", 5},  {"placement", "", "placements", 0}, {"lr", "lr", "lrs", 3},
      {"seed", "s", "seeds", 4}, {"layers", "L", "layers", 1},        {"warmup", "w", "warmups", 2}};
  return parts;
}

const IdentityPart* identity_part(const std::string& key) {
  for (const IdentityPart& p : run_identity())
    if (p.key == key) return &p;
  return nullptr;
}

const nlohmann::json& RunSpec::at(const std::string& key) const {
  const auto it = values.find(key);
  check(it != values.end(), "run ", values.empty() ? std::string("(empty)") : id(), " has no value for '", key, "'");
  return it->second;
}

std::string RunSpec::text(const std::string& key) const { return setting_text(at(key)); }

std::string RunSpec::id() const {
  std::string id;
  for (const IdentityPart& p : run_identity()) {
    const auto it = values.find(p.key);
    id += (id.empty() ? "" : "_") + p.prefix + (it == values.end() ? "?" : setting_text(it->second));
  }
  for (const auto& [key, value] : settings()) id += "_" + key + "=" + value;
  return id;
}

std::map<std::string, std::string> RunSpec::settings() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : values)
    if (!identity_part(key)) out[key] = setting_text(value);
  return out;
}

std::string RunSpec::settings_text(const char* separator) const {
  std::string s;
  for (const auto& [key, value] : settings()) s += (s.empty() ? "" : separator) + key + "=" + value;
  return s;
}

}  // namespace tapegrad::lab
