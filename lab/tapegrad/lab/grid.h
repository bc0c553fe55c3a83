// The sweep's grid: which training settings a sweep varies (its axes), and sweep.json, where the
// whole grid lives so that a sweep folder describes itself.
//
// Every train_lm setting that takes one value is an axis. Six are always axes and have their own
// columns (norm, placement, lr, seed, layers, warmup); any other ("dim", "qk-norm", "optimizer",
// "beta2", ...) becomes one when given more than one value. Such a setting has a base value (the
// first one the sweep saw) and a run whose value differs from it carries it in RunSpec::settings,
// so adding values never renames the runs already trained.
//
// A few settings are not axes: the data every run is paired on (data, tokenizer, vocab-size,
// val-fraction), the measurements (eval-iters, sharpness-*), the lab's judgements (divergence and
// spike rules, evals) and bookkeeping (threads, eval-every, checkpoint-every, instrument, min-lr,
// set from min-lr-ratio). A folder's runs are comparable only if these agree, so they are fixed
// when the folder is created.
//
// sweep.json (format 2):
//   {"format": 2,
//    "train": {...every training setting the runs share, as train_lm's config.json...},
//    "axes":  {"norm": ["layernorm", ...], "lr": [0.001, ...], ..., "dim": [128, 64]},
//    "sweep": {"min-lr-ratio": 0.1, "divergence-factor": 1.5, ...}}
// Folders written before format 2 (flat settings, no axes) are read with the axes their records hold.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tapegrad::lab {

struct SweepOptions;

// Settings with their own columns, always axes (flag names, in sweep order outermost first).
extern const std::vector<std::string> kCoreAxes;  // placement, layers, warmup, lr, seed, norm
// Every other setting that can be an axis, in train_lm's --help order.
const std::vector<std::string>& extra_axis_keys();
bool is_axis(const std::string& key);

// A setting's value as the text used in run ids, runs.csv and sweep.json: numbers that read back
// exactly in %g (0.001, 64), bools as true/false, names as themselves.
std::string setting_text(const nlohmann::json& value);
// The inverse, strictly, for the type of the setting `key`: an Error names the key and the text
// (values from files become parts of file names: only [A-Za-z0-9.+-] are accepted).
nlohmann::json setting_value(const std::string& key, const std::string& text);

// Every setting's flag name: the training settings and the sweep's own (min-lr-ratio, ...).
std::set<std::string> every_setting();

// Sets axis `key` of `o` (core or other) to `values` (as text; checked by setting_value). For
// another setting, if base's value is not among them the first becomes the base; one value is
// no axis, only the base.
void set_axis(SweepOptions& o, const std::string& key, const std::vector<std::string>& values);

// The base value of every axis beyond the core six, as text (for Group::value and labels).
std::map<std::string, std::string> base_values(const SweepOptions& o);

// "5 norms x 5 lrs x 2 seeds x 2 dim" (the axes with their value counts; one-value core axes left out).
std::string grid_shape(const SweepOptions& o);
// The compare_norms command that trains this whole grid from scratch: every axis, and every other
// setting that differs from `defaults` (compare_norms' own defaults).
std::string reproduce_command(const SweepOptions& o, const SweepOptions& defaults);

// The sweep.json that describes `o`.
nlohmann::json grid_json(const SweepOptions& o);

// The sweep to run in o.out: the grid stored there (if any) grown by this command's values.
// Settings named in `given` (flag names, core axes included) add their values to the stored axes
// (a setting that was not an axis becomes one: its stored value, then the new ones); settings not
// named keep the stored values. Throws, naming the folder, the flag and both values, if a setting
// that cannot be an axis differs from the stored one. Without a stored grid, returns `o`.
SweepOptions resolve_sweep(const SweepOptions& o, const std::set<std::string>& given);

}  // namespace tapegrad::lab
