// An open registry: named entries (norms, optimizers, tokenizers, ...) that the library registers
// at first use and that a program or another library may add to before using them by name — as
// torch.nn modules or Python entry points are found by name.
//
// Each registry is a function-local static (registries.h of each layer), so it exists before the
// first lookup in any translation unit. Entries live in a std::deque: adding one never moves the
// others, so handles (`const Entry*`, NormKind, ...) taken earlier stay valid for the program's
// life. Names are unique: a second entry under a name is an Error naming both descriptions.
// Adding and finding are guarded by a mutex, so registering from a static initialiser or another
// thread is safe; iteration (entries()) works on a snapshot of the pointers.
//
// Entry is any struct with `std::string name` and `std::string description` (one line, for
// --help); everything else (factories, labels, flags) is the registry's own business.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/error.h"

namespace tapegrad {

template <typename Entry>
class Registry {
 public:
  // `what` names an entry in messages: "norm", "optimizer".
  explicit Registry(std::string what) : what_(std::move(what)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds `e`; its address is stable. Throws when the name is empty, malformed or taken.
  const Entry& add(Entry e) {
    check(valid_name(e.name), what_, " name '", std::string_view(e.name).substr(0, 64),
          "' must be 1-64 characters of a-z, 0-9, '-' and '_' (it is typed on command lines and stored in files)");
    std::lock_guard lock(mutex_);
    for (const Entry& o : entries_)
      check(o.name != e.name, what_, " name '", e.name, "' is taken (by: ", o.description,
            "); choose another name");
    return entries_.emplace_back(std::move(e));
  }

  // The entry named `name`, or nullptr.
  const Entry* find(std::string_view name) const {
    std::lock_guard lock(mutex_);
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  // The entry named `name`; throws "unknown norm 'x'; known: layernorm, rmsnorm, ...".
  const Entry& at(std::string_view name) const {
    if (const Entry* e = find(name)) return *e;
    throw Error(cat("unknown ", what_, " '", name.substr(0, 64), "'; known: ", known()));
  }

  // Every entry, in registration order.
  std::vector<const Entry*> entries() const {
    std::lock_guard lock(mutex_);
    std::vector<const Entry*> list;
    for (const Entry& e : entries_) list.push_back(&e);
    return list;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> list;
    for (const Entry* e : entries()) list.push_back(e->name);
    return list;
  }
  // "a, b, c": for messages.
  std::string known() const {
    std::string s;
    for (const Entry* e : entries()) s += (s.empty() ? "" : ", ") + e->name;
    return s;
  }
  // "name: description" lines, for --help.
  std::string help() const {
    std::string s;
    for (const Entry* e : entries()) s += (s.empty() ? "" : "\n") + e->name + ": " + e->description;
    return s;
  }
  const std::string& what() const { return what_; }

 private:
  static bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (const char c : name)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
    return true;
  }

  std::string what_;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;
};

}  // namespace tapegrad
