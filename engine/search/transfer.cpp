#include "engine/search/transfer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "engine/replay.h"

namespace evo {

std::optional<Config> map_into_space(const Config& from, const KnobSpace& space, const Config& baseline) {
  Config c;
  for (const auto& k : space.knobs()) {
    const auto it = from.find(k.name);
    if (it == from.end()) {
      const auto b = baseline.find(k.name);
      if (b == baseline.end()) return std::nullopt;
      c[k.name] = b->second;
      continue;
    }
    // The allowed value nearest the source's (the first of two as near): a tile of 96 where this
    // space offers 64 and 128 becomes 64, a knob of the same values keeps its value.
    std::int64_t pick = k.values.front();
    for (auto v : k.values)
      if (std::llabs(v - it->second) < std::llabs(pick - it->second)) pick = v;
    c[k.name] = pick;
  }
  if (!space.valid(c)) return std::nullopt;
  return c;
}

std::vector<TransferCandidate> transfer_candidates(const std::vector<TransferSource>& sources, const KnobSpace& space,
                                                   const Config& baseline, std::size_t limit) {
  std::vector<TransferCandidate> out;
  std::unordered_set<std::string> taken{config_hash(baseline)};
  std::vector<std::size_t> next(sources.size(), 0);
  for (bool more = true; more && out.size() < limit;) {
    more = false;
    for (std::size_t s = 0; s < sources.size() && out.size() < limit; ++s) {
      // Each source gives its next configuration that maps to a new valid one.
      const auto& list = sources[s].best_first;
      while (next[s] < list.size()) {
        const auto c = map_into_space(list[next[s]++], space, baseline);
        if (c && taken.insert(config_hash(*c)).second) {
          out.push_back({*c, s});
          break;
        }
      }
      more = more || next[s] < list.size();
    }
  }
  return out;
}

double problem_distance(const Problem& from, const Problem& to) {
  double d = 0;
  for (const auto& [name, x] : to.sizes) {
    const auto y = from.sizes.find(name);
    d += y == from.sizes.end() ? 64.0
                               : std::fabs(std::log2(1 + std::max(0.0, x)) - std::log2(1 + std::max(0.0, y->second)));
  }
  return d;
}

TransferSource transfer_from_landscape(const std::filesystem::path& file) {
  const Landscape l = read_landscape(file);
  std::vector<const LandscapePoint*> measured;
  for (const auto& p : l.points)
    if (p.status == Status::Measured && p.p50_us > 0) measured.push_back(&p);
  std::stable_sort(measured.begin(), measured.end(),
                   [](const LandscapePoint* a, const LandscapePoint* b) { return a->p50_us < b->p50_us; });
  TransferSource s;
  s.label = file.filename().string() + " (" + l.profile + ", problem " + l.problem + " on " + l.device + ")";
  for (const auto* p : measured) s.best_first.push_back(p->knobs);
  return s;
}

}  // namespace evo
