#include "tapegrad/lm/corpus.h"

#include <array>
#include <string_view>
#include <vector>

#include "tapegrad/random.h"

namespace tapegrad::lm {

namespace {

using Words = std::vector<std::string_view>;

const Words kNames = {"Ada", "Bo", "Chen", "Dara", "Emil", "Fei", "Gus", "Hana", "Ivo", "Juno", "Kai", "Lin"};
struct Noun {
  std::string_view one, many;
};
const std::vector<Noun> kAnimals = {{"fox", "foxes"},   {"heron", "herons"}, {"cat", "cats"},   {"wolf", "wolves"},
                                    {"mouse", "mice"},  {"crow", "crows"},   {"goat", "goats"}, {"bee", "bees"}};
const std::vector<Noun> kThings = {{"lamp", "lamps"},   {"boat", "boats"}, {"key", "keys"},     {"book", "books"},
                                   {"paddle", "paddles"}, {"ball", "balls"}, {"letter", "letters"}, {"map", "maps"}};
const Words kAdjectives = {"small", "old", "quiet", "red", "clever", "tired", "bright", "heavy", "strange", "gentle"};
const Words kPlaces = {"by the river", "in the garden", "on the hill", "near the market", "under the bridge",
                       "at the station", "in the old mill", "behind the school"};
struct Verb {
  std::string_view one, many, past;
};
const std::vector<Verb> kVerbs = {{"runs", "run", "ran"},     {"sleeps", "sleep", "slept"}, {"sings", "sing", "sang"},
                                  {"waits", "wait", "waited"}, {"hides", "hide", "hid"},     {"looks", "look", "looked"}};
const std::vector<Verb> kTransitive = {{"finds", "find", "found"},    {"carries", "carry", "carried"},
                                       {"mends", "mend", "mended"},   {"sells", "sell", "sold"},
                                       {"paints", "paint", "painted"}, {"loses", "lose", "lost"}};
const Words kAdverbs = {"slowly", "quickly", "again", "at last", "without a word", "twice"};
const Words kNumbers = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
const Words kTimes = {"In the morning", "At noon", "That evening", "Before dawn", "On Sunday", "Later"};

const Words kZhNames = {"小明", "小红", "老王", "李华", "张伟", "阿美"};
const Words kZhTimes = {"今天", "昨天", "明天", "早上", "晚上", "周末"};
const Words kZhPlaces = {"公园", "学校", "商店", "河边", "图书馆", "市场"};
const Words kZhActs = {"打乒乓球", "看书", "买苹果", "写信", "唱歌", "画画", "跑步", "喝茶"};
const Words kZhFeel = {"很高兴", "有点累", "非常忙", "很安静"};

// Draws: every random choice is its own declaration, so the text is the same under every compiler.
// (Several draws inside one expression run in an order the language leaves open: GCC evaluated
// them last to first, clang first to last, and the corpus differed. Where a sentence draws several
// words, they are declared last word first: the order GCC used when the corpus was pinned.)
class TaleWriter {
 public:
  explicit TaleWriter(uint64_t seed) : rng_(seed) {}

  std::string tale(int number) {
    std::string out = "== Tale " + std::to_string(number) + " ==\n";
    // A tale has a cast of two, who recur: a name and an animal.
    hero_ = pick(kNames);
    animal_ = pick_index(kAnimals.size());
    const int sentences = 4 + static_cast<int>(rng_.below(5));
    for (int s = 0; s < sentences; ++s) {
      const uint64_t kind = rng_.below(10);
      if (kind < 4) out += narrative();
      else if (kind < 6) out += dialogue();
      else if (kind < 8) out += chinese();
      else if (kind < 9) out += arithmetic();
      else out += counting();
      out += s + 1 < sentences && rng_.below(3) == 0 ? "\n" : (s + 1 < sentences ? " " : "\n");
    }
    return out + "\n";
  }

 private:
  std::string_view pick(const Words& w) { return w[rng_.below(w.size())]; }
  size_t pick_index(size_t n) { return static_cast<size_t>(rng_.below(n)); }
  static std::string cap(std::string_view s) {
    std::string r(s);
    if (!r.empty() && r[0] >= 'a' && r[0] <= 'z') r[0] = static_cast<char>(r[0] - 'a' + 'A');
    return r;
  }

  std::string subject(bool& plural) {
    plural = rng_.below(3) == 0;
    const Noun& a = kAnimals[rng_.below(3) == 0 ? pick_index(kAnimals.size()) : animal_];
    if (plural) {  // "two" to "ten"
      const std::string_view n = kNumbers[1 + pick_index(kNumbers.size() - 1)];
      return std::string(n) + " " + std::string(pick(kAdjectives)) + " " + std::string(a.many);
    }
    return "the " + std::string(pick(kAdjectives)) + " " + std::string(a.one);
  }

  std::string narrative() {
    switch (rng_.below(4)) {
      case 0: {
        bool plural;
        const std::string s = subject(plural);
        const Verb& v = kVerbs[pick_index(kVerbs.size())];
        return cap(s) + " " + std::string(plural ? v.many : v.one) + " " + std::string(pick(kPlaces)) + ".";
      }
      case 1: {
        const Verb& v = kTransitive[pick_index(kTransitive.size())];
        const Noun& t = kThings[pick_index(kThings.size())];
        const std::string_view place = pick(kPlaces), adjective = pick(kAdjectives), time = pick(kTimes);  // see draws
        return std::string(time) + ", " + std::string(hero_) + " " + std::string(v.past) + " the " +
               std::string(adjective) + " " + std::string(t.one) + " " + std::string(place) + ".";
      }
      case 2: {
        const Verb& v = kVerbs[pick_index(kVerbs.size())];
        const std::string_view adverb = pick(kAdverbs), reply = kVerbs[pick_index(kVerbs.size())].past;  // see draws
        return "When the " + std::string(kAnimals[animal_].one) + " " + std::string(v.past) + ", " + std::string(hero_) +
               " " + std::string(reply) + " " + std::string(adverb) + ".";
      }
      default: {
        const Noun& t = kThings[pick_index(kThings.size())];
        const size_t n = 1 + pick_index(kNumbers.size() - 1);
        return std::string(hero_) + " has " + std::string(kNumbers[n]) + " " + std::string(t.many) + " and the " +
               std::string(kAnimals[animal_].one) + " has " + std::string(kNumbers[0]) + " " + std::string(t.one) + ".";
      }
    }
  }

  std::string dialogue() {
    const std::string_view other = pick(kNames);
    const Noun& t = kThings[pick_index(kThings.size())];
    switch (rng_.below(3)) {
      case 0: return "\"Where is the " + std::string(t.one) + "?\" asked " + std::string(other) + ".";
      case 1: return "\"The " + std::string(kAnimals[animal_].one) + " is " + std::string(pick(kPlaces)) + ",\" said " + std::string(hero_) + ".";
      default: {
        const std::string_view adverb = pick(kAdverbs), done = kTransitive[pick_index(kTransitive.size())].past;  // see draws
        return "\"I " + std::string(done) + " it " + std::string(adverb) + ",\" said " + std::string(other) + ".";
      }
    }
  }

  std::string chinese() {
    if (rng_.below(8) == 0) return "乒乓球拍卖完了。";
    const std::string_view who = pick(kZhNames);
    if (rng_.below(3) == 0) {
      const std::string_view feeling = pick(kZhFeel), when = pick(kZhTimes);  // see draws
      return std::string(who) + std::string(when) + std::string(feeling) + "。";
    }
    const std::string_view act = pick(kZhActs), place = pick(kZhPlaces), when = pick(kZhTimes);  // see draws
    return std::string(who) + std::string(when) + "在" + std::string(place) + std::string(act) + "。";
  }

  std::string arithmetic() {
    const uint64_t a = rng_.below(50), b = rng_.below(50);
    if (rng_.below(2) == 0) return std::to_string(a) + " + " + std::to_string(b) + " = " + std::to_string(a + b) + ".";
    const uint64_t x = std::max(a, b), y = std::min(a, b);
    return std::to_string(x) + " - " + std::to_string(y) + " = " + std::to_string(x - y) + ".";
  }

  std::string counting() {
    const size_t start = pick_index(6);
    std::string s = std::string(hero_) + " counts:";
    for (size_t i = start; i < start + 4; ++i) s += " " + std::string(kNumbers[i]);
    return s + ".";
  }

  Rng rng_;
  std::string_view hero_;
  size_t animal_ = 0;
};

std::string build() {
  TaleWriter writer(20261130);
  std::string text;
  for (int n = 1; text.size() < 250'000; ++n) text += writer.tale(n);
  return text;
}

}  // namespace

const std::string& default_corpus() {
  static const std::string corpus = build();
  return corpus;
}

}  // namespace tapegrad::lm
