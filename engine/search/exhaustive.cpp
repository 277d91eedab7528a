// exhaustive: every valid configuration once. In the space's lexicographic order (the first knob
// varies slowest), so that a budget smaller than the space is a prefix of that order; or, where the
// run's budget covers the whole space and compiles and measurements run side by side, in the order
// that keeps both busy.
//
// Why an order: a sweep of Kernel Tuner's convolution (810 configurations, compiles of 1 to 50 s, a
// third failing at the static gate) took 1.15-1.23x the bound max(compile seconds / workers, GPU
// seconds) in lexicographic order (docs/results/pipeline.md, section 8): the GPU waited while runs
// of long compiles held every worker, and the last long compiles ran alone at the end. Two stages in
// a row are the two-machine flow shop, whose best order Johnson's rule gives (Johnson 1954): first
// what reaches the GPU, shortest compile first; last what fails before it, longest compile first,
// so that the last workers finish together. Compile seconds and failures are not known before they
// are seen: after the first `learn` results (in lexicographic order) two forests over the knobs'
// places learn them, as the model-led search learns times and failures, and the rest of the sweep
// is reordered each time the results have grown by an eighth. Results come back shortest compile
// first, so a candidate still compiling counts too, at the seconds it has compiled so far (a lower
// bound): without it the long compiles were unseen when the order was chosen.
#include <algorithm>
#include <cmath>

#include "engine/error.h"
#include "engine/search/forest.h"
#include "engine/search/strategy.h"

namespace evo {
namespace {

const std::vector<StrategyOption> kOptions = {
    {"order", "lexicographic (the first knob slowest), schedule (the rest of a sweep ordered to keep compile workers and GPUs busy, from the compile seconds and failures seen), or auto: schedule where the run's budget covers the whole space and compiles and measurements run side by side", "auto"},
    {"learn", "schedule: results back, in lexicographic order, before the first reordering", "32"},
};

// Beyond this many configurations a sweep stays lexicographic: each reordering predicts every
// configuration left.
constexpr std::size_t kMostToSchedule = 200000;
constexpr std::size_t kTrees = 32;

class ExhaustiveSearch : public Strategy {
 public:
  explicit ExhaustiveSearch(const StrategyContext& ctx)
      : space_(ctx.space), budget_(ctx.budget), pipelined_(ctx.pipelined), rng_(ctx.seed) {
    OptionValues o("exhaustive", kOptions, ctx.options);
    order_ = o.text("order");
    if (order_ != "auto" && order_ != "lexicographic" && order_ != "schedule")
      throw UserError("strategy exhaustive: option order='" + order_ + "': choose auto, lexicographic or schedule");
    learn_ = static_cast<std::size_t>(o.integer("learn", 2, 1000000));
  }

  std::vector<Candidate> propose(std::size_t n) override {
    if (!all_) {
      all_ = space_.enumerate_valid();
      schedule_ = all_->size() <= kMostToSchedule &&
                  (order_ == "schedule" ||
                   (order_ == "auto" && pipelined_ && budget_ >= static_cast<std::int64_t>(all_->size())));
    }
    if (schedule_ && back_.size() >= learn_ && back_.size() >= fitted_at_ + fitted_at_ / 8 + 1) reorder();
    std::vector<Candidate> out;
    for (; next_ < all_->size() && out.size() < n; ++next_) {
      const Config& c = (*all_)[next_];
      if (seen_.insert(config_hash(c)).second) out.push_back({c, Origin{"exhaustive", "", {}}});
    }
    return out;
  }

  void observe(const Evaluation& e) override {
    seen_.insert(config_hash(e.config));
    // What its compile cost this run: a build from the cache cost nothing, and says nothing of
    // what an uncached one costs.
    if (!schedule_ || e.build.from_cache) return;
    back_.push_back({places(e.config), std::log(std::max(e.seconds_compile, 1e-3)),
                     e.status != Status::CompileError && e.status != Status::StaticRejected});
  }

  void observe_compiling(const std::vector<std::pair<Config, double>>& compiling) override { compiling_ = compiling; }
  bool reads_compiling() const override { return schedule_; }

  bool reads_metrics() const override { return false; }
  // A scheduled sweep's order pays only where compile workers never wait for the GPU to take what
  // is ready: counted in the window, a run of quick compiles filled it with candidates waiting for
  // the GPU and left the workers idle (docs/results/pipeline.md, section 8). Only once a compile
  // has been paid for: from a warm compile cache (a cached build costs nothing) the sweep runs
  // exactly as a lexicographic one, its window too.
  bool ready_counts_ahead() const override { return back_.empty(); }

 private:
  struct Seen {
    std::vector<float> row;
    double log_compile_s = 0;
    bool reaches_gpu = false;
  };

  std::vector<float> places(const Config& c) const {
    std::vector<float> row;
    for (const auto& k : space_.knobs()) {
      const auto it = c.find(k.name);
      const auto at = it == c.end() ? k.values.begin() : std::find(k.values.begin(), k.values.end(), it->second);
      row.push_back(static_cast<float>(at - k.values.begin()));
    }
    return row;
  }

  // Johnson's rule on what the forests predict for the configurations not yet proposed: those
  // likely to reach the GPU by their compile seconds ascending, then the others descending.
  void reorder() {
    fitted_at_ = back_.size();
    const std::size_t features = space_.knobs().size();
    std::vector<float> all_rows, cost_rows;
    std::vector<double> cost, reaches;
    for (const auto& s : back_) {
      all_rows.insert(all_rows.end(), s.row.begin(), s.row.end());
      reaches.push_back(s.reaches_gpu ? 1.0 : 0.0);
    }
    cost_rows = all_rows;
    for (const auto& s : back_) cost.push_back(s.log_compile_s);
    // A candidate compiling for longer than the median result took is known to be long: at least
    // that long. One just started says nothing yet.
    std::vector<double> sorted = cost;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    for (const auto& [config, so_far] : compiling_) {
      if (std::log(std::max(so_far, 1e-3)) <= median) continue;
      const std::vector<float> row = places(config);
      cost_rows.insert(cost_rows.end(), row.begin(), row.end());
      cost.push_back(std::log(std::max(so_far, 1e-3)));
    }
    Forest cost_model, gpu_model;
    cost_model.fit(cost_rows, features, cost, kTrees, rng_);
    gpu_model.fit(all_rows, features, reaches, kTrees, rng_);
    struct Planned {
      bool gpu;
      double log_compile_s;
      Config config;
    };
    std::vector<Planned> rest;
    for (std::size_t i = next_; i < all_->size(); ++i) {
      Config& c = (*all_)[i];
      if (seen_.count(config_hash(c))) continue;
      const std::vector<float> row = places(c);
      rest.push_back({gpu_model.predict(row.data()).mean >= 0.5, cost_model.predict(row.data()).mean, std::move(c)});
    }
    std::stable_sort(rest.begin(), rest.end(), [](const Planned& a, const Planned& b) {
      if (a.gpu != b.gpu) return a.gpu;
      return a.gpu ? a.log_compile_s < b.log_compile_s : a.log_compile_s > b.log_compile_s;
    });
    all_->resize(next_);
    for (auto& p : rest) all_->push_back(std::move(p.config));
  }

  const KnobSpace& space_;
  std::int64_t budget_ = 0;
  bool pipelined_ = false;
  SearchRng rng_;
  std::string order_ = "auto";
  std::size_t learn_ = 32;
  std::optional<std::vector<Config>> all_;
  bool schedule_ = false;
  std::size_t next_ = 0, fitted_at_ = 0;
  std::vector<Seen> back_;                                 // results back, with their compile seconds
  std::vector<std::pair<Config, double>> compiling_;     // still compiling, seconds so far
  std::unordered_set<std::string> seen_;
};

}  // namespace

StrategyInfo exhaustive_strategy_info() {
  return {"exhaustive", "every valid configuration, in order (a whole sweep ordered to keep compile workers and GPUs busy)",
          kOptions, [](const StrategyContext& ctx) { return std::make_unique<ExhaustiveSearch>(ctx); }};
}

}  // namespace evo
