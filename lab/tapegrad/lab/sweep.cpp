#include "tapegrad/lab/sweep.h"

#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/records.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/run_log.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/threads.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;
using lm::StepResult;
using lm::StepStats;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::vector<std::string> sweep_warnings(const SweepOptions& o) {
  const std::vector<RunSpec> specs = expand(o);
  std::vector<std::pair<std::string, std::vector<std::string>>> seen;  // message -> the runs' settings
  for (const RunSpec& spec : specs)
    for (const std::string& w : run_config(o, spec, 1).warnings()) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == w; });
      if (it == seen.end()) it = seen.insert(seen.end(), {w, {}});
      it->second.push_back(spec.settings_text());
    }
  // A recipe the user named that no run of the sweep is a target of: no run is on it, which the
  // command does not say. (The lab's default recipe, for the norms that have one, is not named.)
  for (const auto& name : o.given.count("recipe") ? axis_values(o, "recipe") : std::vector<nlohmann::json>{}) {
    const std::vector<const lm::Recipe*> in = lm::recipes_in(name.get<std::string>());
    if (in.empty()) continue;
    bool targeted = false;
    for (const RunSpec& spec : specs) {
      const lm::TrainConfig c = run_config(o, spec, 1);
      for (const lm::Recipe* r : in) targeted = targeted || (c.recipe == name && lm::recipe_targets(*r, c));
    }
    std::string targets;
    for (const lm::Recipe* r : in) targets += cat(targets.empty() ? "" : ", ", r->name, " for {", r->target_key, "} ", r->target_value);
    if (!targeted)
      seen.push_back({cat("{recipe} ", name.get<std::string>(), " (", targets, "): no run of this sweep is a target, so no run "
                          "is on the recipe"), {}});
  }
  std::vector<std::string> out;
  for (const auto& [message, runs] : seen) {
    std::set<std::string> where(runs.begin(), runs.end());
    where.erase("");
    std::string in;
    for (const std::string& w : where) in += (in.empty() ? "" : "; ") + w;
    out.push_back(runs.size() == specs.size() || in.empty() ? message : cat(message, " (in the runs with ", in, ")"));
  }
  return out;
}

std::optional<RunRecord> run_one(const SweepOptions& o, const RunSpec& spec,
                                 std::shared_ptr<const text::Tokenizer> tokenizer,
                                 std::shared_ptr<const lm::TokenData> data, int threads, std::string& curve,
                                 const std::function<bool()>& stop, RunTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  RunTiming time;
  const lm::TrainConfig c = run_config(o, spec, threads);
  lm::Trainer trainer(c, std::move(tokenizer), std::move(data));
  time.setup_s = seconds_since(t0);
  lm::DivergenceDetector detector(
      {.factor = o.divergence_factor, .patience = o.divergence_patience, .spike_factor = o.spike_factor}, c.warmup);

  RunRecord rec;
  rec.spec = spec;
  rec.steps = c.steps;
  rec.final_train_loss = rec.final_val_loss = kNaN;
  rec.min_train_loss = rec.min_val_loss = std::numeric_limits<double>::infinity();
  double ms = 0;
  const std::string prefix = identity_cells(spec);
  lm::RunHooks hooks;
  hooks.detector = &detector;
  hooks.stop_requested = stop;
  hooks.on_step = [&](const lm::StepReport& report) {
    const auto h0 = std::chrono::steady_clock::now();
    const StepResult& r = report.result;
    time.steps_s += r.step_ms / 1e3, time.instrument_s += r.instrument_ms / 1e3;
    time.eval_s += report.eval_ms / 1e3, time.sharpness_s += report.sharpness_ms / 1e3;
    if (r.step == 1) rec.initial_loss = r.loss;
    else ms += r.step_ms;
    rec.steps_done = r.step;
    fold_step(rec, report);  // the run's summaries of the curve (records.h)
    if (const auto& e = report.eval) {
      rec.final_val_loss = e->val_loss, rec.final_train_loss = e->train_loss;
      rec.min_val_loss = std::min(rec.min_val_loss, e->val_loss);
      rec.min_train_loss = std::min(rec.min_train_loss, e->train_loss);
    }
    if (const auto& h = report.sharpness) {
      const double ratio = lm::edge_ratio(*h);
      if (std::isnan(rec.peak_sharpness_ratio) || ratio > rec.peak_sharpness_ratio) rec.peak_sharpness_ratio = ratio;
      if (ratio >= 1 && rec.sharpness_cross_step == 0) rec.sharpness_cross_step = r.step;
      const double batch_ratio = h->batch_sharpness / h->threshold;
      if (std::isfinite(batch_ratio) && !(batch_ratio <= rec.peak_batch_sharpness_ratio)) rec.peak_batch_sharpness_ratio = batch_ratio;
    }
    curve += prefix + "," + curve_row(report, c.sharpness_every > 0) + "\n";
    time.record_s += seconds_since(h0);
  };
  const lm::RunOutcome outcome = lm::run(trainer, hooks);
  if (outcome.end == lm::RunEnd::kStopRequested) return std::nullopt;
  if (const auto& d = outcome.divergence) {
    rec.diverged = true;
    rec.divergence_step = d->step;
    rec.divergence_cause = d->cause;
    rec.divergence_quantity = d->quantity;
    rec.final_val_loss = rec.final_train_loss = kNaN;
  }
  rec.spikes = detector.spikes();
  if (!std::isfinite(rec.min_val_loss)) rec.min_val_loss = kNaN;
  if (!std::isfinite(rec.min_train_loss)) rec.min_train_loss = kNaN;
  rec.step_ms = rec.steps_done > 1 ? ms / static_cast<double>(rec.steps_done - 1) : kNaN;
  rec.tokens_per_s = static_cast<double>(c.batch * c.ctx) / (rec.step_ms / 1000.0);
  rec.wall_s = seconds_since(t0);
  if (timing) *timing = time;
  return rec;
}

namespace {
// The sweep's text, tokenizer and token data: every run trains on these.
struct SweepData {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::shared_ptr<const lm::TokenData> data;
};
SweepData load_sweep_data(const SweepOptions& o, const std::string& text) {
  const std::string what = o.base.data.empty() ? std::string("embedded corpus") : o.base.data;
  std::shared_ptr<const text::Tokenizer> tokenizer = lm::build_tokenizer(o.base, text, what);
  return {tokenizer, lm::make_token_data(o.base, *tokenizer, text)};
}
SweepData load_sweep_data(const SweepOptions& o) { return load_sweep_data(o, lm::load_text(o.base.data)); }

// The text's identity, as sweep.json and every run's proof hold it.
nlohmann::json data_identity(const SweepOptions& o, const std::string& text) {
  return {{"source", o.base.data.empty() ? std::string("embedded corpus") : o.base.data},
          {"bytes", text.size()},
          {"sha256", io::sha256_hex(text)}};
}
std::string describe_data(const nlohmann::json& d) {
  const bool sized = d.is_object() && d.contains("bytes") && d["bytes"].is_number_unsigned();
  return cat(text_field(d, "source"), " (", sized ? d["bytes"].get<uint64_t>() : 0, " bytes, sha256 ",
             text_field(d, "sha256").substr(0, 16), "...)");
}

// What a run trained with, as its proof holds it: the run's settings as train_lm's config.json,
// less the thread count (a run's bits depend on it, its comparability does not) and the
// evaluation interval (sweep.json's "evals", one per folder, sets it).
nlohmann::json proof_config(const SweepOptions& o, const RunSpec& spec) {
  nlohmann::json c = lm::to_json(run_config(o, spec, 1));
  c.erase("threads");
  c.erase("eval-every");
  return c;
}

std::string proof_path(const std::string& out, const std::string& id) { return out + "/records/" + id + ".json"; }

// records/<id>.json, written after the run's curve and record: what it trained with and on, and the
// SHA-256 of both files, so neither can change (or go missing) without the sweep noticing.
void write_proof(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, const std::string& record,
                 const std::string& curve) {
  const nlohmann::json proof = {{"format", 1},
                                {"config", proof_config(o, spec)},
                                {"data", data},
                                {"record_sha256", io::sha256_hex(record)},
                                {"curve_sha256", io::sha256_hex(curve)}};
  io::write_file_atomic(proof_path(o.out, spec.id()), proof.dump(1) + "\n");
}

// Whether the folder's runs carry proofs: its sweep.json says so (every writer of proofs marks it),
// or a proof is there. In such a folder a run without a proof is unproven, never adopted.
bool folder_has_proofs(const std::string& out) {
  std::error_code ec;
  const std::string grid_path = out + "/sweep.json";
  if (fs::exists(grid_path, ec)) {
    const nlohmann::json g = io::parse_json(io::read_file(grid_path, kMaxGridBytes), grid_path);
    if (g.is_object() && g.contains("run_proofs")) return true;
  }
  if (fs::is_directory(out + "/records", ec))
    for (const auto& entry : fs::directory_iterator(out + "/records", ec))
      if (entry.path().extension() == ".json") return true;
  return false;
}

// Whether the recorded run `spec` counts as done: its record, curve and proof are there and agree.
// Not done (trained again), with the reason in `why`: a missing or changed curve or record, or no
// proof in a folder whose runs carry proofs (`adopt_unproven` false: a run killed before its proof
// was written, or files copied in from elsewhere). An Error: the run trained on other data, or
// with other settings than the grid now gives (an edited sweep.json) — reporting it beside the
// others would compare unlike runs. Only in a folder written before proofs existed
// (`adopt_unproven`) is a run without one taken, once its record agrees with what the grid gives
// it (its id, steps, and a step count it could have reached); `legacy` says so.
bool run_is_done(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, bool adopt_unproven,
                 std::string& why, bool& legacy) {
  const std::string id = spec.id(), record_path = o.out + "/records/" + id + ".csv",
                    curve_path = o.out + "/curves/" + id + ".csv", proof_file = proof_path(o.out, id);
  std::error_code ec;
  legacy = false;
  for (const std::string& path : {record_path, curve_path, proof_file})
    check(!fs::is_symlink(path, ec), path, ": a link; a sweep reads and writes only files of its own (remove the link)");
  if (!fs::is_regular_file(record_path, ec)) return why = "records/" + id + ".csv is missing", false;
  if (!fs::is_regular_file(curve_path, ec)) return why = "curves/" + id + ".csv is missing", false;
  if (!fs::exists(proof_file, ec)) {
    if (!adopt_unproven) return why = "records/" + id + ".json (its proof) is missing", false;
    const std::vector<RunRecord> rows = read_runs(record_path);
    const int64_t steps = run_config(o, spec, 1).steps;
    if (rows.size() != 1 || rows[0].spec.id() != id)
      return why = "records/" + id + ".csv does not hold that run's one row", false;
    const RunRecord& r = rows[0];
    if (r.steps != steps || r.steps_done < 1 || r.steps_done > steps || (!r.diverged && r.steps_done != steps))
      return why = cat("records/", id, ".csv says ", r.steps_done, " of ", r.steps, " steps, the grid gives ", steps), false;
    return legacy = true, true;
  }
  const RunProof proof = parse_proof(io::read_file(proof_file, kMaxRecordBytes), proof_file);
  if (proof.record_sha256 != io::sha256_hex(io::read_file(record_path, kMaxRecordBytes)))
    return why = "records/" + id + ".csv changed after its run wrote it", false;
  if (proof.curve_sha256 != io::sha256_hex(io::read_file(curve_path, kMaxCurveBytes)))
    return why = "curves/" + id + ".csv changed after its run wrote it", false;
  check(text_field(proof.data, "sha256") == text_field(data, "sha256"), o.out,
        ": its runs trained on ", describe_data(proof.data), ", this sweep's data is ", describe_data(data),
        ": a folder's runs share their data, so give the same text, or another --out (", proof_file, ")");
  const nlohmann::json now = proof_config(o, spec);
  // A setting the proof lacks was added after the run trained: it ran with its default (a new
  // setting's default keeps the behaviour the code had before it).
  static const nlohmann::json defaults = lm::to_json(lm::TrainConfig{});
  for (const auto& [key, value] : now.items()) {
    const nlohmann::json was = lm::current_value(
        key, proof.config.contains(key) ? proof.config[key] : defaults.contains(key) ? defaults[key] : nlohmann::json());
    check(was == value, proof_file, ": run ", id, " trained with ", key, " = ", io::json_excerpt(was),
          ", but the grid (", o.out, "/sweep.json) now gives it ", io::json_excerpt(value),
          ": sweep.json was changed after the runs trained; restore it, or start another --out");
  }
  return true;
}

// A continuation: the folder's text (sweep.json's "data") must be this sweep's.
void check_stored_data(const SweepOptions& o, const nlohmann::json& data) {
  const std::string grid_path = o.out + "/sweep.json";
  std::error_code ec;
  if (!fs::exists(grid_path, ec)) return;
  const nlohmann::json stored = io::parse_json(io::read_file(grid_path, kMaxGridBytes), grid_path);
  if (stored.is_object() && stored.contains("data") && stored["data"].is_object())
    check(text_field(stored["data"], "sha256") == text_field(data, "sha256"), o.out, ": its runs trained on ",
          describe_data(stored["data"]), ", this sweep's data is ", describe_data(data),
          ": a folder's runs share their data, so give the same text, or another --out (", grid_path, ")");
}

}  // namespace

void verify_sweep_folder(const SweepOptions& o) {
  io::check_path(o.out, "the sweep's folder (out)");
  const nlohmann::json data = data_identity(o, lm::load_text(o.base.data));
  check_stored_data(o, data);
  const std::map<std::string, RunRecord> all = recorded_runs(o.out);
  const bool proven = folder_has_proofs(o.out);
  for (const RunSpec& spec : expand(o)) {
    std::string why;
    bool legacy = false;
    if (all.count(spec.id())) run_is_done(o, spec, data, !proven, why, legacy);
  }
}

double sweep_unigram_loss(const SweepOptions& o) {
  const SweepData d = load_sweep_data(o);
  return lm::unigram_loss(d.data->train, d.data->val, d.tokenizer->vocab_size());
}

namespace {

std::function<void(const std::string&, const std::string&)>& write_boundary_hook() {
  static std::function<void(const std::string&, const std::string&)> hook;
  return hook;
}
void written(const std::string& file, const std::string& run_id) {
  if (const auto& hook = write_boundary_hook()) hook(file, run_id);
}

void write_runs_csv(const std::string& out, const std::map<std::string, RunRecord>& all) {
  std::vector<RunRecord> rows;
  for (const auto& [id, r] : all) rows.push_back(r);
  write_runs(out + "/runs.csv", rows);
}

}  // namespace

void set_write_boundary_hook(std::function<void(const std::string&, const std::string&)> hook) {
  write_boundary_hook() = std::move(hook);
}

std::vector<RunRecord> run_sweep(const SweepOptions& asked,
                                 const std::function<void(const RunRecord&, bool, int, int)>& on_run,
                                 const lm::Communicator* comm, SweepTiming* timing, const std::function<void()>& on_tail,
                                 const std::function<bool()>& stop_requested) {
  const auto t_start = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  SweepTiming time;
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  io::check_path(asked.out, "the sweep's folder (out)");
  const SweepOptions o = resolve_sweep(asked, every_setting());
  const std::string text = lm::load_text(o.base.data);
  const nlohmann::json data = data_identity(o, text);
  check_stored_data(o, data);
  const std::string grid_path = o.out + "/sweep.json";
  const bool adopt_unproven = !folder_has_proofs(o.out);  // read before sweep.json is rewritten with the mark
  if (comm) comm->barrier();                                 // by every rank
  std::error_code ec;
  std::optional<lm::RunLock> folder_lock;  // one writer per sweep folder (rank 0 writes the shared files)
  if (rank == 0) {
    folder_lock.emplace(o.out);
    io::ensure_own_directory(o.out + "/curves");
    io::ensure_own_directory(o.out + "/records");
    nlohmann::json g = grid_json(o);
    g["data"] = data;
    const std::string grid = g.dump(2) + "\n";
    if (!fs::exists(grid_path, ec) || io::read_file(grid_path, kMaxGridBytes) != grid) io::write_file_atomic(grid_path, grid);
  }
  if (comm) comm->barrier();
  std::map<std::string, RunRecord> all = recorded_runs(o.out);

  const std::vector<RunSpec> specs = expand(o);
  std::vector<size_t> todo;
  int finished = 0, legacy_runs = 0;
  const int total = static_cast<int>(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string id = specs[i].id();
    std::string why;
    bool legacy = false;
    if (all.count(id) && !run_is_done(o, specs[i], data, adopt_unproven, why, legacy)) {
      if (rank == 0) std::fprintf(stderr, "%s: %s: training run %s again\n", o.out.c_str(), why.c_str(), id.c_str());
      all.erase(id);
    }
    if (!all.count(id)) {
      todo.push_back(i);
      continue;
    }
    if (legacy && rank == 0) {  // hashed now, as it is: from here on a change to it is noticed
      write_proof(o, specs[i], data, io::read_file(o.out + "/records/" + id + ".csv", kMaxRecordBytes),
                  io::read_file(o.out + "/curves/" + id + ".csv", kMaxCurveBytes));
      ++legacy_runs;
    }
    if (rank == 0) on_run(all[id], true, ++finished, total);
  }
  if (legacy_runs > 0)
    std::fprintf(stderr, "%s: %d run(s) recorded before runs carried proofs (records/<id>.json) were taken as they "
                 "are and hashed now\n", o.out.c_str(), legacy_runs);
  // Runs not yet recorded are dealt round-robin over the ranks; each rank reports its own.
  std::vector<size_t> mine;
  for (size_t k = 0; k < todo.size(); ++k)
    if (static_cast<int>(k % ranks) == rank) mine.push_back(todo[k]);

  std::chrono::steady_clock::time_point t_end = std::chrono::steady_clock::now();
  if (!mine.empty()) {
    const SweepData shared = load_sweep_data(o, text);  // named, not a structured binding: clang 14 cannot capture those
    const int per_rank_cores = std::max(1, (o.base.threads > 0 ? o.base.threads : num_cores()) /
                                               (comm ? comm->local_size() : 1));
    const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(mine.size())));
    const int threads = std::max(1, per_rank_cores / jobs);
    time.jobs = jobs;
    time.prepare_s = seconds_since(t_start);
    std::atomic<size_t> next{0};
    std::atomic<int> training{jobs};  // workers still in their loop
    std::mutex mu;
    std::exception_ptr failure;
    std::atomic<bool> stopped{false};  // once asked, every worker stops without asking again
    const auto stop = [&] {
      if (stopped || lm::stop_signal() != 0 || (stop_requested && stop_requested())) stopped = true;
      return stopped.load();
    };
    auto worker = [&] {
      try {
        for (size_t k; (k = next++) < mine.size() && !stop();) {
          const RunSpec& spec = specs[mine[k]];
          std::string curve;
          RunTiming run_time;
          const auto rec = run_one(o, spec, shared.tokenizer, shared.data, threads, curve, stop, &run_time);
          if (!rec) break;  // stopped
          const auto w0 = std::chrono::steady_clock::now();
          // The curve, then the record, then the proof of both: a run is done once its proof is written.
          const std::string curve_file = csv_join(curve_columns(spec.get<int64_t>("layers"), o.base.sharpness_every > 0)) + "\n" + curve;
          const std::string record_file = csv_join(run_columns_header()) + "\n" + csv_row(*rec) + "\n";
          io::write_file_atomic(o.out + "/curves/" + spec.id() + ".csv", curve_file);
          written("curve", spec.id());
          io::write_file_atomic(o.out + "/records/" + spec.id() + ".csv", record_file);
          written("record", spec.id());
          write_proof(o, spec, data, record_file, curve_file);
          written("proof", spec.id());
          std::lock_guard<std::mutex> lock(mu);
          all[spec.id()] = *rec;
          if (ranks == 1) write_runs_csv(o.out, all);  // kept current; under MPI rank 0 assembles at the end
          run_time.record_s += seconds_since(w0);
          time.runs += run_time;
          ++time.trained;
          on_run(*rec, false, ++finished, total);
        }
        // The first worker out of runs while another still trains: a core is free from here on.
        if (const int left = --training; left == jobs - 1 && left > 0 && on_tail && !stop()) on_tail();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int j = 1; j < jobs; ++j) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    t_end = std::chrono::steady_clock::now();
  } else {
    time.prepare_s = seconds_since(t_start);
  }
  if (comm) comm->barrier();  // every rank's runs are recorded
  if (rank != 0) {
    if (timing) *timing = time;
    return {};
  }

  all = recorded_runs(o.out);
  // runs.csv, curves.csv and the report hold the grid's runs only, each checked against its proof
  // (a rank's runs were written after this rank's check above).
  std::map<std::string, const RunSpec*> by_id;
  for (const auto& spec : specs) by_id[spec.id()] = &spec;
  for (auto it = all.begin(); it != all.end();) {
    const auto spec = by_id.find(it->first);
    std::string why;
    bool legacy = false;
    if (spec == by_id.end() || !run_is_done(o, *spec->second, data, adopt_unproven, why, legacy)) it = all.erase(it);
    else ++it;
  }
  write_runs_csv(o.out, all);
  // curves.csv: every recorded run's curve under the deepest run's columns. Each file's cells are
  // placed by its own header, so a curve written before a column existed leaves that column empty.
  int64_t max_layers = 0;
  for (const auto& [id, r] : all) max_layers = std::max(max_layers, r.spec.get<int64_t>("layers"));
  const std::vector<std::string> columns = curve_columns(max_layers, o.base.sharpness_every > 0);
  std::string curves = csv_join(columns) + "\n";
  for (const auto& [id, r] : all) {
    const std::string path = o.out + "/curves/" + id + ".csv";
    std::istringstream in(io::read_file(path, kMaxCurveBytes));
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header = csv_split(line);
    for (std::string& name : header) name = current_column(name);
    std::vector<int> source(columns.size(), -1);  // column k of curves.csv is the file's column source[k]
    for (size_t k = 0; k < columns.size(); ++k)
      if (const auto it = std::find(header.begin(), header.end(), columns[k]); it != header.end())
        source[k] = static_cast<int>(it - header.begin());
    for (int n = 2; std::getline(in, line); ++n) {
      const std::vector<std::string> f = csv_split(line);
      check(f.size() == header.size(), path, ":", n, ": ", f.size(), " fields, expected ", header.size());
      std::vector<std::string> row(columns.size());
      for (size_t k = 0; k < columns.size(); ++k)
        if (source[k] >= 0) row[k] = f[static_cast<size_t>(source[k])];
      curves += csv_join(row) + "\n";
    }
  }
  io::write_file_atomic(o.out + "/curves.csv", curves);

  std::vector<RunRecord> sweep;  // this sweep's runs, in sweep order
  for (const auto& s : specs)
    if (all.count(s.id())) sweep.push_back(all[s.id()]);
  time.gather_s = seconds_since(t_end);
  if (timing) *timing = time;
  return sweep;
}

}  // namespace tapegrad::lab
