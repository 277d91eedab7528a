// The insight rules. Each reads one evaluation and returns candidate moves; suggest_insights
// keeps the valid, new ones. Metric names are CUPTI's on GH100 (CUPTI_NVRTC.md §3).
#include "engine/search/insights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "engine/error.h"
#include "engine/launch.h"

namespace evo {
namespace {

// Tensor-pipe activity is read as a percentage under either counter, whatever roll-up a profile
// lists (the default is metric::kTensorPipe); DRAM throughput as a percentage of peak when a
// profile lists it, else from the default byte counts.
constexpr const char* kTensorPipeHmmaPrefix = "sm__pipe_tensor_op_hmma_cycles_active";
constexpr const char* kTensorPipeAnyPrefix = "sm__pipe_tensor_cycles_active";
constexpr const char* kDramPct = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

const std::vector<std::string> kTileKnobs = {"TILE_M", "TILE_N", "BLOCK_M", "BLOCK_N", "BLOCK_K"};

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// The profile's knobs and the parent's config, with one-step moves along a knob's value list.
struct Moves {
  const KnobSpace& space;
  const Config& base;

  const KnobDef* knob(const std::string& name) const {
    for (const auto& k : space.knobs())
      if (k.name == name) return &k;
    return nullptr;
  }
  bool has(const std::string& name) const { return knob(name) && base.count(name); }
  // `c` with knob `name` one step up (+1) or down (-1) its value list; nullopt at the end.
  std::optional<Config> step(Config c, const std::string& name, int dir) const {
    const KnobDef* k = knob(name);
    if (!k || !c.count(name)) return std::nullopt;
    auto it = std::find(k->values.begin(), k->values.end(), c[name]);
    if (it == k->values.end()) return std::nullopt;
    long pos = (it - k->values.begin()) + dir;
    if (pos < 0 || pos >= static_cast<long>(k->values.size())) return std::nullopt;
    c[name] = k->values[pos];
    return c;
  }
  std::optional<Config> set(Config c, const std::string& name, std::int64_t v) const {
    const KnobDef* k = knob(name);
    if (!k || !c.count(name) || std::find(k->values.begin(), k->values.end(), v) == k->values.end())
      return std::nullopt;
    c[name] = v;
    return c;
  }
};

struct RuleInput {
  const Evaluation& e;
  const Profile& profile;
  const Moves& m;
  const InsightSettings& s;
};

using RuleFn = void (*)(const RuleInput&, std::vector<std::optional<Config>>& out, std::string& why);

const PtxasReport& ptxas_of(const Evaluation& e) {
  return e.static_verdict.ptxas.registers >= 0 ? e.static_verdict.ptxas : e.build.ptxas;
}

std::optional<double> metric(const Evaluation& e, const std::string& name) {
  auto it = e.metrics.values.find(name);
  if (it == e.metrics.values.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

// The first metric whose name starts with `prefix` and is a percentage.
std::optional<double> metric_pct(const Evaluation& e, const std::string& prefix) {
  for (const auto& [name, v] : e.metrics.values)
    if (name.rfind(prefix, 0) == 0 && name.find("pct") != std::string::npos && std::isfinite(v)) return v;
  return std::nullopt;
}

// Fewer registers: each tile knob one step smaller, or one pipeline stage fewer.
void smaller_tile_or_fewer_stages(const RuleInput& in, std::vector<std::optional<Config>>& out) {
  for (const auto& k : kTileKnobs) out.push_back(in.m.step(in.m.base, k, -1));
  out.push_back(in.m.step(in.m.base, "STAGES", -1));
}

// Spills, or more registers than the threshold: a smaller tile or fewer pipeline stages.
void spills_smaller_tile(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  const PtxasReport& p = ptxas_of(in.e);
  const std::int64_t spilled = p.spill_stores + p.spill_loads;
  if (spilled > 0)
    why = std::to_string(spilled) + " bytes spilled";
  else if (p.registers > in.s.max_registers)
    why = std::to_string(p.registers) + " registers > " + std::to_string(in.s.max_registers);
  else
    return;
  smaller_tile_or_fewer_stages(in, out);
}

// ptxas serialised the wgmma pipeline (C7511: not enough registers to keep the accumulators of
// the wgmmas in flight; other codes: code that touches their registers mid-pipeline): fewer
// accumulator registers first, a smaller tile, or fewer STAGES, as for spills. Not stage knobs
// of the user's own making: a code-structure cause is the template author's to fix.
void wgmma_serialized(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  const PtxasReport& p = ptxas_of(in.e);
  if (p.wgmma_serialized.empty()) return;
  why = "wgmma serialised by ptxas (" + wgmma_serialized_codes(p) + ")";
  smaller_tile_or_fewer_stages(in, out);
}

// Shared-memory loads conflicting in banks: another SWIZZLE value (nearest first).
void bank_conflicts_swizzle(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  const auto pct = metric_value(in.e.metrics, metric::kBankConflictPct);
  if (!in.m.has("SWIZZLE") || !pct || !std::isfinite(*pct) || *pct <= in.s.bank_conflict_pct) return;
  why = fmt("%.1f%% of shared-load wavefronts are bank conflicts", *pct);
  const KnobDef* k = in.m.knob("SWIZZLE");
  const long at = std::find(k->values.begin(), k->values.end(), in.m.base.at("SWIZZLE")) - k->values.begin();
  for (long d = 1; d < static_cast<long>(k->values.size()); ++d)
    for (long pos : {at + d, at - d})
      if (pos >= 0 && pos < static_cast<long>(k->values.size())) out.push_back(in.m.set(in.m.base, "SWIZZLE", k->values[pos]));
}

// The tensor pipe mostly idle while a WMMA knob is off: turn it on (both first).
void low_tensor_pipe_wmma(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  auto pct = metric_pct(in.e, kTensorPipeHmmaPrefix);
  if (!pct) pct = metric_pct(in.e, kTensorPipeAnyPrefix);
  if (!pct || *pct >= in.s.tensor_pipe_pct) return;
  std::vector<std::string> off;
  for (const char* k : {"USE_WMMA_QK", "USE_WMMA_PV"})
    if (in.m.has(k) && in.m.base.at(k) == 0) off.push_back(k);
  if (off.empty()) return;
  why = fmt("tensor pipe active %.1f%%", *pct) + fmt(" < %.0f%%", in.s.tensor_pipe_pct);
  if (off.size() == 2) {
    auto both = in.m.set(in.m.base, off[0], 1);
    if (both) both = in.m.set(*both, off[1], 1);
    out.push_back(both);
  }
  for (const auto& k : off) out.push_back(in.m.set(in.m.base, k, 1));
}

// DRAM-bound with a shallow pipeline: more STAGES and cp.async. DRAM-bound is the DRAM
// throughput metric above the threshold, or else DRAM bytes over the kernel's time against the
// device's peak bandwidth.
void dram_bound_pipeline(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  std::optional<double> pct = metric(in.e, kDramPct);
  if (!pct) {
    auto rd = metric(in.e, metric::kDramRead), wr = metric(in.e, metric::kDramWrite);
    double seconds = in.e.fast.p50_us * 1e-6;
    if (auto ns = metric(in.e, metric::kDuration); ns && *ns > 0) seconds = *ns * 1e-9;
    if ((rd || wr) && seconds > 0 && in.s.dram_peak_gbs > 0)
      pct = 100.0 * (rd.value_or(0) + wr.value_or(0)) / seconds / (in.s.dram_peak_gbs * 1e9);
  }
  if (!pct || *pct <= in.s.dram_pct) return;
  const bool has_stages = in.m.has("STAGES"), has_cp = in.m.has("USE_CP_ASYNC");
  const KnobDef* st = in.m.knob("STAGES");
  const bool shallow = has_stages && in.m.base.at("STAGES") == st->values.front();
  const bool no_cp = has_cp && in.m.base.at("USE_CP_ASYNC") == 0;
  if (!shallow && !no_cp) return;
  why = fmt("DRAM throughput %.0f%% of peak", *pct) + (shallow ? ", STAGES=" + std::to_string(in.m.base.at("STAGES")) : "") +
        (no_cp ? ", USE_CP_ASYNC=0" : "");
  if (has_stages && has_cp) {
    auto deeper = in.m.step(in.m.base, "STAGES", +1);
    if (deeper) deeper = in.m.set(*deeper, "USE_CP_ASYNC", 1);
    out.push_back(deeper);
  }
  if (has_stages) out.push_back(in.m.step(in.m.base, "STAGES", +1));
  if (has_cp) out.push_back(in.m.set(in.m.base, "USE_CP_ASYNC", 1));
}

// Fewer blocks than SMs on the objective problem: split the KV loop, or smaller row tiles.
void few_blocks_split(const RuleInput& in, std::vector<std::optional<Config>>& out, std::string& why) {
  if (in.profile.problems.empty()) return;
  std::int64_t blocks = 0;
  try {
    const Problem& obj = in.profile.objective.empty() ? in.profile.problems.front() : in.profile.objective_problem();
    LaunchGeometry g = launch_geometry(in.profile.kernel, obj, in.m.base);
    blocks = std::int64_t(g.grid[0]) * g.grid[1] * g.grid[2];
  } catch (const std::exception&) {
    return;  // the launch expressions do not evaluate for this config: no evidence
  }
  if (blocks <= 0 || blocks >= in.s.sm_count) return;
  why = std::to_string(blocks) + " blocks for " + std::to_string(in.s.sm_count) + " SMs";
  out.push_back(in.m.step(in.m.base, "SPLIT_KV", +1));
  out.push_back(in.m.step(in.m.base, "TILE_M", -1));
  out.push_back(in.m.step(in.m.base, "BLOCK_M", -1));
}

struct Rule {
  InsightRule info;
  RuleFn fn;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> all = {
      {{"low-tensor-pipe-wmma", "tensor pipe active below tensor_pipe_pct with USE_WMMA_QK or USE_WMMA_PV off: turn them on"},
       low_tensor_pipe_wmma},
      {{"spills-smaller-tile", "spills, or registers above max_registers: one step smaller TILE_*/BLOCK_*, or fewer STAGES"},
       spills_smaller_tile},
      {{"wgmma-serialized", "ptxas serialised the wgmma pipeline (its C7510..C7520 warnings): one step smaller TILE_*/BLOCK_*, or fewer STAGES"},
       wgmma_serialized},
      {{"bank-conflicts-swizzle", "shared-load bank conflicts above bank_conflict_pct of wavefronts: another SWIZZLE"},
       bank_conflicts_swizzle},
      {{"dram-bound-pipeline", "DRAM throughput above dram_pct with STAGES at its lowest or USE_CP_ASYNC=0: more STAGES, cp.async on"},
       dram_bound_pipeline},
      {{"few-blocks-split", "fewer blocks than SMs on the objective problem: SPLIT_KV up, or a smaller TILE_M/BLOCK_M"},
       few_blocks_split},
  };
  return all;
}

}  // namespace

const std::vector<InsightRule>& insight_rules() {
  static const std::vector<InsightRule> infos = [] {
    std::vector<InsightRule> v;
    for (const auto& r : rules()) v.push_back(r.info);
    return v;
  }();
  return infos;
}

std::vector<Insight> suggest_insights(const Evaluation& parent, const Profile& profile, const KnobSpace& space,
                                      const InsightSettings& settings) {
  std::vector<Insight> out;
  if (!space.valid(parent.config)) return out;
  Moves m{space, parent.config};
  RuleInput in{parent, profile, m, settings};
  std::set<Config> seen{parent.config};
  for (const auto& r : rules()) {
    std::vector<std::optional<Config>> moves;
    std::string why;
    r.fn(in, moves, why);
    for (auto& c : moves)
      if (c && space.valid(*c) && seen.insert(*c).second) out.push_back({r.info.name, *c, why});
  }
  return out;
}

}  // namespace evo
