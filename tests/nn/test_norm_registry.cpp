// Every registered norm, as a module, without naming one: a norm added to the registry
// (nn/tapegrad/nn/norm.cpp) is gradchecked, compared across precisions and re-initialised here
// as the test stands. Its own test file pins its numbers; the decoder, checkpoint and lab tests
// GENERATE over the registry too.
#include <set>

#include "nn_support.h"
#include "tapegrad/nn/norm.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("norm registry: names are unique and parse back, unknown names list the known ones", "[nn][registry]") {
  std::set<std::string> names;
  std::string known;
  for (const NormEntry* entry : norm_registry().entries()) {
    const NormEntry& e = *entry;
    CHECK(names.insert(std::string(e.name)).second);
    CHECK(!e.label.empty());
    CHECK(!e.description.empty());
    CHECK(to_string(NormKind::parse(e.name)) == e.name);
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  CHECK(NormKind() == NormKind::none());
  CHECK(NormKind::none().is_none());
  REQUIRE_THROWS_WITH(NormKind::parse("batchnorm"), "unknown norm 'batchnorm'; known: " + known);
  CHECK_THAT(norm_help(), Catch::Matchers::Contains("layernorm: "));
}

TEST_CASE("norm registry: open to a program's own norms, handles stable, names checked", "[nn][registry]") {
  const NormKind layernorm = NormKind::parse("layernorm");
  const NormEntry* const first = &layernorm.entry();
  // Many registrations: no handle taken earlier moves (the registry never reallocates under one).
  std::vector<NormKind> added;
  for (int i = 0; i < 100; ++i)
    added.push_back(register_norm<Identity>("test-copy-" + std::to_string(i), "Copy", "the identity, registered by a test"));
  CHECK(&layernorm.entry() == first);
  CHECK(NormKind::parse("layernorm") == layernorm);
  CHECK(NormKind::parse("test-copy-7") == added[7]);
  CHECK(to_string(added[99]) == "test-copy-99");
  CHECK(norm_label("test-copy-3") == "Copy");
  auto m = make_norm<float>(added[0], {.dim = 4});
  CHECK(m->type_name() == "Identity");
  REQUIRE_THROWS_WITH(register_norm<Identity>("layernorm", "x", "y"),
                      "norm name 'layernorm' is taken (by: " + std::string(layernorm.entry().description) +
                          "); choose another name");
  REQUIRE_THROWS_WITH(register_norm<Identity>("Bad Name", "x", "y"),
                      "norm name 'Bad Name' must be 1-64 characters of a-z, 0-9, '-' and '_' (it is typed on command "
                      "lines and stored in files)");
  REQUIRE_THROWS_WITH(register_norm<Identity>("", "x", "y"), Catch::Matchers::StartsWith("norm name '' must be"));
}

TEST_CASE("gradcheck: every registered norm as a module", "[nn][gradcheck][registry]") {
  const NormKind kind = GENERATE(from_range(all_norms()));
  const bool bias = GENERATE(true, false);
  INFO("norm " << to_string(kind) << ", bias " << bias);
  auto m = make_norm<double>(kind, {.dim = 7, .eps = 1e-5, .bias = bias});
  randomize(*m, 1, 0.5);
  for (Parameter<double>* p : m->parameters())  // away from 0: gains near 1, as trained
    for (int64_t i = 0; i < p->numel(); ++i) p->value()[i] += 1.0;
  Parameter<double> x("x", randn({3, 2, 7}, 2));
  require_gradcheck(gradcheck_module("norm " + to_string(kind), *m, x, [&](Var<double> v) { return m->forward(v); }));
}

TEST_CASE("every registered norm: float32 agrees with float64", "[nn][precision][registry]") {
  const NormKind kind = GENERATE(from_range(all_norms()));
  INFO("norm " << to_string(kind));
  auto mf = make_norm<float>(kind, {.dim = 64});
  auto md = make_norm<double>(kind, {.dim = 64});
  randomize(*md, 3, 0.3);
  auto pf = mf->parameters();
  auto pd = md->parameters();
  REQUIRE(pf.size() == pd.size());
  for (size_t i = 0; i < pd.size(); ++i) {
    for (int64_t k = 0; k < pd[i]->numel(); ++k) pd[i]->value()[k] += 1.0;
    pf[i]->value() = pd[i]->value().cast<float>();
  }
  const Tensor<double> xd = randn({4, 5, 64}, 4, 2.0);
  const Tensor<float> xf = xd.cast<float>();
  Tape<float> tf;
  Tape<double> td;
  const auto yf = mf->forward(tf.constant(xf)).value();
  const auto yd = md->forward(td.constant(xd)).value();
  double scale = 0;
  for (int64_t i = 0; i < yd.numel(); ++i) scale = std::max(scale, std::abs(yd[i]));
  for (int64_t i = 0; i < yd.numel(); ++i) REQUIRE(std::abs(yf[i] - yd[i]) <= 1e-5 * scale);
}

TEST_CASE("every registered norm: reset_parameters restores its initial values", "[nn][init][registry]") {
  const NormKind kind = GENERATE(from_range(all_norms()));
  INFO("norm " << to_string(kind));
  auto m = make_norm<double>(kind, {.dim = 9});
  std::vector<Tensor<double>> initial;
  for (Parameter<double>* p : m->parameters()) initial.push_back(p->value());
  randomize(*m, 5);
  Rng rng(1);
  m->reset_parameters(rng);
  auto ps = m->parameters();
  for (size_t i = 0; i < ps.size(); ++i)
    CHECK(std::equal(ps[i]->value().span().begin(), ps[i]->value().span().end(), initial[i].span().begin()));
}
