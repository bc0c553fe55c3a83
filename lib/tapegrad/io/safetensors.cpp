#include "tapegrad/io/safetensors.h"

#include "tapegrad/io/json.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tapegrad/io/file.h"

namespace tapegrad::io {

static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian data");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

template <typename T>
constexpr const char* dtype_name() {
  return std::is_same_v<T, float> ? "F32" : "F64";
}

size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes{{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                                                   {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

}  // namespace

Safetensors Safetensors::parse(std::string bytes, const std::string& what) {
  Safetensors st;
  st.what_ = what;
  const auto fail = [&](const auto&... why) { throw Error(cat(what, ": ", why...)); };
  if (bytes.size() < 8) fail("too short for a safetensors file (", bytes.size(), " bytes; the header length alone is 8)");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8)
    fail("header length ", n, " is larger than the rest of the file (", bytes.size() - 8, " bytes): truncated or not safetensors");
  if (n > kMaxHeaderBytes) fail("header length ", n, " exceeds the ", kMaxHeaderBytes, "-byte limit");
  const nlohmann::json header = parse_json(std::string_view(bytes).substr(8, n), what + ": header");
  if (!header.is_object()) fail("header must be a JSON object, got ", header.type_name());
  st.data_start_ = 8 + n;
  const size_t data_size = bytes.size() - st.data_start_;

  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail("__metadata__ must be an object of strings");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) fail("__metadata__ value for '", k, "' is not a string");
        st.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
      fail("tensor '", name, "' needs dtype, shape and data_offsets");
    SafetensorsEntry e;
    e.name = name;
    if (!info["dtype"].is_string()) fail("tensor '", name, "' dtype is not a string");
    e.dtype = info["dtype"].get<std::string>();
    const size_t elem = dtype_size(e.dtype);
    if (elem == 0) fail("tensor '", name, "' has unknown dtype '", e.dtype, "'");
    const auto& shape = info["shape"];
    if (!shape.is_array() || shape.size() > Shape::kMaxRank)
      fail("tensor '", name, "' shape must be an array of at most ", Shape::kMaxRank, " dimensions, got ", json_excerpt(shape));
    for (const auto& d : shape) {
      if (!d.is_number_unsigned()) fail("tensor '", name, "' shape ", json_excerpt(shape), " has a non-integer or negative dimension");
      // Compared as unsigned before the signed read: 2^63 must not wrap into a negative size.
      if (d.get<uint64_t>() > static_cast<uint64_t>(Shape::kMaxElements))
        fail("tensor '", name, "' shape ", json_excerpt(shape), " has a dimension of ", d.get<uint64_t>(),
             "; at most ", Shape::kMaxElements, " elements are allowed");
      try {
        e.shape.push_back(d.get<int64_t>());
      } catch (const Error& err) {
        fail("tensor '", name, "' ", err.what());
      }
    }
    const auto& off = info["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail("tensor '", name, "' data_offsets must be [begin, end], got ", json_excerpt(off));
    e.begin = off[0].get<size_t>();
    e.end = off[1].get<size_t>();
    if (e.begin > e.end || e.end > data_size)
      fail("tensor '", name, "' data_offsets [", e.begin, ", ", e.end, "] lie outside the data section (", data_size, " bytes)");
    const size_t expect = static_cast<size_t>(e.shape.numel()) * elem;
    if (e.end - e.begin != expect)
      fail("tensor '", name, "' has ", e.end - e.begin, " bytes but shape ", e.shape, " of ", e.dtype, " needs ", expect);
    st.entries_.push_back(std::move(e));
  }
  // The byte ranges must tile the data section exactly: no overlaps, no holes.
  std::sort(st.entries_.begin(), st.entries_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  size_t at = 0;
  for (size_t i = 0; i < st.entries_.size(); ++i) {
    const auto& e = st.entries_[i];
    if (e.begin < at) fail("tensor '", e.name, "' overlaps tensor '", st.entries_[i - 1].name, "'");
    if (e.begin > at) fail("bytes [", at, ", ", e.begin, ") before tensor '", e.name, "' belong to no tensor");
    at = e.end;
  }
  if (at != data_size) fail("the data section has ", data_size, " bytes but the tensors cover ", at);
  st.bytes_ = std::move(bytes);
  return st;
}

Safetensors Safetensors::load(const std::string& path) { return parse(read_file(path), path); }

bool Safetensors::contains(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e.name == name; });
}

const SafetensorsEntry& Safetensors::entry(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  throw Error(cat(what_, ": no tensor named '", name, "'"));
}

template <typename T>
Tensor<T> Safetensors::get(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  check(e.dtype == dtype_name<T>(), what_, ": tensor '", name, "' is ", e.dtype, ", expected ", dtype_name<T>());
  Tensor<T> t(e.shape);
  if (e.end > e.begin) std::memcpy(t.data(), bytes_.data() + data_start_ + e.begin, e.end - e.begin);
  return t;
}

template <typename T>
std::string serialize_safetensors(const NamedTensors<T>& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check(name != "__metadata__", "safetensors: '__metadata__' is reserved");
    check(!header.contains(name), "safetensors: duplicate tensor name '", name, "'");
    const size_t n = static_cast<size_t>(t.numel()) * sizeof(T);
    header[name] = {{"dtype", dtype_name<T>()},
                    {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const uint64_t n = json.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  out += json;
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : tensors)
    out.append(reinterpret_cast<const char*>(t.data()), static_cast<size_t>(t.numel()) * sizeof(T));
  return out;
}

template <typename T>
void save_safetensors(const std::string& path, const NamedTensors<T>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata));
}

template Tensor<float> Safetensors::get<float>(const std::string&) const;
template Tensor<double> Safetensors::get<double>(const std::string&) const;
template std::string serialize_safetensors<float>(const NamedTensors<float>&, const std::map<std::string, std::string>&);
template std::string serialize_safetensors<double>(const NamedTensors<double>&, const std::map<std::string, std::string>&);
template void save_safetensors<float>(const std::string&, const NamedTensors<float>&,
                                      const std::map<std::string, std::string>&);
template void save_safetensors<double>(const std::string&, const NamedTensors<double>&,
                                       const std::map<std::string, std::string>&);

}  // namespace tapegrad::io
