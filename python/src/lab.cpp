// tapegrad.lab's engine: a sweep from axes and settings, run by lab::run_lab (lab/lab.h) with the
// defaults compare_norms uses: its runs, report and plots. The Python side (tapegrad/lab.py) turns the records
// into dicts or a pandas DataFrame and draws the plots with lab/plot_lab.py.
#include <filesystem>
#include <algorithm>
#include <thread>
#include <optional>
#include <mutex>
#include <atomic>

#include "bind.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/lab.h"
#include "tapegrad/lab/report.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/lab/sweep_settings.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"

namespace tapegrad::py {

namespace {

using nlohmann::json;

pyb::dict timing_dict(const lab::SweepTiming& t) {
  pyb::dict d;
  d["trained"] = t.trained, d["jobs"] = t.jobs, d["wall_s"] = t.wall_s, d["step_share"] = t.step_share();
  d["steps_s"] = t.runs.steps_s, d["pure_steps_s"] = t.runs.pure_steps_s(), d["instrument_s"] = t.runs.instrument_s;
  d["eval_s"] = t.runs.eval_s, d["sharpness_s"] = t.runs.sharpness_s, d["setup_s"] = t.runs.setup_s;
  d["record_s"] = t.runs.record_s, d["prepare_s"] = t.prepare_s, d["gather_s"] = t.gather_s;
  d["report_s"] = t.report_s, d["idle_s"] = t.idle_s();
  return d;
}

}  // namespace

void bind_lab(pyb::module_& top) {
  pyb::module_ m = top.def_submodule("_lab", "The lab's engine (tapegrad.lab wraps it).");
  m.def("run_columns", [] { return lab::run_columns_header(); },
        "runs.csv's header: run_id, the run identity, every run column (registered ones included), settings.");
  m.def(
      "register_run_column",
      [](const std::string& name, const std::string& fold, const std::vector<std::string>& of, const std::string& unit,
         const std::string& summary, const std::string& meaning, std::optional<double> flag_above,
         std::optional<double> flag_below, const std::string& flag_name, const std::string& flag_why) {
        check(fold == "max" || fold == "min" || fold == "last", "register_run_column '", name, "': fold '",
              fold.substr(0, 40), "' is not one of max, min, last");
        lab::RunColumn c{.name = name, .member = lab::Measured{}, .unit = unit, .summary = summary.empty() ? fold + " over steps" : summary,
                         .meaning = meaning};
        c.fold = lab::Fold{fold == "max" ? lab::Fold::kMax : fold == "min" ? lab::Fold::kMin : lab::Fold::kLast, of};
        if (flag_above || flag_below || !flag_name.empty()) {
          check(!flag_above || std::isfinite(*flag_above), "register_run_column '", name, "': flag_above must be finite");
          check(!flag_below || std::isfinite(*flag_below), "register_run_column '", name, "': flag_below must be finite");
          lab::RunColumn::Flag f{.name = flag_name, .why = flag_why};
          if (flag_above) f.above = *flag_above;
          if (flag_below) f.below = *flag_below;
          c.flag = f;
        }
        lab::register_run_column(std::move(c));
      },
      pyb::arg("name"), pyb::arg("fold"), pyb::arg("of"), pyb::arg("unit") = "", pyb::arg("summary") = "",
      pyb::arg("meaning") = "", pyb::arg("flag_above") = pyb::none(), pyb::arg("flag_below") = pyb::none(),
      pyb::arg("flag_name") = "", pyb::arg("flag_why") = "",
      "Adds a run column folded from curve columns (lab/records.h, register_run_column).");
  m.def("records_schema", [] { return pyb::module_::import("json").attr("loads")(lab::records_schema().dump()); },
        "The lab's record schema (lab/records.h): each column of runs.csv and the curves with its type, unit, "
        "summary and meaning, the limits the report judges by, and the columns' former names.");

  pyb::class_<lab::LabResult>(m, "Sweep")  // lab::run_lab's result
      .def_property_readonly("out", [](const lab::LabResult& s) { return s.options.out; })
      .def_property_readonly("rows", [](const lab::LabResult& s) {
        std::vector<std::string> rows;
        for (const auto& r : s.runs) rows.push_back(lab::csv_row(r));
        return rows;
      }, "Each run's row of runs.csv (columns: run_columns).")
      .def_property_readonly("swept_settings", [](const lab::LabResult& s) {
        // Per run (as rows), every axis beyond the run identity with the run's value: runs.csv's
        // settings cell names only the values that differ from the base.
        pyb::list out;
        for (const auto& r : s.runs) {
          pyb::dict d;
          for (const lab::Axis& a : s.options.axes) {
            if (lab::identity_part(a.key)) continue;
            const auto it = r.spec.values.find(a.key);
            const json v = it != r.spec.values.end() ? it->second : lm::setting_json(*lm::find_setting(a.key), s.options.base);
            std::string name = a.key;
            std::replace(name.begin(), name.end(), '-', '_');
            d[pyb::str(name)] = lab::setting_text(v);
          }
          out.append(d);
        }
        return out;
      }, "Each run's value of every swept setting beyond the run identity (text), in rows' order.")
      .def_property_readonly("reference_lr", [](const lab::LabResult& s) { return s.summary.reference_lr; })
      .def_property_readonly("grid", [](const lab::LabResult& s) { return s.context.grid; })
      .def_property_readonly("report_path", [](const lab::LabResult& s) { return s.report_path; })
      .def_property_readonly("plot_note", [](const lab::LabResult& s) { return s.plot_note; },
                             "Why no plots were drawn (\"plots skipped: ...\"), or empty.")
      .def("console_summary", [](const lab::LabResult& s) { return lab::console_summary(s.summary); })
      .def_property_readonly("timing", [](const lab::LabResult& s) { return timing_dict(s.context.timing); },
                             "Where the call's time went (lab/timing.h), in seconds.");

  m.def(
      "sweep",
      [](const std::string& out, const pyb::dict& axes, const pyb::dict& settings, std::optional<int> jobs,
         pyb::object on_run, pyb::object on_tail, bool grow, pyb::object draw_plots, const std::string& this_command) {
        lab::SweepOptions o = lab::default_sweep();
        const lab::SweepOptions defaults = o;
        lab::set_sweep_setting(*lab::find_sweep_setting("out"), o, json(out), "lab.sweep: ");
        if (jobs) lab::set_sweep_setting(*lab::find_sweep_setting("jobs"), o, json(*jobs), "lab.sweep: ");
        std::set<std::string> given;
        // As compare_norms' flags: a setting that can be an axis takes one value or several; any other
        // training setting one value, held in the base; the sweep's own (lab/sweep_settings.h) set it.
        const auto set = [&](pyb::handle k, std::vector<json> values) {
          const std::string key = setting_key(pyb::str(k));
          given.insert(key);
          if (lab::is_axis(key)) return lab::set_axis(o, key, values);
          const lab::SweepSetting* own = lab::find_sweep_setting(key);
          const lm::Setting* setting = lm::find_setting(key);
          if (!own && (!setting || setting->sweep == lm::SweepRole::kLab))
            throw lm::SettingError(cat("lab.sweep: no setting '", std::string(pyb::str(k)), "'",
                                       setting ? " (the lab sets it for each run)" : ""));
          check(values.size() == 1, "lab.sweep: ", std::string(pyb::str(k)), " cannot be an axis of a sweep (one value only)");
          if (own) lab::set_sweep_setting(*own, o, values[0], "lab.sweep: ");
          else lm::set_setting(*setting, o.base, values[0]);
        };
        for (auto [k, v] : settings) set(k, {setting_value_of(v, "lab.sweep " + std::string(pyb::str(k)))});
        for (auto [k, v] : axes) {
          std::vector<json> values;
          const std::string what = "lab.sweep axis " + std::string(pyb::str(k));
          // An axis is a list of values (a list, a tuple, a range, a numpy array) or one value.
          const json j = setting_value_of(v, what);
          if (j.is_array())
            values.assign(j.begin(), j.end());
          else
            values.push_back(j);
          check(!values.empty(), what, ": no values");
          set(k, values);
        }
        lab::name_given(o, given);  // as run_lab does: the grow check below compares what the folder would become
        // A folder grows only when asked: a setting given a value the folder's grid lacks would
        // otherwise become an axis and multiply its runs (compare_norms grows by design: its
        // continuation is `--out DIR` alone, and a value given is a value added).
        if (!grow && std::filesystem::exists(o.out + "/sweep.json")) {
          const lab::SweepOptions stored = lab::resolve_sweep(o, {});
          std::string added;
          for (const std::string& key : lab::axis_keys()) {
            if (!given.count(key)) continue;
            const auto was = lab::axis_values(stored, key);
            std::string values;
            for (const json& v : lab::axis_values(o, key))
              if (std::find(was.begin(), was.end(), v) == was.end()) values += (values.empty() ? "" : " ") + lab::setting_text(v);
            if (values.empty()) continue;
            std::string had;
            for (const json& v : was) had += (had.empty() ? "" : " ") + lab::setting_text(v);
            std::string name = key;
            std::replace(name.begin(), name.end(), '-', '_');
            added += cat(added.empty() ? "" : ", ", name, " ", values, " (it has ", had, ")");
          }
          if (!added.empty()) {
            const size_t runs = lab::expand(lab::resolve_sweep(o, given)).size();
            throw lm::SettingError(cat("lab.sweep: ", o.out, " holds a grid this call would grow: ", added,
                                       ". Pass grow=True to add them as axes (", runs, " runs in all), or give another "
                                       "out folder"));
          }
        }
        // Ctrl-C: Python runs its handler on the main thread only, so that thread polls for it at
        // every step (the GIL taken for the check) and the other workers see the flag. The
        // KeyboardInterrupt — from the poll, or raised inside a callback — is kept and raised
        // once the sweep has stopped, its finished runs recorded (the folder resumes).
        const std::thread::id main_thread = std::this_thread::get_id();
        std::atomic<bool> interrupted{false};
        std::mutex pending_mu;
        std::optional<pyb::error_already_set> pending;
        const auto keep_interrupt = [&](pyb::error_already_set& e) {
          if (!e.matches(PyExc_KeyboardInterrupt)) return false;
          std::lock_guard<std::mutex> lock(pending_mu);
          if (!pending) pending.emplace(std::move(e));
          interrupted = true;
          return true;
        };
        const auto call = [&](const pyb::object& fn, const char* what, auto&&... args) {
          if (fn.is_none()) return;
          pyb::gil_scoped_acquire gil;
          try {  // runs may finish on the lab's worker threads: an error here is reported, not thrown through them
            fn(std::forward<decltype(args)>(args)...);
          } catch (pyb::error_already_set& e) {
            if (!keep_interrupt(e)) e.discard_as_unraisable(what);
          }
        };
        lab::LabHooks hooks;
        hooks.on_warning = [](const std::string& w) {  // as TrainConfig's: tapegrad.SettingWarning
          pyb::gil_scoped_acquire gil;
          static const pyb::object category = pyb::module_::import("tapegrad._tapegrad").attr("SettingWarning");
          if (PyErr_WarnEx(category.ptr(), lm::render_settings(w, "").c_str(), 2) != 0) throw pyb::error_already_set();
        };
        hooks.on_run = [&](const lab::RunRecord& r, bool skipped, int done, int total) {
          call(on_run, "tapegrad.lab.sweep on_run", lab::csv_row(r), skipped, done, total);
        };
        hooks.on_tail = [&] { call(on_tail, "tapegrad.lab.sweep on_tail"); };
        hooks.stop_requested = [&] {
          if (interrupted) return true;
          if (std::this_thread::get_id() != main_thread) return false;
          pyb::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) {
            pyb::error_already_set e;
            if (!keep_interrupt(e)) {  // another exception from a signal handler: raised the same way
              std::lock_guard<std::mutex> lock(pending_mu);
              if (!pending) pending.emplace(std::move(e));
              interrupted = true;
            }
          }
          return interrupted.load();
        };
        if (!draw_plots.is_none())
          hooks.draw_plots = [&](const lab::Summary& summary) {
            pyb::gil_scoped_acquire gil;
            return draw_plots(summary.reference_lr).cast<std::string>();
          };
        lab::LabResult s;
        {
          pyb::gil_scoped_release release;
          s = lab::run_lab(o, given, defaults, this_command, hooks);
        }
        if (pending) throw *pending;
        check(!s.stopped, "lab.sweep: stopped by a signal; ", s.runs.size(), " of ", s.total,
              " runs are recorded in ", out, " (the same call continues it)");
        return s;
      },
      pyb::arg("out"), pyb::arg("axes"), pyb::arg("settings"), pyb::arg("jobs") = pyb::none(), pyb::arg("on_run") = pyb::none(),
      pyb::arg("on_tail") = pyb::none(), pyb::arg("grow") = false, pyb::arg("draw_plots") = pyb::none(),
      pyb::arg("this_command") = "tapegrad.lab.sweep(...)");
}

}  // namespace tapegrad::py
