#include "tapegrad/lab/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/nn/placement.h"

namespace tapegrad::lab {

namespace {

std::string f(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}
std::string lr_str(double lr) { return f("%g", lr); }
// The lr grid an LR-sensitivity figure is over: "the 5 rates 0.001...0.1". Wortsman et al.'s
// figure uses 7 rates, 3e-4...3e-1: a sensitivity over another grid is another number.
std::string grid_text(const std::vector<double>& lrs) {
  if (lrs.empty()) return "no rates";
  return cat("the ", lrs.size(), lrs.size() == 1 ? " rate " : " rates ", lr_str(lrs.front()),
             lrs.size() > 1 ? "..." + lr_str(lrs.back()) : std::string());
}

std::string cell_text(const LrCell& c) {
  if (c.runs == 0) return "";
  if (c.diverged == c.runs) return "diverged (" + std::to_string(c.diverged) + "/" + std::to_string(c.runs) + ")";
  std::string s = f("%.3f", c.mean) + (c.runs - c.diverged > 1 ? " ± " + f("%.3f", c.std) : "");
  if (c.diverged) s += " (" + std::to_string(c.diverged) + "/" + std::to_string(c.runs) + " diverged)";
  return s;
}

// From a million up (a run blowing up) three significant digits and an exponent: 1.44e+12 reads
// where 1438588550000.00 does not.
std::string text_or(double v, const char* fmt, const char* none = "-") {
  if (!std::isfinite(v)) return none;
  return std::abs(v) >= 1e6 ? f("%.3g", v) : f(fmt, v);
}

}  // namespace

std::string best_loss_text(const Group& g) {
  if (!std::isfinite(g.best_loss)) return "–";
  return f("%.3f", g.best_loss) + (std::isfinite(g.best_std) ? " ± " + f("%.3f", g.best_std) : "") + " (n=" +
         std::to_string(g.best_n) + ")";
}

namespace {

bool is_no_norm(const std::string& name) { return name == nn::to_string(nn::NormKind::none()); }

// A group's LR sensitivity, or why it has none worth reading.
std::string sensitivity_text(const Group& g) {
  return g.trained ? f("%.3f", g.lr_sensitivity)
                   : "n/a (never trained: best " + text_or(g.best_loss, "%.3f") + ", needs < " + f("%.3f", g.trained_below) + ")";
}

// "pre-norm, 8 layers, dim=64": where a comparison along `axis` holds every other axis.
std::string where_text(const Summary& s, const Group& g, const std::string& axis) {
  std::string w;
  const auto add = [&](const std::string& t) { w += (w.empty() ? "" : ", ") + t; };
  if (axis != "placement") add(g.value("placement") + " placement");  // "pre placement", "deepnorm placement": any registered one
  if (axis != "norm") add(nn::norm_label(g.value("norm")));
  for (const auto& a : s.varied) {
    if (a == axis || a == "placement") continue;
    if (a == "layers") add(g.value(a) + " layers");
    else if (a == "warmup") add("warmup " + g.value(a));
    else add(a + "=" + g.value(a, s.base));
  }
  return w;
}

// The groups that differ from `g` in `axis` alone, g included, in the summary's order.
std::vector<const Group*> along(const Summary& s, const Group& g, const std::string& axis) {
  std::vector<const Group*> out;
  std::vector<std::string> keys{"norm", "placement"};
  keys.insert(keys.end(), s.varied.begin(), s.varied.end());
  for (const auto& h : s.groups) {
    bool same = true;
    for (const auto& k : keys)
      if (k != axis && h.value(k, s.base) != g.value(k, s.base)) same = false;
    if (same) out.push_back(&h);
  }
  return out;
}

// The speed sentence for a against b: a claim only when the paired spread allows one.
std::string speed_text(const Summary& s, const Group& a, const Group& b, const std::string& name_a, const std::string& name_b) {
  const SpeedComparison c = compare_speed(a, b);
  if (c.pairs == 0) return "";
  std::string t = "A " + name_a + " step took " + f("%.2f", c.ratio) + "x the time of a " + name_b + " step (";
  if (c.pairs >= 2) t += "paired over " + std::to_string(c.pairs) + " runs, 95 % interval " + f("%.2f", c.low) + "–" + f("%.2f", c.high);
  else t += "one pair of runs, no spread to judge by";
  t += c.measurable ? (c.ratio > 1 ? "): slower, outside the run-to-run spread." : "): faster, outside the run-to-run spread.")
                    : "): no measurable difference.";
  if (c.measurable && s.jobs > 1)
    t += " (Runs trained " + std::to_string(s.jobs) + " at a time; pairs ran side by side, so shared slow-downs cancel.)";
  return t;
}

// The judging columns (records.h) measured in any of `family`: their flagged counts side by side
// ("; attention logit > 1e4 0/4 / 1/4").
template <typename List>
std::string flag_counts_text(const std::vector<const Group*>& family, const List& list) {
  std::string t;
  for (const RunColumn* c : judging_columns()) {
    if (std::none_of(family.begin(), family.end(), [&](const Group* h) { return h->flagged.by_column.count(c->name) > 0; }))
      continue;
    t += "; " + c->flag->name + " " +
         list([&](const Group& h) { return std::to_string(h.flagged[c->name]) + "/" + std::to_string(h.runs); });
  }
  return t;
}

// Comparisons along one axis other than the norm: every value side by side, the rest held.
std::string axis_reading(const Summary& s, const std::string& axis) {
  std::string out;
  std::set<const Group*> done;
  for (const auto& g : s.groups) {
    if (done.count(&g)) continue;
    const std::vector<const Group*> family = along(s, g, axis);
    for (const Group* h : family) done.insert(h);
    if (family.size() < 2) continue;
    const auto list = [&](auto text) {
      std::string l;
      for (const Group* h : family) l += (l.empty() ? "" : " / ") + text(*h);
      return l;
    };
    out += "- **" + axis + " " + list([&](const Group& h) { return h.value(axis, s.base); }) + " (" + where_text(s, g, axis) +
           ")**: diverged " + list([](const Group& h) { return std::to_string(h.diverged) + "/" + std::to_string(h.runs); }) +
           "; best validation loss " + list([](const Group& h) { return best_loss_text(h); }) +
           "; largest lr that trained " + list([](const Group& h) { return h.largest_stable_lr > 0 ? lr_str(h.largest_stable_lr) : std::string("none"); }) +
           "; LR sensitivity over " + grid_text(s.lrs) + " " +
           list([](const Group& h) { return h.trained ? f("%.3f", h.lr_sensitivity) : std::string("n/a (never trained)"); }) +
           "; spikes " + list([](const Group& h) { return std::to_string(h.spikes); }) +
           "; collapsed " + list([](const Group& h) { return std::to_string(h.collapsed) + "/" + std::to_string(h.runs); }) +
           flag_counts_text(family, list) +
           (std::any_of(family.begin(), family.end(), [](const Group* h) { return std::isfinite(h->min_log_z_mean); })
                ? "; lowest mean log Z " + list([](const Group& h) { return text_or(h.min_log_z_mean, "%.2f"); })
                : std::string()) +
           "; at lr " + lr_str(s.reference_lr) + " peak residual RMS " + list([](const Group& h) { return text_or(h.ref_peak_residual_rms, "%.2f"); }) +
           ", peak attention logit " + list([](const Group& h) { return text_or(h.ref_peak_attention_logit, "%.1f"); }) +
           (std::any_of(family.begin(), family.end(), [](const Group* h) { return std::isfinite(h->ref_peak_output_logit); })
                ? ", peak output logit " + list([](const Group& h) { return text_or(h.ref_peak_output_logit, "%.1f"); })
                : std::string()) + ".";
    const Group* best = nullptr;
    const Group* robust = nullptr;
    for (const Group* h : family) {
      if (std::isfinite(h->best_loss) && h->trained && (!best || h->best_loss < best->best_loss)) best = h;
      if (h->trained && (!robust || h->lr_sensitivity < robust->lr_sensitivity)) robust = h;
    }
    if (best) {
      // Lowest only beyond the spread (compare_losses): otherwise name those it cannot be told from.
      std::vector<std::string> tied;
      for (const Group* h : family)
        if (h != best && h->trained && !compare_losses(*h, *best).beyond_spread) tied.push_back(h->value(axis, s.base));
      out += " Lowest loss: " + axis + " " + best->value(axis, s.base);
      if (!tied.empty()) {
        out += ", within the seeds' spread of " + axis;
        for (size_t i = 0; i < tied.size(); ++i) out += (i ? ", " : " ") + tied[i];
      }
      out += ".";
    }
    if (robust) out += " Least sensitive to the lr (of those that trained): " + axis + " " + robust->value(axis, s.base) + ".";
    std::vector<std::string> never;
    for (const Group* h : family)
      if (!h->trained) never.push_back(h->value(axis, s.base));
    if (!never.empty()) {
      out += " Never trained (best loss not below " + f("%.3f", family.front()->trained_below) + "): " + axis;
      for (size_t i = 0; i < never.size(); ++i) out += (i ? ", " : " ") + never[i];
      out += ".";
    }
    out += "\n";
  }
  return out;
}

}  // namespace

// Readings are generic over the registry and the axes: in each configuration every norm against
// the best norm (lowest best loss) and "none" against every norm; along every other axis that
// varies, its values side by side. Each sentence is built from numbers in the tables.
std::string reading(const Summary& s) {
  std::string out;
  std::set<const Group*> done;
  for (const auto& first : s.groups) {
    if (done.count(&first)) continue;
    const std::vector<const Group*> config = along(s, first, "norm");
    for (const Group* g : config) done.insert(g);
    std::vector<const Group*> normed;
    const Group* none = nullptr;
    for (const Group* g : config) {
      if (is_no_norm(g->value("norm"))) none = g;
      else normed.push_back(g);
    }
    const Group* best = nullptr;
    for (const Group* g : normed)
      if (std::isfinite(g->best_loss) && (!best || g->best_loss < best->best_loss)) best = g;
    const std::string where = where_text(s, first, "norm");
    const auto label = [](const Group* g) { return nn::norm_label(g->value("norm")); };
    for (const Group* g : normed) {
      if (g == best || !best || !std::isfinite(g->best_loss)) continue;
      // The lab's rule (compare_losses): lower only beyond twice the difference's standard error.
      const LossComparison c = compare_losses(*g, *best);
      const std::string verdict =
          !std::isfinite(c.se) ? "no verdict (one seed: no spread)"
          : c.beyond_spread    ? label(best) + " lower by " + f("%.3f", c.difference) + " (2 se " + f("%.3f", 2 * c.se) + ")"
                               : "within the seeds' spread (difference " + f("%.3f", c.difference) + ", 2 se " + f("%.3f", 2 * c.se) + ")";
      std::string matched;
      if (c.pairs >= 2 && g->best_lr != best->best_lr)
        matched = " At lr " + lr_str(c.matched_lr) + ", paired over " + std::to_string(c.pairs) + " seeds: " + label(g) + " " +
                  (c.matched_difference >= 0 ? "+" : "") + f("%.3f", c.matched_difference) + " ± " + f("%.3f", c.matched_se) +
                  " se" + (c.matched_beyond_spread ? "" : " (within the spread)") + ".";
      out += "- **" + label(g) + " vs " + label(best) + " (" + where + ")**: best validation loss " + best_loss_text(*g) +
             " (lr " + lr_str(g->best_lr) + ") vs " + best_loss_text(*best) + " (lr " + lr_str(best->best_lr) + "): " +
             verdict + "." + matched + " ";
      if (!g->trained) out += label(g) + " never trained here (best above " + f("%.3f", g->trained_below) + "). ";
      out += speed_text(s, *g, *best, label(g), label(best)) + "\n";
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
        out += "Its LR sensitivity (Wortsman et al.'s measure, over " + grid_text(s.lrs) + ") was " + f("%.3f", none->lr_sensitivity) + " against " +
               f("%.3f", best->lr_sensitivity) + " with " + label(best) +
               (none->lr_sensitivity > best->lr_sensitivity * 1.2 ? ": its final loss depends much more on the learning rate."
                                                                  : ": no clearer dependence on the learning rate at this scale.");
      out += "\n";
      if (best && std::isfinite(none->ref_peak_residual_rms) && std::isfinite(best->ref_peak_residual_rms)) {
        out += "- **Scale drift (" + where + ", lr " + lr_str(s.reference_lr) + ")**: the residual stream's RMS peaked at " +
               text_or(none->ref_peak_residual_rms, "%.2f") + " without a norm";
        for (const Group* g : normed)
          if (std::isfinite(g->ref_peak_residual_rms)) out += ", " + text_or(g->ref_peak_residual_rms, "%.2f") + " with " + label(g);
        // Whether the placement normalises the stream itself (placement.h: a norm after the residual add).
        const std::string placement = first.value("placement");
        const nn::PlacementEntry* entry = nn::placement_registry().find(placement);
        out += entry && entry->norm_sum
                   ? cat(". In the ", placement, " placement every block's output is normalised, so the stream stays "
                         "near the norm's scale.")
                   : cat(". In the ", placement, " placement the stream itself is never normalised; the norm hands "
                         "each sub-layer a rescaled copy, which is what keeps the sub-layers' inputs steady as the "
                         "stream grows.");
        if (std::isfinite(none->ref_peak_attention_logit) && std::isfinite(best->ref_peak_attention_logit))
          out += " The largest attention logit reached " + text_or(none->ref_peak_attention_logit, "%.1f") + " without a norm vs " +
                 text_or(best->ref_peak_attention_logit, "%.1f") + " with " + label(best) + ".";
        out += "\n";
      }
    }
  }
  std::vector<std::string> axes{"placement"};
  for (const auto& a : s.varied)
    if (a != "placement") axes.push_back(a);
  for (const auto& a : axes) out += axis_reading(s, a);
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
            text_or(r.peak_batch_sharpness_ratio, "%.3f") + " | " +
            (r.diverged ? "step " + std::to_string(r.divergence_step) : std::string("no")) + " |\n";
  }
  if (measured == 0) return "";
  return "\n## Edge of stability\n\n" + std::to_string(measured) + " runs measured: " + std::to_string(crossed) +
         " reached their threshold, and " + std::to_string(crossed_then_diverged) + " of those diverged afterwards; " +
         std::to_string(diverged_without_crossing) + " of the " + std::to_string(measured - crossed) +
         " that stayed below it diverged (between measurements, or without crossing).\n\n"
         "Sharpness over its threshold: Adam's preconditioned λ₁(P⁻¹H) against (2 + 2β₁)/((1 − β₁)η) under AdamW, "
         "λ₁(H) against (2 + 2μ)/η under SGD (Cohen et al. 2021, 2022); 1 is the edge. Under --full-batch the "
         "measured loss is the one descended; otherwise a fixed batch. Batch sharpness (--batch-sharpness): "
         "E_B[g_Bᵀ H_B g_B / g_Bᵀ g_B] over fresh batches, against the plain threshold — the edge of mini-batch "
         "training (Andreyev & Beneventano 2024).\n\n"
         "| run | peak sharpness / threshold | first step at or past it | peak batch sharpness / threshold | diverged |\n"
         "|---|---|---|---|---|\n" + rows;
}
}  // namespace

std::string report_markdown(const Summary& s, const std::vector<RunRecord>& runs, const ReportContext& ctx) {
  std::string md = "# Norm-stability lab report\n\n";
  std::set<double> lrs;
  std::set<uint64_t> seeds;
  for (const auto& r : runs) lrs.insert(r.spec.get<double>("lr")), seeds.insert(r.spec.get<uint64_t>("seed"));
  double train_s = 0;
  for (const auto& r : runs) train_s += std::isfinite(r.wall_s) ? r.wall_s : 0;
  md += "Data: " + ctx.data + ". Model: " + ctx.model + ". " + std::to_string(runs.size()) + " runs" +
        (ctx.grid.empty() ? "" : " (" + ctx.grid + ")") + ", " + std::to_string(seeds.size()) + " seed" +
        (seeds.size() > 1 ? "s" : "") + " per setting; their training took " + f("%.0f", train_s) + " s in all (" +
        std::to_string(s.jobs) + " at a time)" + (ctx.this_command.empty() ? "" : "; the last command, `" + ctx.this_command +
        "`, took " + f("%.0f", ctx.wall_s) + " s") + ".\n\n" +
        (ctx.command.empty() ? "" : "Reproduce the whole grid: `" + ctx.command + "`\n\n");
  md += "## Reading\n\n_Generated from the numbers below._\n\n" + reading(s) + "\n";

  // One row per lr, one column per group: a cell's text from its LrCell.
  const auto lr_grid = [&](const std::function<std::string(const LrCell&)>& text) {
    std::string t = "| lr |";
    for (const auto& g : s.groups) t += " " + g.label + " |";
    t += "\n|---|";
    for (size_t i = 0; i < s.groups.size(); ++i) t += "---|";
    t += "\n";
    for (double lr : lrs) {
      t += "| " + lr_str(lr) + " |";
      for (const auto& g : s.groups) {
        std::string cell;
        for (const auto& c : g.cells)
          if (c.lr == lr && c.runs) cell = text(c);
        t += " " + cell + " |";
      }
      t += "\n";
    }
    return t;
  };
  md += "## Final validation loss by learning rate\n\nMean ± std over seeds (std when there are two or more).\n\n" +
        lr_grid(cell_text);
  // The same grid for the scale statistics: what grows with the learning rate.
  const auto lr_table = [&](const std::string& title, const char* fmt, double LrCell::*field, const char* extreme = "peak") {
    bool measured = false;  // runs.csv files from before a column existed hold none
    for (const auto& g : s.groups)
      for (const auto& c : g.cells) measured |= std::isfinite(c.*field);
    if (!measured) return;
    md += "\n## " + title + "\n\nMedian over seeds of each run's " + extreme + " (a diverged run up to its divergence: marked †).\n\n" +
          lr_grid([&](const LrCell& c) { return text_or(c.*field, fmt) + (c.diverged ? " †" : ""); });
  };
  lr_table("Peak residual RMS by learning rate", "%.2f", &LrCell::peak_residual_rms);
  lr_table("Peak attention logit by learning rate", "%.1f", &LrCell::peak_attention_logit);
  lr_table("Peak output (LM-head) logit by learning rate", "%.1f", &LrCell::peak_output_logit);
  lr_table("Lowest mean log Z by learning rate", "%.2f", &LrCell::min_log_z_mean, "lowest mean log Z over its steps");
  md += "\n## Summary per configuration\n\n"
        "| configuration | best lr | best val loss (± std over seeds, n) | largest lr that trained | LR sensitivity (" +
        grid_text(s.lrs) + ") | diverged | step (ms) | "
        "peak residual RMS | peak attention logit | peak output logit | lowest mean log Z | spikes | collapsed |";
  const std::vector<const RunColumn*> judges = judging_columns();
  for (const RunColumn* c : judges) md += " " + c->flag->name + " |";
  md += "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|";
  for (size_t i = 0; i < judges.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& g : s.groups) {
    md += "| " + g.label + " | " +
          (std::isfinite(g.best_loss) ? lr_str(g.best_lr) : "–") + " | " +
          best_loss_text(g) + " | " +
          (g.largest_stable_lr > 0 ? lr_str(g.largest_stable_lr) : "none") + " | " + sensitivity_text(g) + " | " +
          std::to_string(g.diverged) + "/" + std::to_string(g.runs) + " | " + f("%.1f", g.step_ms) + " | " +
          f("%.2f", g.ref_peak_residual_rms) + " | " + f("%.1f", g.ref_peak_attention_logit) + " | " +
          text_or(g.ref_peak_output_logit, "%.1f") + " | " + text_or(g.min_log_z_mean, "%.2f") + " | " +
          std::to_string(g.spikes) + " | " + std::to_string(g.collapsed) + "/" + std::to_string(g.runs) + " |";
    for (const RunColumn* c : judges) {
      md += ' ';
      md += g.flagged.by_column.count(c->name) ? std::to_string(g.flagged[c->name]) + "/" + std::to_string(g.runs)
                                               : std::string("–");
      md += " |";
    }
    md += "\n";
  }
  md += "\nPeak residual RMS, attention logit and output (LM-head) logit are medians over seeds at the reference lr " + lr_str(s.reference_lr) +
        " (the largest lr at which no configuration diverged). A learning rate counted as trained when no run "
        "diverged, collapsed or was flagged by a limit below, and the mean final val loss ended below " +
        (s.groups.empty() ? std::string("-") : f("%.3f", s.groups[0].trained_below)) +
        " (0.9 x the unigram loss, what token frequencies alone reach; 0.9 x the initial loss where it is unknown). "
        "LR sensitivity: the mean over the lr grid of "
        "min(final val loss, initial loss) minus the best, Wortsman et al. 2023; lower is more robust. Diverged: NaN/Inf, "
        "or the loss above the divergence factor x its first value for the patience's consecutive steps after warmup. "
        "Spikes: a loss above the spike factor x its running mean that came back below 1.1 x it (all runs of the "
        "group; lm/tapegrad/lm/divergence.h has the rule and its defaults). Collapsed: a run that trained (val loss "
        "below the threshold) and ended back above it, or ended more than " + f("%.2f", kCollapseMargin) +
        " above its own best. Lowest mean log Z: the lowest over the group's runs and steps of log Z (the LM head's "
        "logsumexp) averaged over a batch's tokens. Flagged runs (a run that did not diverge, beyond a column's "
        "limit; – : not measured) do not count as clean:";
  for (const RunColumn* c : judges)
    md += " **" + c->flag->name + "** (`" + c->name + "`" +
          (std::isnan(c->flag->above) ? "" : " above " + f("%g", c->flag->above)) +
          (std::isnan(c->flag->below) ? "" : " below " + f("%g", c->flag->below)) + "): " + c->flag->why + ".";
  md += "\n";

  std::string div;
  for (const auto& r : runs)
    if (r.diverged)
      div += "| " + r.spec.id() + " | " + std::to_string(r.divergence_step) + " | " + r.divergence_cause + " | " +
             r.divergence_quantity + " |\n";
  md += edge_of_stability(runs);
  md += "\n## Divergences\n\n";
  md += div.empty() ? "None.\n" : "| run | step | cause | first / fastest-growing quantity |\n|---|---|---|---|\n" + div;
  std::string unclean;
  for (const Group& g : s.groups)
    for (const auto& r : runs) {
      if (group_values(r.spec) != g.values) continue;
      const FlagCounts flags = flags_of(r);
      if (!collapsed(r, g.trained_below) && flags.total() == 0) continue;
      unclean += "| " + r.spec.id() + " | " + (collapsed(r, g.trained_below) ? "yes" : "no") + " | " +
                 f("%.3f", r.min_val_loss) + " | " + f("%.3f", r.final_val_loss) + " |";
      for (const RunColumn* c : judges) {
        unclean += ' ';
        unclean += text_or(column_value(r, *c), "%.5g");
        unclean += flags[c->name] ? " (flagged) |" : " |";
      }
      unclean += "\n";
    }
  md += "\n## Collapsed and flagged runs\n\nRuns that did not diverge but are not clean (see above).\n\n";
  std::string head = "| run | collapsed | best val | final val |", rule = "|---|---|---|---|";
  for (const RunColumn* c : judges) head += " " + c->name + " |", rule += "---|";
  md += unclean.empty() ? "None.\n" : head + "\n" + rule + "\n" + unclean;
  if (!ctx.plots.empty()) {
    md += "\n## Plots\n\n";
    for (const auto& [file, caption] : ctx.plots) md += "**" + caption + "**\n\n![" + caption + "](" + file + ")\n\n";
  }
  if (ctx.timing.trained > 0)
    md += "\n## Where the time went\n\nThe last command's " + std::to_string(ctx.timing.trained) + " runs, " +
          std::to_string(ctx.timing.jobs) + " at a time (a run's seconds count 1/" + std::to_string(ctx.timing.jobs) +
          " of the wall time). Pure training steps: **" + f("%.1f %%", 100 * ctx.timing.step_share()) +
          "** of it.\n\n" + timing_markdown(ctx.timing);
  md += "\n## Files\n\n- `runs.csv`: one row per run: ";
  const std::vector<std::string> header = run_columns_header();
  for (size_t i = 0; i < header.size(); ++i) md += (i ? ", " : "") + header[i];
  md += " (settings: the run's values of the other axes where they differ from the base, key=value;...).\n"
        "- `sweep.json`: the whole grid; `compare_norms --out DIR` continues it, and values given then add to it.\n"
        "- `curves.csv`: one row per step per run (join with runs.csv on run_id for the other axes; val_loss at evaluations, "
        "train_eval_loss too with --eval-train, the sharpness columns with --sharpness-every at measurements; a "
        "layer's columns end in its index i): ";
  const std::vector<std::string> curve = curve_columns(1, true);
  for (size_t i = 0; i < curve.size(); ++i)
    md += (i ? ", " : "") + (curve[i].ends_with("_0") ? curve[i].substr(0, curve[i].size() - 2) + "_i" : curve[i]);
  md += ".\n";
  return md;
}

std::string console_summary(const Summary& s) {
  size_t width = 20;
  for (const auto& g : s.groups) width = std::max(width, g.label.size());
  std::string out = std::string("configuration") + std::string(width - 13, ' ') +
                    "  best lr  best val ± std  stable lr  LR sens.  diverged  step ms  peak resid RMS\n";
  for (const auto& g : s.groups) {
    char b[256];
    const std::string best = !std::isfinite(g.best_loss) ? "-"
                             : f("%.3f", g.best_loss) + (std::isfinite(g.best_std) ? " ± " + f("%.3f", g.best_std) : "");
    std::snprintf(b, sizeof b, "%-*s  %7s  %14s  %9s  %8s  %4d/%-3d  %7.1f  %14.2f\n", static_cast<int>(width),
                  g.label.c_str(),
                  std::isfinite(g.best_loss) ? lr_str(g.best_lr).c_str() : "-",
                  best.c_str(),
                  g.largest_stable_lr > 0 ? lr_str(g.largest_stable_lr).c_str() : "none",
                  g.trained ? f("%.3f", g.lr_sensitivity).c_str() : "n/a", g.diverged,
                  g.runs, g.step_ms, g.ref_peak_residual_rms);
    out += b;
  }
  return out + "LR sensitivity over " + grid_text(s.lrs) + " (Wortsman et al. 2023 use the 7 rates 3e-4...3e-1); " +
         "best val: the mean final validation loss over the seeds at the best lr.\n\n" + reading(s);
}

}  // namespace tapegrad::lab

namespace tapegrad::lab {

std::string model_text(const SweepOptions& o) {
  char b[256];
  const std::string decay = o.base.schedule == "constant" ? std::string("a constant lr")
                                                          : cat(o.base.schedule, " to lr x ", o.min_lr_ratio);
  std::snprintf(b, sizeof b, "C%lld H%lld T%lld B%lld, %lld steps, %s, warmup then %s",
                static_cast<long long>(o.base.model.dim), static_cast<long long>(o.base.model.heads), static_cast<long long>(o.base.model.ctx),
                static_cast<long long>(o.base.batch), static_cast<long long>(o.base.steps), o.base.optimizer.c_str(),
                decay.c_str());
  std::string s = b;
  if (!o.base.model.qk_norm.is_none()) s += ", QK-norm " + nn::to_string(o.base.model.qk_norm);
  if (o.base.model.z_loss > 0) s += ", z-loss " + setting_text(o.base.model.z_loss);
  if (std::any_of(o.axes.begin(), o.axes.end(), [](const Axis& a) { return !identity_part(a.key); }))
    s += " (where no axis sets them otherwise)";
  return s;
}

ReportContext report_context(const SweepOptions& o, const SweepOptions& defaults) {
  ReportContext ctx;
  ctx.data = o.base.data.empty() ? "the embedded corpus (tapegrad tales)" : o.base.data;
  ctx.model = model_text(o);
  ctx.grid = grid_shape(o);
  ctx.command = reproduce_command(o, defaults);
  return ctx;
}

const std::vector<std::pair<std::string, std::string>>& plot_captions() {
  static const std::vector<std::pair<std::string, std::string>> captions{
      {"plots/loss_vs_lr.png", "Final validation loss vs learning rate (mean ± std over seeds; × = diverged)"},
      {"plots/loss_curves.png", "Training loss at the reference learning rate"},
      {"plots/residual_rms.png", "Scale drift: RMS of the residual stream entering each block, and what the norm hands the sub-layer"},
      {"plots/attention_logit.png", "Largest attention logit per step"},
      {"plots/grad_norm.png", "Global gradient norm per step"},
      {"plots/limits_vs_lr.png", "The limits the runs are judged by: each judging column vs learning rate (median over "
                                 "seeds), its limit dotted"},
      {"plots/log_z.png", "Mean log Z of the LM head per step at the largest learning rate"},
      {"plots/sharpness.png", "Sharpness over its edge-of-stability threshold per learning rate (2/lr; 38/lr for Adam's "
                              "preconditioned; dotted: the batch sharpness over 2/lr), and the training loss"}};
  return captions;
}

std::vector<std::pair<std::string, std::string>> plots_in(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> present;
  for (const auto& [file, caption] : plot_captions()) {
    std::error_code ec;
    if (std::filesystem::exists(out + "/" + file, ec)) present.emplace_back(file, caption);
  }
  return present;
}

}  // namespace tapegrad::lab
