#include "tapegrad/lab/sweep.h"

#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/proof.h"
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
  const SchemaInUse schema;  // the workers fold every step by the record schema
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
  write_curves_csv(o.out, all, o.base.sharpness_every > 0);

  std::vector<RunRecord> sweep;  // this sweep's runs, in sweep order
  for (const auto& s : specs)
    if (all.count(s.id())) sweep.push_back(all[s.id()]);
  time.gather_s = seconds_since(t_end);
  if (timing) *timing = time;
  return sweep;
}

}  // namespace tapegrad::lab
