#include <atomic>
#include <cmath>
#include <set>
#include <sstream>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>

#include "tapegrad/lm/corpus.h"
#include "tapegrad/lm/divergence.h"
#include "tapegrad/cli/cli.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lab/report.h"
#include "support.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/lab/sweep_settings.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/text/lexical.h"

using namespace tapegrad;
using namespace tapegrad::lab;
using namespace tapegrad::lm;
namespace fs = std::filesystem;

namespace {

double rms_of(TensorView<const float> v) {
  double s = 0;
  for (int64_t i = 0; i < v.numel(); ++i) s += static_cast<double>(v[i]) * v[i];
  return std::sqrt(s / static_cast<double>(v.numel()));
}

// A run named by its identity settings (run_spec.h).
RunSpec spec(const std::string& norm, const std::string& placement, double lr, uint64_t seed, int64_t layers,
             int64_t warmup) {
  return RunSpec{{{"norm", norm}, {"placement", placement}, {"lr", lr}, {"seed", seed}, {"layers", layers}, {"warmup", warmup}}};
}

SweepOptions tiny_sweep(const std::string& out) {
  SweepOptions o;
  o.base.model.dim = 16, o.base.model.heads = 2, o.base.model.ctx = 16, o.base.batch = 2, o.base.steps = 8, o.base.warmup = 2;
  o.base.eval_iters = 2, o.base.threads = 1;
  set_axis(o, "norm", {"layernorm", "none"});
  o.base.lr = 1e-3, o.base.seed = 1, o.base.model.layers = 2;
  o.evals = 2;
  o.out = out;
  return o;
}

fs::path fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tapegrad_test_lab_" + name);
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("lab: the probe's statistics equal their definitions recomputed by hand", "[lab]") {
  nn::DecoderConfig c;
  c.vocab_size = 11, c.ctx = 6, c.layers = 2, c.heads = 2, c.dim = 8;
  nn::Decoder<float> model(c, 5);
  Rng rng(1);
  for (auto* p : model.parameters()) p->value() = Tensor<float>::randn(p->shape(), rng, 0.5);
  std::vector<int32_t> ids{1, 4, 2, 9, 0, 3, 7, 7, 1, 10, 5, 2};
  Tape<float> tape;
  nn::DecoderProbe probe;
  const auto out = model.forward(tape, ids, 2, 6, {}, &probe);

  // By hand: x0 = wte[ids] + wpe[positions], then block by block.
  Tape<float> t2;
  const std::vector<int32_t> positions{0, 1, 2, 3, 4, 5};
  Var<float> x = add(model.wte().forward(t2, ids, {2, 6}), model.wpe().forward(t2, positions, {6}));
  for (int64_t i = 0; i < 2; ++i) {
    CHECK_THAT(probe.blocks[i].residual_rms, Catch::Matchers::WithinRel(rms_of(x.value()), 1e-6));
    CHECK_THAT(probe.blocks[i].norm_out_rms,
               Catch::Matchers::WithinRel(rms_of(model.block(i).norm1().forward(x).value()), 1e-6));
    model.block(i).attn().forward(model.block(i).norm1().forward(x));  // what the block's attention read
    CHECK(probe.blocks[i].attention_logit == model.block(i).attn().last_max_logit());
    x = model.block(i).forward(x);
  }
  CHECK_THAT(probe.final_residual_rms, Catch::Matchers::WithinRel(rms_of(x.value()), 1e-6));
  const auto z = out.logits.value();
  double sum = 0, mx = -1e30;
  for (int64_t i = 0; i < z.numel(); ++i) sum += z[i], mx = std::max(mx, static_cast<double>(z[i]));
  CHECK_THAT(probe.output_logit_mean, Catch::Matchers::WithinRel(sum / z.numel(), 1e-9));
  CHECK(probe.output_logit_max == mx);
}

TEST_CASE("lab: per-layer gradient norms and update ratios equal their definitions", "[lab]") {
  TrainConfig c;
  c.model.layers = 2, c.model.heads = 2, c.model.dim = 16, c.model.ctx = 16, c.batch = 2, c.warmup = 1, c.steps = 5, c.threads = 1;
  c.instrument = true;
  const std::string& text = default_corpus();
  auto tok = build_tokenizer(c, text, "corpus");
  Trainer t(c, tok, make_token_data(c, *tok, text));
  std::vector<Tensor<float>> before;
  for (auto* p : t.model().parameters()) before.push_back(p->value());
  t.train_step();
  const StepStats& s = *t.last_stats();
  double g1 = 0, d1 = 0, b1 = 0, dall = 0, ball = 0;
  size_t k = 0;
  for (auto& [name, p] : t.model().named_parameters()) {
    const auto& w0 = before[k++];
    double dd = 0, bb = 0;
    for (int64_t i = 0; i < p->numel(); ++i) {
      dd += std::pow(static_cast<double>(p->value()[i]) - w0[i], 2);
      bb += std::pow(static_cast<double>(w0[i]), 2);
    }
    dall += dd, ball += bb;
    if (name.rfind("blocks.1.", 0) == 0) {
      for (int64_t i = 0; i < p->numel(); ++i) g1 += std::pow(static_cast<double>(p->grad()[i]), 2);
      d1 += dd, b1 += bb;
    }
  }
  CHECK_THAT(s.layers[1].update_ratio, Catch::Matchers::WithinRel(std::sqrt(d1 / b1), 1e-6));
  CHECK_THAT(s.update_ratio, Catch::Matchers::WithinRel(std::sqrt(dall / ball), 1e-6));
  CHECK(s.layers[1].grad_norm > 0);
  // Clipping is folded into the optimizer step, so the gradients left in the parameters are the
  // raw (pre-clip) ones the statistics describe.
  CHECK_THAT(s.layers[1].grad_norm, Catch::Matchers::WithinRel(std::sqrt(g1), 1e-6));
  CHECK(t.last_global_grad_norm() > s.layers[1].grad_norm);
}

TEST_CASE("lab: divergence detection — forced NaN names the first non-finite quantity", "[lab]") {
  DivergenceDetector d(1.5, 2);
  StepStats s;
  s.layers.resize(3);
  StepResult r;
  r.step = 1, r.loss = 4.0, r.grad_norm = 1.0;
  CHECK_FALSE(d.check(r, &s));
  r.step = 2;
  s.layers[1].residual_rms = std::numeric_limits<double>::quiet_NaN();
  s.layers[2].attention_logit = std::numeric_limits<double>::infinity();
  const auto div = d.check(r, &s);
  REQUIRE(div);
  CHECK(div->cause == "nan");
  CHECK(div->quantity == "blocks.1.residual_rms");
  CHECK(div->step == 2);
}

TEST_CASE("lab: divergence detection — loss above the threshold after warmup, with the culprit", "[lab]") {
  DivergenceDetector d({.factor = 1.5, .patience = 1}, 2);
  StepStats s;
  s.layers.resize(2);
  s.layers[0].attention_logit = 2, s.layers[1].attention_logit = 3;
  StepResult r{1, 4.0, 1e-3, 1.0, 0, 0, true};
  CHECK_FALSE(d.check(r, &s));
  r.step = 2, r.loss = 7.0;  // still in warmup: tolerated
  CHECK_FALSE(d.check(r, &s));
  r.step = 3, r.loss = 6.5;
  s.layers[1].attention_logit = 300;
  const auto div = d.check(r, &s);
  REQUIRE(div);
  CHECK(div->cause == "loss_explosion");
  CHECK(div->quantity == "blocks.1.attention_logit");
}

TEST_CASE("lab: divergence needs `patience` steps above the threshold, a spike that recovers is counted", "[lab]") {
  DivergenceDetector d({.factor = 1.5, .patience = 3, .spike_factor = 1.3}, 0);
  StepResult r{1, 4.0, 1e-3, 1.0, 0, 0, true};
  CHECK_FALSE(d.check(r, nullptr));
  const auto step = [&](int64_t s, double loss) {
    r.step = s, r.loss = loss;
    return d.check(r, nullptr);
  };
  CHECK_FALSE(step(2, 3.5));
  CHECK_FALSE(step(3, 3.4));
  // The LayerNorm run's jump: 3.4 -> 8 for two steps (above 1.5 x 4), then back: one spike, no divergence.
  CHECK_FALSE(step(4, 8.0));
  CHECK_FALSE(step(5, 7.5));
  CHECK(d.spikes() == 0);    // not recovered yet
  CHECK_FALSE(step(6, 3.3));
  CHECK(d.spikes() == 1);
  // A jump that stays: diverged after 3 steps, dated to the first.
  CHECK_FALSE(step(7, 9.0));
  CHECK_FALSE(step(8, 9.5));
  const auto div = step(9, 10.0);
  REQUIRE(div);
  CHECK(div->step == 7);
  CHECK(div->cause == "loss_explosion");
  CHECK_THAT(div->detail, Catch::StartsWith("loss above 1.5 x initial 4 from step 7 for 3 steps (10 at step 9)"));
  CHECK(d.spikes() == 1);  // the one that never came back is the divergence, not a spike
}

TEST_CASE("lab: an exploding learning rate diverges, is recorded, and the sweep goes on", "[lab]") {
  const fs::path out = fresh("explode");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"none"});
  set_axis(o, "lr", {1e-3, 50.0});
  o.base.clip = 0;
  std::vector<std::string> seen;
  const auto runs = run_sweep(o, [&](const RunRecord& r, bool, int, int) { seen.push_back(r.spec.id()); });
  REQUIRE(runs.size() == 2);
  CHECK_FALSE(runs[0].diverged);
  CHECK(std::isfinite(runs[0].final_val_loss));
  CHECK(runs[1].diverged);
  CHECK(runs[1].divergence_step >= 1);
  CHECK_FALSE(runs[1].divergence_quantity.empty());
  CHECK(std::isnan(runs[1].final_val_loss));
  CHECK(seen.size() == 2);
  fs::remove_all(out);
}

// on_tail marks the moment a core falls free: once, when the first of two workers finds no run left,
// so every run but the other worker's has finished; never with one worker or nothing to train.
TEST_CASE("lab: the sweep's tail is announced once, when one worker is left training", "[lab]") {
  const fs::path out = fresh("tail");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "lr", {1e-3, 2e-3});  // 4 runs
  o.jobs = 2;
  std::atomic<int> done{0}, tails{0}, done_at_tail{-1};
  const auto count = [&](const RunRecord&, bool, int, int) { ++done; };
  const auto runs = run_sweep(o, count, nullptr, nullptr, [&] { done_at_tail = done.load(), ++tails; });
  REQUIRE(runs.size() == 4);
  CHECK(tails == 1);
  CHECK(done_at_tail >= 3);  // the run the other worker trains may have finished too
  tails = 0;
  run_sweep(o, count, nullptr, nullptr, [&] { ++tails; });  // all recorded: nothing trains
  fs::remove_all(out);
  o.jobs = 1;
  run_sweep(o, count, nullptr, nullptr, [&] { ++tails; });
  CHECK(tails == 0);
  fs::remove_all(out);
}

// The lab's default list is the registry: a short sweep over every registered norm, none named here.
TEST_CASE("lab: a short sweep trains every registered norm and reports each", "[lab][registry]") {
  const fs::path out = fresh("registry");
  SweepOptions o = tiny_sweep(out.string());
  o.axes = SweepOptions{}.axes;
  std::vector<std::string> norms;
  for (const auto& v : axis_values(o, "norm")) norms.push_back(v.get<std::string>());
  REQUIRE(norms == nn::norm_names());
  const auto runs = run_sweep(o, [](const RunRecord&, bool, int, int) {});
  REQUIRE(runs.size() == norms.size());
  for (const auto& r : runs) {
    INFO(r.spec.text("norm"));
    CHECK_FALSE(r.diverged);
    CHECK(std::isfinite(r.final_val_loss));
  }
  const Summary s = summarize(runs);
  REQUIRE(s.groups.size() == norms.size());
  ReportContext ctx;
  const std::string md = report_markdown(s, runs, ctx);
  for (const std::string& n : norms) CHECK_THAT(md, Catch::Matchers::Contains(n + "/pre"));
  fs::remove_all(out);
}

TEST_CASE("lab: the sweep's time is split into its parts, per job, and the rest is idle", "[lab]") {
  SweepTiming t;
  t.trained = 4, t.jobs = 2, t.wall_s = 100;
  t.runs = {.steps_s = 170, .instrument_s = 10, .eval_s = 12, .sharpness_s = 0, .setup_s = 2, .record_s = 2};
  t.prepare_s = 1, t.gather_s = 0.5, t.report_s = 3;
  CHECK(t.step_share() == Approx(0.80));        // (170 - 10) / 2 jobs / 100 s
  CHECK(t.idle_s() == Approx(100 - 93 - 4.5));  // 186 s of runs / 2, and the command's own parts
  const std::string md = timing_markdown(t);
  CHECK_THAT(md, Catch::Contains("| training steps, pure | 80.0 | 80.0 % |"));
  CHECK_THAT(md, Catch::Contains("| instrumentation (per-layer statistics) | 5.0 | 5.0 % |"));
  CHECK_THAT(md, Catch::Contains("| idle cores while the last runs finish | 2.5 | 2.5 % |"));
  CHECK_THAT(timing_line(t), Catch::StartsWith("time:    100 s, 80.0 % of it pure training steps (4 runs, 2 at a time); the rest: "
                                               "instrumentation (per-layer statistics) 5.0 %, evaluation 6.0 %,"));
  CHECK_THAT(timing_line(t), !Catch::Contains("sharpness"));  // nothing spent: not listed
  SweepTiming none;
  none.wall_s = 0.3;  // a folder reported again
  CHECK(timing_line(none) == "time:    0.3 s, no run trained (each was in the folder already)");
}

TEST_CASE("lab: an interrupted sweep resumes, redoing only unfinished runs", "[lab]") {
  const fs::path out = fresh("resume");
  SweepOptions o = tiny_sweep(out.string());
  const auto first = run_sweep(o, [](const RunRecord&, bool, int, int) {});
  REQUIRE(first.size() == 2);
  // Forget the second run, as if the sweep had been killed during it.
  write_runs(out.string() + "/runs.csv", {first[0]});
  fs::remove(out / "records" / (first[1].spec.id() + ".csv"));
  std::vector<std::pair<std::string, bool>> seen;
  SweepTiming timing;
  const auto second = run_sweep(o, [&](const RunRecord& r, bool skipped, int, int) { seen.emplace_back(r.spec.id(), skipped); },
                                nullptr, &timing);
  REQUIRE(seen.size() == 2);
  // The timing counts the run this call trained, and only it: its steps, evaluations and files.
  CHECK(timing.trained == 1);
  CHECK(timing.runs.steps_s > 0);
  CHECK(timing.runs.eval_s > 0);
  CHECK((timing.runs.record_s > 0 && timing.runs.setup_s > 0 && timing.prepare_s > 0 && timing.gather_s > 0));
  CHECK(timing.runs.instrument_s < timing.runs.steps_s);
  CHECK(timing.runs.steps_s <= second[1].wall_s);
  CHECK(seen[0] == std::pair{first[0].spec.id(), true});
  CHECK(seen[1] == std::pair{first[1].spec.id(), false});
  // Deterministic: the redone run reproduces its losses exactly.
  CHECK(second[1].final_val_loss == first[1].final_val_loss);
  CHECK(read_runs(out.string() + "/runs.csv").size() == 2);
  fs::remove_all(out);
}

TEST_CASE("lab: the grid lives in sweep.json — continued alone, grown by new values, refused only where runs must agree", "[lab]") {
  const fs::path out = fresh("settings");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"none"});
  const auto first = run_sweep(o, [](const RunRecord&, bool, int, int) {});
  REQUIRE(first.size() == 1);
  const nlohmann::json grid = nlohmann::json::parse(io::read_file((out / "sweep.json").string()));
  CHECK(grid["format"] == 2);
  CHECK(grid["axes"]["lr"] == nlohmann::json::array({0.001}));
  CHECK(grid["train"]["steps"] == 8);
  // `compare_norms --out DIR` alone: whatever its defaults, the stored grid is the sweep.
  SweepOptions bare = tiny_sweep(out.string());
  set_axis(bare, "lr", {5e-3, 7e-3}), bare.base.steps = 99;
  const SweepOptions resumed = resolve_sweep(bare, {});
  CHECK(axis_values(resumed, "lr") == std::vector<nlohmann::json>{1e-3});
  CHECK(axis_values(resumed, "norm") == std::vector<nlohmann::json>{"none"});
  CHECK(resumed.axes.empty());
  CHECK(resumed.base.steps == 8);
  // Values given on a later command add to the axes (one more lr, another qk-norm); the runs
  // already trained keep their ids and are reused; every run of the grid is reported.
  SweepOptions more = tiny_sweep(out.string());
  more.base.lr = 2e-3, more.base.model.qk_norm = nn::NormKind::parse("rmsnorm"), more.base.threads = 2;
  const SweepOptions grown = resolve_sweep(more, {"lr", "qk-norm"});
  // Axes in the sweep's order: the other settings outermost, then the run identity's.
  REQUIRE(grown.axes.size() == 2);
  CHECK(grown.axes[0] == Axis{"qk-norm", {"none", "rmsnorm"}});
  CHECK(grown.axes[1] == Axis{"lr", {1e-3, 2e-3}});
  std::vector<std::pair<std::string, bool>> seen;
  const auto all = run_sweep(grown, [&](const RunRecord& r, bool skipped, int, int) { seen.emplace_back(r.spec.id(), skipped); });
  REQUIRE(all.size() == 4);
  CHECK(seen[0] == std::pair{first[0].spec.id(), true});
  CHECK(all[0].final_val_loss == first[0].final_val_loss);
  CHECK(all[2].spec.id() == "none_pre_lr0.001_s1_L2_w2_qk-norm=rmsnorm");
  CHECK(all[2].spec.settings() == std::map<std::string, std::string>{{"qk-norm", "rmsnorm"}});
  CHECK(all[2].spec.at("qk-norm") == "rmsnorm");
  CHECK(all[2].spec.get<double>("lr") == 1e-3);
  CHECK(read_runs((out / "runs.csv").string()).size() == 4);
  // A smaller request still reports the whole grid (the runs.csv rows carry their settings).
  CHECK(run_sweep(o, [](const RunRecord&, bool, int, int) {}).size() == 4);
  // The data, the measurements and the lab's judgements are the folder's: a change is refused.
  o.base.eval_iters = 3;
  REQUIRE_THROWS_WITH(run_sweep(o, [](const RunRecord&, bool, int, int) {}),
                      out.string() + " holds runs trained with --eval-iters 2, this sweep asks for 3: a folder's runs share "
                      "it, so give another --out, or the same setting (" + out.string() + "/sweep.json)");
  o.base.eval_iters = 2, o.divergence_patience = 3;
  REQUIRE_THROWS_WITH(run_sweep(o, [](const RunRecord&, bool, int, int) {}),
                      Catch::Matchers::StartsWith(out.string() + " holds runs trained with --divergence-patience 10, this sweep asks for 3"));
  fs::remove_all(out);
}

TEST_CASE("lab: swept values are checked, exact and file-name safe, in flags and in records", "[lab]") {
  CHECK(setting_text(nlohmann::json(1e-3)) == "0.001");
  // Not 0.001 (no silent reuse of that run): all 17 digits, reading back exactly.
  CHECK(setting_text(nlohmann::json(1.0000004e-3)) == "0.0010000003999999999");
  CHECK(setting_value("lr", "0.0010000003999999999") == 1.0000004e-3);
  CHECK(setting_text(nlohmann::json(int64_t{64})) == "64");
  CHECK(setting_text(nlohmann::json(false)) == "false");
  CHECK(setting_value("beta2", "0.95") == 0.95);
  CHECK(setting_value("tie-head", "false") == false);
  REQUIRE_THROWS_WITH(setting_value("qk-norm", "../x"), "--qk-norm '../x': a swept value must be 1 to 64 of [A-Za-z0-9.+-]");
  REQUIRE_THROWS_WITH(setting_value("dim", "6.5"), "--dim '6.5': must be a whole number in decimal (an optional '-', "
                                                    "then digits without leading zeros), got '6.5'");
  // Read one way only: "020" is neither 20 nor octal 16, "+5" no number a flag would take.
  REQUIRE_THROWS_WITH(setting_value("dim", "020"), Catch::Contains("--dim '020': must be a whole number in decimal"));
  REQUIRE_THROWS_WITH(setting_value("seed", "+5"), Catch::Contains("--seed '+5': must be a whole number in decimal"));
  REQUIRE_THROWS_WITH(setting_value("beta2", "nan"), "--beta2 'nan': must be a finite number");
  // The lab's classes come from the settings table: the run identity's settings are axis rows,
  // and a setting the lab sets for each run is no flag of a sweep.
  for (const IdentityPart& p : run_identity()) {
    const std::string& key = p.key;
    INFO(key);
    REQUIRE(lm::find_setting(key) != nullptr);
    CHECK(lm::find_setting(key)->sweep == lm::SweepRole::kAxis);
    CHECK(is_axis(key));
  }
  CHECK(!is_axis("min-lr"));
  CHECK(!is_axis("data"));
  CHECK(is_axis("dyt-alpha"));
  // A combination that cannot train is named before anything trains.
  SweepOptions o = tiny_sweep(fresh("combination").string());
  set_axis(o, "dim", {16, 15});
  REQUIRE_THROWS_WITH(expand(o), "heads 2 does not divide dim 15 (in the runs with dim=15)");
  // A grid is counted before it is built: 1000 lrs x 1000 seeds is refused, not allocated.
  set_axis(o, "dim", {16});
  std::vector<nlohmann::json> lrs, seeds;
  for (int i = 0; i < 1000; ++i) lrs.push_back(1e-3 + i * 1e-6), seeds.push_back(i);
  set_axis(o, "lr", lrs), set_axis(o, "seed", seeds);
  REQUIRE_THROWS_WITH(expand(o), "a sweep of 1000 lr x 1000 seed x 2 norm is more than 100000 runs");
  // Values are typed once, as the setting is: a norm by its registered name, a count whole.
  REQUIRE_THROWS_WITH(set_axis(o, "norm", {"groupnorm"}), Catch::StartsWith("--norm 'groupnorm': unknown norm 'groupnorm'; known: layernorm, rmsnorm,"));
  REQUIRE_THROWS_WITH(set_axis(o, "layers", {2.5}), Catch::StartsWith("--layers '2.5': "));
  REQUIRE_THROWS_WITH(set_axis(o, "data", {"x.txt"}), "--data cannot be an axis of a sweep");
  CHECK(canonical_value("seed", 3) == nlohmann::json(uint64_t{3}));
  CHECK(canonical_value("lr", 1) == nlohmann::json(1.0));
  // A value given twice, in any spelling, is one run where two were meant: refused, never dropped.
  REQUIRE_THROWS_WITH(set_axis(o, "lr", {1e-3, 1e-3}), "--lr 0.001 is given twice (in any spelling, a value of an axis is one run): give each value once");
  REQUIRE_THROWS_WITH(set_axis(o, "seed", {1, uint64_t{1}}), Catch::StartsWith("--seed 1 is given twice"));
  REQUIRE_THROWS_WITH(set_axis(o, "norm", {"rmsnorm", "layernorm", "rmsnorm"}), Catch::StartsWith("--norm rmsnorm is given twice"));
}

TEST_CASE("lab: the sweep's own settings are one table: each range checked on each side, stored and read back", "[lab]") {
  std::vector<std::string> keys;
  for (const SweepSetting& s : sweep_settings()) keys.push_back(s.key);
  CHECK(keys == std::vector<std::string>{"min-lr-ratio", "divergence-factor", "divergence-patience", "spike-factor", "evals",
                                         "jobs", "out", "plots", "python"});
  SweepOptions o;
  // The front end's rows: a switch and two texts, checked by type on each side.
  const SweepSetting& plots = *find_sweep_setting("plots");
  CHECK(plots.type_name().empty());
  CHECK(plots.former == "plot");
  REQUIRE_THROWS_WITH(set_sweep_setting(plots, o, nlohmann::json("yes"), "lab.sweep: "),
                      "lab.sweep: plots must be true or false, got \"yes\"");
  REQUIRE_THROWS_WITH(set_sweep_setting(plots, o, std::string("1"), "--"), "--plots must be true or false, got '1'");
  set_sweep_setting(plots, o, nlohmann::json(false), "");
  CHECK(!o.plots);
  const SweepSetting& out = *find_sweep_setting("out");
  CHECK(out.type_name() == "TEXT");
  REQUIRE_THROWS_WITH(set_sweep_setting(out, o, nlohmann::json(""), "lab.sweep: "),
                      "lab.sweep: out must be non-empty text of at most 4096 bytes, got 0 bytes");
  REQUIRE_THROWS_WITH(set_sweep_setting(out, o, nlohmann::json(3), "lab.sweep: "), "lab.sweep: out must be text, got 3");
  REQUIRE_THROWS_WITH(set_sweep_setting(out, o, std::string(5000, 'a'), "--"), Catch::StartsWith("--out must be non-empty text"));
  set_sweep_setting(out, o, std::string("runs/x y"), "--");
  CHECK(o.out == "runs/x y");
  set_sweep_setting(*find_sweep_setting("python"), o, nlohmann::json(""), "");  // the first that imports matplotlib
  for (const SweepSetting& s : sweep_settings()) {
    if (s.type_name() != "NUMBER") continue;
    INFO(s.key);
    const bool whole = !std::holds_alternative<double SweepOptions::*>(s.member);
    const auto number = [&](double v) { return whole ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v); };
    REQUIRE_THROWS_WITH(set_sweep_setting(s, o, number(s.low - 1), "--"), Catch::StartsWith(cat("--", s.key, " must be in [")));
    REQUIRE_THROWS_WITH(set_sweep_setting(s, o, number(s.high * 2), ""), Catch::StartsWith(s.key + " must be in ["));
    if (whole) REQUIRE_THROWS_WITH(set_sweep_setting(s, o, nlohmann::json(2.5), "--"), "--" + s.key + " must be a whole number, got 2.5");
    REQUIRE_THROWS_WITH(set_sweep_setting(s, o, nlohmann::json("3"), "--"), Catch::StartsWith("--" + s.key + " must be a"));
    REQUIRE_THROWS_WITH(set_sweep_setting(s, o, std::string("nan"), "--"), Catch::StartsWith("--" + s.key));
    REQUIRE_THROWS_WITH(set_sweep_setting(s, o, std::string("0x10"), "--"), Catch::StartsWith("--" + s.key));
    set_sweep_setting(s, o, std::string(s.key == "min-lr-ratio" ? "0.25" : "7"), "--");
    CHECK(sweep_setting_json(s, o) == (s.key == "min-lr-ratio" ? nlohmann::json(0.25) : nlohmann::json(7)));
  }
  // The shared rows go to sweep.json and come back; jobs is the caller's.
  SweepOptions back;
  read_shared_sweep_settings(shared_sweep_settings(o), back, "sweep.json");
  CHECK(shared_sweep_settings(back) == shared_sweep_settings(o));
  for (const char* mine : {"jobs", "out", "plots", "python"}) CHECK(!shared_sweep_settings(o).contains(mine));
  REQUIRE_THROWS_WITH(read_shared_sweep_settings(nlohmann::json{{"evals", -1}}, back, "D/sweep.json"),
                      "D/sweep.json: evals must be in [0, 1000000000], got -1");
}

TEST_CASE("lab: a setting the user named wins over a recipe, at its default value too, and the folder keeps it", "[lab][recipes]") {
  const fs::path out = fresh("given");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"dyt"});
  o.base.recipe = "dyt-paper-transfer";
  const RunSpec spec = expand(o).at(0);
  CHECK(!run_config(o, spec, 1).model.tie_head);  // the recipe unties the head
  SweepOptions named = o;
  name_given(named, {"tie-head", "out", "jobs"});  // --tie-head (its default, true)
  CHECK(named.given == std::set<std::string>{"tie-head"});
  named = resolve_sweep(named, {"tie-head"});
  CHECK(named.given == std::set<std::string>{"tie-head"});
  // The sweep itself resolves with every setting named: that names nothing new.
  CHECK(resolve_sweep(o, every_setting()).given.empty());
  CHECK(run_config(named, spec, 1).model.tie_head);
  CHECK(!run_config(named, spec, 1).model.dyt_beta);  // the recipe's other settings still apply
  // sweep.json keeps it: the folder continued alone still ties the head.
  fs::create_directories(out);
  io::write_file_atomic((out / "sweep.json").string(), grid_json(named).dump(2));
  const SweepOptions again = resolve_sweep(o, {});
  CHECK(again.given == std::set<std::string>{"tie-head"});
  CHECK(run_config(again, spec, 1).model.tie_head);
  CHECK_THAT(reproduce_command(named, default_sweep()), Catch::Contains("--tie-head true"));
  // Through the whole sweep (which resolves with every setting named): the recipe reaches the
  // runs of its target, and leaves the named setting alone.
  fs::remove_all(out);
  o.base.steps = 2, o.base.warmup = 1;
  named.base.steps = 2, named.base.warmup = 1;
  const auto proof_config = [&] {
    for (const auto& entry : fs::directory_iterator(out / "records"))
      if (entry.path().extension() == ".json")
        return nlohmann::json::parse(io::read_file(entry.path().string()))["config"];
    return nlohmann::json();
  };
  run_sweep(o, [](const RunRecord&, bool, int, int) {});
  nlohmann::json c = proof_config();
  CHECK(c["embed-scale"] == "learned");
  CHECK(c["embed-scale-positions"] == true);
  CHECK(c["tie-head"] == false);
  fs::remove_all(out);
  run_sweep(named, [](const RunRecord&, bool, int, int) {});
  c = proof_config();
  CHECK(c["embed-scale"] == "learned");
  CHECK(c["tie-head"] == true);
  fs::remove_all(out);
}

TEST_CASE("lab: the settings table's warnings reach a sweep once, with the runs they concern", "[lab]") {
  SweepOptions o = tiny_sweep(fresh("warnings").string());
  set_axis(o, "steps", {8, 2});  // warmup 2: fine at 8 steps, never reaches its peak at 2
  const std::vector<std::string> w = sweep_warnings(o);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "{warmup} 2 is not shorter than {steps} 2: the learning rate never reaches its peak {lr} (0.001); "
                "lower {warmup} or raise {steps} (in the runs with steps=2)");
  // A recipe the user named that no run is the target of says so: peri-ln-paper needs a peri
  // placement. The same recipe as a default nobody named (the lab's own) says nothing.
  set_axis(o, "steps", {8});
  o.base.recipe = "peri-ln-paper";
  CHECK(sweep_warnings(o).empty());
  o.given.insert("recipe");
  const std::vector<std::string> r = sweep_warnings(o);
  REQUIRE(r.size() == 1);
  CHECK(r[0] == "{recipe} peri-ln-paper (peri-ln-paper for {placement} peri): no run of this sweep is a target, so no run "
                "is on the recipe");
  set_axis(o, "placement", {"pre", "peri"});
  CHECK(sweep_warnings(o).empty());
}

TEST_CASE("lab: a sweep folder is one writer's, in the library: a second sweep and linked folders are refused", "[lab]") {
  const fs::path out = fresh("one_writer");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"none"});
  o.base.steps = 2, o.base.warmup = 1;
  {
    // Another thread of this process holds the folder (a second Python sweep, say): refused.
    std::optional<lm::RunLock> held;
    std::thread([&] { held.emplace(out.string()); }).join();
    REQUIRE_THROWS_WITH(run_sweep(o, [](const RunRecord&, bool, int, int) {}),
                        Catch::Contains("is in use by another thread of this process"));
  }
  {
    // The thread that holds it (compare_norms' main) runs the sweep inside its own lock.
    const lm::RunLock held(out.string());
    CHECK(run_sweep(o, [](const RunRecord&, bool, int, int) {}).size() == 1);
  }
  // records/ replaced by a link to another folder: refused, nothing written there.
  const fs::path elsewhere = fresh("one_writer_elsewhere");
  fs::create_directories(elsewhere);
  fs::rename(out / "records", elsewhere / "records");
  fs::create_directory_symlink(elsewhere / "records", out / "records");
  REQUIRE_THROWS_WITH(run_sweep(o, [](const RunRecord&, bool, int, int) {}), Catch::Contains("records: a link"));
  fs::remove(out / "records");
  fs::rename(elsewhere / "records", out / "records");
  fs::rename(out / "curves", elsewhere / "curves");
  fs::create_directory_symlink(elsewhere / "curves", out / "curves");
  REQUIRE_THROWS_WITH(run_sweep(o, [](const RunRecord&, bool, int, int) {}), Catch::Contains("curves: a link"));
  fs::remove_all(out);
  fs::remove_all(elsewhere);
}

TEST_CASE("lab: a records row whose settings are not a sweep's is refused, naming file and column", "[lab]") {
  const fs::path out = fresh("evil_settings");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"none"});
  set_axis(o, "dim", {16, 32});
  const auto runs = run_sweep(o, [](const RunRecord&, bool, int, int) {});
  REQUIRE(runs.size() == 2);
  std::string csv = io::read_file((out / "runs.csv").string());
  const auto at = csv.find("dim=32");
  REQUIRE(at != std::string::npos);
  std::string evil = csv;
  evil.replace(csv.rfind("dim=32"), 6, "dim=../../x");
  io::write_file_atomic((out / "evil.csv").string(), evil);
  REQUIRE_THROWS_WITH(read_runs((out / "evil.csv").string()),
                      Catch::Matchers::Contains("evil.csv:3: column 'settings': --dim '../../x': a swept value must be"));
  evil = csv;
  evil.replace(csv.rfind("dim=32"), 6, "data=x");
  io::write_file_atomic((out / "evil.csv").string(), evil);
  REQUIRE_THROWS_WITH(read_runs((out / "evil.csv").string()),
                      Catch::Matchers::Contains("column 'settings': 'data' is not a setting a sweep can vary"));
  fs::remove_all(out);
}

TEST_CASE("lab: readings compare along any axis, and claim speed only outside the run-to-run spread", "[lab]") {
  auto rec = [](const std::string& norm, double lr, uint64_t seed, const std::string& dim, double val, double ms) {
    RunRecord r;
    r.spec = spec(norm, "pre", lr, seed, 4, 30);
    if (!dim.empty()) r.spec.values["dim"] = setting_value("dim", dim);
    r.initial_loss = 4.2, r.final_val_loss = r.min_val_loss = val, r.step_ms = ms;
    r.peak_residual_rms = 1, r.peak_attention_logit = 1, r.final_residual_rms = 1;
    return r;
  };
  std::vector<RunRecord> runs;
  for (uint64_t seed : {1, 2, 3})
    for (double lr : {1e-3, 1e-2}) {
      // rmsnorm steps 10 % faster than layernorm's, with 1 % jitter; dim 64 trains lower.
      const double jitter = 1 + 0.01 * static_cast<double>(seed) - 0.02;
      runs.push_back(rec("layernorm", lr, seed, "", 2.0 + lr, 10.0 * jitter));
      runs.push_back(rec("rmsnorm", lr, seed, "", 2.0 + lr, 9.0 * (2 - jitter)));
      runs.push_back(rec("layernorm", lr, seed, "64", 1.5 + lr, 20.0));
      runs.push_back(rec("rmsnorm", lr, seed, "64", 1.5 + lr, 20.0 * jitter));
    }
  const Summary s = summarize(runs, 3.0, {{"dim", "32"}});
  CHECK(s.varied == std::vector<std::string>{"dim"});
  REQUIRE(s.groups.size() == 4);
  CHECK(s.groups[0].label == "layernorm/pre dim=32");
  CHECK(s.groups[2].label == "layernorm/pre dim=64");
  const SpeedComparison fast = compare_speed(s.groups[1], s.groups[0]);
  CHECK(fast.pairs == 6);
  CHECK(fast.measurable);
  CHECK(fast.ratio < 0.92);
  const SpeedComparison same = compare_speed(s.groups[3], s.groups[2]);  // 20 ms x (0.99, 1, 1.01) against 20 ms
  CHECK_FALSE(same.measurable);
  CHECK(same.low < 1);
  CHECK(same.high > 1);
  const std::string text = reading(s);
  CHECK_THAT(text, Catch::Contains("A RMSNorm step took 0.90x the time of a LayerNorm step (paired over 6 runs, 95 % interval"));
  CHECK_THAT(text, Catch::Contains("): faster, outside the run-to-run spread."));
  CHECK_THAT(text, Catch::Contains("step (paired over 6 runs, 95 % interval 0.99–1.01): no measurable difference."));
  CHECK_THAT(text, Catch::Contains("- **dim 32 / 64 (pre placement, LayerNorm)**: diverged 0/6 / 0/6; best validation loss "
                                   "2.001 ± 0.000 (n=3) / 1.501 ± 0.000 (n=3)"));
  CHECK_THAT(text, Catch::Contains("Lowest loss: dim 64."));
  CHECK_THAT(text, Catch::Contains("LR sensitivity over the 2 rates 0.001...0.01 "));
  // Fewer than three pairs never make a claim.
  const Summary two = summarize({runs[0], runs[1], runs[4], runs[5]});
  CHECK_FALSE(compare_speed(two.groups[1], two.groups[0]).measurable);
}

TEST_CASE("lab: 'lower' needs a difference beyond twice its standard error, best vs best and paired at one lr", "[lab]") {
  auto rec = [](const std::string& norm, double lr, uint64_t seed, double val) {
    RunRecord r;
    r.spec = spec(norm, "pre", lr, seed, 4, 30);
    r.initial_loss = 4.2, r.final_val_loss = r.min_val_loss = val, r.step_ms = 1;
    return r;
  };
  // RMSNorm 0.02 above LayerNorm with seed spread 0.1: within it. DyT 0.5 above with the same spread: beyond.
  std::vector<RunRecord> runs;
  const double wiggle[] = {-0.1, 0.0, 0.1};
  for (uint64_t seed : {1, 2, 3})
    for (double lr : {1e-3, 1e-2}) {
      const double w = wiggle[seed - 1];
      runs.push_back(rec("layernorm", lr, seed, 2.0 + w + lr));
      runs.push_back(rec("rmsnorm", lr, seed, 2.02 + w + lr));
      runs.push_back(rec("dyt", lr, seed, 2.5 - w + lr));
    }
  const Summary s = summarize(runs, 3.0);
  const Group &ln = s.groups[0], &rms = s.groups[1], &dyt = s.groups[2];
  REQUIRE(ln.label == "layernorm/pre");
  CHECK(best_loss_text(ln) == "2.001 ± 0.100 (n=3)");
  const LossComparison close = compare_losses(rms, ln);
  CHECK_THAT(close.difference, Catch::Matchers::WithinAbs(0.02, 1e-12));
  CHECK_THAT(close.se, Catch::Matchers::WithinAbs(std::sqrt(2 * 0.01 / 3), 1e-12));
  CHECK_FALSE(close.beyond_spread);
  // Paired over seeds the same 0.02 is exact (every seed moved alike): beyond its spread of 0.
  CHECK(close.pairs == 3);
  CHECK_THAT(close.matched_difference, Catch::Matchers::WithinAbs(0.02, 1e-12));
  const LossComparison far = compare_losses(dyt, ln);
  CHECK(far.beyond_spread);
  CHECK_THAT(far.difference, Catch::Matchers::WithinAbs(0.5, 1e-12));
  const std::string text = reading(s);
  CHECK_THAT(text, Catch::Contains("RMSNorm vs LayerNorm (pre placement)**: best validation loss 2.021 ± 0.100 (n=3) (lr 0.001) "
                                   "vs 2.001 ± 0.100 (n=3) (lr 0.001): within the seeds' spread (difference 0.020, 2 se 0.163)"));
  CHECK_THAT(text, Catch::Contains("DyT vs LayerNorm (pre placement)**: best validation loss 2.501 ± 0.100 (n=3) (lr 0.001) vs "
                                   "2.001 ± 0.100 (n=3) (lr 0.001): LayerNorm lower by 0.500 (2 se 0.163)"));
  // One seed: no spread, no verdict.
  const Summary one = summarize({runs[0], runs[1]}, 3.0);
  CHECK_FALSE(compare_losses(one.groups[1], one.groups[0]).beyond_spread);
  CHECK_THAT(reading(one), Catch::Contains("no verdict (one seed: no spread)"));
}

TEST_CASE("lab: LR sensitivity on a hand-made table", "[lab]") {
  // min(loss, initial) per lr: 2.0, 1.5, 1.7, and a diverged run capped at the initial loss 4.2.
  CHECK_THAT(lr_sensitivity({2.0, 1.5, 1.7, 4.2}), Catch::Matchers::WithinAbs((0.5 + 0 + 0.2 + 2.7) / 4, 1e-12));
  // Through summarize(): two seeds per lr, one diverged at the highest lr.
  auto rec = [](double lr, uint64_t seed, double val, bool diverged) {
    RunRecord r;
    r.spec = spec("none", "pre", lr, seed, 4, 30);
    r.initial_loss = 4.2, r.final_val_loss = r.min_val_loss = diverged ? std::nan("") : val, r.diverged = diverged;
    return r;
  };
  const Summary s = summarize({rec(1e-3, 1, 2.0, false), rec(1e-3, 2, 2.2, false), rec(1e-2, 1, 1.5, false),
                               rec(1e-2, 2, 1.7, false), rec(1e-1, 1, 0, true), rec(1e-1, 2, 3.0, false)});
  REQUIRE(s.groups.size() == 1);
  const Group& g = s.groups[0];
  CHECK(g.best_lr == 1e-2);
  CHECK_THAT(g.best_loss, Catch::Matchers::WithinAbs(1.6, 1e-12));
  CHECK(g.largest_stable_lr == 1e-2);
  CHECK(g.diverged == 1);
  // capped means: 2.1, 1.6, (4.2 + 3.0)/2 = 3.6 -> sensitivity (0.5 + 0 + 2.0) / 3
  CHECK_THAT(g.lr_sensitivity, Catch::Matchers::WithinAbs(2.5 / 3, 1e-12));
  CHECK(s.reference_lr == 1e-2);
}

TEST_CASE("lab: stable means trained — a run stalled near its initial loss is neither stable nor insensitive", "[lab]") {
  // Post-norm without warmup, as experiment 03 saw it: nothing diverged, nothing trained (3.44 of 3.50).
  auto rec = [](double lr, double val) {
    RunRecord r;
    r.spec = spec("layernorm", "post", lr, 1, 4, 0);
    r.initial_loss = 3.50, r.final_val_loss = r.min_val_loss = val;
    return r;
  };
  const Summary s = summarize({rec(1e-3, 3.44), rec(3e-3, 3.46), rec(1e-2, 3.47)});
  REQUIRE(s.groups.size() == 1);
  const Group& g = s.groups[0];
  CHECK(g.diverged == 0);
  CHECK_FALSE(g.trained);
  CHECK(g.largest_stable_lr == 0);  // no lr ended below 0.9 x 3.50 = 3.15
  const std::string md = report_markdown(s, {rec(1e-3, 3.44), rec(3e-3, 3.46), rec(1e-2, 3.47)}, {});
  CHECK_THAT(md, Catch::Contains("| none | n/a (never trained: best 3.440, needs < 3.150) |"));
  // With the unigram loss known, 0.9 x it is the bar: 3.00 trains against 3.40 (3.06), not against 3.25 (2.925).
  CHECK(summarize({rec(1e-3, 3.00)}, 3.40).groups[0].trained);
  CHECK_FALSE(summarize({rec(1e-3, 3.00)}, 3.25).groups[0].trained);
  // One lr that trains is enough to be stable there.
  const Summary t = summarize({rec(1e-3, 3.0), rec(3e-3, 3.46)});
  CHECK(t.groups[0].trained);
  CHECK(t.groups[0].largest_stable_lr == 1e-3);
}

TEST_CASE("lab: a collapsed run or one whose attention logits passed 1e4 is not clean", "[lab]") {
  auto rec = [](double lr, double best, double last, double logit, uint64_t seed = 1) {
    RunRecord r;
    r.spec = spec("layernorm", "pre", lr, seed, 4, 0);
    r.initial_loss = 3.50, r.min_val_loss = best, r.final_val_loss = last, r.peak_attention_logit = logit;
    return r;
  };
  // Threshold 0.9 x 3.50 = 3.15. Trained to 2.0 and came back to 3.3: collapsed. Ended 0.15 above
  // its best (margin 0.1): collapsed. 0.05 above: not. Logits 2e4: a blow-up; exactly 1e4: not.
  CHECK(collapsed(rec(1e-2, 2.0, 3.3, 10), 3.15));
  CHECK(collapsed(rec(1e-2, 2.0, 2.15, 10), 3.15));
  CHECK_FALSE(collapsed(rec(1e-2, 2.0, 2.05, 10), 3.15));
  const RunColumn& logit = run_column("peak_attention_logit");
  CHECK(flagged(rec(1e-2, 2.0, 2.0, 2e4), logit));
  CHECK_FALSE(flagged(rec(1e-2, 2.0, 2.0, 1e4), logit));
  RunRecord diverged = rec(1e-2, 2.0, 3.3, 2e4);
  diverged.diverged = true;  // counted as diverged, not twice
  CHECK_FALSE(collapsed(diverged, 3.15));
  CHECK_FALSE(flagged(diverged, logit));
  // The largest lr that trained skips the unclean ones: 1e-2 collapsed in one seed, 3e-2 blew up.
  const std::vector<RunRecord> runs = {rec(1e-3, 2.5, 2.5, 10),      rec(1e-2, 2.2, 2.2, 50),
                                       rec(1e-2, 2.0, 2.3, 50, 2),   rec(3e-2, 2.1, 2.1, 3e4)};
  const Summary s = summarize(runs);
  const Group& g = s.groups[0];
  CHECK(g.largest_stable_lr == 1e-3);
  CHECK(g.collapsed == 1);
  CHECK(g.flagged["peak_attention_logit"] == 1);
  CHECK(g.flagged.by_column.count("min_log_z_mean") == 0);  // unmeasured in these records: no count
  const std::string md = report_markdown(s, runs, {});
  CHECK_THAT(md, Catch::Contains("| collapsed | attention logit > 1e4 | log Z < -10 |"));
  CHECK_THAT(md, Catch::Contains("| 1/4 | 1/4 | – |"));
  CHECK_THAT(md, Catch::Contains("| layernorm_pre_lr0.01_s2_L4_w0 | yes | 2.000 | 2.300 | 50 | - |"));
  CHECK_THAT(md, Catch::Contains("| layernorm_pre_lr0.03_s1_L4_w0 | no | 2.100 | 2.100 | 30000 (flagged) | - |"));
  CHECK_THAT(md, Catch::Contains("**attention logit > 1e4** (`peak_attention_logit` above 10000): the growth Wortsman"));
}

TEST_CASE("lab: a run whose mean log Z drifted below -10 is not clean, the lowest is reported", "[lab]") {
  auto rec = [](double lr, double log_z, uint64_t seed = 1) {
    RunRecord r;
    r.spec = spec("layernorm", "pre", lr, seed, 4, 0);
    r.initial_loss = 3.50, r.min_val_loss = r.final_val_loss = 2.0, r.peak_attention_logit = 10;
    r.min_log_z_mean = log_z, r.min_log_z = log_z - 1;
    return r;
  };
  // The floor is -10 nats, exclusive; a record from before the column (NaN) is not flagged.
  const RunColumn& log_z = run_column("min_log_z_mean");
  CHECK(flagged(rec(1e-2, -10.5), log_z));
  CHECK_FALSE(flagged(rec(1e-2, -10), log_z));
  CHECK_FALSE(flagged(rec(1e-2, std::numeric_limits<double>::quiet_NaN()), log_z));
  RunRecord diverged = rec(1e-2, -50);
  diverged.diverged = true;
  CHECK_FALSE(flagged(diverged, log_z));
  // 3e-2 drifted in one seed of two: 1e-2 is the largest lr that trained; the group's lowest is -12.25.
  const std::vector<RunRecord> runs = {rec(1e-2, 3.5), rec(1e-2, 4.25, 2), rec(3e-2, 2.0), rec(3e-2, -12.25, 2)};
  const Summary s = summarize(runs);
  const Group& g = s.groups[0];
  CHECK(g.largest_stable_lr == 1e-2);
  CHECK(g.flagged["min_log_z_mean"] == 1);
  CHECK(g.min_log_z_mean == -12.25);
  CHECK(g.cells[0].min_log_z_mean == 3.875);  // median of 3.5 and 4.25
  const std::string md = report_markdown(s, runs, {});
  CHECK_THAT(md, Catch::Contains("| -12.25 | 0 | 0/4 | 0/4 | 1/4 |"));
  CHECK_THAT(md, Catch::Contains("| layernorm_pre_lr0.03_s2_L4_w0 | no | 2.000 | 2.000 | 10 | -12.25 (flagged) |"));
  CHECK_THAT(md, Catch::Contains("## Lowest mean log Z by learning rate"));
  // Compared along an axis (warmup) in the reading.
  std::vector<RunRecord> two = runs;
  for (RunRecord r : runs) r.spec.values["warmup"] = 30, r.min_log_z_mean = 3.0, two.push_back(r);
  CHECK_THAT(reading(summarize(two)), Catch::Contains("; log Z < -10 1/4 / 0/4; lowest mean log Z -12.25 / 3.00"));
}

TEST_CASE("lab: runs.csv is read by its header's names, an unknown or missing column is named", "[lab]") {
  const fs::path out = fresh("by_name");
  fs::create_directories(out);
  RunRecord r;
  r.spec = spec("rmsnorm", "pre", 1e-2, 3, 2, 30);
  r.steps = r.steps_done = 8, r.initial_loss = 4.25, r.final_val_loss = 2.5, r.min_log_z_mean = -1.5, r.min_log_z = -2.5;
  r.spikes = 2;
  write_runs((out / "runs.csv").string(), {r});
  // The same row with its columns reversed reads as the same record.
  std::istringstream in(io::read_file((out / "runs.csv").string()));
  std::string reversed;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream cells(line);
    while (std::getline(cells, cell, ',')) f.push_back(cell);
    if (line.back() == ',') f.emplace_back();
    std::reverse(f.begin(), f.end());
    std::string joined;
    for (size_t i = 0; i < f.size(); ++i) joined += (i ? "," : "") + f[i];
    reversed += joined + "\n";
  }
  const auto back = parse_runs(reversed, "rev.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].spec.id() == r.spec.id());
  CHECK(back[0].final_val_loss == 2.5);
  CHECK(back[0].min_log_z_mean == -1.5);
  CHECK(back[0].min_log_z == -2.5);
  CHECK(back[0].spikes == 2);
  const std::string header_and_row = io::read_file((out / "runs.csv").string());
  const auto refused = [](const std::string& text) {
    try {
      parse_runs(text, "x/runs.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string renamed = header_and_row;
  renamed.replace(renamed.find("spikes"), 6, "spokes");
  CHECK_THAT(refused(renamed), Catch::StartsWith("x/runs.csv: unknown column 'spokes' in the header"));
  std::string missing = header_and_row;
  missing.replace(missing.find("initial_loss"), 12, "min_log_z");
  CHECK_THAT(refused(missing), Catch::StartsWith("x/runs.csv: column 'min_log_z' appears twice in the header"));
  std::string lacking = header_and_row;
  lacking.erase(lacking.find("initial_loss,"), 13);
  CHECK_THAT(refused(lacking), Catch::StartsWith("x/runs.csv: the header lacks column 'initial_loss'"));
  // Files written before the columns' renames read under the new names.
  std::string old_names = header_and_row;
  old_names.replace(old_names.find(",layers,"), 8, ",depth,");
  old_names.replace(old_names.find("peak_attention_logit"), 20, "peak_max_logit");
  const auto old = parse_runs(old_names, "old/runs.csv");
  REQUIRE(old.size() == 1);
  CHECK(old[0].spec.id() == r.spec.id());
  CHECK(old[0].spec.get<int64_t>("layers") == 2);
  CHECK(current_column("max_logit_3") == "attention_logit_3");
  CHECK(current_column("logit_max") == "output_logit_max");
  CHECK(current_column("residual_rms_3") == "residual_rms_3");
  fs::remove_all(out);
}

TEST_CASE("lab: a run's row reads back to its own id, whatever digits its lr needs", "[lab]") {
  // The id holds the lr's exact text; the lr column once held 7 digits, so 1.0000004e-3 wrote a
  // row that could not be read again ("does not match its columns") and broke the folder for good.
  const fs::path out = fresh("lr_digits");
  fs::create_directories(out);
  for (double lr : {1.0000004e-3, 0.000333333333, 1e-3, 3e-2, 0.1 + 0.2}) {
    INFO("lr " << lr);
    RunRecord r;
    r.spec = spec("none", "pre", lr, 1, 1, 30);
    r.steps = r.steps_done = 4;
    write_runs((out / "runs.csv").string(), {r});
    const auto back = read_runs((out / "runs.csv").string());
    REQUIRE(back.size() == 1);
    CHECK(back[0].spec.get<double>("lr") == lr);
    CHECK(back[0].spec.id() == r.spec.id());
  }
  fs::remove_all(out);
}

TEST_CASE("lab: curves.csv places each run's cells by its file's own header", "[lab]") {
  // A curve written before the log Z columns existed leaves them empty instead of shifting the
  // per-layer columns under the wrong names.
  const fs::path out = fresh("old_curve");
  SweepOptions o = tiny_sweep(out.string());
  set_axis(o, "norm", {"none"});
  run_sweep(o, [](const RunRecord&, bool, int, int) {});
  const fs::path file = *fs::directory_iterator(out / "curves");
  std::string text = io::read_file(file.string());
  const auto lines = [](const std::string& t) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::istringstream cells(line);
      for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
      if (!line.empty() && line.back() == ',') f.emplace_back();
      rows.push_back(f);
    }
    return rows;
  };
  const auto now = lines(io::read_file((out / "curves.csv").string()));
  // Drop the three log-Z-era columns (z_loss, log_z_mean, log_z_min: 17, 18, 19) as an old writer would have.
  auto old = lines(text);
  std::string rewritten;
  for (auto& row : old) {
    row.erase(row.begin() + 17, row.begin() + 20);
    for (size_t k = 0; k < row.size(); ++k) rewritten += (k ? "," : "") + row[k];
    rewritten += "\n";
  }
  io::write_file_atomic(file.string(), rewritten);
  // An old writer left no proofs either, nor marked sweep.json: the folder is adopted as it is.
  for (const auto& entry : fs::directory_iterator(out / "records"))
    if (entry.path().extension() == ".json") fs::remove(entry.path());
  nlohmann::json grid = nlohmann::json::parse(io::read_file((out / "sweep.json").string()));
  grid.erase("run_proofs");
  io::write_file_atomic((out / "sweep.json").string(), grid.dump(2) + "\n");
  run_sweep(o, [](const RunRecord&, bool, int, int) {});  // continued: curves.csv assembled again
  const auto then = lines(io::read_file((out / "curves.csv").string()));
  REQUIRE(then.size() == now.size());
  REQUIRE(now.size() > 1);
  CHECK(then[0] == now[0]);
  for (size_t i = 1; i < now.size(); ++i) {
    for (size_t k = 0; k < now[i].size(); ++k) {
      INFO("row " << i << " column " << now[0][k]);
      if (k >= 17 && k < 20) CHECK(then[i][k].empty());
      else CHECK(then[i][k] == now[i][k]);
    }
  }
  fs::remove_all(out);
}

TEST_CASE("lab: the commands the report shows paste as the values they name", "[lab]") {
  CHECK(text::shell_quote("runs/exp7") == "runs/exp7");
  CHECK(text::shell_quote("") == "''");
  CHECK(text::shell_quote("my data $(touch X).txt") == "'my data $(touch X).txt'");
  CHECK(text::shell_quote("it's") == "'it'\\''s'");
  // Numbers handed to the plot script as text read back as the same double (std::to_string's six
  // decimals would hand a learning rate of 1e-7 over as 0).
  CHECK(text::exact_decimal(1e-7) == "1e-07");
  CHECK(text::exact_decimal(3e-3) == "0.003");
  CHECK(text::exact_decimal(0.1 + 0.2) == "0.30000000000000004");
  for (const double v : {1e-7, 1.25e-5, 3e-3, 0.1 + 0.2, 1e300, 5e-324})
    CHECK(std::strtod(text::exact_decimal(v).c_str(), nullptr) == v);
  SweepOptions o, defaults;
  set_axis(o, "norm", {"none"});
  o.base.lr = 1e-3, o.base.seed = 1, o.base.model.layers = 1;
  o.base.data = "/tmp/my data $(touch X).txt";
  o.out = "out `id`";
  const std::string cmd = reproduce_command(o, defaults);
  CHECK_THAT(cmd, Catch::Contains("--data '/tmp/my data $(touch X).txt'"));
  CHECK_THAT(cmd, Catch::EndsWith("--out 'out `id`'"));
}

TEST_CASE("lab: CSV columns are the documented ones", "[lab]") {
  CHECK(run_columns_header() == std::vector<std::string>{
                           "run_id", "norm", "placement", "lr", "seed", "layers", "warmup", "steps", "steps_done",
                           "initial_loss", "final_train_loss", "min_train_loss", "final_val_loss", "min_val_loss",
                           "diverged", "divergence_step", "divergence_cause", "divergence_quantity", "step_ms",
                           "tokens_per_s", "peak_residual_rms", "final_residual_rms", "peak_attention_logit", "wall_s",
                           "peak_sharpness_ratio", "sharpness_cross_step", "spikes", "peak_output_logit", "min_log_z_mean",
                           "min_log_z", "peak_batch_sharpness_ratio", "min_output_logit_mean", "settings"});
  const auto c = curve_columns(2);
  CHECK(c.size() == 20 + 2 * 5);
  CHECK(c[7] == "step");
  CHECK(c[20] == "residual_rms_0");
  CHECK(c.back() == "update_ratio_1");
  const fs::path out = fresh("csv");
  const auto runs = run_sweep(tiny_sweep(out.string()), [](const RunRecord&, bool, int, int) {});
  const std::string curves = io::read_file(out.string() + "/curves.csv");
  CHECK(curves.substr(0, curves.find('\n')) ==
        "run_id,norm,placement,lr,seed,layers,warmup,step,loss,lr_now,grad_norm,update_ratio,output_logit_mean,"
        "output_logit_max,final_residual_rms,val_loss,train_eval_loss,z_loss,log_z_mean,log_z_min,residual_rms_0,"
        "norm_out_rms_0,attention_logit_0,grad_norm_0,update_ratio_0,residual_rms_1,norm_out_rms_1,attention_logit_1,"
        "grad_norm_1,update_ratio_1");
  CHECK(std::count(curves.begin(), curves.end(), '\n') == 1 + 2 * 8);  // header + 2 runs x 8 steps
  // Each run's lowest log Z over its steps: finite, the per-token one at most the mean one.
  for (const auto& r : runs) {
    CHECK(std::isfinite(r.min_log_z_mean));
    CHECK(r.min_log_z <= r.min_log_z_mean);
  }
  fs::remove_all(out);
  // With sharpness measurements, their four columns follow the run's own.
  const auto cs = curve_columns(2, true);
  CHECK(std::vector<std::string>(cs.begin() + 20, cs.begin() + 24) ==
        std::vector<std::string>{"sharpness", "sharpness_threshold", "precond_sharpness", "precond_threshold"});
}

TEST_CASE("lab: the record schema is runs.csv's: every column round-trips at a value of its own, and sweep.json holds it",
          "[lab]") {
  // Every column of the schema set away from its default, written and read back: a column the row
  // writer or the reader passed over would come back as its default.
  RunRecord r;
  r.spec = spec("rmsnorm", "post", 3e-3, 2, 3, 10);
  int64_t k = 0;
  for (const RunColumn& c : run_columns()) {
    ++k;
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), Measured>) {
            r.measured[c.name] = 0.5 + static_cast<double>(k);
          } else {
            auto& v = r.*member;
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, bool>) v = true;
            else if constexpr (std::is_same_v<V, std::string>) v = "cause-" + std::to_string(k);
            else if constexpr (std::is_same_v<V, int64_t>) v = 100 + k;
            else v = 0.5 + static_cast<double>(k);
          }
        },
        c.member);
  }
  const auto back = parse_runs(csv_join(run_columns_header()) + "\n" + csv_row(r) + "\n", "schema/runs.csv");
  REQUIRE(back.size() == 1);
  for (const RunColumn& c : run_columns()) {
    INFO("column " << c.name);
    CHECK(std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), Measured>) return back[0].measured == r.measured;
          else return back[0].*member == r.*member;
        },
        c.member));
  }
  // The schema as JSON: runs.csv's columns in order (after the identity), each typed and explained.
  const nlohmann::json schema = records_schema();
  REQUIRE(schema["runs"].size() == run_columns().size());
  for (size_t i = 0; i < run_columns().size(); ++i) {
    const nlohmann::json& c = schema["runs"][i];
    INFO("column " << c.dump());
    CHECK(c["name"] == run_columns_header()[1 + run_identity().size() + i]);
    CHECK(!c["meaning"].get<std::string>().empty());
    CHECK(!c["summary"].get<std::string>().empty());
  }
  CHECK(schema["runs"][7]["name"] == "diverged");
  CHECK(schema["runs"][7]["type"] == "bool");
  CHECK(schema["runs"][0]["type"] == "int");
  CHECK(schema["runs"][9]["type"] == "text");
  const auto column = [&](const std::string& name) {
    for (const auto& c : schema["runs"])
      if (c["name"] == name) return c;
    return nlohmann::json();
  };
  CHECK(column("min_log_z_mean")["flag_below"] == kLogZFloor);
  CHECK(column("peak_attention_logit")["flag_above"] == kAttentionLogitLimit);
  CHECK(column("final_val_loss")["unit"] == "nats");
  CHECK(schema["renamed"]["depth"] == "layers");
  // The curves' schema names every column curve_columns writes (per-layer ones as their prefix).
  std::set<std::string> named;
  for (const auto& c : schema["curves"]) named.insert(c["name"].get<std::string>() + (c["per_layer"] ? "_0" : ""));
  for (const std::string& c : curve_columns(1, true))
    if (c != "run_id" && !identity_part(c)) CHECK(named.count(c));
  // A folder's sweep.json carries it (the plots read it there).
  CHECK(grid_json(tiny_sweep(fresh("schema_grid").string()))["schema"] == schema);
  // A diverged cell must be 0 or 1.
  std::string row = csv_row(r);
  const std::string bad = csv_join(run_columns_header()) + "\n" + row.replace(row.find(",1,"), 3, ",yes,") + "\n";
  CHECK_THROWS_WITH(parse_runs(bad, "b/runs.csv"), Catch::Contains("column 'diverged' must be 0 or 1, got 'yes'"));
}

TEST_CASE("lab: --sharpness-every records the edge of stability per run, older runs.csv files still read", "[lab][sharpness]") {
  const fs::path out = fresh("sharpness");
  SweepOptions o = tiny_sweep(out.string());
  o.base.sharpness_every = 4, o.base.sharpness_iters = 5, o.base.batch_sharpness = 2;
  const auto runs = run_sweep(o, [](const RunRecord&, bool, int, int) {});
  REQUIRE(runs.size() == 2);
  for (const auto& r : runs) {
    CHECK(std::isfinite(r.peak_sharpness_ratio));
    CHECK(r.peak_sharpness_ratio > 0);
    CHECK(std::isfinite(r.peak_batch_sharpness_ratio));  // batch sharpness over 2/lr (AdamW's plain threshold)
  }
  CHECK(read_runs(out.string() + "/runs.csv")[0].peak_batch_sharpness_ratio == runs[0].peak_batch_sharpness_ratio);
  CHECK_THAT(report_markdown(summarize(runs), runs, {}), Catch::Contains("peak batch sharpness / threshold"));
  const std::string curves = io::read_file(out.string() + "/curves.csv");
  CHECK_THAT(curves, Catch::Contains("log_z_min,sharpness,sharpness_threshold,precond_sharpness,precond_threshold,batch_sharpness,batch_lambda_max,"));
  // runs.csv as written before the sharpness columns: read as "not measured".
  std::string legacy;
  std::istringstream in(io::read_file(out.string() + "/runs.csv"));
  for (std::string line; std::getline(in, line);) {  // the first 24 columns: the format before sharpness and spikes
    size_t cut = 0;
    for (int k = 0; k < 24; ++k) cut = line.find(',', cut) + 1;
    legacy += line.substr(0, cut - 1) + "\n";
  }
  const fs::path old_dir = fresh("sharpness_legacy");
  fs::create_directories(old_dir);
  io::write_file_atomic((old_dir / "runs.csv").string(), legacy);
  const auto old = read_runs((old_dir / "runs.csv").string());
  REQUIRE(old.size() == 2);
  CHECK(std::isnan(old[0].peak_sharpness_ratio));
  fs::remove_all(out);
  fs::remove_all(old_dir);
}

// Last in the file: the columns registered here stay for the rest of the process (ctest runs each
// test case in a process of its own).
TEST_CASE("lab: a registered measurement is written, read back, folded, judged and reported as tapegrad's own",
          "[lab]") {
  // Errors first, each naming what is wrong; none of them registers anything.
  const size_t run_count = run_columns().size(), curve_count = curve_schema().size();
  CHECK_THROWS_WITH(register_curve_column({.name = "Update", .value = [](const lm::StepReport&) { return 0.0; }}),
                    Catch::Contains("'Update' is not a column name"));
  CHECK_THROWS_WITH(register_curve_column({.name = "loss", .value = [](const lm::StepReport&) { return 0.0; }}),
                    Catch::Contains("'loss' is already a curve column"));
  CHECK_THROWS_WITH(register_curve_column({.name = "lonely"}), Catch::Contains("give the function reading it (value)"));
  CHECK_THROWS_WITH(register_run_column({.name = "peak_x", .fold = Fold{Fold::kMax, {"no_such_curve"}}}),
                    Catch::Contains("it folds 'no_such_curve', which is not a curve column"));
  CHECK_THROWS_WITH(register_run_column({.name = "peak_y"}), Catch::Contains("give the curve columns it folds"));
  CHECK_THROWS_WITH(register_run_column({.name = "final_val_loss", .fold = Fold{Fold::kMax, {"loss"}}}),
                    Catch::Contains("'final_val_loss' is already a run column"));
  CHECK_THROWS_WITH(register_run_column({.name = "lr", .fold = Fold{Fold::kMax, {"loss"}}}),
                    Catch::Contains("'lr' is a column runs.csv already has"));
  CHECK_THROWS_WITH(register_run_column({.name = "peak_z", .fold = Fold{Fold::kMax, {"loss"}}, .flag = RunColumn::Flag{.name = "z"}}),
                    Catch::Contains("its flag needs a limit"));
  {
    const SchemaInUse sweep, nested;  // as run_lab around run_sweep
    CHECK_THROWS_WITH(register_curve_column({.name = "later", .value = [](const lm::StepReport&) { return 0.0; }}),
                      "register_curve_column 'later': a sweep is running in this process; register before it starts");
    std::string from_another_thread;
    std::thread([&] {
      try {
        register_run_column({.name = "peak_w", .fold = Fold{Fold::kMax, {"loss"}}});
      } catch (const Error& e) {
        from_another_thread = e.what();
      }
    }).join();
    CHECK_THAT(from_another_thread, Catch::Contains("'peak_w': a sweep is running"));
  }
  CHECK(run_columns().size() == run_count);
  CHECK(curve_schema().size() == curve_count);

  // The recipe (docs/extending.md, "A lab measurement"): the step's value, and the run's summary
  // of it with a limit. The size of each update, lr x the gradient norm; every run that trained
  // past 0 is flagged, so no learning rate counts as trained.
  register_curve_column({.name = "update_size", .meaning = "lr x the gradient norm: the step's size before Adam's scaling",
                         .value = [](const lm::StepReport& s) { return s.result.lr * s.result.grad_norm; }});
  register_run_column({.name = "peak_update_size",
                       .summary = "max over steps",
                       .meaning = "the largest lr x gradient norm",
                       .fold = Fold{Fold::kMax, {"update_size"}},
                       .flag = RunColumn::Flag{.above = 0, .name = "update size > 0", .why = "a test's limit: any update"}});
  const fs::path out = fresh("registered");
  const auto runs = run_sweep(tiny_sweep(out.string()), [](const RunRecord&, bool, int, int) {});
  REQUIRE(runs.size() == 2);
  for (const RunRecord& r : runs) {
    INFO(r.spec.id());
    REQUIRE(r.measured.count("peak_update_size"));
    CHECK(r.measured.at("peak_update_size") > 0);
    CHECK(r.measured.at("peak_update_size") < 1e-3 * 100);  // lr 1e-3 times a gradient norm of at most ~100
  }
  // Its curve column and run column are in the files, and read back to the same values.
  const std::string curves = io::read_file((out / "curves.csv").string());
  CHECK_THAT(curves.substr(0, curves.find('\n')), Catch::Contains(",update_size,"));
  const std::string runs_csv = io::read_file((out / "runs.csv").string());
  CHECK_THAT(runs_csv.substr(0, runs_csv.find('\n')), Catch::Contains(",peak_update_size,settings"));
  const auto back = read_runs((out / "runs.csv").string());
  REQUIRE(back.size() == 2);
  CHECK(back[0].measured == runs[0].measured);
  // sweep.json's schema names it with its limit: the plots draw it from there.
  const nlohmann::json grid = io::parse_json(io::read_file((out / "sweep.json").string()), "sweep.json");
  bool in_schema = false;
  for (const auto& c : grid["schema"]["runs"])
    if (c["name"] == "peak_update_size") in_schema = c["flag_above"] == 0 && c["flag_name"] == "update size > 0";
  CHECK(in_schema);
  // The judgement: both runs flagged, so nothing counts as trained, and the report says so.
  const Summary s = summarize(runs);
  for (const Group& g : s.groups) {
    CHECK(g.flagged["peak_update_size"] == 1);
    CHECK(g.largest_stable_lr == 0);
  }
  const std::string md = report_markdown(s, runs, {});
  CHECK_THAT(md, Catch::Contains("| update size > 0 |"));
  CHECK_THAT(md, Catch::Contains("**update size > 0** (`peak_update_size` above 0): a test's limit: any update."));
  CHECK_THAT(md, Catch::Contains("| peak_update_size |"));
  CHECK_THAT(md, Catch::Contains(" (flagged) |"));
  fs::remove_all(out);
}

TEST_CASE("lab: a blown-up peak reads as three digits and an exponent in the report's grids", "[lab]") {
  auto rec = [](double lr, uint64_t seed, double peak, bool diverged) {
    RunRecord r;
    r.spec = spec("none", "pre", lr, seed, 4, 0);
    r.initial_loss = 3.5, r.min_val_loss = r.final_val_loss = diverged ? 3.5 : 2.0;
    r.peak_residual_rms = peak, r.peak_attention_logit = 10, r.final_residual_rms = 1;
    r.diverged = diverged;
    return r;
  };
  // 1e-2: a median of 8.16; 1e-1: two runs that blew up, their peaks' median 1.4386e12.
  const std::vector<RunRecord> runs = {rec(1e-2, 1, 8.16, false), rec(1e-2, 2, 8.16, false),
                                       rec(1e-1, 1, 1438588550000.0, true), rec(1e-1, 2, 1438588550000.0, true)};
  const std::string md = report_markdown(summarize(runs), runs, {});
  CHECK_THAT(md, Catch::Contains("| 0.01 | 8.16 |"));
  CHECK_THAT(md, Catch::Contains("| 0.1 | 1.44e+12 † |"));
  CHECK_THAT(md, !Catch::Contains("1438588550000"));
}
