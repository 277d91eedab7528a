#include "engine/space.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "engine/error.h"
#include "engine/hash.h"

namespace evo {

std::string config_text(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

std::string config_hash(const Config& c) { return short_hash(config_text(c)); }

namespace {
std::atomic<int> g_device_sms{132};
}  // namespace

int device_sms() { return g_device_sms.load(); }
void set_device_sms(int sms) {
  if (sms > 0) g_device_sms.store(sms);
}

Vars expression_vars(const KernelSpec& k, const Problem& p, const Config& c) {
  Vars v(p.sizes.begin(), p.sizes.end());
  v.emplace(kDeviceSmsVar, device_sms());  // a size of that name wins; a define or knob below overrides
  for (const auto& [name, value] : k.defines) {
    char* end = nullptr;
    double d = std::strtod(value.c_str(), &end);
    if (!value.empty() && end && *end == '\0') v[name] = d;
  }
  for (const auto& [name, value] : c) v[name] = static_cast<double>(value);
  return v;
}

bool uses_device_sms(const Profile& p) {
  static const std::regex word(std::string("(^|[^A-Za-z0-9_])") + kDeviceSmsVar + "([^A-Za-z0-9_]|$)");
  auto in = [&](const std::string& e) { return std::regex_search(e, word); };
  std::vector<const KernelSpec*> ks{&p.kernel};
  for (const auto& k : p.later_launches) ks.push_back(&k);
  for (const KernelSpec* k : ks) {
    for (const auto& e : k->launch.grid) if (in(e)) return true;
    for (const auto& e : k->launch.block) if (in(e)) return true;
    if (in(k->launch.shared_bytes)) return true;
  }
  for (const auto& b : p.buffers)
    for (const auto& e : b.shape) if (in(e)) return true;
  for (const auto& s : p.scalars) if (in(s.value)) return true;
  return false;
}

KnobSpace::KnobSpace(const Profile& p) : knobs_(p.knobs) {
  std::vector<std::string> names;
  for (const auto& [n, _] : p.problems.front().sizes) names.push_back(n);
  for (const auto& k : knobs_) names.push_back(k.name);
  for (const auto& [n, _] : expression_vars(p.kernel, p.problems.front(), {})) names.push_back(n);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const auto& c : p.constraints) constraints_.emplace_back(c, names);
  for (const auto& prob : p.problems) {
    problem_vars_.push_back(expression_vars(p.kernel, prob, {}));
    problem_names_.push_back(prob.name);
  }
  for (const auto& v : problem_vars_) {
    same_names_ = same_names_ && v.size() == problem_vars_.front().size() &&
                  std::equal(v.begin(), v.end(), problem_vars_.front().begin(),
                             [](const auto& a, const auto& b) { return a.first == b.first; });
  }
  for (const auto& e : constraints_) {
    bool differs = false;
    for (const auto& name : e.used_vars()) {
      if (std::any_of(knobs_.begin(), knobs_.end(), [&](const KnobDef& k) { return k.name == name; })) continue;
      const Vars& first = problem_vars_.front();
      for (const Vars& v : problem_vars_) {
        const auto a = v.find(name), b = first.find(name);
        differs = differs || (a == v.end()) != (b == first.end()) ||
                  (a != v.end() && b != first.end() && a->second != b->second);
      }
    }
    per_problem_.push_back(differs);
  }
}

std::uint64_t KnobSpace::size() const {
  std::uint64_t n = 1;
  for (const auto& k : knobs_) n *= k.values.size();
  return n;
}

std::optional<std::string> KnobSpace::why_invalid(const Config& c) const {
  for (const auto& [name, _] : c)
    if (std::none_of(knobs_.begin(), knobs_.end(), [&](const KnobDef& k) { return k.name == name; }))
      return "unknown knob " + name;
  for (const auto& k : knobs_) {
    auto it = c.find(k.name);
    if (it == c.end()) return "knob " + k.name + " has no value";
    if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end()) {
      std::string choices;
      for (auto v : k.values) choices += (choices.empty() ? "" : ", ") + std::to_string(v);
      return k.name + "=" + std::to_string(it->second) + " not allowed (choose " + choices + ")";
    }
  }
  // The first problem judges every constraint, in order (its message names the first that is
  // false); the others only those that read a size they do not share (sdpa_fp8_wgmma: 93 312
  // configurations of 7 problems and 19 constraints enumerated at each run's start).
  Vars v;
  for (std::size_t pi = 0; pi < problem_vars_.size(); ++pi) {
    if (pi == 0 || !same_names_) {
      v = problem_vars_[pi];
      for (const auto& [name, value] : c) v[name] = static_cast<double>(value);
    } else {
      for (const auto& [name, value] : problem_vars_[pi])
        if (!c.count(name)) v[name] = value;
    }
    for (std::size_t ci = 0; ci < constraints_.size(); ++ci) {
      if (pi > 0 && same_names_ && !per_problem_[ci]) continue;
      const Expr& e = constraints_[ci];
      double r;
      try {
        r = e.eval(v);
      } catch (const UserError& err) {
        return std::string(err.what()) + " for problem " + problem_names_[pi];
      }
      if (r == 0.0) return "constraint '" + e.text() + "' false for problem " + problem_names_[pi];
    }
  }
  return std::nullopt;
}

Config KnobSpace::config_at(std::uint64_t index) const {
  Config c;
  for (auto it = knobs_.rbegin(); it != knobs_.rend(); ++it) {
    c[it->name] = it->values[index % it->values.size()];
    index /= it->values.size();
  }
  return c;
}

const std::vector<Config>& KnobSpace::enumerate_valid() const& {
  if (!valid_cache_) {
    // why_invalid's verdict on each index, without its map building: every configuration of the
    // space is well formed, so only the constraints can say no. Each problem's variables keep a
    // slot per knob that a configuration writes its values into (sdpa_fp8_wgmma: 93 312 indices,
    // 7 problems, 19 constraints, at each run's start).
    std::vector<Vars> vars = problem_vars_;
    std::vector<std::vector<double*>> slots(vars.size());
    for (std::size_t pi = 0; pi < vars.size(); ++pi)
      for (const auto& k : knobs_) slots[pi].push_back(&vars[pi][k.name]);
    std::vector<std::size_t> digit(knobs_.size(), 0);
    std::vector<Config> out;
    const std::uint64_t n = size();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t index = i;
      for (std::size_t k = knobs_.size(); k-- > 0;) {  // as config_at: the last knob varies fastest
        digit[k] = index % knobs_[k].values.size();
        index /= knobs_[k].values.size();
      }
      bool ok = true;
      for (std::size_t pi = 0; pi < vars.size() && ok; ++pi) {
        for (std::size_t k = 0; k < knobs_.size(); ++k) *slots[pi][k] = static_cast<double>(knobs_[k].values[digit[k]]);
        for (std::size_t ci = 0; ci < constraints_.size() && ok; ++ci) {
          if (pi > 0 && same_names_ && !per_problem_[ci]) continue;
          try {
            ok = constraints_[ci].eval(vars[pi]) != 0.0;
          } catch (const UserError&) {
            ok = false;
          }
        }
      }
      if (ok) out.push_back(config_at(i));
    }
    valid_cache_ = std::move(out);
  }
  return *valid_cache_;
}

std::optional<Config> KnobSpace::sample(std::mt19937_64& rng) const {
  // Rejection sampling is uniform over valid configs; when constraints reject most of the
  // space, fall back to drawing from the enumerated valid set (also uniform).
  std::uniform_int_distribution<std::uint64_t> pick(0, size() - 1);
  for (int tries = 0; tries < 256 && !valid_cache_; ++tries) {
    Config c = config_at(pick(rng));
    if (valid(c)) return c;
  }
  const auto& all = enumerate_valid();
  if (all.empty()) return std::nullopt;
  std::uniform_int_distribution<std::size_t> idx(0, all.size() - 1);
  return all[idx(rng)];
}

std::vector<Config> KnobSpace::neighbours(const Config& c) const {
  std::vector<Config> out;
  for (const auto& k : knobs_) {
    auto it = std::find(k.values.begin(), k.values.end(), c.at(k.name));
    if (it == k.values.end()) continue;
    for (int step : {-1, 1}) {
      auto pos = (it - k.values.begin()) + step;
      if (pos < 0 || pos >= static_cast<long>(k.values.size())) continue;
      Config n = c;
      n[k.name] = k.values[pos];
      if (valid(n)) out.push_back(std::move(n));
    }
  }
  return out;
}

Config KnobSpace::parse(const std::string& text, const Config& base) const {
  Config c = base;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw UserError("--knobs: '" + item + "' is not KNOB=VALUE");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    auto k = std::find_if(knobs_.begin(), knobs_.end(), [&](const KnobDef& d) { return d.name == name; });
    if (k == knobs_.end()) {
      std::string names;
      for (const auto& d : knobs_) names += (names.empty() ? "" : ", ") + d.name;
      throw UserError("--knobs: unknown knob '" + name + "' (knobs: " + names + ")");
    }
    char* end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') throw UserError("--knobs: " + name + "='" + value + "' is not an integer");
    if (std::find(k->values.begin(), k->values.end(), v) == k->values.end()) {
      std::string choices;
      for (auto x : k->values) choices += (choices.empty() ? "" : ", ") + std::to_string(x);
      throw UserError("--knobs: " + name + "=" + value + " not allowed (choose " + choices + ")");
    }
    c[name] = v;
  }
  return c;
}

}  // namespace evo
