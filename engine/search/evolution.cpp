// elites: an elite population in the EvoEngineer style. The elites are the
// fastest GREEN, timed candidates of each stage (a stage is one combination of the on/off
// feature knobs, USE_CP_ASYNC, USE_WMMA_PV ..., as the seeds' notes tuned stage by stage), the
// best `elites` of each kept. Each new candidate of a generation is, by the rates below:
//   insight    a move the insight rules suggest for an elite (engine/search/insights.h)
//   crossover  uniform crossover of two tournament-selected elites
//   random     a uniform draw (an immigrant, so a stage nobody has reached can still appear)
//   mutation   one or two knobs of a tournament-selected elite to neighbouring values
// Every candidate is valid and new: anything proposed or observed is never proposed again.
// The run loop evaluates the baseline first; until something passes GREEN and FAST the
// population is the baseline alone, and when even that failed, random draws.
#include <algorithm>
#include <deque>
#include <set>
#include <sstream>

#include "engine/error.h"
#include "engine/search/insights.h"
#include "engine/search/strategy.h"

namespace evo {
namespace {

const std::vector<StrategyOption> kOptions = {
    {"elites", "fastest GREEN candidates kept per stage", "3"},
    {"stage_knobs", "knobs whose values make a stage: 'auto' (every 0/1 knob), 'none', or K1+K2+...", "auto"},
    {"tournament", "elites drawn (with replacement) per selection; the fastest of them is the parent", "12"},
    {"insight_rate", "share of a generation taken from the insight rules' suggestions", "0.2"},
    {"crossover_rate", "share made by uniform crossover of two parents", "0.1"},
    {"random_rate", "share drawn uniformly at random (immigrants)", "0"},
    {"initial_random", "uniform draws after the baseline before evolution starts (the first population)", "16"},
    {"two_knob_rate", "chance that a mutation moves two knobs instead of one", "0.5"},
};

// Tries per slot before falling back to a random draw: a crowded neighbourhood must not stall.
constexpr int kTriesPerSlot = 32;
// The defaults were tuned on tests/data/landscape_synthetic.json (docs/search.md has the table):
// strong selection (the fastest of 12 draws is nearly always a top elite) with two-knob moves
// to leave local optima beat wider exploration there; immigrants (random_rate) did not help.

class EvolutionSearch : public Strategy {
 public:
  explicit EvolutionSearch(const StrategyContext& ctx)
      : profile_(ctx.profile), space_(ctx.space), rng_(ctx.seed) {
    OptionValues o("elites", kOptions, ctx.options);
    elites_ = static_cast<std::size_t>(o.integer("elites", 1, 1000));
    tournament_ = static_cast<std::size_t>(o.integer("tournament", 1, 100));
    insight_rate_ = o.number("insight_rate", 0, 1);
    crossover_rate_ = o.number("crossover_rate", 0, 1);
    random_rate_ = o.number("random_rate", 0, 1);
    two_knob_rate_ = o.number("two_knob_rate", 0, 1);
    initial_left_ = o.integer("initial_random", 0, 100000);
    if (insight_rate_ + crossover_rate_ + random_rate_ > 1.0)
      throw UserError("strategy elites: insight_rate + crossover_rate + random_rate must be <= 1 (the rest is mutation)");
    stage_knobs_ = parse_stage_knobs(o.text("stage_knobs"));
  }

  std::vector<Candidate> propose(std::size_t n) override {
    std::vector<Candidate> out;
    while (out.size() < n) {
      auto c = next();
      if (!c) break;  // every valid configuration seen
      seen_.insert(config_hash(c->config));
      out.push_back(std::move(*c));
    }
    return out;
  }

  void observe(const Evaluation& e) override {
    seen_.insert(config_hash(e.config));
    if (!e.measured() || !e.green_passed() || !(e.fast.p50_us > 0)) return;
    // Into its stage's elites, if among the fastest `elites` of that stage.
    auto& stage = stages_[stage_of(e.config)];
    for (const auto& m : stage)
      if (m.config == e.config) return;  // read back twice: already in
    stage.push_back(e);
    std::stable_sort(stage.begin(), stage.end(),
                     [](const Evaluation& a, const Evaluation& b) { return a.fast.p50_us < b.fast.p50_us; });
    if (stage.size() > elites_) {
      const bool entered = stage.back().config != e.config;
      stage.pop_back();
      if (!entered) return;
    }
    // A new elite: queue what the rules suggest for it, fastest parents' suggestions first.
    for (auto& s : suggest_insights(e, profile_, space_))
      insights_.push_back({std::move(s), e.config_hash, e.fast.p50_us});
    std::stable_sort(insights_.begin(), insights_.end(),
                     [](const Pending& a, const Pending& b) { return a.parent_p50 < b.parent_p50; });
  }

 private:
  struct Pending {
    Insight insight;
    std::string parent;
    double parent_p50;
  };

  std::vector<std::string> parse_stage_knobs(const std::string& text) const {
    std::vector<std::string> out;
    if (text == "none") return out;
    if (text == "auto") {
      for (const auto& k : space_.knobs())
        if (k.values == std::vector<std::int64_t>{0, 1}) out.push_back(k.name);
      return out;
    }
    std::stringstream ss(text);
    std::string name;
    while (std::getline(ss, name, '+')) {
      bool known = false;
      for (const auto& k : space_.knobs()) known |= k.name == name;
      if (!known) throw UserError("strategy elites: option stage_knobs: no knob '" + name + "' in the profile");
      out.push_back(name);
    }
    return out;
  }

  std::string stage_of(const Config& c) const {
    std::string s;
    for (const auto& k : stage_knobs_) s += k + "=" + std::to_string(c.at(k)) + ",";
    return s;
  }

  // Every elite of every stage, fastest first (the order makes selection reproducible).
  std::vector<const Evaluation*> population() const {
    std::vector<const Evaluation*> all;
    for (const auto& [_, stage] : stages_)
      for (const auto& e : stage) all.push_back(&e);
    std::stable_sort(all.begin(), all.end(),
                     [](const Evaluation* a, const Evaluation* b) { return a->fast.p50_us < b->fast.p50_us; });
    return all;
  }

  const Evaluation* select(const std::vector<const Evaluation*>& pop) {
    std::size_t best = pop.size();
    for (std::size_t i = 0; i < tournament_; ++i) best = std::min(best, rng_.index(pop.size()));
    return pop[best];  // pop is sorted fastest first: the smallest index drawn wins
  }

  bool fresh(const Config& c) const { return !seen_.count(config_hash(c)) && space_.valid(c); }

  // One knob one step (KnobSpace::neighbours), or two knobs each one step, among the moves not
  // yet seen: a parent whose one-step moves are spent moves two knobs, so a local optimum is left.
  std::optional<Candidate> mutate(const Evaluation& parent) {
    std::vector<Config> moves;
    for (auto& n : space_.neighbours(parent.config))
      if (fresh(n)) moves.push_back(std::move(n));
    if (moves.empty() || rng_.chance(two_knob_rate_)) {
      std::set<Config> two;
      for (const auto& n : space_.neighbours(parent.config))
        for (auto& m : space_.neighbours(n)) {
          int differ = 0;
          for (const auto& [k, v] : m) differ += v != parent.config.at(k);
          if (differ == 2 && fresh(m)) two.insert(std::move(m));
        }
      if (!two.empty()) moves.assign(two.begin(), two.end());  // std::set: a reproducible order
    }
    if (moves.empty()) return std::nullopt;
    return Candidate{moves[rng_.index(moves.size())], Origin{"mutation", "", {parent.config_hash}}};
  }

  std::optional<Candidate> cross(const std::vector<const Evaluation*>& pop) {
    if (pop.size() < 2) return std::nullopt;
    // Two tournaments; with strong selection they often agree, and then this slot mutates instead.
    const Evaluation* a = select(pop);
    const Evaluation* b = select(pop);
    if (a == b) return std::nullopt;
    Config c;
    for (const auto& k : space_.knobs()) c[k.name] = rng_.chance(0.5) ? a->config.at(k.name) : b->config.at(k.name);
    if (c == a->config || c == b->config || !fresh(c)) return std::nullopt;
    return Candidate{c, Origin{"crossover", "", {a->config_hash, b->config_hash}}};
  }

  std::optional<Candidate> insight() {
    while (!insights_.empty()) {
      Pending p = std::move(insights_.front());
      insights_.pop_front();
      if (fresh(p.insight.config)) return Candidate{p.insight.config, Origin{"insight", p.insight.rule, {p.parent}}};
    }
    return std::nullopt;
  }

  std::optional<Candidate> random_draw() {
    auto c = sample_unseen(space_, rng_, seen_);
    if (!c) return std::nullopt;
    return Candidate{*c, Origin{"random", "", {}}};
  }

  std::optional<Candidate> next() {
    const auto pop = population();
    if (pop.empty() && !baseline_tried_) {
      // Nothing timed yet: the baseline first (the run loop usually evaluated it already).
      baseline_tried_ = true;
      Config b(profile_.baseline.begin(), profile_.baseline.end());
      if (fresh(b)) return Candidate{b, Origin{"baseline", "", {}}};
    }
    // The first population beside the baseline: a hand-written baseline often sits in a slow
    // corner of the space (the seeds' stage 2 is 5x off the attention space's best), and climbing
    // from it alone spends the budget on its neighbourhood; uniform draws seed other stages.
    if (initial_left_ > 0) {
      --initial_left_;
      return random_draw();
    }
    if (pop.empty()) return random_draw();
    for (int t = 0; t < kTriesPerSlot; ++t) {
      const double r = rng_.unit();
      std::optional<Candidate> c;
      if (r < insight_rate_)
        c = insight();
      else if (r < insight_rate_ + crossover_rate_)
        c = cross(pop);
      else if (r < insight_rate_ + crossover_rate_ + random_rate_)
        c = random_draw();
      else
        c = mutate(*select(pop));
      if (c) return c;
    }
    return random_draw();  // the elites' neighbourhoods are spent: explore
  }

  const Profile& profile_;
  const KnobSpace& space_;
  SearchRng rng_;
  std::int64_t initial_left_ = 0;
  std::size_t elites_, tournament_;
  double insight_rate_, crossover_rate_, random_rate_, two_knob_rate_;
  std::vector<std::string> stage_knobs_;
  std::map<std::string, std::vector<Evaluation>> stages_;  // stage -> its elites, fastest first
  std::deque<Pending> insights_;
  std::unordered_set<std::string> seen_;
  bool baseline_tried_ = false;
};

}  // namespace

StrategyInfo evolution_strategy_info() {
  return {"elites", "elites per stage, tournament selection, mutation, crossover, insight moves (EvoEngineer style)",
          kOptions, [](const StrategyContext& ctx) { return std::make_unique<EvolutionSearch>(ctx); }};
}

}  // namespace evo
