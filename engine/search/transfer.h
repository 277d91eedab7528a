// Transfer: what was fast on a related task is proposed first on this one. A tuning team tunes the
// same kernel for several shapes and GPUs; the best configurations of one are often among the best
// of the next (docs/results/search-transfer.md measures how often), and a handful of evaluations
// tells the model whether they are. A source is one related task's measured configurations,
// fastest first: another problem or device of the same profile in the database (`evo run` finds
// them), or a landscape file (`--transfer-from`).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/profile.h"  // defines: Problem
#include "engine/space.h"    // defines: Config, KnobSpace

namespace evo {

struct TransferSource {
  std::string label;               // "problem mission on NVIDIA H200 (run 4)", "landscape_x.json"
  std::vector<Config> best_first;  // its measured configurations, fastest first
};

// `from` in this space, knob by knob: its value when the knob allows it, else the allowed value
// nearest it, and the baseline's for a knob `from` does not set. nullopt when that is not valid.
std::optional<Config> map_into_space(const Config& from, const KnobSpace& space, const Config& baseline);

struct TransferCandidate {
  Config config;
  std::size_t source = 0;  // its index in the sources
};

// Round robin over the sources (each one's fastest, then each one's second, ...), mapped into this
// space, valid, neither the baseline nor proposed twice; at most `limit`.
std::vector<TransferCandidate> transfer_candidates(const std::vector<TransferSource>& sources, const KnobSpace& space,
                                                   const Config& baseline, std::size_t limit);

// How far one problem is from another, as the dispatch measures it (docs/guide.md, a kernel per
// shape): the sum over `to`'s sizes of |log2(1 + x) - log2(1 + y)|, a size `from` lacks counting 64.
// The nearest problem's best configurations are proposed first.
double problem_distance(const Problem& from, const Problem& to);

// A landscape file's measured configurations, fastest first, labelled by its file name, profile,
// problem and device. Throws UserError naming the file as read_landscape does.
TransferSource transfer_from_landscape(const std::filesystem::path& file);

}  // namespace evo
