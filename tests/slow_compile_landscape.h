// A landscape with one very long compile among short ones (Kernel Tuner's convolution: 4 s at the
// median, 50 s at most on a 4 x H200 host), for the tests of the run loop's budget's end.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/replay.h"  // defines: Landscape, read_landscape, landscape_text, landscape_profile
#include "engine/space.h"

namespace evo::test {

struct SlowCompileLandscape {
  std::filesystem::path path;
  std::string slow;  // the config hash of the one slow compile
};

// tests/data/landscape_synthetic.json with exhaustive's first proposal after the baseline (which is
// its very first, and always measured) compiling for `slow_s`, every other configuration for
// `others_s`, written into `dir`.
inline SlowCompileLandscape write_slow_compile_landscape(const std::filesystem::path& root, const std::filesystem::path& dir,
                                                         double slow_s, double others_s) {
  const std::filesystem::path synthetic = root / "tests" / "data" / "landscape_synthetic.json";
  Landscape land = read_landscape(synthetic);
  KnobSpace space(landscape_profile(land, synthetic));
  SlowCompileLandscape out;
  const std::string baseline = config_hash(land.baseline);
  for (const auto& c : space.enumerate_valid())
    if (config_hash(c) != baseline) {
      out.slow = config_hash(c);
      break;
    }
  for (auto& p : land.points) p.seconds_compile = config_hash(p.knobs) == out.slow ? slow_s : others_s;
  out.path = dir / "landscape_slow_compile.json";
  std::ofstream(out.path) << landscape_text(land);
  return out;
}

}  // namespace evo::test
