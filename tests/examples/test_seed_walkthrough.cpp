// The seed walkthrough's numbers, against values computed independently (Python, double).
#include "support.h"
#include "tapegrad/nn/norm.h"
#include "walkthrough.h"

using namespace tapegrad;
using namespace tapegrad::testing;
using namespace tapegrad::walkthrough;

namespace {
const SeedWalkthrough& w() {
  static const SeedWalkthrough instance = run_seed_walkthrough();
  return instance;
}
TensorView<const double> view(const std::vector<double>& v) {
  return {v.data(), {static_cast<int64_t>(v.size())}};
}
}  // namespace

TEST_CASE("seed walkthrough: both segmentations, then the illustrative token ids", "[seed]") {
  REQUIRE(w().segmentations.size() == 2);
  CHECK(w().segmentations[0].words == std::vector<std::string>{"乒乓球拍", "卖", "完", "了"});
  CHECK(w().segmentations[1].words == std::vector<std::string>{"乒乓球", "拍卖", "完", "了"});
  CHECK(w().tokens == std::vector<std::string>{"乒乓球", "拍卖", "完", "了", "。"});
  CHECK(w().ids == std::vector<int32_t>{18432, 9271, 643, 352, 17});
}

TEST_CASE("seed walkthrough: the (1, 5, 4) embedding has exactly the seed's rows", "[seed]") {
  CHECK(w().embeddings.shape() == Shape{1, 5, 4});
  CHECK_THAT(w().embeddings.view(),
             AllClose<double>({0.10, 0.25, -0.05, 0.20, -0.30, 0.15, 0.40, 0.05, 0.12, -0.18, 0.22, 0.31, 0.08, 0.11,
                               -0.14, 0.27, -0.06, 0.09, 0.03, -0.12},
                              0, 0));
}

TEST_CASE("seed walkthrough: LayerNorm and RMSNorm of every row", "[seed]") {
  const std::vector<std::vector<double>> ln{
      {-0.218217890236, 1.091089451180, -1.527525231652, 0.654653670708},
      {-1.492555785315, 0.298511157063, 1.293548347273, -0.099503719021},
      {0.013554416698, -1.612975587029, 0.555731084607, 1.043690085724},
      {0.000000000000, 0.205315773249, -1.505649003824, 1.300333230575},
      {-0.557086014531, 1.299867367239, 0.557086014531, -1.299867367239}};
  const std::vector<std::vector<double>> rms{
      {0.589767824620, 1.474419561549, -0.294883912310, 1.179535649239},
      {-1.144155107095, 0.572077553547, 1.525540142793, 0.190692517849},
      {0.548723748549, -0.823085622823, 1.005993539006, 1.417536350418},
      {0.480240180150, 0.660330247706, -0.840420315263, 1.620810608007},
      {-0.730296743340, 1.095445115010, 0.365148371670, -1.460593486680}};
  const double x_rms[] = {0.169558249578, 0.262202212043, 0.218689277286, 0.166583312490, 0.082158383626};
  for (size_t t = 0; t < 5; ++t) {
    CHECK_THAT(view(w().rows[t].layernorm), AllClose<double>(ln[t], 1e-11, 0));
    CHECK_THAT(view(w().rows[t].rmsnorm), AllClose<double>(rms[t], 1e-11, 0));
    CHECK_THAT(w().rows[t].x_rms, Catch::Matchers::WithinAbs(x_rms[t], 1e-11));
  }
}

TEST_CASE("seed walkthrough: scale drift — x and 10x normalise to the same output", "[seed]") {
  CHECK_THAT(w().drift.x_rms, Catch::Matchers::WithinAbs(std::sqrt(7.5), 1e-15));
  CHECK_THAT(w().drift10.x_rms, Catch::Matchers::WithinAbs(10 * std::sqrt(7.5), 1e-13));
  CHECK_THAT(view(w().drift10.layernorm), AllClose<double>(w().drift.layernorm, 1e-15, 0));
  CHECK_THAT(view(w().drift10.rmsnorm), AllClose<double>(w().drift.rmsnorm, 1e-15, 0));
}

TEST_CASE("seed walkthrough: the comparison table for [1, 2, 3, 4]", "[seed]") {
  const auto& t = w().table;
  REQUIRE(t.size() == 3);
  CHECK(t[0].method == "none (x itself)");
  CHECK_THAT(t[0].mean, Catch::Matchers::WithinAbs(2.5, 1e-15));
  CHECK_THAT(t[0].rms, Catch::Matchers::WithinAbs(2.739, 5e-4));
  CHECK_FALSE(t[0].centred);
  CHECK_THAT(view(t[1].output), AllClose<double>({-1.342, -0.447, 0.447, 1.342}, 5e-4, 0));
  CHECK_THAT(t[1].mean, Catch::Matchers::WithinAbs(0.0, 1e-15));
  CHECK_THAT(t[1].rms, Catch::Matchers::WithinAbs(1.0, 1e-15));
  CHECK(t[1].centred);
  CHECK_THAT(view(t[2].output), AllClose<double>({0.365, 0.730, 1.095, 1.461}, 5e-4, 0));
  CHECK_THAT(t[2].mean, Catch::Matchers::WithinAbs(0.913, 5e-4));
  CHECK_THAT(t[2].rms, Catch::Matchers::WithinAbs(1.0, 1e-15));
  CHECK_FALSE(t[2].centred);
}

TEST_CASE("seed walkthrough: the pre-norm block's stages", "[seed]") {
  const auto& b = w().block;
  REQUIRE(b.size() == 7);
  // Structure: X1 = X + Attn(Norm1(X)), X2 = X1 + MLP(Norm2(X1)); the norm outputs have RMS 1.
  for (size_t i = 0; i < 20; ++i) {
    CHECK(b[3].values[i] == b[0].values[i] + b[2].values[i]);
    CHECK(b[6].values[i] == b[3].values[i] + b[5].values[i]);
  }
  CHECK_THAT(b[1].rms, Catch::Matchers::WithinAbs(1.0, 1e-12));
  CHECK_THAT(b[4].rms, Catch::Matchers::WithinAbs(1.0, 1e-12));
  // The seed's numbers (block seed 7): pinned so any change to init or the modules shows here.
  CHECK_THAT(view(std::vector<double>(b[6].values.begin(), b[6].values.begin() + 4)),
             AllClose<double>({0.802, 0.183, -0.508, -0.174}, 5e-4, 0));
  CHECK_THAT(b[6].rms, Catch::Matchers::WithinAbs(0.348, 5e-4));
}

TEST_CASE("seed walkthrough: max_match falls back to single characters", "[seed]") {
  CHECK(max_match("乒乓好", {"乒乓"}, true) == std::vector<std::string>{"乒乓", "好"});
  CHECK(max_match("好乒乓", {"乒乓"}, false) == std::vector<std::string>{"好", "乒乓"});
}

TEST_CASE("seed walkthrough: the regulator — X and 10 X through one block, for every registered norm", "[seed]") {
  const auto w = walkthrough::run_seed_walkthrough();
  REQUIRE(w.regulator.size() == nn::norm_names().size());
  for (const auto& r : w.regulator) {
    INFO(r.norm << ": attention reads x" << r.attn_in_10x / r.attn_in << ", MLP x" << r.mlp_in_10x / r.mlp_in
                << ", stream x" << r.stream_10x / r.stream);
    // The residual stream is not regulated: it carries 10 X plus the sub-layers' outputs.
    CHECK(r.stream_10x / r.stream > 4);
    CHECK(r.stream_10x / r.stream < 11);
    if (r.norm == "none") {
      CHECK_THAT(r.attn_in_10x / r.attn_in, Catch::Matchers::WithinRel(10.0, 1e-12));  // the sub-layers read 10 X
      CHECK_THAT(r.stream_10x / r.stream, Catch::Matchers::WithinAbs(9.706, 1e-3));
    } else if (r.norm == "dyt") {
      // Squashed, not rescaled: the 10x input comes out 6.78x larger (tanh(0.5 x) starts to saturate).
      CHECK_THAT(r.attn_in_10x / r.attn_in, Catch::Matchers::WithinAbs(6.782, 1e-3));
      CHECK(r.attn_in_diff > 0.1);
    } else {
      // Scale-invariant (eps = 0): the very same input, to rounding.
      CHECK(r.attn_in_diff < 1e-12);
      CHECK_THAT(r.attn_in_10x / r.attn_in, Catch::Matchers::WithinRel(1.0, 1e-12));
      CHECK_THAT(r.mlp_in_10x / r.mlp_in, Catch::Matchers::WithinAbs(1.0, 0.05));
    }
  }
  CHECK(walkthrough::run_seed_walkthrough(7, "rmsnorm").regulator.size() == 1);
}
