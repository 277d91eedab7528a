#include "engine/search/forest.h"

#include <algorithm>
#include <cmath>

namespace evo {
namespace {
constexpr std::size_t kMinLeaf = 2;  // a leaf of one sample would make the spread meaningless
constexpr int kMaxDepth = 24;
}  // namespace

void Forest::fit(const std::vector<float>& rows, std::size_t features, const std::vector<double>& y,
                 std::size_t trees, SearchRng& rng, std::vector<double>* out_of_bag) {
  trees_.clear();
  rows_ = &rows;
  y_ = &y;
  features_ = features;
  const std::size_t n = y.size();
  std::vector<double> oob_sum(out_of_bag ? n : 0, 0.0);
  std::vector<int> oob_count(out_of_bag ? n : 0, 0);
  std::vector<char> drawn(n);
  for (std::size_t t = 0; t < trees && n > 0; ++t) {
    std::vector<std::uint32_t> idx(n);  // a bootstrap sample: the trees disagree where data is thin
    for (auto& i : idx) i = static_cast<std::uint32_t>(rng.index(n));
    Tree tree;
    tree.reserve(2 * n / kMinLeaf + 1);
    if (out_of_bag) {
      std::fill(drawn.begin(), drawn.end(), 0);
      for (auto i : idx) drawn[i] = 1;
    }
    grow(tree, idx, 0, n, 0, rng);
    if (out_of_bag)
      for (std::size_t i = 0; i < n; ++i)
        if (!drawn[i]) oob_sum[i] += leaf(tree, &rows[i * features]).value, ++oob_count[i];
    trees_.push_back(std::move(tree));
  }
  if (out_of_bag) {
    out_of_bag->assign(n, std::nan(""));
    for (std::size_t i = 0; i < n; ++i)
      if (oob_count[i]) (*out_of_bag)[i] = oob_sum[i] / oob_count[i];
  }
  rows_ = nullptr;
  y_ = nullptr;
}

const Forest::Node& Forest::leaf(const Tree& t, const float* row) const {
  std::int32_t n = 0;
  while (t[n].feature >= 0) n = row[t[n].feature] <= t[n].threshold ? t[n].left : t[n].right;
  return t[n];
}

std::int32_t Forest::grow(Tree& t, std::vector<std::uint32_t>& idx, std::size_t lo, std::size_t hi, int depth,
                          SearchRng& rng) {
  const auto& X = *rows_;
  const auto& y = *y_;
  const std::int32_t me = static_cast<std::int32_t>(t.size());
  t.push_back({});
  double sum = 0, sq = 0;
  for (std::size_t i = lo; i < hi; ++i) sum += y[idx[i]], sq += y[idx[i]] * y[idx[i]];
  const double count = static_cast<double>(hi - lo);
  const double sse = sq - sum * sum / count;
  t[me].value = sum / count;
  t[me].variance = std::max(0.0, sse / count);
  if (hi - lo < 2 * kMinLeaf || depth >= kMaxDepth || sse <= 1e-12 * count) return me;

  // Extremely randomised: one random threshold per feature, the best of them by squared error.
  int best_f = -1;
  float best_thr = 0;
  double best_sse = sse;
  for (std::size_t f = 0; f < features_; ++f) {
    float mn = INFINITY, mx = -INFINITY;
    for (std::size_t i = lo; i < hi; ++i) {
      const float v = X[idx[i] * features_ + f];
      mn = std::min(mn, v), mx = std::max(mx, v);
    }
    if (!(mx > mn)) continue;
    const float thr = mn + static_cast<float>(rng.unit()) * (mx - mn);
    double ls = 0, lq = 0, rs = 0, rq = 0;
    std::size_t ln = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      const double v = y[idx[i]];
      if (X[idx[i] * features_ + f] <= thr) ls += v, lq += v * v, ++ln;
      else rs += v, rq += v * v;
    }
    const std::size_t rn = (hi - lo) - ln;
    if (ln < kMinLeaf || rn < kMinLeaf) continue;
    const double s = (lq - ls * ls / ln) + (rq - rs * rs / rn);
    if (s < best_sse) best_sse = s, best_f = static_cast<int>(f), best_thr = thr;
  }
  if (best_f < 0) return me;
  const auto mid = std::partition(idx.begin() + lo, idx.begin() + hi, [&](std::uint32_t i) {
    return X[i * features_ + best_f] <= best_thr;
  });
  const std::size_t m = static_cast<std::size_t>(mid - idx.begin());
  t[me].feature = best_f;
  t[me].threshold = best_thr;
  t[me].gain = sse - best_sse;
  const std::int32_t l = grow(t, idx, lo, m, depth + 1, rng);
  const std::int32_t r = grow(t, idx, m, hi, depth + 1, rng);
  t[me].left = l;
  t[me].right = r;
  return me;
}

std::vector<double> Forest::importance() const {
  std::vector<double> out(features_, 0.0);
  double total = 0;
  for (const Tree& t : trees_)
    for (const Node& n : t)
      if (n.feature >= 0) out[static_cast<std::size_t>(n.feature)] += n.gain, total += n.gain;
  if (total > 0)
    for (double& v : out) v /= total;
  return out;
}

ForestPrediction Forest::predict(const float* row, std::vector<double>* each) const {
  ForestPrediction p;
  if (each) each->resize(trees_.size());
  if (trees_.empty()) return p;
  double sum = 0, sq = 0, within = 0;
  for (std::size_t i = 0; i < trees_.size(); ++i) {
    const Node& l = leaf(trees_[i], row);
    sum += l.value, sq += l.value * l.value, within += l.variance;
    if (each) (*each)[i] = l.value;
  }
  const double k = static_cast<double>(trees_.size());
  p.mean = sum / k;
  p.spread = std::sqrt(std::max(0.0, sq / k - p.mean * p.mean));
  p.within = std::sqrt(within / k);
  return p;
}

}  // namespace evo
