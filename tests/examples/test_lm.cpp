#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/corpus.h"
#include "tapegrad/lm/data.h"
#include "tapegrad/lm/flops.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/step_record.h"
#include "support.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/text/char_tokenizer.h"
#include "tapegrad/text/utf8.h"
#include "tapegrad/lm/trainer.h"

using namespace tapegrad;
using namespace tapegrad::lm;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny_config() {
  TrainConfig c;
  c.model.layers = 2, c.model.heads = 2, c.model.dim = 16, c.model.ctx = 16, c.batch = 4, c.steps = 40, c.warmup = 5;
  c.eval_iters = 2, c.threads = 2;
  return c;
}

std::unique_ptr<Trainer> make_trainer(const TrainConfig& c) {
  const std::string& text = default_corpus();
  auto tok = build_tokenizer(c, text, "corpus");
  return std::make_unique<Trainer>(c, tok, make_token_data(c, *tok, text));
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tapegrad_test_" + name);
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("corpus: the embedded corpus is the project's own, >= 100 KB, English and Chinese, pinned", "[train]") {
  const std::string& c = default_corpus();
  CHECK(c.size() >= 100'000);
  CHECK(text::is_valid(c));
  CHECK(c.find("乒乓球拍卖完了。") != std::string::npos);
  CHECK(c.find("== Tale 1 ==") == 0);
  // The same bytes on every machine and every build: changing the generator changes this hash.
  CHECK(io::sha256_hex(c) == "95a3157307145d790efa51422ad63c4513e23d7dce11b1887f3b6c57de1f0ae0");
}

TEST_CASE("data: 90/10 split by position, windows with next-token targets, seeded", "[train]") {
  std::vector<int32_t> tokens(100);
  for (int i = 0; i < 100; ++i) tokens[i] = i;
  const TokenData d = split_tokens(tokens, 0.1, 8);
  CHECK(d.train.size() == 90);
  CHECK(d.val.front() == 90);
  BatchSampler a(d.train, 3, 8, 42), b(d.train, 3, 8, 42);
  std::vector<int32_t> ids, targets, ids2, targets2;
  a.next(ids, targets);
  b.next(ids2, targets2);
  CHECK(ids == ids2);
  for (size_t i = 0; i < ids.size(); ++i) CHECK(targets[i] == ids[i] + 1);
  REQUIRE_THROWS_WITH(split_tokens(tokens, 0.1, 64),
                      Catch::Contains("90 for training and 10 for validation, but each part needs at least context + 1 = 65"));
}

TEST_CASE("train: a small model overfits one batch to near-zero loss", "[train]") {
  nn::DecoderConfig mc;
  mc.vocab_size = 20, mc.ctx = 16, mc.layers = 2, mc.heads = 2, mc.dim = 32;
  nn::Decoder<float> model(mc, 3);
  AdamW<float> opt(model.parameters(), {.weight_decay = 0.0});
  Rng rng(5);
  std::vector<int32_t> ids(4 * 16), targets(4 * 16);
  for (auto& v : ids) v = static_cast<int32_t>(rng.below(20));
  for (auto& v : targets) v = static_cast<int32_t>(rng.below(20));
  Tape<float> tape;
  double first = 0, loss = 0;
  for (int step = 0; step < 300; ++step) {
    tape.clear();
    opt.zero_grad();
    auto out = model.forward(tape, ids, 4, 16, targets);
    loss = out.loss.value()[0];
    if (step == 0) first = loss;
    tape.backward(out.loss);
    opt.step(3e-3);
  }
  CHECK_THAT(first, Catch::Matchers::WithinAbs(std::log(20.0), 0.05));
  CHECK(loss < 0.05);
}

TEST_CASE("train: same seed and threads, bitwise-identical losses, another seed differs", "[train]") {
  // Heads of 8 (the attention core's GEMM path) and of 16 (its float head kernels).
  TrainConfig base = tiny_config();
  base.model.dim = GENERATE(16, 32);
  INFO("dim " << base.model.dim);
  auto a = make_trainer(base), b = make_trainer(base);
  TrainConfig other = base;
  other.seed = 7;
  auto c = make_trainer(other);
  for (int i = 0; i < 10; ++i) {
    const double la = a->train_step().loss, lb = b->train_step().loss;
    REQUIRE(la == lb);
    if (i == 9) CHECK(c->train_step().loss != la);
    else c->train_step();
  }
}

TEST_CASE("train: with a z-loss, every reported loss is the cross-entropy, the penalty and log Z apart", "[train]") {
  TrainConfig c = tiny_config();
  c.model.z_loss = 0.01;
  auto t = make_trainer(c);
  StepResult r;
  for (int i = 0; i < 3; ++i) r = t->train_step();
  // The penalty is c mean(lse^2) >= c mean(lse)^2 (Jensen), and nothing of it is in the loss.
  CHECK(r.z_loss > 0);
  CHECK(r.z_loss >= 0.01 * r.log_z_mean * r.log_z_mean);
  CHECK(r.log_z_min <= r.log_z_mean);
  // Evaluation: the cross-entropy of the same logits, computed again by the op without a z-loss.
  std::vector<int32_t> ids, targets;
  BatchSampler s(t->data().val, c.batch, c.model.ctx, 99);
  s.next(ids, targets);
  const double reported = t->loss_on(ids, targets, c.batch, c.model.ctx);
  Tape<float> tape;
  auto guard = tape.no_grad();
  const auto out = t->model().forward(tape, ids, c.batch, c.model.ctx, targets);
  const float plain = cross_entropy(out.logits, targets, 0.0).value()[0];
  CHECK(reported == plain);
  CHECK(out.loss.value()[0] > plain + 0.5 * out.terms.z_loss);  // the objective carries the penalty
  // Without a z-loss the step's loss is the objective itself, bit for bit (what every earlier run logged).
  auto z0 = make_trainer(tiny_config());
  const StepResult r0 = z0->train_step();
  CHECK(r0.z_loss == 0.0);
}

TEST_CASE("checkpoint: resume gives bitwise the losses of an uninterrupted run", "[train]") {
  const fs::path dir = fresh_dir("resume");
  auto straight = make_trainer(tiny_config());
  std::vector<double> expect;
  for (int i = 0; i < 16; ++i) expect.push_back(straight->train_step().loss);

  auto first = make_trainer(tiny_config());
  for (int i = 0; i < 8; ++i) REQUIRE(first->train_step().loss == expect[i]);
  save_checkpoint(*first, dir.string());
  first.reset();
  auto resumed = resume_trainer(dir.string());
  CHECK(resumed->step() == 8);
  for (int i = 8; i < 16; ++i) REQUIRE(resumed->train_step().loss == expect[i]);
  fs::remove_all(dir);
}

// Every model knob away from its default: a knob the model config or the checkpoint left out would
// come back as its default here. The values are chosen per knob (a valid model: heads divide dim,
// every choice known); the test requires one for each knob the settings table has.
TEST_CASE("checkpoint: every model knob at a non-default value survives model_for(), the checkpoint and loading",
          "[train][settings]") {
  const nlohmann::json knobs = {
      {"layers", 3},          {"heads", 3},           {"dim", 24},              {"ctx", 12},
      {"norm", "rmsnorm"},    {"qk-norm", "rmsnorm"}, {"placement", "peri"},    {"mlp", "swiglu"},
      {"dyt-alpha", 0.75},    {"tie-head", false},    {"bias", false},          {"dyt-alpha-attn", 0.25},
      {"dyt-beta", false},    {"embed-scale", "learned"}, {"embed-scale-init", 2.5},
      {"embed-scale-positions", true}, {"embed-scale-rule", "unit-input"}, {"embed-norm", true},
      {"final-norm", false},  {"precision", "bf16"},  {"norm-eps", 1e-6},       {"norm-precision", "bf16"},
      {"z-loss", 1e-3},       {"mlp-hidden", 40},     {"init-std", 0.03}};
  TrainConfig c = tiny_config();
  const TrainConfig defaults;
  for (const Setting& s : settings()) {
    if (!in_model(s)) continue;
    INFO("model knob " << s.key);
    REQUIRE(knobs.contains(s.key));  // a new knob needs a value here
    REQUIRE(knobs[s.key] != setting_json(s, defaults));
    set_setting(s, c, knobs[s.key]);
  }
  c.validate();
  // Each knob reaches the model: its DecoderConfig field differs from the default model's.
  const nn::DecoderConfig m = c.model_for(65);
  for (const Setting& s : settings())
    if (in_model(s)) {
      INFO("model knob " << s.key);
      CHECK(nn::decoder_field_json(decoder_field(s), m) != nn::decoder_field_json(decoder_field(s), nn::DecoderConfig{}));
    }
  const fs::path dir = fresh_dir("every_knob");
  auto t = make_trainer(c);
  t->train_step();
  save_checkpoint(*t, dir.string());
  LoadedModel loaded = load_model(dir.string());
  REQUIRE(t->decoder() != nullptr);
  CHECK(loaded.model->config() == t->decoder()->config());
  CHECK(to_json(loaded.model->config()) == to_json(c.model_for(loaded.model->config().vocab_size)));
  CHECK(to_json(loaded.config) == to_json(c));  // the training config, model knobs from the model config
  TrainConfig back;
  back.model = loaded.model->config();
  for (const Setting& s : settings())
    if (in_model(s)) CHECK(setting_json(s, back) == knobs[s.key]);
  auto resumed = resume_trainer(dir.string());
  CHECK(to_json(resumed->config()) == to_json(c));
  fs::remove_all(dir);
}

// Every registered norm, without naming one: saved, reloaded bitwise, and resumed bitwise.
TEST_CASE("checkpoint: every registered norm saves, reloads and resumes bitwise", "[train][registry]") {
  const std::string norm = GENERATE(from_range(nn::norm_names()));
  INFO("norm " << norm);
  const fs::path dir = fresh_dir("norm_" + norm);
  TrainConfig c = tiny_config();
  c.model.norm = nn::NormKind::parse(norm);
  auto straight = make_trainer(c);
  std::vector<double> expect;
  for (int i = 0; i < 4; ++i) expect.push_back(straight->train_step().loss);
  auto first = make_trainer(c);
  for (int i = 0; i < 2; ++i) first->train_step();
  save_checkpoint(*first, dir.string());
  LoadedModel m = load_model(dir.string());
  CHECK(m.model->config().norm == c.model.norm);
  for (auto& [name, p] : first->model().named_parameters())
    REQUIRE(std::equal(p->value().span().begin(), p->value().span().end(), m.model->parameter(name).value().span().begin()));
  auto resumed = resume_trainer(dir.string());
  for (int i = 2; i < 4; ++i) REQUIRE(resumed->train_step().loss == expect[static_cast<size_t>(i)]);
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: round trip of weights and optimizer state, damage is detected", "[train][errors]") {
  const fs::path dir = fresh_dir("roundtrip");
  auto t = make_trainer(tiny_config());
  for (int i = 0; i < 3; ++i) t->train_step();
  save_checkpoint(*t, dir.string());
  LoadedModel m = load_model(dir.string());
  for (auto& [name, p] : t->model().named_parameters()) {
    const auto& q = m.model->parameter(name).value();
    REQUIRE(std::equal(p->value().data(), p->value().data() + p->numel(), q.data()));
  }
  CHECK(m.tokenizer->to_json() == t->tokenizer().to_json());

  SECTION("a modified weight file fails its hash") {
    std::string bytes = io::read_file((dir / "model.safetensors").string());
    bytes[bytes.size() - 1] ^= 1;
    io::write_file_atomic((dir / "model.safetensors").string(), bytes);
    REQUIRE_THROWS_WITH(load_model(dir.string()), Catch::Contains("do not match the SHA-256 recorded in checkpoint.json"));
  }
  SECTION("a config that disagrees with the weights' shapes") {
    auto j = nlohmann::json::parse(io::read_file((dir / "checkpoint.json").string()));
    j["model"]["dim"] = 32, j["train"]["dim"] = 32;
    io::write_file_atomic((dir / "checkpoint.json").string(), j.dump());
    REQUIRE_THROWS_WITH(load_model(dir.string()), Catch::Contains("has shape (") && Catch::Contains("but the model needs ("));
  }
  SECTION("the architecture is stored once; checkpoints that repeat it under train still load") {
    auto j = nlohmann::json::parse(io::read_file((dir / "checkpoint.json").string()));
    CHECK_FALSE(j["train"].contains("dim"));
    CHECK_FALSE(j["train"].contains("norm"));
    CHECK(j["model"]["dim"] == 16);
    j["train"] = to_json(t->config());  // the format before: every flag under "train"
    io::write_file_atomic((dir / "checkpoint.json").string(), j.dump());
    CHECK(resume_trainer(dir.string())->step() == 3);
    j["train"]["norm"] = "rmsnorm";  // ... and a "train" that disagrees with "model" is refused
    io::write_file_atomic((dir / "checkpoint.json").string(), j.dump());
    REQUIRE_THROWS_WITH(resume_trainer(dir.string()), Catch::Contains("the model config does not match the training config"));
  }
  SECTION("a config with an extra field") {
    auto j = nlohmann::json::parse(io::read_file((dir / "checkpoint.json").string()));
    j["model"]["dropout"] = 0.1;
    io::write_file_atomic((dir / "checkpoint.json").string(), j.dump());
    REQUIRE_THROWS_WITH(load_model(dir.string()), (dir / "checkpoint.json").string() + ": config: unknown field 'dropout'");
  }
  SECTION("a save interrupted after its files were complete is rolled forward") {
    for (int i = 0; i < 2; ++i) t->train_step();
    save_checkpoint(*t, (dir / "next").string());  // the state a later save would write
    for (const char* f : {"model.safetensors", "optimizer.safetensors"})
      fs::copy_file(dir / "next" / f, dir / (std::string(f) + ".new"));
    fs::copy_file(dir / "next" / "checkpoint.json", dir / "checkpoint.json.new");
    fs::rename(dir / "model.safetensors.new", dir / "model.safetensors");  // killed after the first rename
    auto r = resume_trainer(dir.string());
    CHECK(r->step() == 5);
    CHECK_FALSE(fs::exists(dir / "checkpoint.json.new"));
  }
  SECTION("resuming on other text is refused, naming both texts, unless allowed") {
    ResumeOverrides o;
    const std::string& corpus = default_corpus();
    o.text = corpus.substr(0, corpus.size() - 1);  // the same characters, one byte less
    REQUIRE_THROWS_WITH(resume_trainer(dir.string(), o),
                        Catch::StartsWith("the training text the embedded corpus is not the text this run was trained on") &&
                            Catch::Contains(std::to_string(corpus.size()) + " bytes with SHA-256 " +
                                            io::sha256_hex(corpus).substr(0, 12)) &&
                            Catch::Contains(std::to_string(corpus.size() - 1) + " bytes") &&
                            Catch::Contains("--allow-data-change"));
    o.allow_data_change = true;
    CHECK(resume_trainer(dir.string(), o)->step() == 3);
    o.text = corpus, o.allow_data_change = false;
    CHECK(resume_trainer(dir.string(), o)->step() == 3);
  }
  SECTION("a damaged step or data position is refused, naming the field") {
    auto j = nlohmann::json::parse(io::read_file((dir / "checkpoint.json").string()));
    const auto refused = [&](const nlohmann::json& edited, const std::string& message) {
      io::write_file_atomic((dir / "checkpoint.json").string(), edited.dump());
      REQUIRE_THROWS_WITH(resume_trainer(dir.string()), Catch::Contains(message));
    };
    auto e = j;
    e["step"] = 1e300;
    refused(e, "checkpoint.json: field 'step' must be an integer, got number 1e+300");
    e = j, e["step"] = -4;
    refused(e, "checkpoint.json: field 'step' must be a whole number >= 0, got -4");
    e = j, e["data"]["batch_rng"] = {"0000000000000000", "0000000000000000", "0000000000000000", "0000000000000000"};
    refused(e, "data.batch_rng: random generator state: all four words are zero");
    e = j, e["data"]["batch_rng"][2] = "0x00000000000001";
    refused(e, "data.batch_rng: expected 16 hex digits, got \"0x00000000000001\"");
  }
  SECTION("a save interrupted while writing leaves the previous checkpoint usable") {
    io::write_file_atomic((dir / "model.safetensors.new").string(), "partial");
    CHECK(resume_trainer(dir.string())->step() == 3);
    CHECK_FALSE(fs::exists(dir / "model.safetensors.new"));
  }
  fs::remove_all(dir);
}

TEST_CASE("run lock: the folder's new writer removes what killed writers left half-written", "[train][faults]") {
  const fs::path dir = fresh_dir("stale_temps");
  fs::create_directories(dir / "curves");
  const auto touch = [&](const fs::path& p) { io::write_file_atomic(p.string(), "x"); };
  // Left by write_file_atomic and the write probe of killed processes (mkostemp's six characters):
  const std::vector<fs::path> stale = {dir / ".model.safetensors.tapegrad-tmp.Ab12Cd",
                                       dir / ".tapegrad-write-test.zZ09yY",
                                       dir / "curves" / ".none_pre.csv.tapegrad-tmp.q1w2e3"};
  // Not theirs: a user's files, names that only look alike, and anything deeper than one level.
  fs::create_directories(dir / "src" / "deep");
  const std::vector<fs::path> kept = {dir / "model.safetensors", dir / "notes.tmp.abcdef", dir / ".x.tmp.abc",
                                      dir / ".config.json.tmp.abcdefg", dir / "curves" / "run.csv",
                                      dir / ".write-test.Ab12Cd", dir / "curves" / ".draft.tmp.backup",
                                      dir / "src" / "deep" / ".main.c.tmp.orig00",
                                      dir / "src" / "deep" / ".main.c.tapegrad-tmp.orig00",
                                      dir / ".a.tapegrad-tmp.ab-_12"};
  for (const auto& p : stale) touch(p);
  for (const auto& p : kept) touch(p);
  fs::create_symlink("/etc/passwd", dir / ".link.tapegrad-tmp.AAAAAA");  // removed as a link, its target untouched
  { RunLock lock(dir.string(), /*create=*/false); }
  for (const auto& p : stale) CHECK_FALSE(fs::exists(p));
  CHECK_FALSE(fs::is_symlink(dir / ".link.tapegrad-tmp.AAAAAA"));
  CHECK(fs::exists("/etc/passwd"));
  for (const auto& p : kept) CHECK(fs::exists(p));
  REQUIRE_THROWS_WITH(RunLock((dir / "model.safetensors").string(), false),
                      Catch::Contains("model.safetensors' is a file, not a directory"));
  fs::remove_all(dir);
}

TEST_CASE("sampling: temperature 0 and top-k 1 are greedy, top-p keeps the nucleus, seeded", "[train]") {
  const std::vector<float> logits{0.0f, 2.0f, 1.0f, -1.0f};
  std::vector<std::pair<double, int32_t>> scratch;
  Rng rng(1);
  CHECK(sample_token(logits, {.temperature = 0}, rng, scratch) == 1);
  for (int i = 0; i < 20; ++i) CHECK(sample_token(logits, {.temperature = 1, .top_k = 1}, rng, scratch) == 1);
  // p = softmax = [0.087, 0.644, 0.237, 0.032]: top_p 0.7 keeps tokens 1 and 2 only.
  std::set<int32_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(sample_token(logits, {.temperature = 1, .top_p = 0.7}, rng, scratch));
  CHECK(seen == std::set<int32_t>{1, 2});
  Rng a(9), b(9);
  for (int i = 0; i < 20; ++i) CHECK(sample_token(logits, {}, a, scratch) == sample_token(logits, {}, b, scratch));
}

TEST_CASE("sampling: the KV cache draws the tokens recomputing the window draws, across the context", "[train][kv_cache]") {
  const auto tok = text::CharTokenizer::train("the quick brown fox jumps over the lazy dog");
  // Heads of 8 (the full pass through the GEMM path) and of 16 (through the float head kernels,
  // nn/attention_head_kernels.h, while the cache's steps take the GEMM path).
  const int64_t dim = GENERATE(16, 32);
  nn::DecoderConfig c;
  c.vocab_size = tok.vocab_size(), c.ctx = 24, c.layers = 2, c.heads = 2, c.dim = dim;
  c.init_std = 0.3;  // logits far apart: a draw that differs would be a bug, not a near tie
  nn::Decoder<float> model(c, 7);
  for (const double temperature : {0.0, 1.0}) {
    // 40 tokens after an 8-character prompt: 16 through the cache, the rest past the context.
    Rng a(3), b(3);
    const auto cached = generate(model, tok, "the lazy", 40, {.temperature = temperature}, a);
    const auto recomputed = generate(model, tok, "the lazy", 40, {.temperature = temperature, .kv_cache = false}, b);
    INFO("dim " << dim << ", temperature " << temperature);
    CHECK(cached == recomputed);
    CHECK(cached.size() == 40);
  }
}

TEST_CASE("flops: the step's GEMMs are the FLOP model's, shape by shape", "[train]") {
  nn::DecoderConfig c;  // L4 H4 C128 V65, the benchmark's model
  nn::DecoderConfig d;
  d.layers = 2, d.heads = 2, d.dim = 64, d.vocab_size = 100, d.ctx = 32;
  nn::DecoderConfig e = d;  // SwiGLU: gate and up in one GEMM of 2H outputs
  e.mlp = nn::MlpKind::parse("swiglu");
  for (const auto& [config, batch, T] : {std::tuple{c, int64_t{12}, int64_t{64}}, std::tuple{d, int64_t{3}, int64_t{32}},
                                         std::tuple{e, int64_t{3}, int64_t{32}}}) {
    double sum = 0;
    for (const StepGemm& g : step_gemms(config, batch, T))
      sum += 2.0 * static_cast<double>(g.M * g.N * g.K) * static_cast<double>(g.calls);
    CHECK(sum == flops_per_step(config, batch, T));
  }
  CHECK(step_gemms(c, 12, 64).size() == 4 * 4 * 3 + 3 + 6);  // 4 Linears per layer, the head, 6 per-head products
}

TEST_CASE("data: the unigram loss is the cross-entropy of val under train's (add-one) frequencies", "[train]") {
  // train: a a a b (vocab 3, add-one counts 4, 2, 1 of 7); val: a b.
  const std::vector<int32_t> train{0, 0, 0, 1}, val{0, 1};
  CHECK_THAT(unigram_loss(train, val, 3), Catch::Matchers::WithinRel(-(std::log(4.0 / 7) + std::log(2.0 / 7)) / 2, 1e-14));
}

TEST_CASE("run: one loop decides evaluations, sharpness, checkpoints and stops, the losses are train_step's", "[train]") {
  TrainConfig c = tiny_config();
  c.steps = 12, c.eval_every = 5, c.sharpness_every = 4, c.checkpoint_every = 3, c.sharpness_iters = 3;
  std::vector<int64_t> evals, sharp, saves;
  std::vector<double> losses;
  RunHooks hooks;
  hooks.on_step = [&](const StepReport& r) {
    losses.push_back(r.result.loss);
    if (r.eval) evals.push_back(r.result.step);
    if (r.sharpness) sharp.push_back(r.result.step);
    CHECK(r.stats == nullptr);  // not instrumented
    CHECK_FALSE(r.divergence);
  };
  hooks.on_checkpoint = [&](int64_t step) { saves.push_back(step); };
  auto t = make_trainer(c);
  const RunOutcome out = run(*t, hooks);
  CHECK(out.end == RunEnd::kFinished);
  CHECK(out.step == 12);
  CHECK(evals == std::vector<int64_t>{5, 10, 12});  // every eval_every steps, and the last
  CHECK(sharp == std::vector<int64_t>{4, 8, 12});
  CHECK(saves == std::vector<int64_t>{3, 6, 9, 12});  // every checkpoint_every steps (not the last twice)
  // The loop adds nothing to the training itself: the same losses as train_step alone
  // (evaluations and sharpness measurements read the weights and draw no training batch).
  auto plain = make_trainer(c);
  for (double loss : losses) CHECK(plain->train_step().loss == loss);
  // Nothing left to do: no step, no checkpoint.
  saves.clear();
  CHECK(run(*t, hooks).end == RunEnd::kFinished);
  CHECK(saves.empty());
}

TEST_CASE("evaluate: without eval_train the validation loss is the same bits, the train estimate NaN, training untouched", "[train]") {
  TrainConfig with = tiny_config(), without = with;
  without.eval_train = false;
  auto a = make_trainer(with), b = make_trainer(without);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(a->train_step().loss == b->train_step().loss);
    const EvalResult ea = a->evaluate(), eb = b->evaluate();
    CHECK(eb.val_loss == ea.val_loss);  // its own batches, the same with or without the train split's
    CHECK(std::isfinite(ea.train_loss));
    CHECK(ea.train_loss != ea.val_loss);
    CHECK(std::isnan(eb.train_loss));
  }
}

TEST_CASE("instrument: a layer's gradient norm is its parameters' gradients, before clipping", "[train]") {
  TrainConfig c = tiny_config();
  c.instrument = true, c.clip = 1e-3;  // every step clipped: the statistics are of the gradients before it
  auto t = make_trainer(c);
  for (int step = 0; step < 2; ++step) {
    const StepResult r = t->train_step();
    const StepStats& s = *t->last_stats();
    REQUIRE(s.layers.size() == 2);
    double all = 0;
    std::vector<double> layer(2, 0.0);
    for (auto& [name, p] : t->model().named_parameters()) {
      double sq = 0;
      for (int64_t i = 0; i < p->numel(); ++i) sq += double(p->grad()[i]) * p->grad()[i];
      all += sq;
      for (int l = 0; l < 2; ++l)
        if (name.rfind("blocks." + std::to_string(l) + ".", 0) == 0) layer[static_cast<size_t>(l)] += sq;
    }
    CHECK_THAT(r.grad_norm, Catch::Matchers::WithinRel(std::sqrt(all), 1e-12));
    CHECK(r.grad_norm > 1e-2);  // far above the clip: the gradients were not scaled in place
    for (size_t l = 0; l < 2; ++l) {
      CHECK(layer[l] > 0);
      CHECK_THAT(s.layers[l].grad_norm, Catch::Matchers::WithinRel(std::sqrt(layer[l]), 1e-12));
    }
  }
}

TEST_CASE("run: stop_after and a stop request save and stop, a divergence ends the run unsaved", "[train][faults]") {
  TrainConfig c = tiny_config();
  c.steps = 10, c.eval_every = 0, c.checkpoint_every = 0;
  std::vector<int64_t> saves;
  RunHooks hooks;
  hooks.on_checkpoint = [&](int64_t step) { saves.push_back(step); };
  hooks.stop_after = 4;
  auto t = make_trainer(c);
  RunOutcome out = run(*t, hooks);
  CHECK(out.end == RunEnd::kStoppedAfter);
  CHECK((out.step == 4 && t->step() == 4));
  CHECK(saves == std::vector<int64_t>{4});

  hooks.stop_after = 0;
  int polls = 0;
  hooks.stop_requested = [&] { return ++polls == 3; };  // asked before the run's third step
  out = run(*t, hooks);
  CHECK(out.end == RunEnd::kStopRequested);
  CHECK(out.step == 7);  // the step asked before is still taken, then the run stops
  CHECK(saves == std::vector<int64_t>{4, 7});

  // The lab's rule: a loss above 1.0x the first step's for 2 steps after warmup 0 diverges (a
  // training loss falls below its first value only after a few steps, so this fires early).
  hooks.stop_requested = {};
  c.lr = 3.0, c.warmup = 0;
  DivergenceDetector detector(StabilityOptions{.factor = 1.0, .patience = 2}, 0);
  hooks.detector = &detector;
  int reported = 0;
  hooks.on_step = [&](const StepReport& r) {
    ++reported;
    if (r.divergence) CHECK_FALSE(r.eval);
  };
  saves.clear();
  auto wild = make_trainer(c);
  out = run(*wild, hooks);
  REQUIRE(out.end == RunEnd::kDiverged);
  REQUIRE(out.divergence);
  CHECK(out.divergence->cause == "loss_explosion");
  CHECK(reported == out.step);  // the diverged step is reported too
  CHECK(out.step < 10);
  CHECK(saves.empty());
}

TEST_CASE("trainer: the rate is the schedule's, set_schedule changes it from the next step, --schedule picks one", "[train]") {
  TrainConfig c = tiny_config();
  c.steps = 6, c.warmup = 2, c.lr = 1e-2, c.min_lr = 1e-3;
  auto t = make_trainer(c);
  CHECK(t->lr() == CosineSchedule({.lr = 1e-2, .min_lr = 1e-3, .warmup = 2, .total = 6}).at(0));
  CHECK(t->train_step().lr == 5e-3);  // warmup: lr (0 + 1) / 2
  t->set_schedule(make_schedule("constant", {.lr = 0.1, .warmup = 0}));
  CHECK(t->lr() == 0.1);
  CHECK(t->train_step().lr == 0.1);
  CHECK_THROWS_WITH(t->set_schedule(nullptr), Catch::Contains("the schedule is null"));
  c.schedule = "linear";
  auto linear = make_trainer(c);
  for (int i = 0; i < 3; ++i) linear->train_step();
  CHECK_THAT(linear->train_step().lr, Catch::Matchers::WithinRel(1e-2 - 0.25 * 9e-3, 1e-12));  // a quarter of the decay
  c.schedule = "cosin";
  CHECK_THROWS_WITH(make_trainer(c), Catch::Contains("schedule must be cosine, linear, constant"));
}

TEST_CASE("accumulate: micro-batches give the whole batch's step within float32 rounding, deterministically", "[train]") {
  // The first step's loss and gradient, and the losses of 6 steps, with the batch of 8 run whole
  // and as 2 and 3 micro-batches (3: uneven, 3 + 3 + 2 sequences weighted 3/8, 3/8, 2/8).
  TrainConfig c = tiny_config();
  c.batch = 8, c.steps = 6, c.threads = 1, c.instrument = true;
  const auto run = [&](int64_t accumulate, int threads) {
    TrainConfig k = c;
    k.accumulate = accumulate, k.threads = threads;
    auto t = make_trainer(k);
    std::vector<double> losses, grad_norms, residual;
    for (int i = 0; i < 6; ++i) {
      const StepResult r = t->train_step();
      losses.push_back(r.loss), grad_norms.push_back(r.grad_norm);
      residual.push_back(t->last_stats()->layers[1].residual_rms);
    }
    return std::tuple{losses, grad_norms, residual};
  };
  const auto [loss1, grad1, res1] = run(1, 1);
  for (int64_t n : {2, 3, 8}) {
    INFO("accumulate " << n);
    const auto [loss, grad, res] = run(n, 1);
    // The first step: the same sequences and weights, summed in another order.
    CHECK_THAT(loss[0], Catch::Matchers::WithinRel(loss1[0], 1e-6));
    CHECK_THAT(grad[0], Catch::Matchers::WithinRel(grad1[0], 1e-5));
    CHECK_THAT(res[0], Catch::Matchers::WithinRel(res1[0], 1e-6));  // the statistics combine over micro-batches
    // Six steps on: the rounding has not grown past float noise.
    CHECK_THAT(loss[5], Catch::Matchers::WithinRel(loss1[5], 1e-4));
  }
  // Two threads split the batch of 8 as 4 + 4, one worker each: the same split as 2 micro-batches
  // on one thread, with the same seeds (4/8). Still not bit for bit: worker 1 sums into a zeroed
  // buffer that is then added to the parameters, the second micro-batch's backward adds into
  // them inside its GEMMs — another order of float additions. Measured: every gradient within
  // 1e-6 of the largest.
  const auto first_grads = [&](int64_t accumulate, int threads) {
    TrainConfig k = c;
    k.accumulate = accumulate, k.threads = threads;
    auto t = make_trainer(k);
    t->train_step();
    std::vector<float> g;
    for (const Parameter<float>* p : t->params()) g.insert(g.end(), p->grad().data(), p->grad().data() + p->numel());
    return g;
  };
  const std::vector<float> micro = first_grads(2, 1), threads = first_grads(1, 2);
  REQUIRE(micro.size() == threads.size());
  float largest = 0, diff = 0;
  for (size_t i = 0; i < micro.size(); ++i)
    largest = std::max(largest, std::abs(threads[i])), diff = std::max(diff, std::abs(micro[i] - threads[i]));
  CHECK(diff > 0);
  CHECK(diff <= 1e-6f * largest);
  // Deterministic: the same accumulation twice gives the same bits.
  CHECK(std::get<0>(run(3, 1)) == std::get<0>(run(3, 1)));
  c.accumulate = 9;
  CHECK_THROWS_WITH(make_trainer(c), Catch::Contains("accumulate 9 is more micro-batches than the batch of 8"));
}

TEST_CASE("lm: a step's record holds each field once, under StepResult's names, with what run() adds", "[lm]") {
  lm::StepResult s;
  s.step = 7, s.loss = 2.5, s.z_loss = 0.01, s.log_z_mean = 4.25, s.log_z_min = 3.75, s.lr = 3e-3, s.grad_norm = 0.8;
  s.step_ms = 12.5, s.tokens_per_s = 4096, s.finite = true;
  const nlohmann::json plain = lm::step_record(s);
  std::set<std::string> keys;
  for (const auto& [k, v] : plain.items()) keys.insert(k);
  CHECK(keys == std::set<std::string>{"step", "loss", "z_loss", "log_z_mean", "log_z_min", "lr", "grad_norm", "step_ms",
                                      "tokens_per_s", "finite"});
  CHECK(plain["lr"] == 3e-3);
  CHECK(plain["log_z_min"] == 3.75);
  s.comm_ms = 1.5;  // data-parallel only
  CHECK(lm::step_record(s)["comm_ms"] == 1.5);
  lm::StepStats stats;
  stats.update_ratio = 1e-3, stats.final_residual_rms = 2.0;
  stats.layers.push_back({.residual_rms = 1.25, .norm_out_rms = 1.0, .attention_logit = 9.0, .grad_norm = 0.5, .update_ratio = 2e-3});
  lm::StepReport report{.result = s, .stats = &stats, .eval = lm::EvalResult{.val_loss = 2.75, .train_loss = std::nan("")}};
  const nlohmann::json full = lm::step_record(report);
  CHECK(full["val_loss"] == 2.75);
  CHECK(!full.contains("train_loss"));  // not estimated (eval_train off)
  CHECK(full["final_residual_rms"] == 2.0);
  CHECK(full["layers"][0]["attention_logit"] == 9.0);
  CHECK(full["layers"][0]["norm_out_rms"] == 1.0);
}

TEST_CASE("trainer: a hook that calls back into the trainer mid-call is an Error naming both calls, and the trainer goes on",
          "[train][errors][hooks]") {
  // Inside train_step or evaluate a module hook runs while the trainer's tapes and buffers are in
  // use: another step or evaluation from there would clear them under the running call.
  auto t = make_trainer(tiny_config());
  auto plain = make_trainer(tiny_config());
  nn::Module<float>* found = nullptr;
  for (auto& [name, m] : t->model().named_modules())
    if (name == "blocks.0") found = m;
  REQUIRE(found);
  auto& block = dynamic_cast<nn::UnaryModule<float>&>(*found);
  std::function<void()> inside;  // run by the hook's next call only
  std::vector<std::string> errors;
  const auto handle = block.register_forward_hook([&](nn::UnaryModule<float>&, Var<float>, Var<float>) {
    if (!inside) return;
    try {
      std::exchange(inside, nullptr)();
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  });
  const std::vector<int32_t> ids(16, 1);
  inside = [&] { t->train_step(); };
  const double first = t->train_step().loss;
  inside = [&] { t->evaluate(); };
  const EvalResult eval = t->evaluate(true);
  inside = [&] {
    t->loss_on(ids, ids, 1, 16);
    t->set_step(7);
  };
  const double second = t->train_step().loss;
  inside = [&] { t->set_schedule(make_schedule("constant", {.lr = 1e-3})); };
  t->evaluate(true);
  REQUIRE(errors == std::vector<std::string>{
                        "Trainer::train_step: called while this trainer's train_step is running (from a module hook or a "
                        "callback inside it); call it after that returns",
                        "Trainer::evaluate: called while this trainer's evaluate is running (from a module hook or a "
                        "callback inside it); call it after that returns",
                        "Trainer::loss_on: called while this trainer's train_step is running (from a module hook or a "
                        "callback inside it); call it after that returns",
                        "Trainer::set_schedule: called while this trainer's evaluate is running (from a module hook or a "
                        "callback inside it); call it after that returns"});
  // Nothing the refused calls would have done happened: the same losses as a trainer never called back.
  CHECK(first == plain->train_step().loss);
  CHECK(eval.val_loss == plain->evaluate().val_loss);
  CHECK(second == plain->train_step().loss);
  CHECK(t->step() == 2);
  block.remove_hook(handle);
}
