// The knob space of a profile: which configurations exist, which are valid (every knob an
// allowed value, every constraint true for every problem), how to walk between them.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/expr.h"
#include "engine/profile.h"

namespace evo {

// Knob name -> value. A std::map so that the canonical text and hash do not depend on order.
using Config = std::map<std::string, std::int64_t>;

std::string config_text(const Config& c);  // "BLOCK_K=32,BLOCK_M=64,..." (sorted by name)
std::string config_hash(const Config& c);  // 16 hex digits of SHA-256(config_text)

class KnobSpace {
 public:
  explicit KnobSpace(const Profile& p);

  const std::vector<KnobDef>& knobs() const { return knobs_; }
  std::uint64_t size() const;  // every combination, valid or not

  // Why a config is not valid ("TILE_M=96 not allowed (choose 32, 64)", "constraint
  // 'TILE_M % 16 == 0' false for problem small"), or nullopt if it is valid.
  std::optional<std::string> why_invalid(const Config& c) const;
  bool valid(const Config& c) const { return !why_invalid(c); }

  // In lexicographic knob order, computed once and kept. A temporary space hands out a copy, so
  // `for (auto& c : KnobSpace(p).enumerate_valid())` does not outlive what it iterates.
  const std::vector<Config>& enumerate_valid() const&;
  std::vector<Config> enumerate_valid() const&& { return enumerate_valid(); }
  std::optional<Config> sample(std::mt19937_64& rng) const;  // uniform among valid configs
  std::vector<Config> neighbours(const Config& c) const;    // valid configs one knob one step away

  // "K=V,K=V" (a subset of knobs; the rest taken from `base`). Throws UserError naming the
  // unknown knob or disallowed value.
  Config parse(const std::string& text, const Config& base) const;

 private:
  Config config_at(std::uint64_t index) const;
  std::vector<KnobDef> knobs_;
  std::vector<Expr> constraints_;
  std::vector<Vars> problem_vars_;  // sizes (and numeric fixed defines) of each problem
  std::vector<std::string> problem_names_;
  // Per constraint: whether a variable it reads differs between the problems (else one problem
  // answers for all). Only meaningful where every problem names the same variables.
  std::vector<bool> per_problem_;
  bool same_names_ = true;
  mutable std::optional<std::vector<Config>> valid_cache_;
};

// Problem sizes, numeric fixed defines of `k`, and the knobs, as expression variables; and NUM_SMS,
// the multiprocessor count of the GPU the kernels run on (a persistent grid is sized by it), unless
// the profile names a size, define or knob so.
Vars expression_vars(const KernelSpec& k, const Problem& p, const Config& c);

// The name expressions read the multiprocessor count by.
inline constexpr const char* kDeviceSmsVar = "NUM_SMS";
// NUM_SMS's value: 132 (H100 SXM, H200) until evo knows its device; the worker process sets its own
// device's, a run its (first) device's, so geometry, features and exports agree with what launches.
int device_sms();
void set_device_sms(int sms);
// Whether any launch, buffer shape or scalar of p reads NUM_SMS (a run over GPUs of different SM
// counts is refused then: one value per run).
bool uses_device_sms(const Profile& p);

}  // namespace evo
