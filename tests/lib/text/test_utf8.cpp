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

TEST_CASE("utf8: a stream of byte pieces comes out as whole characters", "[text]") {
  Utf8Stream s;
  // 乒 = E4 B9 92 and 🙂 = F0 9F 99 82, cut inside both, as byte-level BPE tokens may be.
  CHECK(s.push("a\xE4") == "a");
  CHECK(s.push("\xB9") == "");
  CHECK(s.push("\x92\xF0\x9F") == "乒");
  CHECK(s.push("\x99\x82!") == "🙂!");
  CHECK(s.finish() == "");
  // A byte that can start or continue nothing is replaced at once, one U+FFFD per byte; so is a
  // lead byte whose sequence breaks off, and a sequence still open at the end.
  CHECK(s.push("x\xFFy") == "x\xEF\xBF\xBDy");
  CHECK(s.push("\xE4\xB9z") == "\xEF\xBF\xBD\xEF\xBF\xBDz");
  CHECK(s.push("\xC3") == "");
  CHECK(s.finish() == "\xEF\xBF\xBD");
  CHECK(is_valid(s.push("\xED\xA0\x80") + s.finish()));  // a surrogate is never let through
}
