// Which profile `evo run` searches when none is named: the shipped profile whose "best_for" lists
// the device's arch (sdpa_fp8_wgmma on sm_90, a Hopper kernel), else sdpa_fp8, which runs anywhere.
#pragma once
#include <string>
#include <vector>

namespace evo {

inline constexpr const char* kFallbackProfile = "sdpa_fp8";

struct ProfileCandidate {
  std::string name;
  std::vector<std::string> best_for;  // the profile's "best_for": ["sm_90"]
};

struct ProfileChoice {
  std::string name;
  std::string reason;  // one line for the user: why this one
};

// device_cc: the device's arch, "sm_90". Several profiles best for it: the first by name, the
// reason naming the others. Pure, so the choice is tested without a GPU.
ProfileChoice choose_default_profile(const std::string& device_cc, std::vector<ProfileCandidate> profiles);

// The shipped profiles (profiles_dir()) with their best_for; each is loaded, so a broken one fails.
std::vector<ProfileCandidate> shipped_profile_candidates();

}  // namespace evo
