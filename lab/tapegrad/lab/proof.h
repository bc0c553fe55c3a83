// A run's proof (records/<id>.json, sweep.h): the settings and data it trained with, and the
// SHA-256 of its record and curve, written after both. A recorded run counts as done only when
// its files and proof agree (run_is_done); the folder's sweep.json holds the data's identity.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/sweep_options.h"

namespace tapegrad::lab {

// A proof as read back, strictly: an Error names `path`.
struct RunProof {
  nlohmann::json config, data;
  std::string record_sha256, curve_sha256;
};
RunProof parse_proof(const std::string& text, const std::string& path);

// The text's identity, as sweep.json and every run's proof hold it: source, bytes, sha256.
nlohmann::json data_identity(const SweepOptions& o, const std::string& text);
// "tinyshakespeare.txt (1115394 bytes, sha256 ...)", for errors.
std::string describe_data(const nlohmann::json& identity);

// records/<id>.json, written after the run's curve and record.
void write_proof(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, const std::string& record,
                 const std::string& curve);
// Whether the folder's runs carry proofs: its sweep.json says so (every writer of proofs marks it),
// or a proof is there. In such a folder a run without a proof is unproven, never adopted.
bool folder_has_proofs(const std::string& out);

// Whether the recorded run `spec` counts as done: its record, curve and proof are there and agree.
// Not done (trained again), with the reason in `why`: a missing or changed curve or record, or no
// proof in a folder whose runs carry proofs (`adopt_unproven` false: a run killed before its proof
// was written, or files copied in from elsewhere). An Error: the run trained on other data, or
// with other settings than the grid now gives (an edited sweep.json) — reporting it beside the
// others would compare unlike runs. Only in a folder written before proofs existed
// (`adopt_unproven`) is a run without one taken, once its record agrees with what the grid gives
// it (its id, steps, and a step count it could have reached); `legacy` says so.
bool run_is_done(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, bool adopt_unproven,
                 std::string& why, bool& legacy);

// A continuation: the folder's text (sweep.json's "data") must be this sweep's, or an Error names both.
void check_stored_data(const SweepOptions& o, const nlohmann::json& data);

}  // namespace tapegrad::lab
