// A replay that tells the run loop to stop once a candidate as fast as the landscape's best was
// measured: no later evaluation can do better, so a run's best after any budget is the same and the
// search tests spend a fraction of the evaluations (SearchQuality, the suite).
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "engine/evaluator.h"

namespace evo::test {

class StopsAtTheBest : public Evaluator {
 public:
  StopsAtTheBest(Evaluator& inner, double best_us) : inner_(inner), best_us_(best_us) {}
  const std::atomic<bool>* flag() const { return &found_; }
  std::string device() const override { return inner_.device(); }
  std::string build_key(const Config& c) const override { return inner_.build_key(c); }
  void submit(const Candidate& c) override { inner_.submit(c); }
  std::vector<Prepared> collect(double t) override { return inner_.collect(t); }
  Evaluation measure(const Prepared& p, std::size_t lane) override {
    Evaluation e = inner_.measure(p, lane);
    if (e.measured() && e.fast.p50_us <= best_us_) found_ = true;
    return e;
  }
  std::size_t lanes() const override { return inner_.lanes(); }
  std::size_t compile_slots() const override { return inner_.compile_slots(); }
  bool measures_instantly() const override { return inner_.measures_instantly(); }
  Timing time_baseline(std::size_t lane = 0) override { return inner_.time_baseline(lane); }
  void prepare_baseline_timing() override { inner_.prepare_baseline_timing(); }

 private:
  Evaluator& inner_;
  double best_us_;
  std::atomic<bool> found_{false};
};

}  // namespace evo::test
