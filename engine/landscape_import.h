// Landscapes from others' data: a Kernel Tuner cache file (the benchmark hub's cachefiles/*.json.gz,
// Kernel Tuner's test caches) or a T4 results file, read against the T1 file that defines its
// space, as an evo landscape (engine/replay.h) that `evo run --replay` searches.
//
// Every entry is a configuration of the T1 parameters. One that passes the T1 conditions becomes a
// point: a time is `measured` (its median the time Kernel Tuner optimised, ms -> us), a failure
// keeps its kind (docs/t1.md, "Landscapes from others' data"). Entries outside the conditions are
// not in evo's space and are left out; valid configurations the file does not hold are counted
// as missing (a replay treats them as "not recorded").
#pragma once
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "engine/replay.h"  // defines: Landscape
#include "engine/t1.h"      // defines: T1Spec

namespace evo {

struct LandscapeImport {
  Landscape landscape;
  std::string source;                       // "Kernel Tuner cache" or "T4 results"
  std::size_t entries = 0;                  // configurations the file holds
  std::size_t outside = 0;                  // of those, outside the T1 conditions: left out
  std::size_t valid = 0;                    // configurations of the T1 space passing its conditions
  std::size_t missing = 0;                  // of those, not in the file
  std::map<std::string, std::size_t> by_status;  // points per status name
};

// Throws UserError("<file>: <field>: <what>") for a file that is not a cache or T4 file of this
// space (another kernel's parameters, a value that is not a number).
LandscapeImport import_landscape(const std::filesystem::path& file, const T1Spec& t1);

// A file's bytes, gunzipped when they are gzip (the hub stores its caches as .json.gz).
std::string read_maybe_gzip(const std::filesystem::path& file);

// "4362 configurations: 4000 measured, 300 compile_error, 62 static_rejected; 0 of 4362 valid missing; ..."
std::string import_summary(const LandscapeImport& im);

}  // namespace evo
