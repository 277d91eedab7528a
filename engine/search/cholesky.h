// The dense Cholesky factorisation and triangular solves the search's Bayesian models share
// (row-major n x n, lower triangle; small n: a Gaussian process over the first results, an
// additive model's effects).
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

namespace evo {

// In-place Cholesky of a symmetric n x n matrix (lower triangle); false when not positive definite.
inline bool cholesky(std::vector<double>& a, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    const double l = std::sqrt(d);
    a[j * n + j] = l;
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (std::size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / l;
    }
  }
  return true;
}

// Solves L v = b in place (L lower triangular, row-major n x n).
inline void forward(const std::vector<double>& l, std::size_t n, std::vector<double>& b) {
  for (std::size_t i = 0; i < n; ++i) {
    double s = b[i];
    for (std::size_t k = 0; k < i; ++k) s -= l[i * n + k] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// Solves L^T v = b in place.
inline void backward(const std::vector<double>& l, std::size_t n, std::vector<double>& b) {
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

}  // namespace evo
