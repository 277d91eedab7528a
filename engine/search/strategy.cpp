// The strategy registry and the helpers every strategy shares (options, randomness, sampling).
#include "engine/search/strategy.h"

#include <cmath>
#include <cstdlib>

#include "engine/error.h"

namespace evo {

const std::vector<StrategyInfo>& registered_strategies() {
  // An explicit list, not self-registering statics: a static library drops objects nothing
  // references, and this order is the one users read.
  static const std::vector<StrategyInfo> all = {model_strategy_info(), evolution_strategy_info(), random_strategy_info(),
                                                exhaustive_strategy_info(), external_strategy_info()};
  return all;
}

const StrategyInfo& find_strategy(const std::string& name) {
  std::string names;
  for (const auto& s : registered_strategies()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw UserError("unknown strategy '" + name + "' (choose " + names + ")");
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyContext& ctx) {
  const StrategyInfo& info = find_strategy(name);
  OptionValues check(info.name, info.options, ctx.options);  // throws for unknown options
  return info.make(ctx);
}

OptionValues::OptionValues(const std::string& strategy, const std::vector<StrategyOption>& table,
                           const std::map<std::string, std::string>& given)
    : strategy_(strategy) {
  for (const auto& o : table) values_[o.name] = o.default_value;
  for (const auto& [k, v] : given) {
    if (!values_.count(k)) {
      std::string names;
      for (const auto& o : table) names += (names.empty() ? "" : ", ") + o.name;
      throw UserError("strategy " + strategy + ": unknown option '" + k + "' (" +
                      (names.empty() ? std::string("it takes no options") : "options: " + names) + ")");
    }
    values_[k] = v;
    given_.insert(k);
  }
}

const std::string& OptionValues::text(const std::string& name) const { return values_.at(name); }

std::int64_t OptionValues::integer(const std::string& name, std::int64_t min, std::int64_t max) const {
  const std::string& s = text(name);
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min || v > max)
    throw UserError("strategy " + strategy_ + ": option " + name + "='" + s + "': not an integer in [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

double OptionValues::number(const std::string& name, double min, double max) const {
  const std::string& s = text(name);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    auto fmt = [](double x) {
      std::string t = std::to_string(x);
      t.erase(t.find_last_not_of('0') + 1);
      if (!t.empty() && t.back() == '.') t.pop_back();
      return t;
    };
    throw UserError("strategy " + strategy_ + ": option " + name + "='" + s + "': not a number in [" + fmt(min) +
                    ", " + fmt(max) + "]");
  }
  return v;
}

std::size_t SearchRng::index(std::size_t n) {
  // Rejection sampling: unbiased, and the same on every platform.
  const std::uint64_t range = n;
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  std::uint64_t x;
  do x = gen_();
  while (x >= limit);
  return static_cast<std::size_t>(x % range);
}

double SearchRng::unit() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

std::optional<Config> sample_unseen(const KnobSpace& space, SearchRng& rng,
                                    const std::unordered_set<std::string>& seen) {
  if (space.knobs().empty()) return std::nullopt;
  for (int tries = 0; tries < 64; ++tries) {
    Config c;
    for (const auto& k : space.knobs()) c[k.name] = k.values[rng.index(k.values.size())];
    if (!seen.count(config_hash(c)) && space.valid(c)) return c;
  }
  std::vector<Config> left;
  for (auto& c : space.enumerate_valid())
    if (!seen.count(config_hash(c))) left.push_back(std::move(c));
  if (left.empty()) return std::nullopt;
  return left[rng.index(left.size())];
}

}  // namespace evo
