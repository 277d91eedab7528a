// Search strategies: what to evaluate next. A strategy proposes candidates and observes their
// evaluations (failures and read-back ones too); the run loop (engine/run.h) owns the budget,
// the evaluator, the store and resume, so a strategy never touches SQLite or a GPU. Each
// strategy lives in its own file with its options table at the top (Kernel Tuner style) and is
// listed in the registry (strategy.cpp); docs/search.md documents every one.
//
//   random      uniform among valid configs, no repeats            engine/search/random.cpp
//   exhaustive  every valid config, in the space's order            engine/search/exhaustive.cpp
//   evo         random forests of time and of passing, expected improvement (the default)
//                                                                    engine/search/model.cpp
//   elites      elites + mutation/crossover/insights (EvoEngineer)  engine/search/evolution.cpp
//   external    a user's command proposes (JSON on stdin/stdout)   engine/search/external.cpp
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/evaluation.h"  // defines: Evaluation, Origin, Status
#include "engine/evaluator.h"   // defines: Candidate
#include "engine/profile.h"     // defines: Profile
#include "engine/space.h"       // defines: Config, KnobSpace, config_hash

namespace evo {

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Up to n new candidates, each valid and never proposed or observed before. Fewer (or none)
  // when the strategy has nothing new left: the run loop then finishes early.
  virtual std::vector<Candidate> propose(std::size_t n) = 0;
  // Every evaluation the run records, in order: new ones, read-back ones, failures.
  virtual void observe(const Evaluation& e) = 0;
  // The candidates still compiling, each with the seconds it has compiled so far: a lower bound on
  // its compile seconds, which its result will say only once it is back (the longest come back
  // last). Given before proposals are asked for; a strategy that orders by compile cost reads it.
  virtual void observe_compiling(const std::vector<std::pair<Config, double>>& compiling) {}
  // Whether observe_compiling is read: the loop asks the evaluator only then (it runs on every
  // top-up, the GPU runs' hot path).
  virtual bool reads_compiling() const { return false; }
  // Whether what it proposes can depend on observed hardware metrics (the insight rules, an
  // external proposer). false: the run profiles only its best, at its end (Evaluator::set_metrics_during_run).
  virtual bool reads_metrics() const { return true; }
  // Whether a candidate compiled and waiting for a GPU still counts against the run's `ahead`
  // (engine/run.cpp). Yes for a strategy whose next proposal is better for waiting on results; no
  // for exhaustive's scheduled sweep, whose order pays only where compile workers never wait for the
  // GPU to take what is ready.
  virtual bool ready_counts_ahead() const { return true; }
};

struct StrategyContext {
  const Profile& profile;
  const KnobSpace& space;
  std::uint64_t seed = 0;
  std::map<std::string, std::string> options;  // as the user gave them (checked against the table)
  // For strategies that describe the task to someone else (external):
  std::string device;         // the evaluator's device
  std::string template_text;  // the template source; "" = read profile.kernel.source if it exists
  // Configurations that were fast on related tasks, best first, each valid here and not the
  // baseline (engine/search/transfer.h): evo proposes the first of them after the baseline; random,
  // exhaustive, elites and external ignore them, so they stay the baselines they are.
  std::vector<Config> transfer;
  // The run's budget of new evaluations (0: not known), and whether it compiles and measures side
  // by side (a GPU, or a replay that simulates one): exhaustive then orders a whole sweep so that
  // both stay busy (engine/search/exhaustive.cpp).
  std::int64_t budget = 0;
  bool pipelined = false;
};

// One row of a strategy's options table.
struct StrategyOption {
  std::string name, description, default_value;
};

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyContext&)>;

struct StrategyInfo {
  std::string name, description;
  std::vector<StrategyOption> options;
  StrategyFactory make;
};

// Every strategy, in the order `evo run --help` lists them ("evo" first: the default).
const std::vector<StrategyInfo>& registered_strategies();
// UserError for an unknown strategy (listing the valid ones) or an unknown or malformed option
// (listing the strategy's options).
const StrategyInfo& find_strategy(const std::string& name);
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyContext& ctx);

// A strategy's options after checking: the user's values over the table's defaults.
// Typed getters throw UserError("strategy evo: option elites='x': not an integer >= 1").
class OptionValues {
 public:
  OptionValues(const std::string& strategy, const std::vector<StrategyOption>& table,
               const std::map<std::string, std::string>& given);
  const std::string& text(const std::string& name) const;
  std::int64_t integer(const std::string& name, std::int64_t min, std::int64_t max) const;
  double number(const std::string& name, double min, double max) const;
  // Whether the user gave it (an option that qualifies another is refused only when given).
  bool given(const std::string& name) const { return given_.count(name) > 0; }

 private:
  std::string strategy_;
  std::map<std::string, std::string> values_;
  std::set<std::string> given_;  // the names the user gave
};

// Deterministic randomness for strategies: mt19937_64 is specified exactly by the standard, but
// the std distributions are not, so a seed gives the same search on every standard library.
class SearchRng {
 public:
  explicit SearchRng(std::uint64_t seed) : gen_(seed) {}
  std::uint64_t next() { return gen_(); }
  std::size_t index(std::size_t n);   // uniform in [0, n), n > 0
  double unit();                      // uniform in [0, 1)
  bool chance(double p) { return unit() < p; }
  template <class T>
  void shuffle(std::vector<T>& v) {   // Fisher-Yates
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[index(i)]);
  }

 private:
  std::mt19937_64 gen_;
};

// A valid config not yet in `seen`, drawn uniformly (rejection sampling, then the enumerated
// valid set when rejections pile up); nullopt when every valid config has been seen.
std::optional<Config> sample_unseen(const KnobSpace& space, SearchRng& rng,
                                    const std::unordered_set<std::string>& seen_hashes);

// Each strategy's entry for the registry (defined next to the strategy).
StrategyInfo random_strategy_info();
StrategyInfo exhaustive_strategy_info();
StrategyInfo evolution_strategy_info();
StrategyInfo model_strategy_info();
StrategyInfo external_strategy_info();

}  // namespace evo
