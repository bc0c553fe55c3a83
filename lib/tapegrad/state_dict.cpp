#include "tapegrad/state_dict.h"

#include <set>

#include "tapegrad/error.h"
#include "tapegrad/io/safetensors.h"
#include "tapegrad/optim/optimizer.h"

namespace tapegrad {

namespace {

// "a, b, c" — at most 8 names, then how many more: an error message stays one readable line
// however many keys a hostile file holds.
std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 8; ++i) s += cat(i ? ", " : "", "'", names[i].substr(0, 120), "'");
  if (names.size() > 8) s += cat(" and ", names.size() - 8, " more");
  return s;
}

// What a target and a source disagree on, named; throws one Error listing all of it.
struct Mismatch {
  LoadReport report;
  std::vector<std::string> shape_errors;
  void throw_if_any(bool strict, const std::string& what) const {
    std::string msg;
    if (!shape_errors.empty()) msg += shape_errors.front() + (shape_errors.size() > 1 ? cat(" (and ", shape_errors.size() - 1, " more)") : "");
    if (strict && !report.missing.empty())
      msg += cat(msg.empty() ? "" : "; ", "missing ", report.missing.size(), " tensor(s): ", list(report.missing));
    if (strict && !report.unexpected.empty())
      msg += cat(msg.empty() ? "" : "; ", "unexpected ", report.unexpected.size(), " tensor(s): ", list(report.unexpected));
    check(msg.empty(), what, ": ", msg);
  }
};

// How a source holds a key: absent, or with this dtype and shape.
struct SourceKey {
  bool present = false;
  std::string dtype;
  Shape shape;
};

// Every disagreement between `target` and a source, found before anything is written.
template <typename T, typename Find>
Mismatch compare(const StateDict<T>& target, Find find, const std::vector<std::string>& source_names) {
  const std::string dtype = std::is_same_v<T, float> ? "F32" : "F64";
  Mismatch m;
  std::set<std::string> wanted;
  for (const auto& [name, t] : target) {
    wanted.insert(name);
    const SourceKey k = find(name);
    if (!k.present)
      m.report.missing.push_back(name);
    else if (k.dtype != dtype)
      m.shape_errors.push_back(cat("tensor '", name, "' is ", k.dtype, ", expected ", dtype));
    else if (!(k.shape == t->shape()))
      m.shape_errors.push_back(cat("tensor '", name, "' has shape ", k.shape, " but the model needs ", t->shape()));
  }
  for (const std::string& name : source_names)
    if (!wanted.count(name)) m.report.unexpected.push_back(name);
  return m;
}

}  // namespace

template <typename T>
LoadReport load_state_dict(const std::map<std::string, Tensor<T>>& source, const StateDict<T>& target,
                           const LoadOptions& options, const std::string& what) {
  std::vector<std::string> names;
  for (const auto& [name, t] : source) names.push_back(name);
  const Mismatch m = compare(target, [&](const std::string& name) {
    const auto it = source.find(name);
    return it == source.end() ? SourceKey{} : SourceKey{true, std::is_same_v<T, float> ? "F32" : "F64", it->second.shape()};
  }, names);
  m.throw_if_any(options.strict, what);
  for (const auto& [name, t] : target)
    if (const auto it = source.find(name); it != source.end()) *t = it->second;
  return m.report;
}

namespace io {

template <typename T>
void save_state_dict(const std::string& path, const StateDict<T>& state, const std::map<std::string, std::string>& metadata) {
  NamedTensors<T> views;
  for (const auto& [name, t] : state) views.emplace_back(name, t->view());
  save_safetensors(path, views, metadata);
}

template <typename T>
LoadReport load_state_dict(const std::string& path, const StateDict<T>& target, const LoadOptions& options) {
  const Safetensors st = Safetensors::load(path);
  std::vector<std::string> names;
  for (const auto& e : st.entries()) names.push_back(e.name);
  const Mismatch m = compare(target, [&](const std::string& name) {
    if (!st.contains(name)) return SourceKey{};
    const SafetensorsEntry& e = st.entry(name);
    return SourceKey{true, e.dtype, e.shape};
  }, names);
  m.throw_if_any(options.strict, path);
  for (const auto& [name, t] : target)
    if (st.contains(name)) *t = st.get<T>(name);
  return m.report;
}

template <typename T>
void save_optimizer(const std::string& path, Optimizer<T>& optimizer) {
  save_state_dict(path, optimizer.state_dict(), {{"step", std::to_string(optimizer.steps())}});
}

template <typename T>
void load_optimizer(const std::string& path, Optimizer<T>& optimizer) {
  const Safetensors st = Safetensors::load(path);
  const auto it = st.metadata().find("step");
  check(it != st.metadata().end(), path, ": no 'step' in the metadata (not an optimizer state file)");
  const std::string& text = it->second;
  int64_t step = 0;
  const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  check(digits, path, ": metadata 'step' must be a whole number below 10^18, got '", text.substr(0, 40), "'");
  step = std::stoll(text);
  load_state_dict(path, optimizer.state_dict());
  optimizer.set_steps(step);
}

template void save_optimizer<float>(const std::string&, Optimizer<float>&);
template void save_optimizer<double>(const std::string&, Optimizer<double>&);
template void load_optimizer<float>(const std::string&, Optimizer<float>&);
template void load_optimizer<double>(const std::string&, Optimizer<double>&);

template void save_state_dict<float>(const std::string&, const StateDict<float>&, const std::map<std::string, std::string>&);
template void save_state_dict<double>(const std::string&, const StateDict<double>&, const std::map<std::string, std::string>&);
template LoadReport load_state_dict<float>(const std::string&, const StateDict<float>&, const LoadOptions&);
template LoadReport load_state_dict<double>(const std::string&, const StateDict<double>&, const LoadOptions&);

}  // namespace io

template LoadReport load_state_dict<float>(const std::map<std::string, Tensor<float>>&, const StateDict<float>&,
                                           const LoadOptions&, const std::string&);
template LoadReport load_state_dict<double>(const std::map<std::string, Tensor<double>>&, const StateDict<double>&,
                                            const LoadOptions&, const std::string&);

}  // namespace tapegrad
