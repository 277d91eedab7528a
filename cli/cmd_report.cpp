// evo report: one run as one self-contained HTML page (inline SVG and CSS, no script, nothing
// fetched), readable offline: best-so-far against evaluations and wall time with the other runs of
// the same profile overlaid, outcomes by kind, each knob's effect on the median, the elites with
// their lineage, and where the time went. Everything comes from the store (population/store.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"  // defines: fmt_num, fmt_us
#include "engine/error.h"
#include "population/store.h"

namespace evo::cli {
namespace {

namespace fs = std::filesystem;

// ---- A. text and numbers ------------------------------------------------------------------------

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int precision = 1) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(precision);
  o << v;
  return o.str();
}

// Round tick steps (1, 2, 5 × 10^k) covering [lo, hi] with about `n` ticks.
std::vector<double> ticks(double lo, double hi, int n = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::string tick_label(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e6) return num(v, 0);
  return std::abs(v) >= 10 ? num(v, 1) : num(v, 2);
}

bool timed(const Evaluation& e) { return e.status == Status::Measured && e.fast.outcome == Outcome::Passed; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char* kPalette[] = {"#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e", "#a6761d", "#666666", "#e6ab02"};

// ---- B. charts --------------------------------------------------------------------------------------

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> pts;  // (x, best so far), one per improvement, then the end
  bool main = false;
};

// A step chart of best-so-far lines: lower is better, so each line only falls.
std::string step_chart(const std::string& xlabel, const std::string& ylabel, const std::vector<Series>& series) {
  const double W = 960, H = 340, L = 64, R = 250, T = 16, B = 48;
  double x0 = 0, x1 = 1, y0 = 1e300, y1 = -1e300;
  for (const auto& s : series)
    for (auto [x, y] : s.pts) {
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  if (y0 > y1) return "<p class=note>nothing passed GREEN and FAST: no line to draw</p>";
  // Medians span decades (a slow baseline, then the tuned few): a log axis keeps the end readable.
  y0 = std::log10(y0) - 0.04;
  y1 = std::log10(y1) + 0.04;
  if (y1 - y0 < 0.2) y0 -= 0.1, y1 += 0.1;
  auto X = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double y) { return T + (y1 - std::log10(y)) / (y1 - y0) * (H - T - B); };
  std::vector<double> yticks;  // 1, 2, 5 x 10^k inside the range
  for (int k = int(std::floor(y0)); k <= int(std::ceil(y1)); ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = m * std::pow(10.0, k);
      if (std::log10(t) >= y0 && std::log10(t) <= y1) yticks.push_back(t);
    }
  std::ostringstream o;
  o << "<svg class=chart viewBox='0 0 " << W << ' ' << H << "' width='" << W << "' height='" << H
    << "' role=img aria-label='" << esc(ylabel + " against " + xlabel) << "'>";
  for (double t : yticks) {
    o << "<line class=grid x1='" << L << "' x2='" << W - R << "' y1='" << num(Y(t)) << "' y2='" << num(Y(t)) << "'/>";
    o << "<text class=tick x='" << L - 6 << "' y='" << num(Y(t) + 4) << "' text-anchor=end>" << tick_label(t) << "</text>";
  }
  for (double t : ticks(x0, x1)) {
    o << "<line class=grid x1='" << num(X(t)) << "' x2='" << num(X(t)) << "' y1='" << T << "' y2='" << H - B << "'/>";
    o << "<text class=tick x='" << num(X(t)) << "' y='" << H - B + 16 << "' text-anchor=middle>" << tick_label(t)
      << "</text>";
  }
  o << "<line class=axis x1='" << L << "' x2='" << W - R << "' y1='" << H - B << "' y2='" << H - B << "'/>";
  o << "<line class=axis x1='" << L << "' x2='" << L << "' y1='" << T << "' y2='" << H - B << "'/>";
  o << "<text class=label x='" << (L + W - R) / 2 << "' y='" << H - 8 << "' text-anchor=middle>" << esc(xlabel)
    << "</text>";
  o << "<text class=label transform='translate(16," << (T + H - B) / 2 << ") rotate(-90)' text-anchor=middle>"
    << esc(ylabel) << "</text>";
  // Others first, the report's run last so it is drawn on top.
  std::vector<const Series*> order;
  for (const auto& s : series)
    if (!s.main) order.push_back(&s);
  for (const auto& s : series)
    if (s.main) order.push_back(&s);
  for (const Series* s : order) {
    if (s->pts.empty()) continue;
    std::ostringstream d;
    d << 'M' << num(X(s->pts[0].first)) << ',' << num(Y(s->pts[0].second));
    for (std::size_t i = 1; i < s->pts.size(); ++i)
      d << 'H' << num(X(s->pts[i].first)) << 'V' << num(Y(s->pts[i].second));
    o << "<path class='line" << (s->main ? " main" : "") << "' stroke='" << s->color << "' d='" << d.str() << "'><title>"
      << esc(s->name) << "</title></path>";
    for (std::size_t i = 0; i + 1 < s->pts.size() || (i == 0 && s->pts.size() == 1); ++i)
      o << "<circle cx='" << num(X(s->pts[i].first)) << "' cy='" << num(Y(s->pts[i].second)) << "' r='"
        << (s->main ? 3.5 : 2.5) << "' fill='" << s->color << "'><title>" << esc(s->name) << ": "
        << fmt_us(s->pts[i].second) << " us at " << tick_label(s->pts[i].first) << "</title></circle>";
  }
  double ly = T + 8;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Series* s = *it;
    o << "<line x1='" << W - R + 14 << "' x2='" << W - R + 36 << "' y1='" << ly << "' y2='" << ly << "' stroke='"
      << s->color << "' stroke-width='" << (s->main ? 3 : 2) << "'/>";
    o << "<text class=legend x='" << W - R + 42 << "' y='" << ly + 4 << "'" << (s->main ? " font-weight=bold" : "")
      << ">" << esc(s->name) << "</text>";
    ly += 18;
  }
  o << "</svg>";
  return o.str();
}

// Horizontal bars with a label, a value text and an optional colour per bar.
struct Bar {
  std::string label, value_text, color;
  double value = 0;
};
std::string bar_chart(const std::vector<Bar>& bars, double width = 700) {
  const double row = 24, L = 190, R = 130;
  double maxv = 0;
  for (const auto& b : bars) maxv = std::max(maxv, b.value);
  if (maxv <= 0) maxv = 1;
  const double H = row * bars.size() + 8;
  std::ostringstream o;
  o << "<svg class=chart viewBox='0 0 " << width << ' ' << H << "' width='" << width << "' height='" << H << "'>";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = 4 + i * row, w = std::max(1.0, b.value / maxv * (width - L - R));
    o << "<text class=tick x='" << L - 8 << "' y='" << y + 15 << "' text-anchor=end>" << esc(b.label) << "</text>";
    o << "<rect x='" << L << "' y='" << y + 3 << "' width='" << num(w) << "' height='" << row - 8 << "' fill='"
      << b.color << "'><title>" << esc(b.label + ": " + b.value_text) << "</title></rect>";
    o << "<text class=tick x='" << num(L + w + 6) << "' y='" << y + 15 << "'>" << esc(b.value_text) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

// One knob: per value, the median of the measured medians (bar height: lower is faster), with how
// many measured and tried.
std::string knob_chart(const std::string& knob, const std::map<std::int64_t, std::vector<double>>& measured,
                       const std::map<std::int64_t, int>& tried, double best) {
  const double W = 250, H = 170, L = 40, R = 8, T = 22, B = 34;
  double top = best;
  for (const auto& [v, xs] : measured)
    if (!xs.empty()) top = std::max(top, median(xs));
  top *= 1.1;
  const std::size_t n = tried.size();
  const double slot = (W - L - R) / std::max<std::size_t>(n, 1);
  auto Y = [&](double y) { return T + (top - y) / top * (H - T - B); };
  std::ostringstream o;
  o << "<svg class='chart knob' viewBox='0 0 " << W << ' ' << H << "' width='" << W << "' height='" << H << "'>";
  o << "<text class=knobname x='" << L << "' y='14'>" << esc(knob) << "</text>";
  for (double t : ticks(0, top, 3)) {
    if (t > top) continue;
    o << "<line class=grid x1='" << L << "' x2='" << W - R << "' y1='" << num(Y(t)) << "' y2='" << num(Y(t)) << "'/>";
    o << "<text class=tick x='" << L - 4 << "' y='" << num(Y(t) + 4) << "' text-anchor=end>" << tick_label(t)
      << "</text>";
  }
  std::size_t i = 0;
  for (const auto& [v, count] : tried) {
    const double cx = L + slot * (i + 0.5);
    const auto it = measured.find(v);
    const std::size_t k = it == measured.end() ? 0 : it->second.size();
    if (k) {
      const double m = median(it->second);
      const double bw = std::min(slot * 0.64, 44.0);
      o << "<rect x='" << num(cx - bw / 2) << "' y='" << num(Y(m)) << "' width='" << num(bw)
        << "' height='" << num(Y(0) - Y(m)) << "' fill='#4c78a8'><title>" << esc(knob) << '=' << v << ": median "
        << fmt_us(m) << " us over " << k << " measured of " << count << " tried</title></rect>";
      o << "<text class=small x='" << num(cx) << "' y='" << num(Y(m) - 3) << "' text-anchor=middle>" << fmt_us(m)
        << "</text>";
    } else {
      o << "<text class=small x='" << num(cx) << "' y='" << num(Y(0) - 4) << "' text-anchor=middle>none ok</text>";
    }
    o << "<text class=tick x='" << num(cx) << "' y='" << H - B + 14 << "' text-anchor=middle>" << v << "</text>";
    o << "<text class=small x='" << num(cx) << "' y='" << H - B + 27 << "' text-anchor=middle>" << k << '/' << count
      << "</text>";
    ++i;
  }
  o << "<line class=best x1='" << L << "' x2='" << W - R << "' y1='" << num(Y(best)) << "' y2='" << num(Y(best))
    << "'><title>the run's best: " << fmt_us(best) << " us</title></line>";
  o << "<line class=axis x1='" << L << "' x2='" << W - R << "' y1='" << num(Y(0)) << "' y2='" << num(Y(0)) << "'/>";
  o << "</svg>";
  return o.str();
}

// ---- C. the run's figures ------------------------------------------------------------------------------

// Best-so-far of one run, against evaluation number and against time: the commit clock (schema
// v2) when `clock`, else, for databases with older rows, the sum of each evaluation's phase seconds.
struct Curves {
  std::vector<std::pair<double, double>> by_eval, by_time;
};

bool has_clock(const std::vector<StoredEvaluation>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const auto& r) { return r.elapsed_s.has_value(); });
}

Curves curves(const std::vector<StoredEvaluation>& rows, bool clock) {
  Curves c;
  double best = INFINITY, phase_sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Evaluation& e = rows[i].eval;
    if (!rows[i].reused) phase_sum += e.seconds_compile + e.seconds_green + e.seconds_fast + e.seconds_metrics;
    const double t = clock ? *rows[i].elapsed_s : phase_sum;
    const bool better = timed(e) && e.fast.p50_us < best;
    if (better) best = e.fast.p50_us;
    if (better || (i + 1 == rows.size() && std::isfinite(best))) {  // each improvement, and the run's end
      c.by_eval.push_back({double(i + 1), best});
      c.by_time.push_back({t, best});
    }
  }
  return c;
}

std::string status_color(Status s) {
  switch (s) {
    case Status::Measured: return "#2e7d32";
    case Status::CompileError: return "#ef6c00";
    case Status::StaticRejected: return "#8d8d8d";
    case Status::GreenFailed: return "#c62828";
    case Status::Crashed: return "#6a1b1b";
    case Status::Timeout: return "#7b1fa2";
    case Status::MetricRejected: return "#0277bd";
    case Status::SanitizeFailed: return "#ad1457";
  }
  return "#444";
}

const char* status_words(Status s) {
  switch (s) {
    case Status::Measured: return "measured (GREEN, timed)";
    case Status::CompileError: return "compile error";
    case Status::StaticRejected: return "static rejection";
    case Status::GreenFailed: return "GREEN failure";
    case Status::Crashed: return "crash";
    case Status::Timeout: return "timeout (hang)";
    case Status::MetricRejected: return "metric gate";
    case Status::SanitizeFailed: return "sanitizer";
  }
  return "?";
}

// "A=1, B=2": wraps in a table cell, unlike config_text's commas.
std::string knob_list(const Config& c) {
  std::string out;
  for (const auto& [k, v] : c) out += (out.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return out;
}

std::string run_name(const RunInfo& r) {
  return "run " + std::to_string(r.id) + " " + r.strategy + " seed " + std::to_string(r.seed);
}

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#222;margin:24px auto;max-width:1000px;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin:0 0 12px}.note{color:#666;font-size:12.5px;margin:4px 0}
.facts{display:grid;grid-template-columns:repeat(4,1fr);gap:8px;margin:12px 0}
.fact{background:#f5f7fa;border:1px solid #e3e7ee;border-radius:6px;padding:8px 10px}.fact b{display:block;font-size:18px}
.fact span{color:#555;font-size:12px}
svg.chart{display:block;max-width:100%;height:auto;font-family:inherit}
.grid{stroke:#e6e6e6;stroke-width:1}.axis{stroke:#888;stroke-width:1}.best{stroke:#c62828;stroke-dasharray:4 3;stroke-width:1.2}
.tick{font-size:11px;fill:#444}.small{font-size:10px;fill:#555}.label{font-size:12px;fill:#333}.legend{font-size:12px;fill:#222}
.knobname{font-size:13px;font-weight:600;fill:#222}
path.line{fill:none;stroke-width:1.6;opacity:.8}path.line.main{stroke-width:3;opacity:1}
.knobs{display:flex;flex-wrap:wrap;gap:6px}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f5f7fa}td.lin{min-width:190px}td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:11.5px;color:#333}
)css";

}  // namespace

int cmd_report(const Globals& g, std::optional<std::int64_t> run_id, const std::string& to) {
  Store store(g.db, Store::Open::Existing);  // reading commands create nothing
  const auto all_runs = store.runs();
  if (all_runs.empty()) throw UserError(store.name() + ": no runs to report (run `evo run` first)");
  const std::int64_t id = run_id.value_or(all_runs.back().id);
  const auto run = store.run(id);
  if (!run) throw UserError("no run " + std::to_string(id) + " in " + store.name() + " (see `evo runs`)");
  const auto rows = store.evaluations_of_run(id);

  // A. Best-so-far, this run and the others of the same profile, on one time axis for all.
  std::vector<std::pair<RunInfo, std::vector<StoredEvaluation>>> same;
  bool commit_clock = true;
  for (const auto& r : all_runs)
    if (r.profile == run->profile) {
      same.push_back({r, r.id == id ? rows : store.evaluations_of_run(r.id)});
      commit_clock = commit_clock && has_clock(same.back().second);
    }
  std::vector<Series> by_eval, by_time;
  int colour = 0;
  for (const auto& [r, rr] : same) {
    const Curves c = curves(rr, commit_clock);
    const bool main = r.id == id;
    const std::string name = run_name(r) + (r.device != run->device ? " (" + r.device + ")" : "");
    const std::string col = main ? "#1f4e9c" : kPalette[colour++ % 8];
    by_eval.push_back({name, col, c.by_eval, main});
    by_time.push_back({name, col, c.by_time, main});
  }

  // B. Outcomes, time, knobs, elites.
  std::map<Status, int> outcomes;
  int reused = 0;
  double t_compile = 0, t_green = 0, t_fast = 0, t_metrics = 0, best = INFINITY;
  std::map<std::string, std::map<std::int64_t, std::vector<double>>> knob_measured;
  std::map<std::string, std::map<std::int64_t, int>> knob_tried;
  std::map<std::string, const StoredEvaluation*> by_hash;  // first evaluation of each config in this run
  for (const auto& r : rows) {
    const Evaluation& e = r.eval;
    ++outcomes[e.status];
    reused += r.reused;
    by_hash.emplace(e.config_hash, &r);
    if (!r.reused) {
      t_compile += e.seconds_compile;
      t_green += e.seconds_green;
      t_fast += e.seconds_fast;
      t_metrics += e.seconds_metrics;
    }
    for (const auto& [k, v] : e.config) {
      ++knob_tried[k][v];
      if (timed(e)) knob_measured[k][v].push_back(e.fast.p50_us);
    }
    if (timed(e)) best = std::min(best, e.fast.p50_us);
  }
  const auto elites = store.elites(run->profile, "", 10, id);

  std::ostringstream h;
  h << "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
    << "<title>evo report: run " << id << " (" << esc(run->profile) << ")</title><style>" << kStyle
    << "</style></head><body>";
  h << "<h1>evo run " << id << ": " << esc(run->profile) << "</h1>";
  h << "<p class=sub>" << esc(run->strategy) << ", seed " << run->seed << ", budget " << run->budget << " on "
    << esc(run->device) << " (" << esc(run->arch) << (run->driver.empty() ? "" : ", driver " + esc(run->driver)) << "); " << esc(run->status)
    << ", started " << esc(run->started_at) << (run->finished_at.empty() ? "" : ", finished " + esc(run->finished_at))
    << "</p>";
  h << "<div class=facts>";
  h << "<div class=fact><b>" << rows.size() << "</b><span>evaluations (" << rows.size() - reused << " new, " << reused
    << " read back)</span></div>";
  h << "<div class=fact><b>" << (std::isfinite(best) ? fmt_us(best) + " us" : "none") << "</b><span>best median"
    << "</span></div>";
  h << "<div class=fact><b>" << (run->baseline_p50_us > 0 ? fmt_us(run->baseline_p50_us) + " us" : "not timed")
    << "</b><span>baseline, re-timed in this run</span></div>";
  h << "<div class=fact><b>"
    << (run->baseline_p50_us > 0 && std::isfinite(best) ? fmt_num(run->baseline_p50_us / best, 2) + "x" : "-")
    << "</b><span>speedup over the baseline</span></div></div>";

  h << "<h2>Best so far</h2>";
  h << step_chart("evaluation", "best median (us, log scale)", by_eval);
  h << step_chart(commit_clock ? "wall time into the run (s)" : "seconds spent in compile + GREEN + FAST + metrics",
                  "best median (us, log scale)", by_time);
  h << "<p class=note>Lower is better. The bold line is run " << id << "; the others are the database's other runs of "
    << esc(run->profile) << (by_eval.size() > 1 ? "" : " (there are none)") << ". "
    << (commit_clock ? "Time is each evaluation's commit, from the run's start (a resumed run includes the pause)."
                     : "Some rows predate the commit clock (schema v2), so time is the sum of each evaluation's "
                       "phase seconds.")
    << " Read-back evaluations cost no time and no budget.</p>";

  h << "<h2>Outcomes</h2>";
  std::vector<Bar> ob;
  for (const auto& [s, n] : outcomes)
    ob.push_back({status_words(s), std::to_string(n) + " (" + num(100.0 * n / rows.size(), 0) + "%)",
                  status_color(s), double(n)});
  h << (ob.empty() ? "<p class=note>no evaluations recorded</p>" : bar_chart(ob));

  h << "<h2>Knobs: the median by value</h2><div class=knobs>";
  for (const auto& [k, tried] : knob_tried) {
    const auto m = knob_measured.find(k);
    h << knob_chart(k, m == knob_measured.end() ? std::map<std::int64_t, std::vector<double>>{} : m->second, tried,
                    std::isfinite(best) ? best : 0);
  }
  h << "</div><p class=note>Each bar: the median of the timed medians (us) of this run's evaluations with that value "
       "(lower is faster); under it, timed/tried. The dashed red line is the run's best.</p>";

  h << "<h2>Elites and their lineage</h2>";
  if (elites.empty()) {
    h << "<p class=note>nothing passed GREEN and FAST in this run</p>";
  } else {
    h << "<table><tr><th>#</th><th>eval</th><th class=n>median us</th><th class=n>speedup</th><th>found by</th>"
         "<th>lineage (first parent)</th><th>knobs</th></tr>";
    int rank = 0;
    for (const auto& el : elites) {
      std::string lineage;
      std::set<std::string> seen{el.eval.config_hash};
      const StoredEvaluation* cur = by_hash.count(el.eval.config_hash) ? by_hash[el.eval.config_hash] : &el;
      for (int depth = 0; depth < 8 && !cur->eval.origin.parents.empty(); ++depth) {
        const std::string& p = cur->eval.origin.parents.front();
        const auto it = by_hash.find(p);
        if (it == by_hash.end() || !seen.insert(p).second) {
          lineage += " &larr; <code>" + esc(p) + "</code>";
          break;
        }
        cur = it->second;
        lineage += " &larr; #" + std::to_string(cur->id) + " " + esc(cur->eval.origin.kind);
      }
      const Origin& o = el.eval.origin;
      h << "<tr><td class=n>" << ++rank << "</td><td>#" << el.id << "</td><td class=n>" << fmt_us(el.eval.fast.p50_us)
        << "</td><td class=n>" << (el.eval.speedup > 0 ? fmt_num(el.eval.speedup, 2) + "x" : "-") << "</td><td>"
        << esc(o.rule.empty() ? o.kind : o.kind + ": " + o.rule)
        << (o.parents.size() > 1 ? " (" + std::to_string(o.parents.size()) + " parents)" : "") << "</td><td class=lin>"
        << (lineage.empty() ? "(no parents)" : lineage.substr(std::string(" &larr; ").size())) << "</td><td><code>"
        << esc(knob_list(el.eval.config)) << "</code></td></tr>";
    }
    h << "</table>";
  }

  h << "<h2>Where the time went</h2>";
  const double total = t_compile + t_green + t_fast + t_metrics;
  auto share = [&](double t) { return num(t, 2) + " s (" + num(total > 0 ? 100 * t / total : 0, 0) + "%)"; };
  h << bar_chart({{"compile", share(t_compile), "#8d6e63", t_compile},
                  {"GREEN", share(t_green), "#2e7d32", t_green},
                  {"FAST", share(t_fast), "#1565c0", t_fast},
                  {"metrics", share(t_metrics), "#6a1b9a", t_metrics}});
  h << "<p class=note>Summed over the " << rows.size() - reused
    << " evaluations measured in this run; compiles overlap the GPU's work, so the sum can exceed the wall time.</p>";
  h << "<p class=note>evo " << EVO_VERSION << ", database " << esc(fs::exists(g.db) ? fs::absolute(g.db).string() : store.name()) << "</p>";
  h << "</body></html>\n";

  const fs::path out(to);
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError(to + ": cannot write the report here");
  f << h.str();
  if (!f.flush()) throw UserError(to + ": write failed");
  std::cout << "wrote " << to << " (run " << id << ", " << rows.size() << " evaluations, " << by_eval.size() - 1
            << " other runs overlaid)\n";
  return 0;
}

}  // namespace evo::cli
