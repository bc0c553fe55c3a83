// SHA-256 (FIPS 180-4), to record and verify checkpoint file contents: the hex digest equals
// what `sha256sum` prints.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::io {

std::string sha256_hex(std::string_view bytes);

}  // namespace tapegrad::io
