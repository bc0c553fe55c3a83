#include "tapegrad/lab/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/recipes.h"

namespace tapegrad::lab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The settings a group is identified by (all but lr and seed), in label order: the run identity's,
// then the others by name.
std::vector<std::string> group_axes(const std::vector<RunRecord>& runs) {
  std::vector<std::string> axes;
  for (const IdentityPart& p : run_identity())
    if (p.key != "lr" && p.key != "seed") axes.push_back(p.key);
  std::set<std::string> other;
  for (const auto& r : runs)
    for (const auto& [key, value] : r.spec.settings()) other.insert(key);
  axes.insert(axes.end(), other.begin(), other.end());
  return axes;
}


}  // namespace

std::map<std::string, std::string> group_values(const RunSpec& spec) {
  std::map<std::string, std::string> v;
  for (const auto& [key, value] : spec.values)
    if (key != "lr" && key != "seed") v[key] = setting_text(value);
  return v;
}

std::string Group::value(const std::string& key, const std::map<std::string, std::string>& base) const {
  if (auto it = values.find(key); it != values.end()) return it->second;
  auto it = base.find(key);
  return it != base.end() ? it->second : "base";
}

bool Summary::varies(const std::string& key) const { return std::find(varied.begin(), varied.end(), key) != varied.end(); }

double lr_sensitivity(const std::vector<double>& capped) {
  if (capped.empty()) return kNaN;
  const double best = *std::min_element(capped.begin(), capped.end());
  double sum = 0;
  for (double c : capped) sum += c - best;
  return sum / static_cast<double>(capped.size());
}

namespace {
// How an axis value reads inside a label: as in the run id (" L8", " w0"), or " dim=64".
std::string label_part(const std::string& key, const std::string& value) {
  const IdentityPart* p = identity_part(key);
  return p && !p->prefix.empty() ? " " + p->prefix + value : " " + key + "=" + value;
}
}  // namespace

bool collapsed(const RunRecord& r, double trained_below) {
  if (r.diverged || !std::isfinite(r.final_val_loss) || !std::isfinite(r.min_val_loss)) return false;
  return (r.min_val_loss < trained_below && r.final_val_loss >= trained_below) ||
         r.final_val_loss > r.min_val_loss + kCollapseMargin;
}

int FlagCounts::total() const {
  int n = 0;
  for (const auto& [column, count] : by_column) n += count;
  return n;
}

void FlagCounts::add(const FlagCounts& o) {
  for (const auto& [column, count] : o.by_column) by_column[column] += count;
}

FlagCounts flags_of(const RunRecord& r) {
  FlagCounts f;
  for (const RunColumn* c : judging_columns())  // an unmeasured column (NaN: an older record) has no count
    if (!std::isnan(column_value(r, *c))) f.by_column[c->name] = flagged(r, *c) ? 1 : 0;
  return f;
}

Summary summarize(const std::vector<RunRecord>& runs, double unigram, const std::map<std::string, std::string>& base) {
  Summary s;
  s.base = base;
  // Groups in the order their first run appears (the sweep's order), keyed by every axis but lr and seed.
  const std::vector<std::string> axes = group_axes(runs);
  std::map<std::vector<std::string>, std::vector<const RunRecord*>> by_group;
  std::vector<std::vector<std::string>> order;
  for (const auto& r : runs) {
    Group probe;
    probe.values = group_values(r.spec);
    std::vector<std::string> k;
    for (const auto& a : axes) k.push_back(probe.value(a, base));
    if (!by_group.count(k)) order.push_back(k);
    by_group[k].push_back(&r);
  }
  for (size_t i = 2; i < axes.size(); ++i) {  // norm and placement are always in the label
    std::set<std::string> values;
    for (const auto& k : order) values.insert(k[i]);
    if (values.size() > 1) s.varied.push_back(axes[i]);
  }

  for (const auto& k : order) {
    Group g;
    const RunRecord& first = *by_group[k].front();
    g.values = group_values(first.spec);
    g.label = g.value("norm") + "/" + g.value("placement");
    for (const auto& a : s.varied) g.label += label_part(a, g.value(a, base));
    // A published recipe the group ran with (lm/recipes.h) is named, when it applied to it.
    if (std::find(s.varied.begin(), s.varied.end(), "recipe") == s.varied.end())
      for (const lm::Recipe* recipe : lm::recipes_in(g.value("recipe", base)))
        if (g.value(recipe->target_key, base) == recipe->target_value) g.label += " (" + recipe->name + ")";
    std::map<double, std::vector<const RunRecord*>> by_lr;
    double init = 0, ms = 0;
    int timed = 0;
    for (const RunRecord* r : by_group[k]) {
      by_lr[r->spec.get<double>("lr")].push_back(r);
      init += r->initial_loss;
      if (std::isfinite(r->step_ms)) ms += r->step_ms, ++timed;
      if (std::isfinite(r->step_ms) && !r->diverged) g.run_step_ms[{r->spec.get<double>("lr"), r->spec.get<uint64_t>("seed")}] = r->step_ms;
      if (std::isfinite(r->final_val_loss) && !r->diverged)
        g.run_val_loss[{r->spec.get<double>("lr"), r->spec.get<uint64_t>("seed")}] = r->final_val_loss;
      ++g.runs;
      g.diverged += r->diverged;
      g.spikes += r->spikes;
    }
    g.initial_loss = init / g.runs;
    g.trained_below = kTrainedFraction * (std::isfinite(unigram) ? unigram : g.initial_loss);
    g.step_ms = timed ? ms / timed : kNaN;
    g.best_loss = g.min_log_z_mean = kNaN;
    std::vector<double> capped;
    for (const auto& [lr, rs] : by_lr) {
      LrCell c;
      c.lr = lr;
      std::vector<double> ok, residual, attention, output, log_z;
      double cap = 0;
      for (const RunRecord* r : rs) {
        residual.push_back(r->peak_residual_rms), attention.push_back(r->peak_attention_logit), output.push_back(r->peak_output_logit);
        log_z.push_back(r->min_log_z_mean);
        if (std::isfinite(r->min_log_z_mean) && !(r->min_log_z_mean >= g.min_log_z_mean)) g.min_log_z_mean = r->min_log_z_mean;
        ++c.runs;
        const bool bad = r->diverged || !std::isfinite(r->final_val_loss);
        c.diverged += bad;
        c.collapsed += collapsed(*r, g.trained_below);
        c.flagged.add(flags_of(*r));
        if (!bad) ok.push_back(r->final_val_loss);
        cap += bad ? r->initial_loss : std::min(r->final_val_loss, r->initial_loss);
      }
      c.capped = cap / c.runs;
      c.peak_residual_rms = median(residual), c.peak_attention_logit = median(attention), c.peak_output_logit = median(output);
      c.min_log_z_mean = median(log_z);
      c.mean = c.std = kNaN;
      if (!ok.empty()) {
        double m = 0, v = 0;
        for (double x : ok) m += x;
        m /= static_cast<double>(ok.size());
        for (double x : ok) v += (x - m) * (x - m);
        c.mean = m;
        c.std = ok.size() > 1 ? std::sqrt(v / static_cast<double>(ok.size() - 1)) : kNaN;
      }
      if (c.diverged == 0) {
        if (c.mean < g.trained_below && c.collapsed == 0 && c.flagged.total() == 0)
          g.largest_stable_lr = std::max(g.largest_stable_lr, lr);
        if (!(c.mean >= g.best_loss)) g.best_loss = c.mean, g.best_lr = lr, g.best_std = c.std, g.best_n = c.runs;
      }
      capped.push_back(c.capped);
      g.collapsed += c.collapsed;
      g.flagged.add(c.flagged);
      g.cells.push_back(c);
    }
    g.lr_sensitivity = lr_sensitivity(capped);
    g.trained = std::isfinite(g.best_loss) && g.best_loss < g.trained_below;
    s.groups.push_back(std::move(g));
  }

  // Reference LR: the largest LR stable in every group.
  std::set<double> lrs;
  for (const auto& r : runs) lrs.insert(r.spec.get<double>("lr"));
  s.lrs.assign(lrs.begin(), lrs.end());
  s.reference_lr = lrs.empty() ? 0 : *lrs.begin();
  for (double lr : lrs) {
    bool all_stable = true;
    for (const auto& g : s.groups)
      for (const auto& c : g.cells)
        if (c.lr == lr && c.diverged) all_stable = false;
    if (all_stable) s.reference_lr = lr;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    Group& g = s.groups[i];
    std::vector<double> peak, logit, fin, out;
    for (const RunRecord* r : by_group[order[i]])
      if (r->spec.get<double>("lr") == s.reference_lr)
        peak.push_back(r->peak_residual_rms), logit.push_back(r->peak_attention_logit), fin.push_back(r->final_residual_rms),
            out.push_back(r->peak_output_logit);
    g.ref_peak_residual_rms = median(peak), g.ref_peak_attention_logit = median(logit), g.ref_final_residual_rms = median(fin);
    g.ref_peak_output_logit = median(out);
  }
  return s;
}

LossComparison compare_losses(const Group& a, const Group& b) {
  LossComparison c;
  if (!std::isfinite(a.best_loss) || !std::isfinite(b.best_loss)) return c;
  c.difference = a.best_loss - b.best_loss;
  if (a.best_n >= 2 && b.best_n >= 2 && std::isfinite(a.best_std) && std::isfinite(b.best_std)) {
    c.se = std::sqrt(a.best_std * a.best_std / a.best_n + b.best_std * b.best_std / b.best_n);
    c.beyond_spread = std::fabs(c.difference) > 2 * c.se;
  }
  c.matched_lr = b.best_lr;
  std::vector<double> d;
  for (const auto& [key, loss] : b.run_val_loss)
    if (key.first == b.best_lr)
      if (const auto it = a.run_val_loss.find(key); it != a.run_val_loss.end()) d.push_back(it->second - loss);
  c.pairs = static_cast<int>(d.size());
  if (c.pairs >= 1) {
    double m = 0, v = 0;
    for (double x : d) m += x;
    m /= c.pairs;
    for (double x : d) v += (x - m) * (x - m);
    c.matched_difference = m;
    if (c.pairs >= 2) {
      c.matched_se = std::sqrt(v / (c.pairs - 1) / c.pairs);
      c.matched_beyond_spread = std::fabs(m) > 2 * c.matched_se;
    }
  }
  return c;
}

SpeedComparison compare_speed(const Group& a, const Group& b) {
  SpeedComparison c;
  std::vector<double> logs;
  for (const auto& [key, ms] : a.run_step_ms)
    if (auto it = b.run_step_ms.find(key); it != b.run_step_ms.end() && ms > 0 && it->second > 0)
      logs.push_back(std::log(ms / it->second));
  c.pairs = static_cast<int>(logs.size());
  if (logs.empty()) return c;
  double m = 0, v = 0;
  for (double x : logs) m += x;
  m /= static_cast<double>(logs.size());
  for (double x : logs) v += (x - m) * (x - m);
  const double se = logs.size() > 1 ? std::sqrt(v / static_cast<double>(logs.size() - 1) / static_cast<double>(logs.size())) : kNaN;
  c.ratio = std::exp(m);
  c.low = std::exp(m - 2 * se), c.high = std::exp(m + 2 * se);
  c.measurable = c.pairs >= 3 && (c.low > 1 || c.high < 1);
  return c;
}

}  // namespace tapegrad::lab
