// A Bayesian additive model of log time: one effect per value of each knob, summed (a linear
// regression on the values' indicators with a Gaussian prior, as BOCS's first order and the
// main-effects designs of a factorial experiment). Where a tree needs a sample on each side of a
// split for every knob it combines, the sum carries what one sample says about a value to every
// configuration with it: a tile that was fast beside a bad block width is predicted fast beside a
// good one. The prior's weight and the noise are chosen by the marginal likelihood over a small
// grid at each fit; sample() draws effects from the posterior, for Thompson sampling.
//
// Pairs (optional): knob pairs whose every combination of values has an effect of its own besides
// the two knobs' (BOCS's second order, on chosen pairs only). A combination no row holds keeps its
// prior's spread, so a draw sometimes believes in it: where the times hang on two knobs together
// (a block's rows = block_size_y x tile_size_y), the sum alone writes off a cell it never saw.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace evo {

class SearchRng;

class AdditiveModel {
 public:
  // values: how many values each knob has; places: n rows of one index per knob (row-major);
  // y: one target each. Fewer than two rows: every prediction is y's mean.
  // pairs: knob indices (a, b), a != b, whose combinations get effects of their own.
  void fit(const std::vector<std::size_t>& values, const std::vector<std::size_t>& places, const std::vector<double>& y,
           const std::vector<std::pair<std::size_t, std::size_t>>& pairs = {});
  // Effects drawn from the posterior (one per value of each knob, the knobs in order, then one
  // per combination of each pair's values).
  std::vector<double> sample(SearchRng& rng) const;
  // The posterior mean's effects, as sample() lays them out.
  std::vector<double> mean() const;
  // A configuration's prediction under `effects` (from sample() or mean()); `place` as a row of fit().
  double predict(const std::vector<double>& effects, const float* place) const;
  // Each fitted row's prediction from the others alone (leave-one-out in closed form: the
  // residual over 1 - its leverage), in y's units; empty when fit() kept nothing.
  std::vector<double> leave_one_out() const;
  bool empty() const { return offset_.empty(); }

 private:
  // visit(index) for each effect a row holds: one per knob, then one per pair.
  template <class Place, class Visit>
  void each_effect(const Place* place, Visit&& visit) const;

  std::vector<std::size_t> offset_;  // each knob's first effect
  std::vector<std::size_t> values_;
  std::vector<std::pair<std::size_t, std::size_t>> pairs_;
  std::vector<std::size_t> pair_offset_;  // each pair's first effect (a's place x b's values + b's place)
  std::vector<double> mean_, chol_;  // the posterior's mean and its precision's Cholesky factor (d x d)
  std::vector<std::size_t> places_;  // fit()'s rows
  std::vector<double> y_;
  double intercept_ = 0, scale_ = 1, noise_ = 1;
  std::size_t d_ = 0;
};

}  // namespace evo
