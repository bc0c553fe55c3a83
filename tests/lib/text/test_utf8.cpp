#include "support.h"
#include "tapegrad/text/utf8.h"

using namespace tapegrad;
using namespace tapegrad::text;

TEST_CASE("utf8: decodes 1- to 4-byte characters and encodes them back", "[text]") {
  const std::string s = "a\xC3\xA9乒🙂";  // a, é, 乒, 🙂
  const auto cps = decode(s);
  CHECK(cps == std::vector<int32_t>{0x61, 0xE9, 0x4E52, 0x1F642});
  std::string back;
  for (int32_t cp : cps) append(back, cp);
  CHECK(back == s);
  CHECK(characters("乒乓球") == std::vector<std::string>{"乒", "乓", "球"});
}

TEST_CASE("utf8: invalid input is named with its byte offset and reason", "[text][errors]") {
  REQUIRE_THROWS_WITH(decode("ab\xC3(", "f.txt"), "f.txt: invalid UTF-8 at byte 2 (0xC3 0x28): bad continuation byte");
  REQUIRE_THROWS_WITH(decode("\x80"), Catch::Contains("unexpected continuation byte"));
  REQUIRE_THROWS_WITH(decode("\xC0\xAF"), Catch::Contains("overlong encoding"));
  REQUIRE_THROWS_WITH(decode("\xED\xA0\x80"), Catch::Contains("UTF-16 surrogate"));
  REQUIRE_THROWS_WITH(decode("\xF4\x90\x80\x80"), Catch::Contains("above U+10FFFF"));
  REQUIRE_THROWS_WITH(decode("ok\xE4\xB9"), Catch::Contains("at byte 2 (0xE4 0xB9): truncated sequence"));
  size_t bad = 0;
  CHECK_FALSE(is_valid("abc\xFF", &bad));
  CHECK(bad == 3);
}
