#include "engine/search/additive.h"

#include <cmath>
#include <limits>

#include "engine/search/cholesky.h"
#include "engine/search/strategy.h"

namespace evo {

template <class Place, class Visit>
void AdditiveModel::each_effect(const Place* place, Visit&& visit) const {
  for (std::size_t k = 0; k < offset_.size(); ++k) visit(offset_[k] + static_cast<std::size_t>(place[k]));
  for (std::size_t p = 0; p < pairs_.size(); ++p)
    visit(pair_offset_[p] + static_cast<std::size_t>(place[pairs_[p].first]) * values_[pairs_[p].second] +
          static_cast<std::size_t>(place[pairs_[p].second]));
}

void AdditiveModel::fit(const std::vector<std::size_t>& values, const std::vector<std::size_t>& places,
                        const std::vector<double>& y, const std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
  offset_.clear(), pair_offset_.clear(), mean_.clear(), chol_.clear();
  values_ = values, pairs_ = pairs;
  const std::size_t knobs = values.size(), n = y.size();
  intercept_ = 0;
  for (double v : y) intercept_ += v;
  intercept_ = n ? intercept_ / double(n) : 0;
  double var = 0;
  for (double v : y) var += (v - intercept_) * (v - intercept_);
  scale_ = n > 1 ? std::sqrt(var / double(n - 1)) : 1;
  if (!(scale_ > 1e-12)) scale_ = 1;
  if (n < 2 || knobs == 0) return;
  d_ = 0;
  for (std::size_t v : values) offset_.push_back(d_), d_ += v;
  const std::size_t main = d_;
  for (const auto& [a, b] : pairs_) pair_offset_.push_back(d_), d_ += values[a] * values[b];
  // X^T X and X^T z of the effects' indicators: a row has one 1 per knob and one per pair.
  std::vector<double> xtx(d_ * d_, 0.0), xtz(d_, 0.0);
  std::vector<std::size_t> at;
  double ztz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = (y[i] - intercept_) / scale_;
    ztz += z * z;
    at.clear();
    each_effect(&places[i * knobs], [&](std::size_t p) { at.push_back(p); });
    for (std::size_t p : at) {
      xtz[p] += z;
      for (std::size_t q : at) xtx[p * d_ + q] += 1;
    }
  }
  // z ~ N(0, X T X^T + noise I), T the prior's variances: the knobs' effects together carry about
  // prior_share of z's unit variance, and a pair's each pair_ratio of a knob's; the noise is what
  // the model leaves (a kernel's other interactions, not the timer's). Marginal likelihood by the
  // d x d form: log|C| = log|A| + sum log T + n log noise and
  // z^T C^-1 z = (z^T z - b^T A^-1 b / noise) / noise, with A = X^T X / noise + T^-1, b = X^T z.
  double best = -std::numeric_limits<double>::infinity();
  const std::vector<double> ratios = pairs_.empty() ? std::vector<double>{1.0} : std::vector<double>{0.25, 0.5, 1.0};
  for (double prior_share : {0.25, 0.5, 1.0, 2.0})
    for (double noise : {0.03, 0.1, 0.3, 0.6})
      for (double pair_ratio : ratios) {
        const double tau2 = prior_share / double(knobs), pair_tau2 = tau2 * pair_ratio;
        std::vector<double> a(d_ * d_);
        for (std::size_t i = 0; i < d_ * d_; ++i) a[i] = xtx[i] / noise;
        for (std::size_t i = 0; i < d_; ++i) a[i * d_ + i] += 1 / (i < main ? tau2 : pair_tau2);
        if (!cholesky(a, d_)) continue;
        std::vector<double> m = xtz;
        forward(a, d_, m);
        double quad = 0, logdet = 0;
        for (std::size_t i = 0; i < d_; ++i) quad += m[i] * m[i], logdet += 2 * std::log(a[i * d_ + i]);
        const double fit = (ztz - quad / noise) / noise;
        const double prior_logdet = double(main) * std::log(tau2) + double(d_ - main) * std::log(pair_tau2);
        const double ll = -0.5 * (fit + logdet + prior_logdet + double(n) * std::log(noise));
        if (ll > best) {
          best = ll;
          backward(a, d_, m);  // A m = b: the posterior mean times noise
          for (double& v : m) v /= noise;
          mean_ = std::move(m), chol_ = std::move(a), noise_ = noise;
        }
      }
  if (mean_.empty()) offset_.clear();
  places_ = places, y_ = y;
}

std::vector<double> AdditiveModel::leave_one_out() const {
  if (mean_.empty()) return {};
  const std::size_t knobs = offset_.size(), n = y_.size();
  std::vector<double> out(n), v(d_);
  for (std::size_t i = 0; i < n; ++i) {
    // leverage h_ii = x_i^T A^-1 x_i / noise, with L v = x_i: |v|^2 / noise.
    std::fill(v.begin(), v.end(), 0.0);
    double fitted = 0;
    each_effect(&places_[i * knobs], [&](std::size_t p) { v[p] = 1, fitted += mean_[p]; });
    forward(chol_, d_, v);
    double h = 0;
    for (double e : v) h += e * e;
    h /= noise_;
    const double z = (y_[i] - intercept_) / scale_, r = z - fitted;
    out[i] = intercept_ + scale_ * (z - r / std::max(1 - h, 1e-6));
  }
  return out;
}

std::vector<double> AdditiveModel::mean() const { return mean_; }

std::vector<double> AdditiveModel::sample(SearchRng& rng) const {
  if (mean_.empty()) return {};
  // effects = mean + L^-T u, u standard normal: covariance (L L^T)^-1 = A^-1, the posterior's.
  std::vector<double> u(d_);
  for (std::size_t i = 0; i < d_; ++i) {
    const double r = std::sqrt(-2 * std::log(1 - rng.unit())), t = 2 * M_PI * rng.unit();
    u[i] = r * std::cos(t);
  }
  backward(chol_, d_, u);
  for (std::size_t i = 0; i < d_; ++i) u[i] += mean_[i];
  return u;
}

double AdditiveModel::predict(const std::vector<double>& effects, const float* place) const {
  if (effects.empty()) return intercept_;
  double z = 0;
  each_effect(place, [&](std::size_t p) { z += effects[p]; });
  return intercept_ + scale_ * z;
}

}  // namespace evo
