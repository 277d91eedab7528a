#include "engine/search/additive.h"

#include <cmath>
#include <limits>

#include "engine/search/cholesky.h"
#include "engine/search/strategy.h"

namespace evo {

void AdditiveModel::fit(const std::vector<std::size_t>& values, const std::vector<std::size_t>& places,
                        const std::vector<double>& y) {
  offset_.clear(), mean_.clear(), chol_.clear();
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
  // X^T X and X^T z of the values' indicators: a row has one 1 per knob.
  std::vector<double> xtx(d_ * d_, 0.0), xtz(d_, 0.0);
  double ztz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = (y[i] - intercept_) / scale_;
    ztz += z * z;
    for (std::size_t a = 0; a < knobs; ++a) {
      const std::size_t p = offset_[a] + places[i * knobs + a];
      xtz[p] += z;
      for (std::size_t b = 0; b < knobs; ++b) xtx[p * d_ + offset_[b] + places[i * knobs + b]] += 1;
    }
  }
  // z ~ N(0, tau2 X X^T + noise I). The knobs' effects together carry about prior_share of z's
  // unit variance; the noise is what the sum leaves (a kernel's interactions, not the timer's).
  // Marginal likelihood by the d x d form: log|C| = log|A| + d log tau2 + n log noise and
  // z^T C^-1 z = (z^T z - b^T A^-1 b / noise) / noise, with A = X^T X / noise + I / tau2, b = X^T z.
  double best = -std::numeric_limits<double>::infinity();
  for (double prior_share : {0.25, 0.5, 1.0, 2.0})
    for (double noise : {0.03, 0.1, 0.3, 0.6}) {
      const double tau2 = prior_share / double(knobs);
      std::vector<double> a(d_ * d_);
      for (std::size_t i = 0; i < d_ * d_; ++i) a[i] = xtx[i] / noise;
      for (std::size_t i = 0; i < d_; ++i) a[i * d_ + i] += 1 / tau2;
      if (!cholesky(a, d_)) continue;
      std::vector<double> m = xtz;
      forward(a, d_, m);
      double quad = 0, logdet = 0;
      for (std::size_t i = 0; i < d_; ++i) quad += m[i] * m[i], logdet += 2 * std::log(a[i * d_ + i]);
      const double fit = (ztz - quad / noise) / noise;
      const double ll = -0.5 * (fit + logdet + double(d_) * std::log(tau2) + double(n) * std::log(noise));
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
    for (std::size_t k = 0; k < knobs; ++k) {
      const std::size_t p = offset_[k] + places_[i * knobs + k];
      v[p] = 1, fitted += mean_[p];
    }
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
  for (std::size_t k = 0; k < offset_.size(); ++k) z += effects[offset_[k] + static_cast<std::size_t>(place[k])];
  return intercept_ + scale_ * z;
}

}  // namespace evo
