// random: uniform among the valid configurations not yet proposed or observed.
#include "engine/search/strategy.h"

namespace evo {
namespace {

const std::vector<StrategyOption> kOptions = {};  // none: the seed is the run's --seed

class RandomSearch : public Strategy {
 public:
  explicit RandomSearch(const StrategyContext& ctx) : space_(ctx.space), rng_(ctx.seed) {}

  std::vector<Candidate> propose(std::size_t n) override {
    std::vector<Candidate> out;
    while (out.size() < n) {
      auto c = sample_unseen(space_, rng_, seen_);
      if (!c) break;  // every valid config seen
      seen_.insert(config_hash(*c));
      out.push_back({*c, Origin{"random", "", {}}});
    }
    return out;
  }

  void observe(const Evaluation& e) override { seen_.insert(config_hash(e.config)); }
  bool reads_metrics() const override { return false; }

 private:
  const KnobSpace& space_;
  SearchRng rng_;
  std::unordered_set<std::string> seen_;
};

}  // namespace

StrategyInfo random_strategy_info() {
  return {"random", "uniform among valid configurations, no repeats", kOptions,
          [](const StrategyContext& ctx) { return std::make_unique<RandomSearch>(ctx); }};
}

}  // namespace evo
