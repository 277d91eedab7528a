// The default profile follows the device (default_profile.h).
#include "engine/default_profile.h"

#include <algorithm>
#include <filesystem>

#include "engine/profile.h"

namespace evo {

ProfileChoice choose_default_profile(const std::string& device_cc, std::vector<ProfileCandidate> profiles) {
  std::sort(profiles.begin(), profiles.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::string> matches;
  for (const auto& p : profiles)
    if (std::find(p.best_for.begin(), p.best_for.end(), device_cc) != p.best_for.end()) matches.push_back(p.name);
  if (matches.empty())
    return {kFallbackProfile, "no shipped profile lists " + device_cc + " in best_for; the default " +
                                  std::string(kFallbackProfile) + " runs on any device"};
  std::string reason = "its best_for lists " + device_cc + ", the device's arch";
  if (matches.size() > 1) {
    reason += " (so do";
    for (std::size_t i = 1; i < matches.size(); ++i) reason += " " + matches[i];
    reason += "; pass --profile to take another)";
  }
  return {matches.front(), reason};
}

std::vector<ProfileCandidate> shipped_profile_candidates() {
  std::vector<ProfileCandidate> out;
  for (const auto& e : std::filesystem::directory_iterator(profiles_dir()))
    if (e.path().extension() == ".json") {
      const Profile p = load_profile(e.path());
      out.push_back({e.path().stem().string(), p.best_for});
    }
  return out;
}

}  // namespace evo
