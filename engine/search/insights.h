// Optimisation insights (EvoEngineer's I3): rules that read one evaluation's evidence (its
// ptxas report, its hardware metrics, its launch geometry) and propose moves a kernel engineer
// would try next, as the seeds' stage notes did by hand: spills -> a smaller tile, bank
// conflicts -> another SWIZZLE, an idle tensor pipe -> WMMA on, DRAM-bound -> deeper cp.async
// pipeline, too few blocks for the SMs -> SPLIT_KV. A rule only fires for knobs the profile
// has, and only proposes valid configurations. docs/search.md lists the rules.
#pragma once
#include <string>
#include <vector>

#include "engine/evaluation.h"  // defines: Evaluation, PtxasReport, MetricsResult
#include "engine/profile.h"     // defines: Profile
#include "engine/space.h"       // defines: Config, KnobSpace

namespace evo {

struct InsightSettings {
  int max_registers = 128;         // more registers per thread than this: try a smaller tile
  double bank_conflict_pct = 5.0;  // shared-load bank conflicts per wavefront, in %
  double tensor_pipe_pct = 10.0;   // tensor pipe active below this: turn WMMA on
  double dram_pct = 50.0;          // DRAM throughput above this % of peak: DRAM-bound
  double dram_peak_gbs = 3350.0;   // for the bytes / duration proxy (H100 SXM HBM3)
  int sm_count = 132;              // fewer blocks than this: split the work (H100 SXM)
};

// One proposed move: the new configuration, the rule's name and why it fired.
struct Insight {
  std::string rule;   // "spills-smaller-tile", ...
  Config config;
  std::string why;    // "184 registers > 128"
};

struct InsightRule {
  std::string name, description;
};
const std::vector<InsightRule>& insight_rules();  // in the order they are tried

// Every move the rules suggest for `parent`, rule by rule, each valid and different from the
// parent's config (no duplicates). Empty when nothing fires.
std::vector<Insight> suggest_insights(const Evaluation& parent, const Profile& profile, const KnobSpace& space,
                                      const InsightSettings& settings = {});

}  // namespace evo
