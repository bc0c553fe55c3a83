// The sweep's grid: which training settings a sweep varies (its axes), and sweep.json, where the
// whole grid lives so that a sweep folder describes itself.
//
// Any train_lm setting that takes one value can be an axis ("norm", "lr", "dim", "qk-norm",
// "optimizer", "beta2", ...): an axis is a setting given several values, one run per value, and a
// setting given one value is held in the sweep's base config. All are alike; run ids and the
// records' columns follow the run schema (run_spec.h). A run whose value of an axis beyond the
// identity settings equals the base's leaves it out of its id, so adding values never renames the
// runs already trained.
//
// A few settings are not axes: the data every run is paired on (data, tokenizer, vocab-size,
// val-fraction), the measurements (eval-iters, sharpness-*), the lab's judgements (divergence and
// spike rules, evals) and bookkeeping (threads, eval-every, checkpoint-every, instrument, min-lr,
// set from min-lr-ratio). A folder's runs are comparable only if these agree, so they are fixed
// when the folder is created.
//
// Values are parsed once, where they enter (a flag, sweep.json, a records file), into the
// setting's type (canonical_value); from then on they are typed JSON values.
//
// sweep.json (format 2):
//   {"format": 2,
//    "train": {...every training setting the runs share, as train_lm's config.json...},
//    "axes":  {"norm": ["layernorm", ...], "lr": [0.001, ...], ..., "dim": [128, 64]},
//             (the identity settings always, with one value or several; others with several)
//    "sweep": {"min-lr-ratio": 0.1, "divergence-factor": 1.5, ...},
//    "identity": [["norm", ""], ["placement", ""], ["lr", "lr"], ...],   (run_spec.h, for readers)
//    "run_proofs": true}   every run carries a proof (sweep.h): one without is trained again
// Folders written before format 2 (flat settings, no axes) are read with the axes their records hold.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/sweep_options.h"

namespace tapegrad::lab {


// Every setting that can be an axis, in the sweep's order (outermost first: the settings in
// train_lm's --help order, then the run identity's by nesting, run_spec.h).
const std::vector<std::string>& axis_keys();
bool is_axis(const std::string& key);

// A setting's value as the text used in run ids, runs.csv and sweep.json: numbers that read back
// exactly in %g (0.001, 64), bools as true/false, names as themselves.
std::string setting_text(const nlohmann::json& value);
// `value` in the type of setting `key` (a whole number for --layers, a registered norm's own name
// for --norm), checked as a swept value: it becomes part of file names, so its text must be 1-64
// of [A-Za-z0-9.+-]. Errors name the key and the value.
nlohmann::json canonical_value(const std::string& key, const nlohmann::json& value);
// The same from text, strictly ("010" is not 10; "1e-3" is 0.001).
nlohmann::json setting_value(const std::string& key, const std::string& text);

// Every setting's flag name: the training settings and the sweep's own (min-lr-ratio, ...).
std::set<std::string> every_setting();

// Sets the values of `key` in `o` (canonical_value checks each; a value given twice, in any
// spelling, is an Error). Several
// values make it an axis; one is held in o.base. For a setting beyond the run identity, a base
// value not among the values is replaced by the first.
//   set_axis(o, "norm", {"layernorm", "rmsnorm"}); set_axis(o, "lr", {1e-3, 3e-3});
// Values from text go through setting_value first.
void set_axis(SweepOptions& o, const std::string& key, const std::vector<nlohmann::json>& values);
// The values `o` gives `key`: its axis's, or the base's one value.
std::vector<nlohmann::json> axis_values(const SweepOptions& o, const std::string& key);

// The base value of every axis-able setting beyond the identity ones, as text (for Group::value
// and labels).
std::map<std::string, std::string> base_values(const SweepOptions& o);

// "5 norms x 5 lrs x 2 seeds x 2 dim" (the axes with their value counts; norms, lrs and seeds even
// with one value).
std::string grid_shape(const SweepOptions& o);
// The compare_norms command that trains this whole grid from scratch: every axis, and every other
// setting that differs from `defaults` (compare_norms' own defaults).
std::string reproduce_command(const SweepOptions& o, const SweepOptions& defaults);

// The sweep.json that describes `o`.
nlohmann::json grid_json(const SweepOptions& o);

// The sweep to run in o.out: the grid stored there (if any) grown by this command's values.
// Settings named in `given` (flag names) add their values to the stored ones (a setting that was
// not an axis becomes one: its stored value, then the new ones); settings not named keep the
// stored values. Throws, naming the folder, the flag and both values, if a setting that cannot be
// an axis differs from the stored one. Without a stored grid, returns `o`.
// The settings the user named (o.given: a recipe leaves them alone) are the stored ones and o's.
SweepOptions resolve_sweep(const SweepOptions& o, const std::set<std::string>& given);

// The training settings of one run: the base, the run's axis values, and the lab's bookkeeping.
lm::TrainConfig run_config(const SweepOptions& o, const RunSpec& spec, int threads);

// All runs of the sweep, in the sweep's order (grid.h: axis_keys(), outermost first). Every
// run's settings are validated here (train_lm's rules), so a bad combination fails before training.
std::vector<RunSpec> expand(const SweepOptions& o);

}  // namespace tapegrad::lab
