#include "tapegrad/lm/checkpoint.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/io/json_field.h"
#include "tapegrad/io/safetensors.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/state_dict.h"

namespace tapegrad::lm {

namespace fs = std::filesystem;

namespace {

constexpr int kFormatVersion = 1;
const char* const kModel = "model.safetensors";
const char* const kOptimizer = "optimizer.safetensors";
const char* const kJson = "checkpoint.json";

std::string path_in(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string hex_u64(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

uint64_t parse_hex_u64(const nlohmann::json& j, const std::string& what) {
  const std::string s = j.is_string() ? j.get<std::string>() : std::string();
  uint64_t v = 0;
  const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  check(s.size() == 16 && err == std::errc() && end == s.data() + s.size(), what, ": expected 16 hex digits, got ",
        io::json_excerpt(j));
  return v;
}

nlohmann::json read_json_file(const std::string& path) {
  return io::parse_json(io::read_file(path), path);
}

// Finishes an interrupted commit, or discards the leftovers of an interrupted write.
void recover(const std::string& dir) {
  const std::string json_new = path_in(dir, std::string(kJson) + ".new");
  std::error_code ec;
  if (fs::exists(json_new, ec)) {
    const nlohmann::json j = read_json_file(json_new);
    bool complete = j.contains("files") && j["files"].is_object();
    for (const char* f : {kModel, kOptimizer}) {
      if (!complete) break;
      const std::string fresh = path_in(dir, std::string(f) + ".new");
      const std::string current = fs::exists(fresh, ec) ? fresh : path_in(dir, f);
      complete = fs::exists(current, ec) && io::string_field(j["files"], f) == io::sha256_hex(io::read_file(current));
    }
    if (complete) {
      for (const char* f : {kModel, kOptimizer, kJson}) {
        const std::string fresh = path_in(dir, std::string(f) + ".new");
        if (fs::exists(fresh, ec)) fs::rename(fresh, path_in(dir, f));
      }
      return;
    }
  }
  for (const char* f : {kModel, kOptimizer, kJson}) fs::remove(path_in(dir, std::string(f) + ".new"), ec);
}

void check_hashes(const std::string& dir, const nlohmann::json& j) {
  check(j.contains("files") && j["files"].is_object(), path_in(dir, kJson), ": missing 'files'");
  for (const char* f : {kModel, kOptimizer}) {
    const std::string p = path_in(dir, f);
    const std::string expect = io::string_field(j["files"], f);
    check(io::sha256_hex(io::read_file(p)) == expect, p, ": contents do not match the SHA-256 recorded in ",
          kJson, " (the file was modified or corrupted)");
  }
}

nlohmann::json open_checkpoint(const std::string& dir) {
  std::error_code ec;
  io::require_directory(dir, "checkpoint directory");
  // A live writer's unfinished files are its own: only a folder no one holds is repaired.
  if (!RunLock::held_by_another(dir)) recover(dir);
  const std::string json_path = path_in(dir, kJson);
  check(fs::exists(json_path, ec), "no checkpoint in '", dir, "' (", kJson, " is missing)");
  nlohmann::json j = read_json_file(json_path);
  check(j.is_object() && io::string_field(j, "format") == "tapegrad-checkpoint" && j.contains("version") &&
            j["version"] == kFormatVersion,
        json_path, ": not a tapegrad checkpoint (format version ", kFormatVersion, " expected)");
  check(j.contains("step"), json_path, ": missing field 'step'");
  for (const char* key : {"model", "train", "tokenizer", "optimizer", "data", "files"}) {
    check(j.contains(key), json_path, ": missing field '", key, "'");
    check(j[key].is_object(), json_path, ": field '", key, "' must be an object, got ", io::json_excerpt(j[key]));
  }
  check_hashes(dir, j);
  return j;
}

}  // namespace

void save_checkpoint(Trainer& trainer, const std::string& dir) {
  // One writer per run folder: a folder another process (or thread) trains into is refused; the
  // writer that holds it (train_lm's loop) saves through its own lock.
  const RunLock lock(dir);
  const nn::Decoder<float>* decoder = trainer.decoder();
  io::NamedTensors<float> weights, moments;
  for (auto& [name, t] : trainer.model().state_dict()) weights.emplace_back(name, t->view());
  for (auto& [name, t] : trainer.optimizer().state_dict()) moments.emplace_back(name, t->view());
  const std::map<std::string, std::string> meta{{"format", "tapegrad"}, {"step", std::to_string(trainer.step())}};
  const std::string model_bytes = io::serialize_safetensors(weights, meta);
  const std::string opt_bytes = io::serialize_safetensors(moments, meta);

  nlohmann::json rng = nlohmann::json::array();
  for (uint64_t w : trainer.sampler().rng().state()) rng.push_back(hex_u64(w));
  const nlohmann::json j = {
      {"format", "tapegrad-checkpoint"},
      {"version", kFormatVersion},
      {"step", trainer.step()},
      // A model of your own is named by its type; its settings are its constructor's business.
      {"model", decoder ? nn::to_json(decoder->config()) : nlohmann::json{{"custom", trainer.model().type_name()}}},
      {"train", decoder ? without_model_fields(to_json(trainer.config())) : to_json(trainer.config())},
      {"tokenizer", trainer.tokenizer().to_json()},
      {"optimizer", {{"type", trainer.config().optimizer}, {"steps", trainer.optimizer().steps()}, {"file", kOptimizer}}},
      {"data",
       {{"batch_rng", rng},
        {"batches_drawn", trainer.step()},
        {"text_bytes", trainer.data().text_bytes},
        {"text_sha256", trainer.data().text_sha256}}},
      {"files", {{kModel, io::sha256_hex(model_bytes)}, {kOptimizer, io::sha256_hex(opt_bytes)}}}};
  // Phase 1: every file complete under a temporary name. Phase 2: rename into place, json last.
  io::write_file_atomic(path_in(dir, std::string(kModel) + ".new"), model_bytes);
  io::write_file_atomic(path_in(dir, std::string(kOptimizer) + ".new"), opt_bytes);
  io::write_file_atomic(path_in(dir, std::string(kJson) + ".new"), j.dump(2) + "\n");
  for (const char* f : {kModel, kOptimizer, kJson}) fs::rename(path_in(dir, std::string(f) + ".new"), path_in(dir, f));
}

namespace {
// Training never saves a non-finite weight (a step with a non-finite gradient is skipped), so one
// in a checkpoint means damage: refuse it rather than print "loss nan" and exit 0.
void check_finite(const StateDict<float>& state, const std::string& path) {
  for (const auto& [name, t] : state)
    for (int64_t i = 0; i < t->numel(); ++i)
      check(std::isfinite((*t)[i]), path, ": tensor '", name, "' holds a non-finite value (", (*t)[i], ") at index ", i,
            ": the checkpoint is damaged");
}
// Resuming on other text would train on without a word: the run's curve would splice two data
// sets. Checkpoints written before the text was recorded carry no fingerprint and are trusted.
void check_same_text(const nlohmann::json& saved, const std::string& text, const std::string& source,
                     const std::string& json_path) {
  if (!saved.is_object() || !saved.contains("text_sha256")) return;
  std::string sha;
  int64_t bytes = -1;
  io::read_field(saved, "text_sha256", sha, (json_path + ": data").c_str());
  io::read_field(saved, "text_bytes", bytes, (json_path + ": data").c_str());
  const int64_t now_bytes = static_cast<int64_t>(text.size());
  const std::string now_sha = io::sha256_hex(text);
  if (sha == now_sha && bytes == now_bytes) return;
  const std::string what = source.empty() ? std::string("the embedded corpus") : "'" + source + "'";
  throw Error(cat("the training text ", what, " is not the text this run was trained on (", json_path, " records ",
                  bytes, " bytes with SHA-256 ", sha.substr(0, 12), "..., it now has ", now_bytes, " bytes, ",
                  now_sha.substr(0, 12), "...); restore the file, or allow the change to continue on the new text (train_lm "
                  "--allow-data-change; ResumeOverrides::allow_data_change)"));
}

// What checkpoint.json holds besides the file hashes, parsed and validated in one place so that
// every error — a sub-config's, a tokenizer's, a flag-like validation's — names the file.
struct SavedRun {
  nn::DecoderConfig model;
  std::string custom;  // the type of a model of the user's own, else empty
  TrainConfig train;
  std::unique_ptr<text::Tokenizer> tokenizer;
  int64_t step = 0, optimizer_steps = 0;
  Rng::State batch_rng{};
};

SavedRun parse_saved_run(const nlohmann::json& j, const std::string& json_path) {
  SavedRun r;
  try {
    if (j["model"].contains("custom")) {
      io::read_field(j["model"], "custom", r.custom, "model");
      check(!r.custom.empty() && r.custom.size() <= 200, "model field 'custom' must name the model's type (1 to 200 characters), got ",
            io::json_excerpt(j["model"]["custom"]));
      r.train = train_config_from_json(j["train"]);
      r.tokenizer = text::tokenizer_from_json(j["tokenizer"]);
    } else {
      r.model = nn::decoder_config_from_json(j["model"]);
      r.train = train_config_from_json(j["train"], r.model);
      // Bounded by the model: a tokenizer of another size is refused before it is built.
      r.tokenizer = text::tokenizer_from_json(j["tokenizer"], r.model.vocab_size);
    }
    r.step = -1, r.optimizer_steps = -1;
    io::read_field(j, "step", r.step, "");
    io::read_field(j["optimizer"], "steps", r.optimizer_steps, "optimizer");
    check(r.step >= 0, "field 'step' must be a whole number >= 0, got ", r.step);
    check(r.optimizer_steps >= -1, "optimizer field 'steps' must be a whole number >= 0, got ", r.optimizer_steps);
    if (r.optimizer_steps < 0) r.optimizer_steps = r.step;  // older checkpoints: the same count
    const auto& rng = j["data"].contains("batch_rng") ? j["data"]["batch_rng"] : nlohmann::json();
    check(rng.is_array() && rng.size() == 4, "data.batch_rng must hold 4 words, got ", io::json_excerpt(rng));
    for (size_t i = 0; i < 4; ++i) r.batch_rng[i] = parse_hex_u64(rng[i], "data.batch_rng");
    Rng probe;
    try {
      probe.set_state(r.batch_rng);
    } catch (const Error& e) {
      throw Error(cat("data.batch_rng: ", e.what()));
    }
  } catch (const Error& e) {  // UsageError too: in a file, a bad setting is the file's fault (exit 1)
    throw Error(cat(json_path, ": ", e.what()));
  }
  return r;
}

}  // namespace

LoadedModel load_model(const std::string& dir) {
  LoadedModel m;
  m.checkpoint = open_checkpoint(dir);
  SavedRun saved = parse_saved_run(m.checkpoint, path_in(dir, kJson));
  check(saved.custom.empty(), path_in(dir, kJson), ": the checkpoint holds a ", saved.custom,
        ", a model of the user's own: build it and load ", path_in(dir, kModel), " with io::load_state_dict");
  m.config = saved.train;
  m.tokenizer = std::move(saved.tokenizer);
  m.model = std::make_unique<nn::Decoder<float>>(saved.model, 0);
  io::load_state_dict(path_in(dir, kModel), m.model->state_dict());
  check_finite(m.model->state_dict(), path_in(dir, kModel));
  return m;
}

std::unique_ptr<Optimizer<float>> load_optimizer(const std::string& dir, LoadedModel& m) {
  const SavedRun saved = parse_saved_run(m.checkpoint, path_in(dir, kJson));
  std::unique_ptr<Optimizer<float>> optimizer = optimizer_for(m.config, m.model->parameters());
  io::load_state_dict(path_in(dir, kOptimizer), optimizer->state_dict());
  check_finite(optimizer->state_dict(), path_in(dir, kOptimizer));
  optimizer->set_steps(saved.optimizer_steps);
  return optimizer;
}

std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const ResumeOverrides& o, const Communicator* comm) {
  const nlohmann::json j = open_checkpoint(dir);
  const std::string json_path = path_in(dir, kJson);
  SavedRun saved = parse_saved_run(j, json_path);
  TrainConfig config = saved.train;
  config.steps = o.steps.value_or(config.steps);
  config.eval_every = o.eval_every.value_or(config.eval_every);
  config.eval_iters = o.eval_iters.value_or(config.eval_iters);
  config.checkpoint_every = o.checkpoint_every.value_or(config.checkpoint_every);
  config.threads = o.threads.value_or(config.threads);
  std::shared_ptr<text::Tokenizer> tokenizer = std::move(saved.tokenizer);
  std::string text;
  try {
    text = o.text ? *o.text : load_text(config.data);
  } catch (const Error& e) {
    throw Error(cat(json_path, ": the run's training text (train.data): ", e.what()));
  }
  if (!o.allow_data_change) check_same_text(j["data"], text, config.data, json_path);
  std::unique_ptr<nn::LanguageModel<float>> model;
  if (o.model) {
    model = o.model();
    check(model != nullptr, "resume_trainer: ResumeOverrides::model returned no model");
    check(model->type_name() == (saved.custom.empty() ? std::string("Decoder") : saved.custom), json_path,
          ": the checkpoint holds a ", saved.custom.empty() ? std::string("Decoder") : saved.custom,
          ", ResumeOverrides::model built a ", model->type_name());
  } else {
    check(saved.custom.empty(), json_path, ": the checkpoint holds a ", saved.custom,
          ", a model of the user's own: pass ResumeOverrides::model, a function that builds it");
  }
  auto trainer = std::make_unique<Trainer>(config, std::move(model), tokenizer, make_token_data(config, *tokenizer, text), comm);
  if (saved.custom.empty())
    check(trainer->decoder() && saved.model == trainer->decoder()->config(), json_path,
          ": the model config does not match the training config");

  io::load_state_dict(path_in(dir, kModel), trainer->model().state_dict());
  io::load_state_dict(path_in(dir, kOptimizer), trainer->optimizer().state_dict());
  check_finite(trainer->model().state_dict(), path_in(dir, kModel));
  check_finite(trainer->optimizer().state_dict(), path_in(dir, kOptimizer));
  trainer->set_step(saved.step);
  trainer->optimizer().set_steps(saved.optimizer_steps);
  trainer->sampler().rng().set_state(saved.batch_rng);
  return trainer;
}

}  // namespace tapegrad::lm
