#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "tapegrad/nn/norm.h"

namespace tapegrad::lab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string f(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}
std::string lr_str(double lr) { return f("%g", lr); }

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

const Group* find(const Summary& s, const std::string& norm, const std::string& placement, int64_t depth,
                  int64_t warmup) {
  for (const auto& g : s.groups)
    if (g.norm == norm && g.placement == placement && g.depth == depth && g.warmup == warmup) return &g;
  return nullptr;
}

std::string cell_text(const LrCell& c) {
  if (c.runs == 0) return "";
  if (c.diverged == c.runs) return "diverged (" + std::to_string(c.diverged) + "/" + std::to_string(c.runs) + ")";
  std::string s = f("%.3f", c.mean) + (c.runs - c.diverged > 1 ? " ± " + f("%.3f", c.std) : "");
  if (c.diverged) s += " (" + std::to_string(c.diverged) + "/" + std::to_string(c.runs) + " diverged)";
  return s;
}

}  // namespace

std::string Group::label() const {
  std::string s = norm + "/" + placement;
  return s;
}

double lr_sensitivity(const std::vector<double>& capped) {
  if (capped.empty()) return kNaN;
  const double best = *std::min_element(capped.begin(), capped.end());
  double sum = 0;
  for (double c : capped) sum += c - best;
  return sum / static_cast<double>(capped.size());
}

Summary summarize(const std::vector<RunRecord>& runs, double unigram) {
  Summary s;
  using Key = std::tuple<std::string, int64_t, int64_t, std::string>;  // placement, depth, warmup, norm
  std::map<Key, std::vector<const RunRecord*>> by_group;
  std::vector<Key> order;
  std::set<int64_t> depths, warmups;
  for (const auto& r : runs) {
    const Key k{r.spec.placement, r.spec.depth, r.spec.warmup, r.spec.norm};
    if (!by_group.count(k)) order.push_back(k);
    by_group[k].push_back(&r);
    depths.insert(r.spec.depth), warmups.insert(r.spec.warmup);
  }
  s.varied_depth = depths.size() > 1, s.varied_warmup = warmups.size() > 1;

  for (const auto& k : order) {
    Group g;
    std::tie(g.placement, g.depth, g.warmup, g.norm) = k;
    std::map<double, std::vector<const RunRecord*>> by_lr;
    double init = 0, ms = 0;
    int timed = 0;
    for (const RunRecord* r : by_group[k]) {
      by_lr[r->spec.lr].push_back(r);
      init += r->initial_loss;
      if (std::isfinite(r->step_ms)) ms += r->step_ms, ++timed;
      ++g.runs;
      g.diverged += r->diverged;
      g.spikes += r->spikes;
    }
    g.initial_loss = init / g.runs;
    g.trained_below = kTrainedFraction * (std::isfinite(unigram) ? unigram : g.initial_loss);
    g.step_ms = timed ? ms / timed : kNaN;
    g.best_loss = kNaN;
    std::vector<double> capped;
    for (const auto& [lr, rs] : by_lr) {
      LrCell c;
      c.lr = lr;
      std::vector<double> ok;
      double cap = 0;
      for (const RunRecord* r : rs) {
        ++c.runs;
        const bool bad = r->diverged || !std::isfinite(r->final_val_loss);
        c.diverged += bad;
        if (!bad) ok.push_back(r->final_val_loss);
        cap += bad ? r->initial_loss : std::min(r->final_val_loss, r->initial_loss);
      }
      c.capped = cap / c.runs;
      c.mean = c.std = kNaN;
      if (!ok.empty()) {
        double m = 0, v = 0;
        for (double x : ok) m += x;
        m /= static_cast<double>(ok.size());
        for (double x : ok) v += (x - m) * (x - m);
        c.mean = m;
        c.std = ok.size() > 1 ? std::sqrt(v / static_cast<double>(ok.size() - 1)) : 0.0;
      }
      if (c.diverged == 0) {
        if (c.mean < g.trained_below) g.largest_stable_lr = std::max(g.largest_stable_lr, lr);
        if (!(c.mean >= g.best_loss)) g.best_loss = c.mean, g.best_lr = lr;
      }
      capped.push_back(c.capped);
      g.cells.push_back(c);
    }
    g.lr_sensitivity = lr_sensitivity(capped);
    g.trained = std::isfinite(g.best_loss) && g.best_loss < g.trained_below;
    s.groups.push_back(std::move(g));
  }

  // Reference LR: the largest LR stable in every group.
  std::set<double> lrs;
  for (const auto& r : runs) lrs.insert(r.spec.lr);
  s.reference_lr = lrs.empty() ? 0 : *lrs.begin();
  for (double lr : lrs) {
    bool all_stable = true;
    for (const auto& g : s.groups)
      for (const auto& c : g.cells)
        if (c.lr == lr && c.diverged) all_stable = false;
    if (all_stable) s.reference_lr = lr;
  }
  for (auto& g : s.groups) {
    std::vector<double> peak, logit, fin;
    for (const auto& r : runs)
      if (r.spec.norm == g.norm && r.spec.placement == g.placement && r.spec.depth == g.depth &&
          r.spec.warmup == g.warmup && r.spec.lr == s.reference_lr) {
        peak.push_back(r.peak_residual_rms), logit.push_back(r.peak_max_logit), fin.push_back(r.final_residual_rms);
      }
    g.ref_peak_residual_rms = median(peak), g.ref_peak_max_logit = median(logit), g.ref_final_residual_rms = median(fin);
  }
  return s;
}

bool is_no_norm(const std::string& name) { return name == nn::to_string(nn::NormKind::none()); }

// A group's LR sensitivity, or why it has none worth reading.
std::string sensitivity_text(const Group& g) {
  return g.trained ? f("%.3f", g.lr_sensitivity)
                   : "n/a (never trained: best " + (std::isfinite(g.best_loss) ? f("%.3f", g.best_loss) : std::string("-")) +
                         ", needs < " + f("%.3f", g.trained_below) + ")";
}

// Readings are generic over the registry: in each configuration, every norm against the best
// norm (lowest best loss), and "none" against every norm. Each sentence is built from numbers in
// the tables.
std::string reading(const Summary& s) {
  std::string out;
  std::set<std::tuple<std::string, int64_t, int64_t>> configs;  // placement, depth, warmup
  for (const auto& g : s.groups) configs.insert({g.placement, g.depth, g.warmup});
  for (const auto& [placement, depth, warmup] : configs) {
    std::vector<const Group*> normed;
    const Group* none = nullptr;
    for (const auto& g : s.groups)
      if (g.placement == placement && g.depth == depth && g.warmup == warmup) {
        if (is_no_norm(g.norm)) none = &g;
        else normed.push_back(&g);
      }
    const Group* best = nullptr;
    for (const Group* g : normed)
      if (std::isfinite(g->best_loss) && (!best || g->best_loss < best->best_loss)) best = g;
    const std::string where = placement + "-norm" + (s.varied_depth ? ", " + std::to_string(depth) + " layers" : "") +
                              (s.varied_warmup ? ", warmup " + std::to_string(warmup) : "");
    const auto label = [](const Group* g) { return nn::norm_label(g->norm); };
    for (const Group* g : normed) {
      if (g == best || !best || !std::isfinite(g->best_loss)) continue;
      const double d = g->best_loss - best->best_loss;
      double noise = 0;
      for (const Group* h : {g, best})
        for (const auto& c : h->cells)
          if (c.lr == h->best_lr && std::isfinite(c.std)) noise = std::max(noise, c.std);
      const std::string verdict = d <= std::max(noise, 0.01) ? "the same within seed noise"
                                                              : label(best) + " lower by " + f("%.3f", d);
      out += "- **" + label(g) + " vs " + label(best) + " (" + where + ")**: best validation loss " +
             f("%.3f", g->best_loss) + " (lr " + lr_str(g->best_lr) + ") vs " + f("%.3f", best->best_loss) + " (lr " +
             lr_str(best->best_lr) + "): " + verdict + ". ";
      if (std::isfinite(g->step_ms) && std::isfinite(best->step_ms)) {
        const double ratio = g->step_ms / best->step_ms;
        out += "A " + label(g) + " step took " + f("%.2f", ratio) + "x the time of a " + label(best) + " step (" +
               f("%.1f", g->step_ms) + " vs " + f("%.1f", best->step_ms) + " ms, single-run timings; bench/ measures "
               "kernels under control)" + (std::abs(ratio - 1) <= 0.02 ? ": no measurable difference." : ".");
        if (s.jobs > 1) out += " (Runs trained " + std::to_string(s.jobs) + " at a time, which adds timing noise; use --jobs 1 to compare speed.)";
      }
      out += "\n";
    }
    if (none) {
      out += "- **Without a norm (" + where + ")**: " + std::to_string(none->diverged) + " of " +
             std::to_string(none->runs) + " runs diverged";
      for (const Group* g : normed) out += ", " + label(g) + " " + std::to_string(g->diverged) + " of " + std::to_string(g->runs);
      out += ". ";
      if (best && none->largest_stable_lr < best->largest_stable_lr)
        out += "The largest learning rate at which it trained was " + (none->largest_stable_lr > 0 ? lr_str(none->largest_stable_lr) : std::string("none of the grid")) +
               ", against " + lr_str(best->largest_stable_lr) + " with " + label(best) + ". ";
      if (best && none->trained && best->trained && std::isfinite(none->lr_sensitivity) && std::isfinite(best->lr_sensitivity))
        out += "Its LR sensitivity (Wortsman et al.) was " + f("%.3f", none->lr_sensitivity) + " against " +
               f("%.3f", best->lr_sensitivity) + " with " + label(best) +
               (none->lr_sensitivity > best->lr_sensitivity * 1.2 ? ": its final loss depends much more on the learning rate."
                                                                  : ": no clearer dependence on the learning rate at this scale.");
      out += "\n";
      if (best && std::isfinite(none->ref_peak_residual_rms) && std::isfinite(best->ref_peak_residual_rms)) {
        out += "- **Scale drift (" + where + ", lr " + lr_str(s.reference_lr) + ")**: the residual stream's RMS peaked at " +
               f("%.2f", none->ref_peak_residual_rms) + " without a norm";
        for (const Group* g : normed)
          if (std::isfinite(g->ref_peak_residual_rms)) out += ", " + f("%.2f", g->ref_peak_residual_rms) + " with " + label(g);
        out += placement == "pre"
                   ? ". In pre-norm the stream itself is never normalised; the norm hands each sub-layer a rescaled "
                     "copy, which is what keeps the sub-layers' inputs steady as the stream grows."
                   : ". In post-norm every block's output is normalised, so the stream stays near the norm's scale.";
        if (std::isfinite(none->ref_peak_max_logit) && std::isfinite(best->ref_peak_max_logit))
          out += " The largest attention logit reached " + f("%.1f", none->ref_peak_max_logit) + " without a norm vs " +
                 f("%.1f", best->ref_peak_max_logit) + " with " + label(best) + ".";
        out += "\n";
      }
    }
  }
  // Pre vs post, for every norm, depth and warmup where both were run.
  for (const auto& g : s.groups) {
    if (g.placement != "post") continue;
    const Group* pre = find(s, g.norm, "pre", g.depth, g.warmup);
    if (!pre) continue;
    const std::string where = g.norm + (s.varied_depth ? ", " + std::to_string(g.depth) + " layers" : "") +
                              (s.varied_warmup ? ", warmup " + std::to_string(g.warmup) : "");
    out += "- **Pre- vs post-norm (" + where + ")**: " + std::to_string(g.diverged) + " of " + std::to_string(g.runs) +
           " post-norm runs diverged vs " + std::to_string(pre->diverged) + " of " + std::to_string(pre->runs) +
           " pre-norm; best validation loss " + (std::isfinite(g.best_loss) ? f("%.3f", g.best_loss) : std::string("-")) +
           " vs " + (std::isfinite(pre->best_loss) ? f("%.3f", pre->best_loss) : std::string("-")) +
           "; largest lr that trained " + (g.largest_stable_lr > 0 ? lr_str(g.largest_stable_lr) : std::string("none")) +
           " vs " + (pre->largest_stable_lr > 0 ? lr_str(pre->largest_stable_lr) : std::string("none")) +
           "; LR sensitivity " + sensitivity_text(g) + " vs " + sensitivity_text(*pre) + ".\n";
  }
  if (out.empty()) out = "- (Too few groups for a comparison.)\n";
  return out;
}

namespace {
// With --sharpness-every: per run, the peak of the sharpness the optimizer's stability depends on
// over its threshold (Adam-preconditioned λ₁(P⁻¹H) against 38/η under AdamW, λ₁(H) against 2/η
// under SGD), the first measured step at or past it, and whether the run diverged afterwards.
std::string edge_of_stability(const std::vector<RunRecord>& runs) {
  std::string rows;
  int measured = 0, crossed = 0, crossed_then_diverged = 0, diverged_without_crossing = 0;
  for (const auto& r : runs) {
    if (!std::isfinite(r.peak_sharpness_ratio)) continue;
    ++measured;
    const bool cross = r.sharpness_cross_step > 0;
    crossed += cross;
    crossed_then_diverged += cross && r.diverged && r.divergence_step >= r.sharpness_cross_step;
    diverged_without_crossing += !cross && r.diverged;
    rows += "| " + r.spec.id() + " | " + f("%.3f", r.peak_sharpness_ratio) + " | " +
            (cross ? std::to_string(r.sharpness_cross_step) : std::string("never")) + " | " +
            (r.diverged ? "step " + std::to_string(r.divergence_step) : std::string("no")) + " |\n";
  }
  if (measured == 0) return "";
  return "\n## Edge of stability\n\n" + std::to_string(measured) + " runs measured: " + std::to_string(crossed) +
         " reached their threshold, and " + std::to_string(crossed_then_diverged) + " of those diverged afterwards; " +
         std::to_string(diverged_without_crossing) + " of the " + std::to_string(measured - crossed) +
         " that stayed below it diverged (between measurements, or without crossing).\n\n"
         "Sharpness over its threshold: Adam's preconditioned λ₁(P⁻¹H) against (2 + 2β₁)/((1 − β₁)η) under AdamW, "
         "λ₁(H) against (2 + 2μ)/η under SGD (Cohen et al. 2021, 2022); 1 is the edge.\n\n"
         "| run | peak sharpness / threshold | first step at or past it | diverged |\n|---|---|---|---|\n" + rows;
}
}  // namespace

std::string report_markdown(const Summary& s, const std::vector<RunRecord>& runs, const ReportContext& ctx) {
  std::string md = "# Norm-stability lab report\n\n";
  std::set<double> lrs;
  std::set<uint64_t> seeds;
  for (const auto& r : runs) lrs.insert(r.spec.lr), seeds.insert(r.spec.seed);
  md += "Data: " + ctx.data + ". Model: " + ctx.model + ". " + std::to_string(runs.size()) + " runs (" +
        std::to_string(seeds.size()) + " seed" + (seeds.size() > 1 ? "s" : "") + " per setting), wall time " +
        f("%.0f", ctx.wall_s) + " s.\n\nReproduce: `" + ctx.command + "`\n\n";
  md += "## Reading\n\n_Generated from the numbers below._\n\n" + reading(s) + "\n";

  md += "## Final validation loss by learning rate\n\nMean ± std over seeds (std when there are two or more).\n\n| lr |";
  for (const auto& g : s.groups) md += " " + g.label() + (s.varied_depth ? " L" + std::to_string(g.depth) : "") +
                                       (s.varied_warmup ? " w" + std::to_string(g.warmup) : "") + " |";
  md += "\n|---|";
  for (size_t i = 0; i < s.groups.size(); ++i) md += "---|";
  md += "\n";
  for (double lr : lrs) {
    md += "| " + lr_str(lr) + " |";
    for (const auto& g : s.groups) {
      std::string cell;
      for (const auto& c : g.cells)
        if (c.lr == lr) cell = cell_text(c);
      md += " " + cell + " |";
    }
    md += "\n";
  }
  md += "\n## Summary per norm and placement\n\n"
        "| norm/placement | best lr | best val loss | largest lr that trained | LR sensitivity | diverged | step (ms) | "
        "peak residual RMS | peak attention logit | spikes |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : s.groups) {
    md += "| " + g.label() + (s.varied_depth ? " L" + std::to_string(g.depth) : "") +
          (s.varied_warmup ? " w" + std::to_string(g.warmup) : "") + " | " +
          (std::isfinite(g.best_loss) ? lr_str(g.best_lr) : "–") + " | " +
          (std::isfinite(g.best_loss) ? f("%.3f", g.best_loss) : "–") + " | " +
          (g.largest_stable_lr > 0 ? lr_str(g.largest_stable_lr) : "none") + " | " + sensitivity_text(g) + " | " +
          std::to_string(g.diverged) + "/" + std::to_string(g.runs) + " | " + f("%.1f", g.step_ms) + " | " +
          f("%.2f", g.ref_peak_residual_rms) + " | " + f("%.1f", g.ref_peak_max_logit) + " | " +
          std::to_string(g.spikes) + " |\n";
  }
  md += "\nPeak residual RMS and attention logit are medians over seeds at the reference lr " + lr_str(s.reference_lr) +
        " (the largest lr at which no configuration diverged). A learning rate counted as trained when no run "
        "diverged and the mean final val loss ended below " +
        (s.groups.empty() ? std::string("-") : f("%.3f", s.groups[0].trained_below)) +
        " (0.9 x the unigram loss, what token frequencies alone reach; 0.9 x the initial loss where it is unknown). "
        "LR sensitivity: the mean over the lr grid of "
        "min(final val loss, initial loss) minus the best, Wortsman et al. 2023; lower is more robust. Diverged: NaN/Inf, "
        "or the loss above the divergence factor x its first value for the patience's consecutive steps after warmup. "
        "Spikes: a loss above the spike factor x its running mean that came back below 1.1 x it (all runs of the "
        "group; lm/tapegrad/lm/divergence.h has the rule and its defaults).\n";

  std::string div;
  for (const auto& r : runs)
    if (r.diverged)
      div += "| " + r.spec.id() + " | " + std::to_string(r.divergence_step) + " | " + r.divergence_cause + " | " +
             r.divergence_quantity + " |\n";
  md += edge_of_stability(runs);
  md += "\n## Divergences\n\n";
  md += div.empty() ? "None.\n" : "| run | step | cause | first / fastest-growing quantity |\n|---|---|---|---|\n" + div;
  if (!ctx.plots.empty()) {
    md += "\n## Plots\n\n";
    for (const auto& [file, caption] : ctx.plots) md += "**" + caption + "**\n\n![" + caption + "](" + file + ")\n\n";
  }
  md += "\n## Files\n\n- `runs.csv`: one row per run: ";
  for (size_t i = 0; i < kRunColumns.size(); ++i) md += (i ? ", " : "") + kRunColumns[i];
  md += ".\n- `curves.csv`: one row per step per run: run settings, step, loss, lr_now, grad_norm, update_ratio, "
        "logit_mean, logit_max, final_residual_rms, val_loss and train_eval_loss (at evaluations), with "
        "--sharpness-every sharpness, sharpness_threshold, precond_sharpness and precond_threshold (at measurements), "
        "then per layer i "
        "residual_rms_i, norm_out_rms_i, max_logit_i, grad_norm_i, update_ratio_i.\n";
  return md;
}

std::string console_summary(const Summary& s) {
  std::string out = "norm/placement        best lr  best val  stable lr  LR sens.  diverged  step ms  peak resid RMS\n";
  for (const auto& g : s.groups) {
    char b[256];
    std::snprintf(b, sizeof b, "%-20s  %7s  %8s  %9s  %8s  %4d/%-3d  %7.1f  %14.2f\n",
                  (g.label() + (s.varied_depth ? " L" + std::to_string(g.depth) : "") +
                   (s.varied_warmup ? " w" + std::to_string(g.warmup) : "")).c_str(),
                  std::isfinite(g.best_loss) ? lr_str(g.best_lr).c_str() : "-",
                  std::isfinite(g.best_loss) ? f("%.3f", g.best_loss).c_str() : "-",
                  g.largest_stable_lr > 0 ? lr_str(g.largest_stable_lr).c_str() : "none",
                  g.trained ? f("%.3f", g.lr_sensitivity).c_str() : "n/a", g.diverged,
                  g.runs, g.step_ms, g.ref_peak_residual_rms);
    out += b;
  }
  return out + "\n" + reading(s);
}

}  // namespace tapegrad::lab
