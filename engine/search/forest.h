// A small random forest (bagged extremely randomised trees, Geurts et al. 2006) for the model-led
// search: regression of log time over the knobs, and the chance that a configuration passes
// (a 0/1 target: its leaves hold the share that passed). The spread of the trees' predictions is
// the model's uncertainty, what expected improvement needs. Plain vectors, no dependencies: a
// few hundred samples and a few dozen features are all a tuning run ever has.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/search/strategy.h"  // defines: SearchRng

namespace evo {

struct ForestPrediction {
  double mean = 0, spread = 0;  // over the trees
  double within = 0;  // the leaves' own spread: the root of the mean of their samples' variances
};

class Forest {
 public:
  // rows: samples x features (row-major, `features` wide), y: one target per sample. With
  // `out_of_bag`, each sample's prediction by the trees whose bootstrap left it out (NaN where every
  // tree drew it): an honest estimate of how well the forest predicts what it has not seen.
  void fit(const std::vector<float>& rows, std::size_t features, const std::vector<double>& y,
           std::size_t trees, SearchRng& rng, std::vector<double>* out_of_bag = nullptr);
  bool empty() const { return trees_.empty(); }
  // With `each`, every tree's own prediction too, in tree order (resized to trees()): one sample each
  // of the function the forest believes in, for Thompson sampling.
  ForestPrediction predict(const float* row, std::vector<double>* each = nullptr) const;
  std::size_t trees() const { return trees_.size(); }
  // Each feature's share of the squared error the splits on it removed, over every tree (the mean
  // decrease in impurity; sums to 1, all 0 where no tree split): which features the times hang on.
  std::vector<double> importance() const;

 private:
  struct Node {
    std::int32_t feature = -1;  // -1: a leaf holding `value`
    float threshold = 0;
    std::int32_t left = 0, right = 0;
    double value = 0;
    double variance = 0;  // a leaf's: of the samples it holds
    double gain = 0;      // a split's: the squared error it removed
  };
  using Tree = std::vector<Node>;
  std::int32_t grow(Tree& t, std::vector<std::uint32_t>& idx, std::size_t lo, std::size_t hi, int depth,
                    SearchRng& rng);
  const Node& leaf(const Tree& t, const float* row) const;  // the leaf `row` falls in
  const std::vector<float>* rows_ = nullptr;
  const std::vector<double>* y_ = nullptr;
  std::size_t features_ = 0;
  std::vector<Tree> trees_;
};

}  // namespace evo
