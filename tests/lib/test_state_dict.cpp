// State dicts: by-name copies with every disagreement named at once, safetensors files, and the
// optimizers' state with their step count.
#include <filesystem>

#include "support.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/sgd.h"
#include "tapegrad/state_dict.h"

using namespace tapegrad;
using tapegrad::testing::randn;
namespace fs = std::filesystem;

namespace {
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tapegrad_test_state_" + name)).string();
}
}  // namespace

TEST_CASE("state dict: load by name, strict and not", "[state_dict]") {
  Tensor<float> a(Shape{2, 3}), b(Shape{4});
  const StateDict<float> target{{"a", &a}, {"b", &b}};
  std::map<std::string, Tensor<float>> source{{"a", Tensor<float>::full({2, 3}, 1.5f)}, {"b", Tensor<float>::full({4}, 2)}};
  CHECK(load_state_dict(source, target).missing.empty());
  CHECK(a[5] == 1.5f);
  CHECK(b[0] == 2.0f);

  source.erase("b");
  source["c"] = Tensor<float>(Shape{1});
  REQUIRE_THROWS_WITH(load_state_dict(source, target, {}, "src"),
                      "src: missing 1 tensor(s): 'b'; unexpected 1 tensor(s): 'c'");
  a.fill(0);
  const LoadReport r = load_state_dict(source, target, {.strict = false});
  CHECK(r.missing == std::vector<std::string>{"b"});
  CHECK(r.unexpected == std::vector<std::string>{"c"});
  CHECK(a[0] == 1.5f);  // what was there was loaded

  source["a"] = Tensor<float>(Shape{3, 2});
  a.fill(7);
  REQUIRE_THROWS_WITH(load_state_dict(source, target, {.strict = false}, "src"),
                      "src: tensor 'a' has shape (3,2) but the model needs (2,3)");
  CHECK(a[0] == 7.0f);  // nothing is written when anything disagrees
}

TEST_CASE("state dict: a long list of bad names stays one bounded line", "[state_dict][errors]") {
  Tensor<float> a(Shape{1});
  std::map<std::string, Tensor<float>> source;
  for (int i = 0; i < 1000; ++i) source["extra" + std::to_string(1000 + i)] = Tensor<float>(Shape{1});
  source[std::string(10000, 'x')] = Tensor<float>(Shape{1});
  try {
    load_state_dict<float>(source, {{"a", &a}});
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.size() < 1500);
    CHECK_THAT(msg, Catch::Matchers::Contains("unexpected 1001 tensor(s): 'extra1000'") &&
                        Catch::Matchers::Contains("and 993 more") && Catch::Matchers::Contains("missing 1 tensor(s): 'a'"));
  }
}

TEST_CASE("state dict: safetensors round trip, dtype and shape errors name the file", "[state_dict][io]") {
  const std::string path = temp_path("rt.safetensors");
  Tensor<double> w = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  io::save_state_dict<double>(path, {{"w", &w}}, {{"note", "hi"}});
  Tensor<double> back(Shape{2, 3});
  CHECK(io::load_state_dict<double>(path, {{"w", &back}}).missing.empty());
  CHECK(back.at(1, 2) == 6.0);
  Tensor<float> as_float(Shape{2, 3});
  REQUIRE_THROWS_WITH(io::load_state_dict<float>(path, {{"w", &as_float}}), path + ": tensor 'w' is F64, expected F32");
  Tensor<double> wrong(Shape{6});
  REQUIRE_THROWS_WITH(io::load_state_dict<double>(path, {{"w", &wrong}}),
                      path + ": tensor 'w' has shape (2,3) but the model needs (6)");
  fs::remove(path);
}

TEST_CASE("state dict: optimizers save and restore moments and step, a resumed step is bitwise", "[state_dict][optim]") {
  const std::string path = temp_path("opt.safetensors");
  const auto run = [](Parameter<double>& p, Optimizer<double>& opt, int from, int to) {
    for (int s = from; s < to; ++s) {
      for (int64_t i = 0; i < p.numel(); ++i) p.grad()[i] = std::sin(p.value()[i] * (s + 1));
      opt.step(0.1);
    }
  };
  for (const bool adam : {true, false}) {
    INFO((adam ? "AdamW" : "SGD"));
    Parameter<double> p("w", randn({3, 4}, 1)), q("w", p.value());
    auto make = [&](Parameter<double>& x) -> std::unique_ptr<Optimizer<double>> {
      if (adam) return std::make_unique<AdamW<double>>(std::vector<Parameter<double>*>{&x});
      return std::make_unique<SGD<double>>(std::vector<Parameter<double>*>{&x}, SGDOptions{.momentum = 0.9});
    };
    auto straight = make(p);
    run(p, *straight, 0, 5);
    auto first = make(q);
    run(q, *first, 0, 3);
    io::save_optimizer(path, *first);
    auto resumed = make(q);
    io::load_optimizer(path, *resumed);
    CHECK(resumed->steps() == 3);
    run(q, *resumed, 3, 5);
    for (int64_t i = 0; i < p.numel(); ++i) REQUIRE(p.value()[i] == q.value()[i]);
  }
  fs::remove(path);
}
