#include <cstring>
#include <filesystem>

#include "support.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/safetensors.h"
#include "tapegrad/io/sha256.h"

using namespace tapegrad;
using namespace tapegrad::io;
using namespace tapegrad::testing;

namespace {
std::string sample_file() {
  const auto a = Tensor<float>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto b = Tensor<float>::from({-1}, {1});
  return serialize_safetensors<float>({{"a", a.view()}, {"b", b.view()}}, {{"step", "7"}});
}
// A file with the given JSON header and `data` bytes.
std::string with_header(const std::string& json, size_t data) {
  std::string out(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  return out + json + std::string(data, '\0');
}
}  // namespace

TEST_CASE("safetensors: write then read gives the same tensors, metadata and layout", "[io]") {
  const std::string bytes = sample_file();
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);  // header padded so the data is 8-byte aligned
  const auto st = Safetensors::parse(bytes, "mem");
  CHECK(st.metadata().at("step") == "7");
  CHECK(st.entry("a").shape == Shape{2, 3});
  CHECK(st.entry("b").begin == 24);
  CHECK_THAT(st.get<float>("a").view(), AllClose<float>({1, 2, 3, 4, 5, 6}, 0, 0));
  REQUIRE_THROWS_WITH(st.get<double>("a"), "mem: tensor 'a' is F32, expected F64");
}

TEST_CASE("safetensors: damaged or hostile files are rejected with the reason", "[io][errors]") {
  const std::string good = sample_file();
  SECTION("truncated") {
    REQUIRE_THROWS_WITH(Safetensors::parse(good.substr(0, good.size() - 3), "f"),
                        Catch::Contains("tensor 'b' data_offsets [24, 28] lie outside the data section (25 bytes)"));
    REQUIRE_THROWS_WITH(Safetensors::parse(good.substr(0, 5), "f"), Catch::Contains("too short"));
  }
  SECTION("trailing bytes that belong to no tensor") {
    REQUIRE_THROWS_WITH(Safetensors::parse(good + "xyz", "f"),
                        Catch::Contains("the data section has 31 bytes but the tensors cover 28"));
  }
  SECTION("header length past the end of the file") {
    std::string bad = good;
    const uint64_t huge = 1u << 20;
    std::memcpy(bad.data(), &huge, 8);
    REQUIRE_THROWS_WITH(Safetensors::parse(bad, "f"), Catch::Contains("header length 1048576 is larger than the rest of the file"));
  }
  SECTION("tampered header") {
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header("{not json", 0), "f"), Catch::Contains("not valid JSON"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", 4), "f"),
                        Catch::Contains("unknown dtype 'Q4'"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "f"),
                        Catch::Contains("tensor 'a' has 8 bytes but shape (3) of F32 needs 12"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "f"),
                        Catch::Contains("overlaps"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "f"),
                        Catch::Contains("bytes [0, 4) before tensor 'a' belong to no tensor"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,400]}})", 4), "f"),
                        Catch::Contains("lie outside the data section"));
    REQUIRE_THROWS_WITH(Safetensors::parse(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "f"),
                        Catch::Contains("negative dimension"));
  }
}

TEST_CASE("safetensors: saved atomically, a missing file or a directory is named", "[io][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "tapegrad_test_safetensors";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.safetensors").string();
  const auto t = Tensor<float>::from({3, 4}, {2});
  save_safetensors<float>(path, {{"t", t.view()}});
  CHECK(Safetensors::load(path).get<float>("t")[1] == 4);
  REQUIRE_THROWS_WITH(Safetensors::load((dir / "missing.safetensors").string()), Catch::Contains("no such file"));
  REQUIRE_THROWS_WITH(Safetensors::load(dir.string()), Catch::Contains("it is a directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("sha256: the FIPS 180-4 test vectors", "[io]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
