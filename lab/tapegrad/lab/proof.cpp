#include "tapegrad/lab/proof.h"

#include <filesystem>

#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/records.h"
#include "tapegrad/lm/settings.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;

RunProof parse_proof(const std::string& text, const std::string& path) {
  const nlohmann::json j = io::parse_json(text, path);
  const auto sha = [&](const char* key) {
    const std::string h = text_field(j, key);
    check(h.size() == 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos, path, ": '", key,
          "' must be a SHA-256 in hex (delete the proof and its run's files to train the run again)");
    return h;
  };
  check(j.is_object() && j.contains("format") && j["format"].is_number_integer() && j["format"] == 1, path,
        ": not a run proof of format 1 (delete it and its run's files to train the run again)");
  for (const char* part : {"config", "data"})
    check(j.contains(part) && j[part].is_object(), path, ": '", part, "' must be an object");
  RunProof p{j["config"], j["data"], sha("record_sha256"), sha("curve_sha256")};
  check(text_field(p.data, "sha256").size() == 64, path, ": 'data' must hold the text's sha256");
  return p;
}

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
namespace {
nlohmann::json proof_config(const SweepOptions& o, const RunSpec& spec) {
  nlohmann::json c = lm::to_json(run_config(o, spec, 1));
  c.erase("threads");
  c.erase("eval-every");
  return c;
}

std::string proof_path(const std::string& out, const std::string& id) { return out + "/records/" + id + ".json"; }
}  // namespace

void write_proof(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, const std::string& record,
                 const std::string& curve) {
  const nlohmann::json proof = {{"format", 1},
                                {"config", proof_config(o, spec)},
                                {"data", data},
                                {"record_sha256", io::sha256_hex(record)},
                                {"curve_sha256", io::sha256_hex(curve)}};
  io::write_file_atomic(proof_path(o.out, spec.id()), proof.dump(1) + "\n");
}

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

}  // namespace tapegrad::lab
