// exhaustive: every valid configuration once, in the space's lexicographic order (the first
// knob varies slowest). With a budget smaller than the space it is a prefix of that order.
#include "engine/search/strategy.h"

namespace evo {
namespace {

const std::vector<StrategyOption> kOptions = {};

class ExhaustiveSearch : public Strategy {
 public:
  explicit ExhaustiveSearch(const StrategyContext& ctx) : space_(ctx.space) {}

  std::vector<Candidate> propose(std::size_t n) override {
    if (!all_) all_ = space_.enumerate_valid();
    std::vector<Candidate> out;
    for (; next_ < all_->size() && out.size() < n; ++next_) {
      const Config& c = (*all_)[next_];
      if (seen_.insert(config_hash(c)).second) out.push_back({c, Origin{"exhaustive", "", {}}});
    }
    return out;
  }

  void observe(const Evaluation& e) override { seen_.insert(config_hash(e.config)); }
  bool reads_metrics() const override { return false; }

 private:
  const KnobSpace& space_;
  std::optional<std::vector<Config>> all_;
  std::size_t next_ = 0;
  std::unordered_set<std::string> seen_;
};

}  // namespace

StrategyInfo exhaustive_strategy_info() {
  return {"exhaustive", "every valid configuration, in order", kOptions,
          [](const StrategyContext& ctx) { return std::make_unique<ExhaustiveSearch>(ctx); }};
}

}  // namespace evo
