// `evo export-landscape RUN --to FILE`: a run's evaluations as a replay landscape (format in
// docs/search.md, reader and writer in engine/replay.h), so a search recorded once on a GPU can
// be replayed by every strategy on any machine.
#pragma once
#include <cstdint>
#include <filesystem>

#include "engine/replay.h"  // defines: Landscape
#include "population/store.h"

namespace evo {

// One point per distinct configuration of the run (its first definitive verdict), the knob space
// from the run's profile (or from the landscape a replay run read). Throws UserError for an
// unknown run, a run with no evaluations, or a file that cannot be written (naming it). Returns
// what it wrote.
Landscape write_landscape(const Store& store, std::int64_t run, const std::filesystem::path& path);

}  // namespace evo
