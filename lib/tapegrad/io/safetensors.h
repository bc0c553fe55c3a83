// safetensors (https://github.com/huggingface/safetensors): the checkpoint format, so PyTorch and
// numpy users can read tapegrad's weights with `safetensors.torch.load_file` or a few lines of
// numpy. Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the tensors' bytes, row-major, offsets relative to the end of the header.
//
// Reading validates everything a damaged or hostile file could get wrong and names the problem:
// header length past the end of the file, malformed JSON, unknown dtype, a shape that disagrees
// with its byte range, ranges out of bounds, overlapping or leaving holes.
#pragma once

#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/tensor.h"

namespace tapegrad::io {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as stored: "F32", "F64"
  Shape shape;
  size_t begin = 0, end = 0;  // byte range within the data section
};

class Safetensors {
 public:
  // Parses and validates `bytes`; `what` names the source in errors (usually the path).
  static Safetensors parse(std::string bytes, const std::string& what);
  static Safetensors load(const std::string& path);

  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  const SafetensorsEntry& entry(const std::string& name) const;  // throws if absent
  // Copies a tensor out. Its stored dtype must be T's (F32 for float, F64 for double).
  template <typename T>
  Tensor<T> get(const std::string& name) const;

 private:
  std::string what_;
  std::string bytes_;
  size_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;  // in file order of their data
  std::map<std::string, std::string> metadata_;
};

template <typename T>
using NamedTensors = std::vector<std::pair<std::string, TensorView<const T>>>;

// The file's bytes: header padded with spaces to a multiple of 8, tensors in the given order.
template <typename T>
std::string serialize_safetensors(const NamedTensors<T>& tensors, const std::map<std::string, std::string>& metadata = {});

// Written atomically (see file.h).
template <typename T>
void save_safetensors(const std::string& path, const NamedTensors<T>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace tapegrad::io
