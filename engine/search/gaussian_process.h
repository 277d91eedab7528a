// A Gaussian process regression for the model-led search's first results, in the manner of
// Kernel Tuner's Bayesian optimisation (Willemsen et al. 2021): with a handful of measured
// configurations a forest has too few samples to split, while a Matérn kernel over the knobs'
// places already says "near the fastest is probably fast, far from everything is uncertain".
// Inputs are points in [0, 1]^d; the targets (log times) are standardised inside. The length scale
// and the noise are chosen by the marginal likelihood over a small grid at each fit.
#pragma once
#include <vector>

#include "engine/search/forest.h"  // ForestPrediction: mean and spread

namespace evo {

class GaussianProcess {
 public:
  // x: n points, `dims` wide (row-major); y: one target each. Fewer than two points: predict()
  // returns the mean of y with spread 1 (in y's units).
  void fit(const std::vector<double>& x, std::size_t dims, const std::vector<double>& y);
  ForestPrediction predict(const double* point) const;
  // Each fitted point's mean as predicted from the others alone (leave-one-out, in closed form:
  // y_i - alpha_i / [K^-1]_ii, Rasmussen and Williams 2006, 5.4.2), in y's units; empty before two.
  std::vector<double> leave_one_out() const;
  double length_scale() const { return length_; }

 private:
  double kernel(const double* a, const double* b) const;
  std::size_t dims_ = 0, n_ = 0;
  std::vector<double> x_, alpha_, chol_;  // chol_: lower triangle of K + noise I, n x n
  double mean_ = 0, scale_ = 1, length_ = 1, noise_ = 1e-4;
};

}  // namespace evo
