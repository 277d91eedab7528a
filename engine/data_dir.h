// Where evo's shipped data (profiles/ and templates/, side by side) is found at run time. Never a
// compile-time path: an installed evo (<prefix>/bin/evo) reads <prefix>/share/evo, a build tree's
// evo reads <build>/share/evo (links CMake writes to the source's profiles/ and templates/), and
// $EVO_DATA_DIR (or the global option --data-dir, which sets it) overrides both.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace evo {

std::filesystem::path executable_path();  // /proc/self/exe

// The folders data_dir() would take, in order, for an executable at `exe` with `env_data_dir`
// ($EVO_DATA_DIR, "" = unset). Pure: tests pin the order without touching the process.
std::vector<std::filesystem::path> data_dir_candidates(const std::filesystem::path& exe,
                                                       const std::string& env_data_dir);

// The first candidate holding a profiles/ folder. Throws UserError naming every place looked at
// (and how to point evo at its data) when there is none.
std::filesystem::path data_dir();

}  // namespace evo
