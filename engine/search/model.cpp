// evo (the default strategy): a model-led search for rugged spaces full of invalid
// configurations, in the manner of Bayesian optimisation for GPU kernels (Willemsen et al. 2021)
// with a random forest as the surrogate (as SMAC and BaCO do) and a second forest that learns
// which configurations fail (BaCO's feasibility model):
//   1. after the baseline, up to `transfer` configurations that were fast on a related task
//      (another problem or device of the profile, engine/search/transfer.h), then draws that each
//      differ in as many knobs as they can from every configuration proposed so far (the best of 32
//      uniform draws by that count), `initial` proposals in all: the first model sees more of the
//      knobs at more than one value than after uniform draws, which often repeat a switch's;
//   2. then, each time enough new results have come back, both forests are fitted again: a
//      regression of log median time over the measured configurations, and the chance to pass
//      (compile, static gate, GREEN, FAST) over every evaluated one; while few configurations have
//      been measured in a space where some fail, a Gaussian process predicts the times instead
//      (a forest of a handful of samples cannot split, a Matern kernel already interpolates); where
//      none has failed, the forest's predictions and the process's are mixed until 32 are measured,
//      at the weight whose mixture of the two's held-out predictions ranks the measured ones best,
//      the process's inputs stretched by the forest's importance of each (the forest finds which
//      knobs matter, the process interpolates between the configurations along them);
//   3. every unseen valid configuration (or, in a space too large to score whole, a pool of
//      uniform draws and of moves of the best configurations by 1, 2, 3 ... steps along one or two
//      value lists) is scored by expected improvement over the best time, times the chance to
//      pass, and the best scored are proposed in order until the next fit; the time forest learns
//      each time capped at `cap_ratio` times the best (a configuration hundreds of times slower
//      would otherwise widen the trees' spread around it, and expected improvement would go
//      looking there);
//   4. a share `explore` of proposals is a uniform draw, so a region the model has written off
//      is still seen now and then;
//   5. after `stall` results without a new best (at least `stall_gain`, half a percent, faster), a
//      quarter of the proposals move one knob of the best to the value measured least often so far
//      (ties to the least proposed): a model that has climbed into a basin extrapolates the trend it
//      saw to values it has barely seen, and these moves show it them; a value tried only where it
//      failed has not been seen for speed at all. Where a switch's other value breaks a constraint on
//      its own (a code path that needs other knobs set with it), the jump takes the valid configuration
//      with that value nearest the best instead of skipping it, until `repair_tries` such jumps in a
//      row have brought no new best: then the run's switches gate slow paths, not the fast one.
// Every evaluation counts, failures included: they teach the feasibility model, so neighbours of
// a compile error or a wrong result stop being proposed once the pattern is clear. Proposals do
// not wait for results (steady state): what is pending is never proposed twice, and the model is
// refitted as results arrive. The features are each knob's position in its value list and the
// launch geometry of the objective problem (log2 threads per block, blocks, shared bytes), which
// carry what many knobs do together, and for each knob the factors of two of its value and its
// bits set (a power of two has one), which is what a tree reduction or an alignment cares about.
// Block and grid dimensions that combine knobs are features too, each and in pairs (log2 sum and
// difference): a kernel's correctness or speed often hangs on a relation among three or more
// knobs, such as a block as wide as the rows another dimension covers, which one split on such a
// feature finds and splits on the knobs one at a time learn only cell by cell.
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "engine/error.h"
#include "engine/expr.h"
#include "engine/search/additive.h"
#include "engine/search/forest.h"
#include "engine/search/gaussian_process.h"
#include "engine/search/strategy.h"

namespace evo {
namespace {

const std::vector<StrategyOption> kOptions = {
    {"initial", "draws after the baseline before the model leads (0: 3% of the valid space, 5 to 20, the default until 2026-11-27)", "5"},
    {"transfer", "configurations fast on a related task (another problem or device of this profile in the database, or --transfer-from) proposed after the baseline (the nearest task's fastest, the next task's fastest, ...), in place of as many initial draws", "2"},
    {"initial_design", "how the initial draws not near the best are made: uniform, spread (each the farthest, in the knobs' orders, of design_draws uniform draws from every configuration proposed so far), distinct (of design_draws uniform draws, the one that differs in the most knobs from the configuration proposed so far nearest it in that count: no pull toward either end of a list), or strata (Latin-hypercube-like: of design_draws uniform draws, the one that puts the most knobs in a part of their value list no configuration proposed so far has); distinct since the twenty-ninth session, uniform before: docs/results/search-small-budgets.md", "distinct"},
    {"design_draws", "initial_design other than uniform: the uniform draws each initial draw is the best of (1: uniform)", "32"},
    {"near_steps", "initial_near: the most places a moved knob goes along its value list (0: to any of its values)", "2"},
    {"initial_near", "share of the initial draws that move the best so far (the baseline at first) by one or two knobs; auto: the share of the draws so far that failed", "0"},
    {"trees", "trees in each forest", "64"},
    {"gp", "when a Gaussian process, not the forest, predicts times while fewer than gp_until configurations are measured: failing (once a result has failed), always, never, or auto (where a result has failed, as failing; where none has, from 5 measured until choose_until, whichever of the two ranks the measured configurations better when each predicts them without themselves: the process's leave-one-out means against the forest's out-of-bag ones; measured, not the default: docs/results/search-small-budgets.md, twenty-seventh session)", "failing"},
    {"choose_until", "gp=auto, where nothing has failed: measured configurations until which the two models are compared", "32"},
    {"repair_tries", "jump_repair: how many repaired jumps in a row may come back without a new best (stall_gain faster) before no more are repaired in the run: the switches here gate slow paths (4 since the twenty-seventh session; 1000000: every one, as before)", "4"},
    {"gp_until", "measured configurations from which the forest predicts times", "16"},
    {"blend", "where nothing has failed and fewer than blend_until configurations are measured, the weight of the Gaussian process in a mixture of its predictions with the forest's (0: the forest alone), or auto (from 5 measured, at each fit the weight of 0, 1/4, 1/2, 3/4, 1 whose mixture of the two's held-out predictions ranks the measured configurations best; since the twenty-eighth session: docs/results/search-small-budgets.md)", "auto"},
    {"blend_until", "blend: measured configurations until which the two are mixed", "32"},
    {"gp_ard", "blend: how far each of the process's inputs is stretched by its share of the time forest's importance (a length scale per input read off the forest's splits; 0: not at all, 1: wholly, an input no split used is left out; 0.7 since the twenty-eighth session)", "0.7"},
    {"explore", "share of proposals drawn uniformly at random once the model leads", "0.05"},
    {"score_all", "score every unseen valid configuration when the space has at most this many", "50000"},
    {"pool", "configurations scored per fit when the space is larger than score_all", "4000"},
    {"acquisition", "ei (expected improvement), lcb (lower confidence bound: mean - kappa * spread), or mix (the two in turn)", "mix"},
    {"kappa", "lcb: weight of the spread (0: the predicted time alone, times the chance to pass)", "0"},
    {"lcb_share", "mix: share of model proposals taken by lcb", "0.25"},
    {"near_share", "share of model proposals taken by lcb among configurations at most near_knobs knobs from the best (a trust region: the best's untried neighbours by predicted time, which polish a flat optimum a global ranking leaves; 0.15 chosen by leave-one-kernel-out cross-validation, not the default: it costs kt_stencil a seed at 10 % of its space, below SearchQuality's 95 %; docs/results/search-small-budgets.md, twenty-second session)", "0"},
    {"near_knobs", "near_share: how many knobs from the best its configurations may be", "1"},
    {"spread", "the time forest's uncertainty: trees (the spread of the trees' predictions) or total (with each leaf's own variance, the law of total variance, as SMAC's forest)", "trees"},
    {"jump_count", "stall_draw=jump: a value's rarity counted over the configurations measured (a value proposed only to fail has not been seen for speed), ties to the fewer proposed; or over those proposed (before the twenty-fourth session: docs/results/search-small-budgets.md)", "measured"},
    {"cap_ratio", "the time forest learns each time capped at this multiple of the best measured (at most 1, e.g. 0: uncapped): a configuration hundreds of times slower no longer widens the trees' spread around it, where expected improvement would go looking (docs/results/search-small-budgets.md, twenty-second session)", "4"},
    {"additive_share", "share of model proposals taken by Thompson sampling from an additive model (a Bayesian linear regression of log time on each knob's values, engine/search/additive.h): each the best, times the chance to pass, under effects drawn from its posterior; it carries what one result says of a value to every configuration with it, where a forest of few results splits on one knob (0.25 with ranks and a margin of 0.15 since the thirty-fifth session; 0: none, as before)", "0.25"},
    {"additive_when", "additive_share: always, or ranks (at a fit only where its leave-one-out predictions rank the measured configurations at least as well as the held-out ones of the model that leads, plus additive_margin; the default since the thirty-fifth session)", "ranks"},
    {"additive_margin", "additive_when=ranks: how much higher its held-out rank correlation must be than the leading model's for it to take its turns (0: at least as high; 0.15 since the thirty-fifth session)", "0.15"},
    {"additive_pairs", "the additive model's second-order terms: none, or launch (an effect for every combination of the values of two knobs that meet in one block or grid dimension, as block_size_y x tile_size_y in the rows a block covers: a combination never measured keeps its prior's spread, so a draw may believe in a well that lies where neither knob's own effect points)", "none"},
    {"jump_order", "stall_draw=jump: the order in which the best's one-knob moves are tried: rare (the least measured value first, jump_count) or thompson (by one posterior draw of the additive model per jump: a barely measured value is uncertain and often tried, one measured slow everywhere seldom)", "rare"},
    {"ts_share", "share of model proposals taken by Thompson sampling: each the best of one tree of the time forest (a sample of the function the forest believes in), times the chance to pass; while the process leads, its turn goes to the others", "0"},
    {"pass_power", "exponent of the chance to pass in both scores (higher: shy away from failing regions)", "1"},
    {"pass_optimism", "the chance to pass taken as the pass forest's mean plus this many of its trees' spread (0: the mean; where few results are near, the trees disagree and a region one failure wrote off keeps some promise; 0.5 since the thirty-fifth session, with the additive draws: docs/results/search-small-budgets.md, thirty-fourth and thirty-fifth sessions)", "0.5"},
    {"xi", "ei: improvement (in log time) a configuration must promise beyond the best", "0"},
    {"stall", "results without a new best (stall_gain faster) after which a share stall_share of proposals are stall draws (0: never; 8 until the twenty-second session, 4 since: docs/results/search-small-budgets.md, sixteenth and twenty-second sessions)", "4"},
    {"stall_share", "stall: share of proposals drawn so while no new best comes", "0.25"},
    {"stall_gain", "stall: how much faster (in log time) a new best must be to end a stall (0.005: half a percent, not a timing's noise; 0.05 measured, not the default: docs/results/search-small-budgets.md, nineteenth session)", "0.005"},
    {"jump_repair", "stall_draw=jump: where moving the knob breaks a constraint, flags (for a knob of two values, such as a code path's switch, take the valid unseen configuration with that value nearest the best: fewest other knobs changed, then fewest places along their lists; since the twenty-sixth session), nearest (so for every knob: measured, not the default) or off (skip that move, as before): docs/results/search-small-budgets.md, twenty-sixth session", "flags"},
    {"stall_draw", "stall: jump (the best with one knob moved to its least-measured value, jump_count) or rare (of 32 uniform draws, the one of the least-proposed values)", "jump"},
};

// How many times 2 divides v (capped): a tree reduction, a vector width or a tile that must divide
// a size cares about this, not about the value's place in the list.
int factors_of_two(std::int64_t v) {
  if (v == 0) return 16;
  int n = 0;
  while (n < 16 && (v & 1) == 0) v >>= 1, ++n;
  return n;
}

// Spearman's rank correlation of predicted against actual over the samples where `mask` is a
// number (the forest's out-of-bag predictions are NaN where every tree drew the sample), ties at
// their mean rank; -1 where fewer than three remain or either side is constant.
double held_out_rank_correlation(const std::vector<double>& predicted, const std::vector<double>& actual,
                                 const std::vector<double>& mask) {
  std::vector<double> p, a;
  for (std::size_t i = 0; i < actual.size() && i < predicted.size(); ++i)
    if (i < mask.size() && !std::isnan(mask[i]) && !std::isnan(predicted[i])) p.push_back(predicted[i]), a.push_back(actual[i]);
  if (p.size() < 3) return -1;
  auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * double(i + j);
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> rp = ranks(p), ra = ranks(a);
  const double mean = 0.5 * double(p.size() - 1);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    sxy += (rp[i] - mean) * (ra[i] - mean), sxx += (rp[i] - mean) * (rp[i] - mean), syy += (ra[i] - mean) * (ra[i] - mean);
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : -1;
}

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

class ModelSearch : public Strategy {
 public:
  explicit ModelSearch(const StrategyContext& ctx) : profile_(ctx.profile), space_(ctx.space), rng_(ctx.seed) {
    OptionValues o("evo", kOptions, ctx.options);
    initial_ = o.integer("initial", 0, 100000);
    const auto transfer = static_cast<std::size_t>(o.integer("transfer", 0, 100000));
    transfer_.assign(ctx.transfer.begin(), ctx.transfer.begin() + std::min(transfer, ctx.transfer.size()));
    trees_ = static_cast<std::size_t>(o.integer("trees", 1, 1000));
    explore_ = o.number("explore", 0, 1);
    gp_when_ = o.text("gp");
    if (gp_when_ != "failing" && gp_when_ != "always" && gp_when_ != "never" && gp_when_ != "auto")
      throw UserError("strategy evo: option gp='" + gp_when_ + "': choose failing, always, never or auto");
    gp_until_ = static_cast<std::size_t>(o.integer("gp_until", 0, 100000));
    choose_until_ = static_cast<std::size_t>(o.integer("choose_until", 0, 100000));
    if (o.text("blend") == "auto")
      blend_auto_ = true;
    else
      blend_ = o.number("blend", 0, 1);
    blend_until_ = static_cast<std::size_t>(o.integer("blend_until", 0, 100000));
    gp_ard_ = o.number("gp_ard", 0, 1);
    repair_tries_ = static_cast<std::size_t>(o.integer("repair_tries", 0, 1000000));
    score_all_ = static_cast<std::size_t>(o.integer("score_all", 0, 10000000));
    pool_ = static_cast<std::size_t>(o.integer("pool", 16, 10000000));
    design_ = o.text("initial_design");
    if (design_ != "uniform" && design_ != "spread" && design_ != "distinct" && design_ != "strata")
      throw UserError("strategy evo: option initial_design='" + design_ + "': choose uniform, spread, distinct or strata");
    design_draws_ = static_cast<int>(o.integer("design_draws", 1, 100000));
    near_steps_ = o.integer("near_steps", 0, 1000);
    if (o.text("initial_near") == "auto")
      near_auto_ = true;
    else
      initial_near_ = o.number("initial_near", 0, 1);
    const std::string acq = o.text("acquisition");
    if (acq != "ei" && acq != "lcb" && acq != "mix")
      throw UserError("strategy evo: option acquisition='" + acq + "': choose ei, lcb or mix");

    kappa_ = o.number("kappa", 0, 100);
    xi_ = o.number("xi", 0, 10);
    pass_power_ = o.number("pass_power", 0, 10);
    pass_optimism_ = o.number("pass_optimism", 0, 10);
    stall_ = static_cast<std::size_t>(o.integer("stall", 0, 100000));
    stall_share_ = o.number("stall_share", 0, 1);
    stall_gain_ = o.number("stall_gain", 0, 10);
    stall_draw_ = o.text("stall_draw");
    cap_ratio_ = o.number("cap_ratio", 0, 1e6);
    jump_count_ = o.text("jump_count");
    if (jump_count_ != "proposed" && jump_count_ != "measured")
      throw UserError("strategy evo: option jump_count='" + jump_count_ + "': choose proposed or measured");
    jump_repair_ = o.text("jump_repair");
    if (jump_repair_ != "off" && jump_repair_ != "nearest" && jump_repair_ != "flags")
      throw UserError("strategy evo: option jump_repair='" + jump_repair_ + "': choose off, flags or nearest");
    spread_ = o.text("spread");
    if (spread_ != "trees" && spread_ != "total")
      throw UserError("strategy evo: option spread='" + spread_ + "': choose trees or total");
    near_knobs_ = static_cast<int>(o.integer("near_knobs", 1, 1000));
    if (stall_draw_ != "rare" && stall_draw_ != "jump")
      throw UserError("strategy evo: option stall_draw='" + stall_draw_ + "': choose rare or jump");
    const double lcb = acq == "ei" ? 0.0 : acq == "lcb" ? 1.0 : o.number("lcb_share", 0, 1);
    const double near = o.number("near_share", 0, 1);
    const double ts = o.number("ts_share", 0, 1);
    const double additive = o.number("additive_share", 0, 1);
    additive_when_ = o.text("additive_when");
    additive_margin_ = o.number("additive_margin", 0, 2);
    jump_order_ = o.text("jump_order");
    additive_pairs_ = o.text("additive_pairs");
    if (additive_pairs_ != "none" && additive_pairs_ != "launch")
      throw UserError("strategy evo: option additive_pairs='" + additive_pairs_ + "': choose none or launch");
    if (o.given("additive_pairs") && additive_pairs_ != "none" && additive == 0 && jump_order_ != "thompson")
      throw UserError("strategy evo: option additive_pairs needs additive_share > 0 or jump_order=thompson (it shapes the additive model)");
    if (jump_order_ != "rare" && jump_order_ != "thompson")
      throw UserError("strategy evo: option jump_order='" + jump_order_ + "': choose rare or thompson");
    if (additive_when_ != "always" && additive_when_ != "ranks")
      throw UserError("strategy evo: option additive_when='" + additive_when_ + "': choose always or ranks");
    // Each is read only under the one before it; given where that one is off it would change
    // nothing, silently. Their defaults qualify the default's draws and are not refused.
    if (o.given("additive_when") && additive_when_ == "ranks" && additive == 0)
      throw UserError("strategy evo: option additive_when=ranks needs additive_share > 0 (it gates the additive model's turns)");
    if (o.given("additive_margin") && (additive_when_ != "ranks" || additive == 0))
      throw UserError("strategy evo: option additive_margin needs additive_when=ranks and additive_share > 0 (it is the margin of that gate)");
    if (lcb + near + ts + additive > 1.0)
      throw UserError("strategy evo: lcb_share + near_share + ts_share + additive_share must be <= 1 (the rest is ei)");
    share_[0] = acq == "lcb" ? 0.0 : 1.0 - lcb - near - ts - additive;
    share_[1] = lcb;
    share_[2] = near;
    share_[3] = ts;
    share_[4] = additive;
    prepare_geometry();
    for (const auto& k : space_.knobs()) {
      std::set<int> twos, bits;
      for (auto v : k.values) twos.insert(factors_of_two(v)), bits.insert(std::popcount(static_cast<std::uint64_t>(v)));
      alignment_.push_back(twos.size() > 1);
      binary_.push_back(bits.size() > 1);
    }
    features_ = space_.knobs().size() + std::count(alignment_.begin(), alignment_.end(), true) +
                std::count(binary_.begin(), binary_.end(), true) + geometry_.size() + single_dims_.size() + 2 * dim_pairs_.size();
    if (space_.size() <= 4 * static_cast<std::uint64_t>(score_all_) + 1) {
      auto all = space_.enumerate_valid();
      if (all.size() <= score_all_) {
        valid_ = std::move(all);
        valid_rows_.reserve(valid_.size() * features_);
        for (const auto& c : valid_) encode(c, valid_rows_), valid_hashes_.push_back(config_hash(c));
      }
    }
    if (initial_ == 0) {
      const double v = valid_.empty() ? 1000.0 : static_cast<double>(valid_.size());
      initial_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::lround(0.03 * v)), 5, 20);
    }
  }

  std::vector<Candidate> propose(std::size_t n) override {
    std::vector<Candidate> out;
    while (out.size() < n) {
      std::optional<Candidate> c;
      const bool model_leads = measured_ >= 2 && static_cast<std::int64_t>(observed_.size() + pending_) > initial_;
      if (model_leads && stall_ > 0 && since_best_ >= stall_) {
        stall_credit_ += stall_share_;
        if (stall_credit_ >= 1.0 - 1e-9) {
          stall_credit_ -= 1.0;
          if (stall_draw_ == "jump") c = jump_draw();
          if (!c) c = rare_draw();
        }
      }
      if (!c && model_leads && !rng_.chance(explore_)) c = from_model();
      // transfer: what was fast on a related task, before any draw (one the run read back or
      // already proposed is skipped).
      while (!c && !model_leads && next_transfer_ < transfer_.size()) {
        const Config& t = transfer_[next_transfer_++];
        if (!seen_.count(config_hash(t))) c = Candidate{t, Origin{"transfer", "", {}}};
      }
      if (!c && !model_leads) {
        // The near moves take their share in turn. auto: the share of the results so far (the
        // baseline's aside) that failed, so a space where uniform draws mostly fail is searched
        // around what passed, and one where they pass is drawn uniformly as before.
        near_credit_ += near_auto_ ? double(failed_) / double(observed_.size() > 1 ? observed_.size() - 1 : 1)
                                   : initial_near_;
        if (near_credit_ >= 1.0 - 1e-9) near_credit_ -= 1.0, c = near_draw();
        if (!c && design_ == "spread") c = spread_draw();
        if (!c && design_ == "distinct") c = distinct_draw();
        if (!c && design_ == "strata") c = strata_draw();
      }
      if (!c) {
        auto r = sample_unseen(space_, rng_, seen_);
        if (r) c = Candidate{*r, Origin{"random", "", {}}};
      }
      if (!c) break;  // every valid configuration proposed or observed
      seen_.insert(config_hash(c->config));
      proposed_.push_back(positions(c->config));
      ++pending_;
      out.push_back(std::move(*c));
    }
    return out;
  }

  void observe(const Evaluation& e) override {
    const std::string h = config_hash(e.config);
    if (seen_.insert(h).second == false && pending_ > 0) --pending_;
    else proposed_.push_back(positions(e.config));  // the baseline, or read back
    Observed o;
    encode(e.config, o.row);
    o.passed = e.measured() && e.fast.p50_us > 0;
    o.log_time = o.passed ? std::log(e.fast.p50_us) : 0;
    o.hash = h;
    if (!o.passed) ++failed_;
    ++since_best_;
    // A repaired jump that ends no stall (a new best by stall_gain) was spent on a slow code path.
    if (repaired_.erase(h)) repairs_in_vain_ = o.passed && o.log_time < best_log_ - stall_gain_ ? 0 : repairs_in_vain_ + 1;
    if (o.passed) {
      ++measured_;
      if (o.log_time < best_log_ - stall_gain_) since_best_ = 0;
      if (o.log_time < best_log_) best_log_ = o.log_time, best_index_ = observed_.size();
    }
    observed_.push_back(std::move(o));
  }

 private:
  struct Observed {
    std::vector<float> row;
    bool passed = false;
    double log_time = 0;
    std::string hash;
  };

  // Each knob's place in its value list, scaled to [0, 1] (a knob of one value: 0).
  std::vector<double> positions(const Config& c) const {
    std::vector<double> p;
    for (const auto& k : space_.knobs()) {
      const auto it = c.find(k.name);
      const auto pos = it == c.end() ? k.values.begin() : std::find(k.values.begin(), k.values.end(), it->second);
      p.push_back(k.values.size() > 1 ? double(pos - k.values.begin()) / double(k.values.size() - 1) : 0.0);
    }
    return p;
  }

  // L1 distance, over the knobs' scaled places, from p to the nearest configuration proposed so far.
  double nearest_proposed(const std::vector<double>& p) const {
    double nearest = INFINITY;
    for (const auto& q : proposed_) {
      double d = 0;
      for (std::size_t i = 0; i < p.size(); ++i) d += std::abs(p[i] - q[i]);
      nearest = std::min(nearest, d);
    }
    return nearest;
  }

  // Of `draws` uniform draws of unseen configurations, the one `score` (of its knobs' scaled
  // places) ranks highest, the first of equals; labelled `rule`. nullopt: every valid configuration seen.
  std::optional<Candidate> best_of_draws(const std::string& rule,
                                         const std::function<std::pair<double, double>(const std::vector<double>&)>& score,
                                         int draws = 32) {
    std::optional<Config> pick;
    std::pair<double, double> top{-INFINITY, -INFINITY};
    std::unordered_set<std::string> drawn = seen_;
    for (int t = 0; t < draws; ++t) {
      auto r = sample_unseen(space_, rng_, drawn);
      if (!r) break;
      drawn.insert(config_hash(*r));
      const std::pair<double, double> mine = score(positions(*r));
      if (mine > top) top = mine, pick = std::move(*r);
    }
    if (pick) return Candidate{std::move(*pick), Origin{"random", rule, {}}};
    return std::nullopt;
  }

  // Space-filling (initial_design=spread): of 32 uniform draws, the one whose nearest
  // configuration proposed so far is farthest (L1 over the knobs' scaled places), so the first few
  // cover the space.
  std::optional<Candidate> spread_draw() {
    return best_of_draws("spread", [&](const std::vector<double>& p) { return std::make_pair(nearest_proposed(p), 0.0); },
                         design_draws_);
  }

  // initial_design=distinct: of design_draws uniform draws, the one whose nearest configuration
  // proposed so far, counted in knobs that differ, differs in the most. Unlike spread's distance
  // along the lists it does not favour either end of a list (the fast block sizes are often a
  // band in the middle); where every draw differs from all in every knob, it is the first draw.
  std::optional<Candidate> distinct_draw() {
    return best_of_draws("distinct", [&](const std::vector<double>& p) {
      int nearest = static_cast<int>(p.size()) + 1;
      for (const auto& q : proposed_) {
        int d = 0;
        for (std::size_t i = 0; i < p.size(); ++i) d += p[i] != q[i];
        nearest = std::min(nearest, d);
      }
      return std::make_pair(double(nearest), 0.0);
    }, design_draws_);
  }

  // Stratified (initial_design=strata): each knob's value list is cut into as many parts as there
  // are initial draws (at most one a value); of 32 uniform draws, the one whose knobs fall in the
  // most parts no configuration proposed so far covers, ties to the farthest as spread does. So
  // the first draws see every part of every knob's range, as a Latin hypercube would, while each
  // stays a valid configuration.
  std::optional<Candidate> strata_draw() {
    const auto& knobs = space_.knobs();
    auto part = [&](std::size_t k, double place) {
      const std::size_t parts = std::min<std::size_t>(knobs[k].values.size(), std::max<std::int64_t>(initial_, 1));
      return std::min<std::size_t>(parts - 1, static_cast<std::size_t>(place * static_cast<double>(parts)));
    };
    std::vector<std::vector<bool>> covered(knobs.size());
    for (std::size_t k = 0; k < knobs.size(); ++k)
      covered[k].assign(std::min<std::size_t>(knobs[k].values.size(), std::max<std::int64_t>(initial_, 1)), false);
    for (const auto& q : proposed_)
      for (std::size_t k = 0; k < knobs.size(); ++k) covered[k][part(k, q[k])] = true;
    return best_of_draws("strata", [&](const std::vector<double>& p) {
      int fresh = 0;
      for (std::size_t k = 0; k < knobs.size(); ++k) fresh += covered[k][part(k, p[k])] ? 0 : 1;
      return std::make_pair(double(fresh), nearest_proposed(p));
    }, design_draws_);
  }

  // stall_draw=rare: of 32 uniform draws, the one whose knobs' values have been proposed least
  // often, ties to the farthest.
  std::optional<Candidate> rare_draw() {
    const auto& knobs = space_.knobs();
    std::vector<std::map<double, int>> counts(knobs.size());
    for (const auto& q : proposed_)
      for (std::size_t k = 0; k < knobs.size(); ++k) ++counts[k][q[k]];
    return best_of_draws("stall", [&](const std::vector<double>& p) {
      double rarity = 0;
      for (std::size_t k = 0; k < knobs.size(); ++k) {
        const auto it = counts[k].find(p[k]);
        rarity -= std::log1p(it == counts[k].end() ? 0 : it->second);
      }
      return std::make_pair(rarity, nearest_proposed(p));
    });
  }

  // The fastest configuration measured so far (the first of equals); nullptr while none has passed.
  const Observed* best_observed() const { return best_index_ ? &observed_[*best_index_] : nullptr; }

  // The configuration an observation's row encodes (its knobs' places come first in the row).
  Config config_of(const Observed& o) const {
    Config c;
    const auto& knobs = space_.knobs();
    for (std::size_t k = 0; k < knobs.size(); ++k) c[knobs[k].name] = knobs[k].values[static_cast<std::size_t>(o.row[k])];
    return c;
  }

  // stall_draw=jump: the best with one knob moved to the value measured least often so far (with
  // jump_count=measured; then the least proposed, then at random), the first such move that is
  // valid and unseen. Counting what was measured, not proposed: the first draws on Kernel Tuner's
  // convolution put tile_size_y = 2 only in blocks too large for it, which failed, and counted as
  // proposed it was not rare enough to be tried beside the best.
  std::optional<Candidate> jump_draw() {
    const Observed* best = best_observed();
    if (!best) return std::nullopt;
    const auto& knobs = space_.knobs();
    struct Move {
      int measured, count;
      double tie;
      std::size_t knob, value;
      double predicted = 0;  // jump_order=thompson: the moved best's log time under a posterior draw
    };
    // How often each knob's each value was proposed, and measured: one pass over each history.
    std::vector<std::vector<int>> proposed(knobs.size()), measured(knobs.size());
    for (std::size_t k = 0; k < knobs.size(); ++k)
      proposed[k].assign(knobs[k].values.size(), 0), measured[k].assign(knobs[k].values.size(), 0);
    for (const auto& q : proposed_)
      for (std::size_t k = 0; k < knobs.size(); ++k)
        ++proposed[k][static_cast<std::size_t>(std::lround(q[k] * double(std::max<std::size_t>(knobs[k].values.size(), 2) - 1)))];
    if (jump_count_ == "measured")
      for (const auto& o : observed_)
        if (o.passed)
          for (std::size_t k = 0; k < knobs.size(); ++k) ++measured[k][static_cast<std::size_t>(o.row[k])];
    std::vector<Move> moves;
    for (std::size_t k = 0; k < knobs.size(); ++k)
      for (std::size_t v = 0; v < knobs[k].values.size(); ++v)
        if (static_cast<float>(v) != best->row[k]) moves.push_back({measured[k][v], proposed[k][v], rng_.unit(), k, v});
    if (jump_order_ == "thompson" && !additive_model_.empty()) {
      // jump_order=thompson: the moves ranked by one draw of the additive model's effects, so a
      // value barely measured (a wide posterior) is often tried, and one measured slow wherever it
      // was, seldom; rarity only breaks ties.
      const std::vector<double> effects = additive_model_.sample(rng_);
      std::vector<float> row(best->row.begin(), best->row.begin() + static_cast<long>(knobs.size()));
      for (auto& m : moves) {
        row[m.knob] = static_cast<float>(m.value);
        m.predicted = additive_model_.predict(effects, row.data());
        row[m.knob] = best->row[m.knob];
      }
      std::sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
        return a.predicted != b.predicted ? a.predicted < b.predicted : a.measured != b.measured ? a.measured < b.measured : a.tie < b.tie;
      });
    } else {
      std::sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
        return a.measured != b.measured ? a.measured < b.measured : a.count != b.count ? a.count < b.count : a.tie < b.tie;
      });
    }
    const Config base = config_of(*best);
    for (const auto& m : moves) {
      Config c = base;
      c[knobs[m.knob].name] = knobs[m.knob].values[m.value];
      if (!space_.valid(c)) {
        // jump_repair: a switch that needs other knobs set with it is shown with them.
        const bool repair = repairs_in_vain_ < repair_tries_ &&
                            (jump_repair_ == "nearest" || (jump_repair_ == "flags" && knobs[m.knob].values.size() == 2));
        const auto i = repair ? nearest_valid_with(*best, m.knob, m.value) : std::nullopt;
        if (i) {
          repaired_.insert(valid_hashes_[*i]);
          return Candidate{valid_[*i], Origin{"random", "stall", {best->hash}}};
        }
        continue;
      }
      if (!seen_.count(config_hash(c))) return Candidate{std::move(c), Origin{"random", "stall", {best->hash}}};
    }
    return std::nullopt;
  }

  // jump_repair: of the valid configurations not yet seen (when the space was enumerated),
  // the one with `knob` at place `value` that differs from `from` in the fewest other knobs, then
  // by the fewest places along their lists; the first in the space's order on a tie.
  std::optional<std::size_t> nearest_valid_with(const Observed& from, std::size_t knob, std::size_t value) const {
    const std::size_t nk = space_.knobs().size();
    std::optional<std::size_t> pick;
    std::pair<int, double> best_d{INT32_MAX, 0};
    for (std::size_t i = 0; i < valid_.size(); ++i) {
      const float* row = &valid_rows_[i * features_];
      if (row[knob] != static_cast<float>(value) || seen_.count(valid_hashes_[i])) continue;
      std::pair<int, double> d{0, 0};
      for (std::size_t k = 0; k < nk; ++k)
        if (row[k] != from.row[k]) ++d.first, d.second += std::abs(double(row[k]) - double(from.row[k]));
      if (d < best_d) best_d = d, pick = i;
    }
    return pick;
  }

  // The best measured so far (the baseline at first) moved by one or two knobs, each by one or
  // two places (initial_near): where most of a space fails, the passing configurations often lie
  // in one connected region around a known good one. nullopt: draw uniformly.
  std::optional<Candidate> near_draw() {
    const Observed* best = best_observed();
    if (!best) return std::nullopt;
    const auto& knobs = space_.knobs();
    const Config base = config_of(*best);
    for (int t = 0; t < 64; ++t) {
      Config c = base;
      const int moves = 1 + static_cast<int>(rng_.index(2));
      for (int m = 0; m < moves; ++m) {
        const auto& k = knobs[rng_.index(knobs.size())];
        const long pos = std::find(k.values.begin(), k.values.end(), c[k.name]) - k.values.begin();
        if (near_steps_ == 0) {
          c[k.name] = k.values[rng_.index(k.values.size())];
          continue;
        }
        const long step = (1 + static_cast<long>(rng_.index(static_cast<std::size_t>(near_steps_)))) * (rng_.chance(0.5) ? 1 : -1);
        c[k.name] = k.values[static_cast<std::size_t>(std::clamp<long>(pos + step, 0, static_cast<long>(k.values.size()) - 1))];
      }
      if (!seen_.count(config_hash(c)) && space_.valid(c)) return Candidate{std::move(c), Origin{"random", "near", {best->hash}}};
    }
    return std::nullopt;
  }

  // Launch geometry expressions that evaluate for the baseline become features; one that needs
  // something a knob-only evaluation lacks is simply left out.
  void prepare_geometry() {
    const KernelSpec& k = profile_.kernel;
    const Problem& p = profile_.objective_problem();
    const Vars vars = expression_vars(k, p, profile_.baseline);
    std::vector<std::string> known;
    for (const auto& [name, _] : vars) known.push_back(name);
    auto add = [&](std::vector<std::string> parts) {
      try {
        std::vector<Expr> e;
        for (const auto& s : parts) e.emplace_back(s, known);
        for (const auto& x : e) (void)x.eval(vars);
        geometry_.push_back(std::move(e));
      } catch (const std::exception&) {
      }
    };
    add({k.launch.block[0], k.launch.block[1], k.launch.block[2]});  // threads per block
    add({k.launch.grid[0], k.launch.grid[1], k.launch.grid[2]});     // blocks
    add({k.launch.shared_bytes});
    // Block and grid dimensions that combine knobs, alone and in pairs (log2 sums and
    // differences): how a kernel covers its problem is often a relation among three or more
    // knobs, a block x as wide as the rows a block covers in y (block_size_y x tile_size_y), threads
    // x blocks = a size. A tree splits on such a relation at once; from the knobs one at a time it
    // learns it cell by cell. A dimension of one knob adds nothing the knob's own feature lacks,
    // and a pair of two knobs is a plane the forest covers quickly: both are left out.
    std::set<std::string> knob_names;
    for (const auto& kn : space_.knobs()) knob_names.insert(kn.name);
    std::vector<std::set<std::string>> uses;
    for (const auto* dims : {&k.launch.block, &k.launch.grid})
      for (const auto& text : *dims) {
        try {
          Expr e(text, known);
          (void)e.eval(vars);
          std::set<std::string> mine;
          for (const auto& v : e.used_vars())
            if (knob_names.count(v)) mine.insert(v);
          if (mine.empty()) continue;
          dims_.push_back(std::move(e));
          uses.push_back(std::move(mine));
        } catch (const std::exception&) {
        }
      }
    // additive_pairs=launch: the knobs that meet in one dimension, two by two.
    if (additive_pairs_ == "launch") {
      const auto& ks = space_.knobs();
      auto knob_index = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find_if(ks.begin(), ks.end(), [&](const auto& kn) { return kn.name == name; }) - ks.begin());
      };
      std::set<std::pair<std::size_t, std::size_t>> pairs;
      for (const auto& mine : uses)
        for (auto a = mine.begin(); a != mine.end(); ++a)
          for (auto b = std::next(a); b != mine.end(); ++b) {
            const std::size_t i = knob_index(*a), j = knob_index(*b);
            pairs.insert({std::min(i, j), std::max(i, j)});
          }
      additive_pair_knobs_.assign(pairs.begin(), pairs.end());
    }
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (uses[i].size() >= 2) single_dims_.push_back(i);
      for (std::size_t j = i + 1; j < dims_.size(); ++j) {
        std::set<std::string> both = uses[i];
        both.insert(uses[j].begin(), uses[j].end());
        if (both.size() >= 3) dim_pairs_.emplace_back(i, j);
      }
    }
  }

  void encode(const Config& c, std::vector<float>& row) const {
    for (const auto& k : space_.knobs()) {
      const auto it = c.find(k.name);
      const auto pos = it == c.end() ? k.values.end() : std::find(k.values.begin(), k.values.end(), it->second);
      row.push_back(static_cast<float>(pos - k.values.begin()));
    }
    for (std::size_t i = 0; i < space_.knobs().size(); ++i)
      if (alignment_[i]) {
        const auto& k = space_.knobs()[i];
        const auto it = c.find(k.name);
        row.push_back(static_cast<float>(factors_of_two(it == c.end() ? 0 : it->second)));
      }
    for (std::size_t i = 0; i < space_.knobs().size(); ++i)
      if (binary_[i]) {
        const auto& k = space_.knobs()[i];
        const auto it = c.find(k.name);
        row.push_back(static_cast<float>(std::popcount(static_cast<std::uint64_t>(it == c.end() ? 0 : it->second))));
      }
    if (geometry_.empty() && single_dims_.empty() && dim_pairs_.empty()) return;
    const Vars vars = expression_vars(profile_.kernel, profile_.objective_problem(), c);
    for (const auto& product : geometry_) {
      double v = 1;
      try {
        for (const auto& e : product) v *= e.eval(vars);
      } catch (const std::exception&) {
        v = 0;
      }
      row.push_back(static_cast<float>(std::log2(1.0 + std::max(0.0, v))));
    }
    std::vector<float> logs;
    for (const auto& e : dims_) {
      double v = 0;
      try {
        v = e.eval(vars);
      } catch (const std::exception&) {
      }
      logs.push_back(v > 0 ? static_cast<float>(std::log2(v)) : -64.0f);  // exact: a relation holds to the bit
    }
    for (std::size_t i : single_dims_) row.push_back(logs[i]);
    for (const auto& [i, j] : dim_pairs_) row.push_back(logs[i] + logs[j]), row.push_back(logs[i] - logs[j]);
  }

  std::optional<Candidate> from_model() {
    const std::size_t since = observed_.size() - observed_at_fit_;
    if (since >= std::max<std::size_t>(1, observed_.size() / 16)) fit_and_score();
    // The acquisitions take turns (a portfolio: none wins on every landscape): lcb and near each
    // when it has earned a whole turn at its share, expected improvement otherwise; one whose
    // queue is spent gives its turn on.
    for (int k = 1; k < kQueues; ++k) credit_[k] += share_[k];
    // Thompson sampling has no queue while the process leads: its turns are not saved up for later.
    if (queues_[3].pos >= queues_[3].configs.size()) credit_[3] = std::min(credit_[3], 1.0);
    // Nor has the additive model one while it does not rank (additive_when=ranks).
    if (queues_[4].pos >= queues_[4].configs.size()) credit_[4] = std::min(credit_[4], 1.0);
    // The first that has earned a whole turn, then expected improvement, then the others.
    int order[kQueues], n = 0;
    for (int k = 1; k < kQueues && n == 0; ++k)
      if (credit_[k] >= 1.0 - 1e-9) order[n++] = k;
    order[n++] = 0;
    for (int k = 1; k < kQueues; ++k)
      if (order[0] != k) order[n++] = k;
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (int which : order) {
        if (share_[which] <= 0) continue;
        Queue& q = queues_[which];
        while (q.pos < q.configs.size()) {
          Config c = std::move(q.configs[q.pos++]);
          if (seen_.count(config_hash(c))) continue;
          if (which > 0) credit_[which] -= 1.0;
          return Candidate{std::move(c), Origin{"model", q.name, {best_observed() ? best_observed()->hash : ""}}};
        }
      }
      if (attempt == 0) fit_and_score();
    }
    return std::nullopt;
  }

  void fit_and_score() {
    observed_at_fit_ = observed_.size();
    for (auto& q : queues_) q.configs.clear(), q.pos = 0;
    std::vector<float> all_rows, time_rows;
    std::vector<double> passed, log_time;
    for (const auto& o : observed_) {
      all_rows.insert(all_rows.end(), o.row.begin(), o.row.end());
      passed.push_back(o.passed ? 1.0 : 0.0);
      if (o.passed) time_rows.insert(time_rows.end(), o.row.begin(), o.row.end()), log_time.push_back(o.log_time);
    }
    const bool any_failed = std::any_of(passed.begin(), passed.end(), [](double p) { return p == 0.0; });
    // The Gaussian process while the forest is starved: where configurations fail, the measured
    // ones come slowly, and the first climb decides the smallest budgets. Where none has failed the
    // forest leads from the first (on the all-passing landscapes it was the better of the two);
    // gp=auto lets there the one lead that ranks the measured configurations better unseen.
    const bool window = measured_ < gp_until_;
    const bool choose = gp_when_ == "auto" && !any_failed && measured_ >= kChooseFrom && measured_ < choose_until_;
    bool gp = window && (gp_when_ == "always" || ((gp_when_ == "failing" || gp_when_ == "auto") && any_failed));
    std::vector<double> out_of_bag;
    // blend: where nothing has failed, the process's and the forest's predictions mixed while few
    // are measured (with auto, from kChooseFrom, at the weight their held-out predictions rank best).
    double weight = blend_;
    bool blend = !gp && !choose && !any_failed && (blend_ > 0 || blend_auto_) &&
                 measured_ >= (blend_auto_ ? kChooseFrom : 3) && measured_ < blend_until_;
    // The times the forest and the additive model learn: each capped at cap_ratio times the best.
    std::vector<double> capped = log_time;
    if (cap_ratio_ > 1)
      for (auto& y : capped) y = std::min(y, best_log_ + std::log(cap_ratio_));
    if (!gp || choose) {
      const bool held_out = choose || (blend && blend_auto_) || (share_[4] > 0 && additive_when_ == "ranks");
      time_model_.fit(time_rows, features_, capped, trees_, rng_, held_out ? &out_of_bag : nullptr);
    }
    if (any_failed) pass_model_.fit(all_rows, features_, passed, trees_, rng_);

    std::vector<Config> pool;
    std::vector<float> pool_rows;
    std::vector<std::string> pool_hashes;
    const std::vector<Config>* cands = &valid_;
    const std::vector<float>* rows = &valid_rows_;
    const std::vector<std::string>* hashes = &valid_hashes_;
    if (valid_.empty()) {
      build_pool(pool);
      for (const auto& c : pool) encode(c, pool_rows), pool_hashes.push_back(config_hash(c));
      cands = &pool;
      rows = &pool_rows;
      hashes = &pool_hashes;
    }
    // The process's inputs: every feature of the forests, each scaled to [0, 1] over the
    // configurations scored and those observed (the knobs' places alone did worse on kt_stencil).
    std::vector<float> lo, hi;
    // gp_ard: each input stretched by how much the time forest's splits on it explain, so the
    // process's distance counts the knobs the times hang on (a length scale per input, read off
    // the forest rather than fitted to a handful of points).
    std::vector<double> stretch(features_, 1.0);
    if (blend && gp_ard_ > 0) {
      const std::vector<double> imp = time_model_.importance();
      double sum = 0;
      for (double v : imp) sum += v;
      if (sum > 0)
        for (std::size_t f = 0; f < features_; ++f)
          stretch[f] = std::sqrt((1 - gp_ard_) + gp_ard_ * double(features_) * imp[f] / sum);
    }
    std::vector<double> at(features_);
    auto scaled = [&](const float* r, double* out) {
      for (std::size_t f = 0; f < features_; ++f) out[f] = hi[f] > lo[f] ? stretch[f] * (r[f] - lo[f]) / double(hi[f] - lo[f]) : 0.0;
    };
    if (gp || choose || blend) {
      lo.assign(features_, INFINITY), hi.assign(features_, -INFINITY);
      auto widen = [&](const float* r) {
        for (std::size_t f = 0; f < features_; ++f) lo[f] = std::min(lo[f], r[f]), hi[f] = std::max(hi[f], r[f]);
      };
      for (std::size_t i = 0; i < cands->size(); ++i) widen(rows->data() + i * features_);
      for (const auto& o : observed_) widen(o.row.data());
      std::vector<double> x;
      for (const auto& o : observed_)
        if (o.passed) x.resize(x.size() + features_), scaled(o.row.data(), x.data() + x.size() - features_);
      gp_model_.fit(x, features_, log_time);
      // gp=auto: the model that ranks what it has not seen better leads until the next fit.
      if (choose) {
        gp = held_out_rank_correlation(gp_model_.leave_one_out(), log_time, out_of_bag) >
             held_out_rank_correlation(out_of_bag, log_time, out_of_bag);
      }
      // blend=auto: the weight whose mixture of held-out predictions ranks the measured best
      // (ties to the forest's side).
      if (blend && blend_auto_) {
        const std::vector<double> loo = gp_model_.leave_one_out();
        double top = -2;
        weight = 0;
        for (double w : {0.0, 0.25, 0.5, 0.75, 1.0}) {
          std::vector<double> mix(out_of_bag.size());
          for (std::size_t i = 0; i < mix.size(); ++i) mix[i] = i < loo.size() ? (1 - w) * out_of_bag[i] + w * loo[i] : NAN;
          const double r = held_out_rank_correlation(mix, log_time, out_of_bag);
          if (r > top + 1e-9) top = r, weight = w;
        }
        if (weight == 0) blend = false;
      }
    }
    // additive: effects drawn from the posterior of the sum of the knobs' values' effects, each
    // draw a function the measured times allow; its best unseen configurations are queued.
    std::vector<std::vector<double>> draws;
    if ((share_[4] > 0 || jump_order_ == "thompson") && log_time.size() >= 2) {
      const std::size_t nk = space_.knobs().size();
      std::vector<std::size_t> values, places;
      for (const auto& k : space_.knobs()) values.push_back(k.values.size());
      for (std::size_t i = 0; i < log_time.size(); ++i)
        for (std::size_t k = 0; k < nk; ++k) places.push_back(static_cast<std::size_t>(time_rows[i * features_ + k]));
      additive_model_.fit(values, places, capped, additive_pair_knobs_);
      // additive_when=ranks: its turns only while it ranks the measured configurations it did not
      // see at least as well as the model that leads (the process's leave-one-out, the forest's
      // out-of-bag): where the times hang on knobs together, the sum's draws are guesses.
      bool turn = !additive_model_.empty();
      if (turn && additive_when_ == "ranks") {
        // The leader's held-out predictions, and which rows count (the process holds out every one).
        const std::vector<double> lead = gp ? gp_model_.leave_one_out() : out_of_bag;
        const std::vector<double> rows_held = gp ? std::vector<double>(log_time.size(), 0.0) : out_of_bag;
        turn = held_out_rank_correlation(additive_model_.leave_one_out(), log_time, rows_held) >=
               held_out_rank_correlation(lead, log_time, rows_held) + additive_margin_;
      }
      for (std::size_t t = 0; t < kAdditiveDraws && turn && share_[4] > 0; ++t) draws.push_back(additive_model_.sample(rng_));
    }
    std::vector<std::vector<Scored>> additive_best(draws.size());
    // The incumbent's place in each value list: "near" is at most two knobs away from it.
    std::vector<float> incumbent;
    if (const Observed* best = best_observed()) incumbent.assign(best->row.begin(), best->row.begin() + space_.knobs().size());
    std::vector<Scored> ei_scored, lcb_scored, near_scored;
    // Thompson sampling: each tree's few best, by its own prediction times the chance to pass.
    const bool ts = share_[3] > 0 && !gp && !time_model_.empty();
    std::vector<std::vector<Scored>> ts_best(ts ? time_model_.trees() : 0);
    std::vector<double> each;
    for (std::size_t i = 0; i < cands->size(); ++i) {
      if (seen_.count((*hashes)[i])) continue;
      const float* r = rows->data() + i * features_;
      int away = 0;
      for (std::size_t k = 0; k < incumbent.size(); ++k) away += r[k] != incumbent[k];
      ForestPrediction t;
      if (gp) {
        scaled(r, at.data());
        t = gp_model_.predict(at.data());
      } else {
        t = time_model_.predict(r, ts ? &each : nullptr);
        if (spread_ == "total") t.spread = std::sqrt(t.spread * t.spread + t.within * t.within);
        if (blend) {  // a mixture of the two: its mean, and its variance with the means' disagreement
          scaled(r, at.data());
          const ForestPrediction g = gp_model_.predict(at.data());
          const double w = weight, d = g.mean - t.mean;
          t.mean += w * d;
          t.spread = std::sqrt(w * g.spread * g.spread + (1 - w) * t.spread * t.spread + w * (1 - w) * d * d);
        }
      }
      const double s = std::max(t.spread, 1e-3);
      // A configuration the pass model has not seen fail nearby keeps its promise whole.
      double pass = 1.0;
      if (any_failed) {
        const ForestPrediction f = pass_model_.predict(r);
        pass = std::pow(std::clamp(f.mean + pass_optimism_ * f.spread, 0.02, 1.0), pass_power_);
      }
      // lcb: exp(best - (mean - kappa spread)), how much faster than the best it may be.
      const double promise = std::exp(best_log_ - (t.mean - kappa_ * s)) * pass;
      if (share_[1] > 0) lcb_scored.push_back({promise, i});
      if (share_[2] > 0 && !incumbent.empty() && away <= near_knobs_) near_scored.push_back({promise, i});
      const double z = (best_log_ - xi_ - t.mean) / s;
      if (share_[0] > 0) ei_scored.push_back({s * (z * normal_cdf(z) + normal_pdf(z)) * pass, i});
      for (std::size_t d = 0; d < draws.size(); ++d)
        keep_best(additive_best[d], {std::exp(best_log_ - additive_model_.predict(draws[d], r)) * pass, i});
      if (ts) {
        for (std::size_t tree = 0; tree < each.size(); ++tree) keep_best(ts_best[tree], {std::exp(best_log_ - each[tree]) * pass, i});
      }
    }
    fill(queues_[0], ei_scored, *cands);
    fill(queues_[1], lcb_scored, *cands);
    fill(queues_[2], near_scored, *cands);
    fill_firsts(queues_[4], additive_best, *cands);  // the draws in order
    if (ts) {  // the trees in a random order
      std::vector<std::vector<Scored>> shuffled(ts_best.size());
      std::vector<std::size_t> trees(ts_best.size());
      for (std::size_t t = 0; t < trees.size(); ++t) trees[t] = t;
      for (std::size_t t = trees.size(); t > 1; --t) std::swap(trees[t - 1], trees[rng_.index(t)]);
      for (std::size_t t = 0; t < trees.size(); ++t) shuffled[t] = std::move(ts_best[trees[t]]);
      fill_firsts(queues_[3], shuffled, *cands);
    }
  }

  struct Scored {
    double score;
    std::size_t index;
  };
  struct Queue {
    std::string name;
    std::vector<Config> configs;
    std::size_t pos = 0;
  };

  // b: the kPerDraw highest scores so far, highest first.
  static void keep_best(std::vector<Scored>& b, const Scored& sc) {
    constexpr std::size_t kPerDraw = 4;
    if (b.size() == kPerDraw && sc.score <= b.back().score) return;
    if (b.size() == kPerDraw) b.pop_back();
    b.insert(std::upper_bound(b.begin(), b.end(), sc, [](const Scored& x, const Scored& y) { return x.score > y.score; }), sc);
  }

  // Each list in turn (a posterior draw's, a tree's best, highest first) gives its best not yet
  // queued: one configuration per sampled function.
  static void fill_firsts(Queue& q, const std::vector<std::vector<Scored>>& lists, const std::vector<Config>& cands) {
    std::set<std::size_t> queued;
    for (const auto& b : lists)
      for (const Scored& sc : b)
        if (queued.insert(sc.index).second) {
          q.configs.push_back(cands[sc.index]);
          break;
        }
  }

  static void fill(Queue& q, std::vector<Scored>& scored, const std::vector<Config>& cands) {
    // Proposed in this order until the next fit: a batch of the best, not one at a time.
    const std::size_t keep = std::min<std::size_t>(scored.size(), 256);
    std::partial_sort(scored.begin(), scored.begin() + keep, scored.end(),
                      [](const Scored& a, const Scored& b) { return a.score > b.score || (a.score == b.score && a.index < b.index); });
    for (std::size_t i = 0; i < keep; ++i) q.configs.push_back(cands[scored[i].index]);
  }

  // A space too large to score whole: uniform draws, and moves of the best measured
  // configurations by steps of varying length along one or two value lists (a ridge of failing
  // neighbours one step wide is crossed by a step of two).
  void build_pool(std::vector<Config>& pool) {
    std::unordered_set<std::string> in;
    auto add = [&](const Config& c) {
      const std::string h = config_hash(c);
      if (!seen_.count(h) && in.insert(h).second && space_.valid(c)) pool.push_back(c);
    };
    std::vector<const Observed*> best;
    for (const auto& o : observed_)
      if (o.passed) best.push_back(&o);
    std::sort(best.begin(), best.end(), [](auto* a, auto* b) { return a->log_time < b->log_time; });
    best.resize(std::min<std::size_t>(best.size(), 8));
    const auto& knobs = space_.knobs();
    for (const Observed* o : best) {
      const Config base = config_of(*o);
      for (std::size_t k = 0; k < knobs.size(); ++k)
        for (int step : {-3, -2, -1, 1, 2, 3}) {
          const long pos = static_cast<long>(o->row[k]) + step;
          if (pos < 0 || pos >= static_cast<long>(knobs[k].values.size())) continue;
          Config c = base;
          c[knobs[k].name] = knobs[k].values[static_cast<std::size_t>(pos)];
          add(c);
        }
      for (int t = 0; t < 64; ++t) {  // two knobs at once, each by a step of 1 to a quarter of its list
        Config c = base;
        for (int m = 0; m < 2; ++m) {
          const auto& k = knobs[rng_.index(knobs.size())];
          const long len = std::max<long>(1, static_cast<long>(k.values.size()) / 4);
          const long pos = std::find(k.values.begin(), k.values.end(), c[k.name]) - k.values.begin();
          const long step = (1 + static_cast<long>(rng_.index(static_cast<std::size_t>(len)))) * (rng_.chance(0.5) ? 1 : -1);
          c[k.name] = k.values[static_cast<std::size_t>(std::clamp<long>(pos + step, 0, static_cast<long>(k.values.size()) - 1))];
        }
        add(c);
      }
    }
    for (std::size_t t = 0; t < pool_ && pool.size() < pool_ + 1024; ++t) {
      auto r = sample_unseen(space_, rng_, seen_);
      if (!r) break;
      add(*r);
    }
  }

  const Profile& profile_;
  const KnobSpace& space_;
  SearchRng rng_;
  std::int64_t initial_ = 0;
  std::vector<Config> transfer_;  // the first `transfer` of the context's, proposed in order
  std::size_t next_transfer_ = 0;
  std::size_t trees_ = 64, score_all_ = 50000, pool_ = 4000, features_ = 0;
  double explore_ = 0.05, kappa_ = 0, xi_ = 0, pass_power_ = 1, pass_optimism_ = 0.5;
  std::string gp_when_ = "failing";
  std::size_t gp_until_ = 16;
  double blend_ = 0;  // blend's fixed weight (0 with blend=auto, which chooses one at each fit)
  bool blend_auto_ = false;
  double gp_ard_ = 0;
  std::size_t blend_until_ = 32;
  std::size_t choose_until_ = 32;  // gp=auto: the two models compared from kChooseFrom measured to this
  std::size_t repair_tries_ = 4, repairs_in_vain_ = 0;  // repaired jumps in a row without a new best
  std::unordered_set<std::string> repaired_;  // repaired jumps proposed, their results not yet back
  std::vector<std::vector<Expr>> geometry_;
  std::vector<Expr> dims_;  // the block and grid dimensions knobs decide
  std::vector<std::size_t> single_dims_;  // those of two or more knobs: a feature each
  std::vector<std::pair<std::size_t, std::size_t>> additive_pair_knobs_;  // additive_pairs=launch: knob indices
  std::vector<std::pair<std::size_t, std::size_t>> dim_pairs_;  // pairs of three or more knobs: sum and difference
  std::vector<bool> alignment_;  // knobs whose values differ in their factors of two
  std::vector<bool> binary_;     // knobs whose values differ in their bits set (1: a power of two)
  std::vector<Config> valid_;
  std::vector<float> valid_rows_;
  std::vector<std::string> valid_hashes_;  // config_hash of each, computed once: every fit skips the seen
  std::unordered_set<std::string> seen_;
  std::vector<std::vector<double>> proposed_;  // positions() of every configuration proposed or observed
  std::string design_ = "distinct";
  int design_draws_ = 32;
  double initial_near_ = 0, near_credit_ = 0;
  bool near_auto_ = false;
  std::int64_t near_steps_ = 2;
  std::size_t failed_ = 0;  // observed results that did not pass
  std::vector<Observed> observed_;
  std::size_t pending_ = 0, measured_ = 0, observed_at_fit_ = 0;
  double best_log_ = INFINITY;
  std::optional<std::size_t> best_index_;  // in observed_: the fastest measured (best_log_'s)
  std::size_t stall_ = 4, since_best_ = 0;  // results since the best last improved by stall_gain
  double stall_share_ = 0.25, stall_credit_ = 0, stall_gain_ = 0.005;
  std::string spread_ = "trees", jump_count_ = "measured", jump_repair_ = "flags";
  double cap_ratio_ = 4;  // the time forest's targets: at most this multiple of the best
  int near_knobs_ = 1;    // near_share: knobs from the best
  std::string stall_draw_ = "jump";
  Forest time_model_, pass_model_;
  GaussianProcess gp_model_;
  AdditiveModel additive_model_;
  std::string additive_when_ = "ranks", jump_order_ = "rare", additive_pairs_ = "none";
  double additive_margin_ = 0.15;
  static constexpr std::size_t kAdditiveDraws = 8;  // additive: posterior draws per fit, a queued configuration each
  static constexpr std::size_t kChooseFrom = 5;  // gp=auto: the first fits (the baseline and initial draws) choose by the failing rule
  static constexpr int kQueues = 5;
  Queue queues_[kQueues] = {{"expected improvement", {}, 0}, {"lower confidence bound", {}, 0}, {"near the best", {}, 0},
                            {"thompson sampling", {}, 0}, {"additive model", {}, 0}};
  double share_[kQueues] = {0.75, 0.25, 0, 0, 0}, credit_[kQueues] = {0, 0, 0, 0, 0};  // turns earned minus turns taken
};

}  // namespace

StrategyInfo model_strategy_info() {
  return {"evo",
          "model-led: random forests of time and of passing, expected improvement, failures learnt (the default)",
          kOptions, [](const StrategyContext& ctx) { return std::make_unique<ModelSearch>(ctx); }};
}

}  // namespace evo
