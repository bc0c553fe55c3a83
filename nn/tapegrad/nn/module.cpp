#include "tapegrad/nn/module.h"

#include "tapegrad/error.h"

namespace tapegrad::nn {

template <typename T>
Parameter<T>& Module<T>::add_parameter(const std::string& name, Tensor<T> value) {
  for (const auto& [n, p] : params_) check(n != name, type_name(), ": parameter '", name, "' registered twice");
  params_.emplace_back(name, std::make_unique<Parameter<T>>(prefix_ + name, std::move(value)));
  return *params_.back().second;
}

template <typename T>
void Module<T>::adopt_parameter(const std::string& name, Parameter<T>& external) {
  for (const auto& [n, p] : params_) check(n != name, type_name(), ": parameter '", name, "' registered twice");
  for (const auto& [n, p] : adopted_) check(n != name, type_name(), ": parameter '", name, "' registered twice");
  external.name = prefix_ + name;
  adopted_.emplace_back(name, &external);
}

template <typename T>
void Module<T>::set_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (auto& [name, p] : params_) p->name = prefix_ + name;
  for (auto& [name, p] : adopted_) p->name = prefix_ + name;
  for (auto& [name, child] : children_) child->set_prefix(prefix_ + name + ".");
}

template <typename T>
void Module<T>::collect(std::vector<std::pair<std::string, Parameter<T>*>>& out) {
  for (auto& [name, p] : params_) out.emplace_back(p->name, p.get());
  for (auto& [name, p] : adopted_) out.emplace_back(p->name, p);
  for (auto& [name, child] : children_) child->collect(out);
}

template <typename T>
std::vector<std::pair<std::string, Parameter<T>*>> Module<T>::named_parameters() {
  std::vector<std::pair<std::string, Parameter<T>*>> out;
  collect(out);
  return out;
}

template <typename T>
void Module<T>::collect_modules(const std::string& path, std::vector<std::pair<std::string, Module<T>*>>& out) {
  out.emplace_back(path, this);
  for (auto& [name, child] : children_) child->collect_modules(path.empty() ? name : path + "." + name, out);
}

template <typename T>
std::vector<std::pair<std::string, Module<T>*>> Module<T>::named_modules() {
  std::vector<std::pair<std::string, Module<T>*>> out;
  collect_modules("", out);
  return out;
}

template <typename T>
std::vector<Parameter<T>*> Module<T>::parameters() {
  std::vector<Parameter<T>*> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

template <typename T>
Parameter<T>& Module<T>::parameter(const std::string& dotted_name) {
  std::string known;
  for (auto& [name, p] : named_parameters()) {
    const std::string relative = name.substr(prefix_.size());
    if (relative == dotted_name) return *p;
    known += (known.empty() ? "" : ", ") + relative;
  }
  throw Error(cat(type_name(), ": no parameter named '", dotted_name, "' (", known.empty() ? "it has none" : "have: " + known,
                  ")"));
}

template <typename T>
int64_t Module<T>::num_parameters() {
  int64_t n = 0;
  for (Parameter<T>* p : parameters()) n += p->numel();
  return n;
}

template <typename T>
void Module<T>::zero_grad() {
  for (Parameter<T>* p : parameters()) p->zero_grad();
}

template <typename T>
StateDict<T> Module<T>::state_dict() {
  StateDict<T> s;
  for (auto& [name, p] : named_parameters()) s.emplace_back(name, &p->value());
  return s;
}

template <typename T>
LoadReport Module<T>::load_state_dict(const std::map<std::string, Tensor<T>>& source, const LoadOptions& options) {
  return tapegrad::load_state_dict(source, state_dict(), options, type_name());
}

template <typename T>
void Module<T>::reset_parameters(Rng& rng) {
  for (auto& [name, child] : children_) child->reset_parameters(rng);
}

template <typename T>
void Module<T>::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

template <typename T>
void Module<T>::describe(std::string& out, int indent) const {
  out += type_name() + "(" + options_repr();
  if (!children_.empty()) {
    out += "\n";
    for (const auto& [name, child] : children_) {
      out += std::string(indent + 2, ' ') + "(" + name + "): ";
      child->describe(out, indent + 2);
      out += "\n";
    }
    out += std::string(indent, ' ');
  }
  out += ")";
}

template <typename T>
std::string Module<T>::summary() const {
  std::string out;
  describe(out, 0);
  return out;
}

template class Module<float>;
template class Module<double>;

}  // namespace tapegrad::nn
