// Finding the shipped profiles and templates relative to the running executable (data_dir.h).
#include "engine/data_dir.h"

#include <cstdlib>

#include "engine/error.h"

namespace evo {

std::filesystem::path executable_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

std::vector<std::filesystem::path> data_dir_candidates(const std::filesystem::path& exe,
                                                       const std::string& env_data_dir) {
  if (!env_data_dir.empty()) return {env_data_dir};  // asked for explicitly: nowhere else
  const auto bin = exe.parent_path();
  return {
      bin.parent_path() / "share" / "evo",  // installed: <prefix>/bin/evo
      bin / "share" / "evo",                // build tree or bundle: <dir>/evo beside <dir>/share/evo
  };
}

std::filesystem::path data_dir() {
  const char* env = std::getenv("EVO_DATA_DIR");
  const auto candidates = data_dir_candidates(executable_path(), env ? env : "");
  std::string looked;
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_directory(c / "profiles", ec)) return c;
    looked += (looked.empty() ? "" : ", ") + (c / "profiles").string();
  }
  throw UserError("evo's shipped profiles not found (looked in " + looked +
                  "); install evo (cmake --install) or set EVO_DATA_DIR / --data-dir to the folder holding "
                  "profiles/ and templates/");
}

}  // namespace evo
