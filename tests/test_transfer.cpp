// Transfer (engine/search/transfer.h): what was fast on a related task, mapped into this space and
// proposed first by evo. CPU only; `evo run` finding it (CliTransfer) is in tests/test_cli.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "engine/error.h"
#include "engine/replay.h"
#include "engine/search/strategy.h"
#include "engine/search/transfer.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
const fs::path kData = evo::test::source_root() / "tests" / "data";
const fs::path kSynthetic = kData / "landscape_synthetic.json";

// The synthetic space: TILE_M, TILE_N in {32, 64, 128}, STAGES {1, 2, 3}, USE_CP_ASYNC {0, 1}, with
// 'USE_CP_ASYNC == 1 || STAGES == 1' among its constraints.
TEST(Transfer, MapsKnobByKnobToTheNearestAllowedValueAndTheBaselineForAKnobItLacks) {
  ReplayEvaluator ev(kSynthetic);
  KnobSpace space(ev.profile());
  const Config& base = ev.profile().baseline;
  // TILE_M 96 is not allowed here: 64 is the nearest (the first of two as near); TILE_N 100 -> 128;
  // a knob the source does not have (SWIZZLE, SPLIT_KV, ...) is the baseline's; one this space does
  // not have (LAZY) is dropped.
  Config from = base;
  from.erase("SWIZZLE");
  from["TILE_M"] = 96;
  from["TILE_N"] = 100;
  from["LAZY"] = 1;
  const auto c = map_into_space(from, space, base);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->at("TILE_M"), 64);
  EXPECT_EQ(c->at("TILE_N"), 128);
  EXPECT_EQ(c->at("SWIZZLE"), base.at("SWIZZLE"));
  EXPECT_EQ(c->count("LAZY"), 0u);
  EXPECT_EQ(c->size(), space.knobs().size());
  // Mapped but not valid here (STAGES 3 without cp.async): nothing.
  Config bad = base;
  bad["STAGES"] = 3;
  bad["USE_CP_ASYNC"] = 0;
  EXPECT_FALSE(map_into_space(bad, space, base).has_value());
}

TEST(Transfer, TakesEachSourcesFastestInTurnSkippingTheBaselineRepeatsAndInvalidOnes) {
  ReplayEvaluator ev(kSynthetic);
  KnobSpace space(ev.profile());
  const Config& base = ev.profile().baseline;
  const auto& valid = space.enumerate_valid();
  std::vector<Config> others;
  for (const auto& c : valid)
    if (c != base && others.size() < 4) others.push_back(c);
  ASSERT_EQ(others.size(), 4u);
  Config invalid = base;
  invalid["STAGES"] = 3;
  invalid["USE_CP_ASYNC"] = 0;
  TransferSource a{"a", {base, invalid, others[0], others[1]}};
  TransferSource b{"b", {others[0], others[2], others[3]}};
  const auto got = transfer_candidates({a, b}, space, base, 10);
  // a's first valid new one, b's (others[0] is taken: its next), a's next, b's next.
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].config, others[0]);
  EXPECT_EQ(got[1].config, others[2]);
  EXPECT_EQ(got[2].config, others[1]);
  EXPECT_EQ(got[3].config, others[3]);
  EXPECT_EQ(got[0].source, 0u);
  EXPECT_EQ(got[1].source, 1u);
  EXPECT_EQ(transfer_candidates({a, b}, space, base, 2).size(), 2u);
  EXPECT_TRUE(transfer_candidates({}, space, base, 10).empty());
}

TEST(Transfer, ALandscapeGivesItsMeasuredConfigurationsFastestFirst) {
  const TransferSource s = transfer_from_landscape(kSynthetic);
  const Landscape l = read_landscape(kSynthetic);
  std::size_t measured = 0;
  double fastest = 1e300;
  std::map<std::string, double> time;
  for (const auto& p : l.points)
    if (p.status == Status::Measured) ++measured, fastest = std::min(fastest, p.p50_us), time[config_hash(p.knobs)] = p.p50_us;
  ASSERT_EQ(s.best_first.size(), measured);
  ASSERT_LT(measured, l.points.size()) << "the synthetic landscape has failures: they are not transferred";
  EXPECT_EQ(time.at(config_hash(s.best_first.front())), fastest);
  for (std::size_t i = 1; i < s.best_first.size(); ++i)
    EXPECT_LE(time.at(config_hash(s.best_first[i - 1])), time.at(config_hash(s.best_first[i])));
  EXPECT_NE(s.label.find("landscape_synthetic.json"), std::string::npos) << s.label;
  EXPECT_THROW(transfer_from_landscape(kData / "no_such_landscape.json"), UserError);
}

TEST(Transfer, TheNearestProblemIsTheOneOfNearestSizesOnALogScale) {
  const Problem mission{"mission", {{"B", 4}, {"H", 16}, {"S", 1024}, {"D", 64}}, {}, 0};
  const Problem longer{"long", {{"B", 4}, {"H", 16}, {"S", 4096}, {"D", 64}}, {}, 0};
  const Problem longest{"longest", {{"B", 4}, {"H", 16}, {"S", 16384}, {"D", 64}}, {}, 0};
  const Problem other{"other", {{"M", 1024}}, {}, 0};
  EXPECT_EQ(problem_distance(mission, mission), 0.0);
  EXPECT_NEAR(problem_distance(longer, mission), std::log2(4097.0 / 1025.0), 1e-12);
  EXPECT_LT(problem_distance(longer, mission), problem_distance(longest, mission));
  EXPECT_GE(problem_distance(other, mission), 4 * 64.0);  // none of mission's sizes
}

// evo proposes the first `transfer` of them, in order, before any draw; transfer=0 proposes none.
TEST(Transfer, EvoProposesTheTransferredConfigurationsFirst) {
  ReplayEvaluator ev(kSynthetic);
  KnobSpace space(ev.profile());
  const TransferSource s = transfer_from_landscape(kSynthetic);
  std::vector<Config> transfer;
  for (const auto& c : transfer_candidates({s}, space, ev.profile().baseline, 64)) transfer.push_back(c.config);
  ASSERT_GE(transfer.size(), 5u);
  for (const std::string n : {"0", "3", "5"}) {
    StrategyContext ctx{ev.profile(), space, 3, {{"transfer", n}}, "", "", transfer};
    auto strategy = make_strategy("evo", ctx);
    strategy->observe(ev.evaluate({ev.profile().baseline, Origin{"baseline", "", {}}}));
    const auto first = strategy->propose(8);
    ASSERT_EQ(first.size(), 8u);
    const std::size_t k = std::stoul(n);
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (i < k) {
        EXPECT_EQ(first[i].config, transfer[i]) << "transfer=" << n << ", proposal " << i;
        EXPECT_EQ(first[i].origin.kind, "transfer");
      } else {
        EXPECT_NE(first[i].origin.kind, "transfer") << "transfer=" << n << ", proposal " << i;
      }
    }
  }
}

// tests/data/pershape: sdpa_fp8's whole space on six problems (call P, docs/results/search-transfer.md):
// one profile and space, each its own problem, every configuration measured; a landscape transfers to
// another as a --transfer-from source, its fastest first.
TEST(Transfer, TheSixPerShapeLandscapesAreOneSpaceOnSixProblems) {
  std::set<std::string> problems;
  const Landscape mission = read_landscape(kData / "pershape" / "landscape_sdpa_fp8_mission_h100.json");
  for (const char* p : {"small", "mission", "mission_causal", "mission512", "tail", "tail_causal"}) {
    const fs::path f = kData / "pershape" / (std::string("landscape_sdpa_fp8_") + p + "_h100.json");
    const Landscape l = read_landscape(f);
    EXPECT_EQ(l.profile, "sdpa_fp8") << f;
    EXPECT_EQ(l.problem, p) << f;
    EXPECT_EQ(l.points.size(), 352u) << f;
    for (const auto& pt : l.points) EXPECT_EQ(pt.status, Status::Measured) << f << " " << config_text(pt.knobs);
    EXPECT_EQ(l.constraints, mission.constraints) << f;
    ASSERT_EQ(l.knobs.size(), mission.knobs.size()) << f;
    for (std::size_t k = 0; k < l.knobs.size(); ++k) EXPECT_EQ(l.knobs[k].values, mission.knobs[k].values) << f;
    problems.insert(l.problem);
  }
  EXPECT_EQ(problems.size(), 6u);
  // mission512's fastest is mission's second fastest (docs/results/search-transfer.md's first table).
  ReplayEvaluator ev(kData / "pershape" / "landscape_sdpa_fp8_mission_h100.json");
  KnobSpace space(ev.profile());
  const auto got = transfer_candidates(
      {transfer_from_landscape(kData / "pershape" / "landscape_sdpa_fp8_mission512_h100.json")}, space,
      ev.profile().baseline, 1);
  ASSERT_EQ(got.size(), 1u);
  std::vector<const LandscapePoint*> by_time;
  for (const auto& pt : mission.points) by_time.push_back(&pt);
  std::sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->p50_us < b->p50_us; });
  EXPECT_EQ(got[0].config, by_time[1]->knobs);
}

// What transfer is for, as a test that can fail: mission512 searched from the baseline finds its best
// region (within 2 % of the optimum) in 10 evaluations in few seeds; starting from mission's
// fastest (its nearest problem) in nearly all. docs/results/search-transfer.md has the 20-seed tables.
TEST(Transfer, MissionsFastestLeadsMission512ToItsBestWithinTenEvaluations) {
  const fs::path target = kData / "pershape" / "landscape_sdpa_fp8_mission512_h100.json";
  ReplayEvaluator ev(target);
  KnobSpace space(ev.profile());
  double optimum = 1e300;
  for (const auto& p : read_landscape(target).points) optimum = std::min(optimum, p.p50_us);
  std::vector<Config> from_mission;
  for (const auto& c : transfer_candidates(
           {transfer_from_landscape(kData / "pershape" / "landscape_sdpa_fp8_mission_h100.json")}, space,
           ev.profile().baseline, 64))
    from_mission.push_back(c.config);
  auto seeds_near = [&](const std::vector<Config>& transfer) {
    int near = 0;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      StrategyContext ctx{ev.profile(), space, seed, {}, "", "", transfer};
      auto strategy = make_strategy("evo", ctx);
      Evaluation e = ev.evaluate({ev.profile().baseline, Origin{"baseline", "", {}}});
      double best = e.fast.p50_us;
      strategy->observe(e);
      for (int n = 1; n < 10; ++n) {
        const auto c = strategy->propose(1);
        if (c.empty()) break;
        e = ev.evaluate(c.front());
        if (e.measured()) best = std::min(best, e.fast.p50_us);
        strategy->observe(e);
      }
      near += best <= 1.02 * optimum;
    }
    return near;
  };
  const int with = seeds_near(from_mission), without = seeds_near({});
  EXPECT_GE(with, 9) << "of 10 seeds, starting from mission's fastest";
  EXPECT_LT(without, with);
}

}  // namespace
}  // namespace evo
