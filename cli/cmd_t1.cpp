// evo import-t1 | import-landscape: others' tuning problems (T1) and their recorded spaces (Kernel
// Tuner caches, T4 results) as evo profiles and landscapes. Nothing is written unless all of it is
// right: a file goes to a temporary name, is read back as evo reads it, then renamed.
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <system_error>

#include "cli/commands.h"
#include "engine/error.h"
#include "engine/landscape_import.h"
#include "engine/profile.h"
#include "engine/replay.h"
#include "engine/space.h"
#include "engine/t1.h"

namespace evo::cli {

namespace {

namespace fs = std::filesystem;

// `text` into `to`, once `check(temporary path)` accepts it; the temporary file is removed either way.
void write_checked(const fs::path& to, const std::string& text, const std::function<void(const fs::path&)>& check) {
  const fs::path tmp = to.string() + ".evo-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError(to.string() + ": cannot write here");
    out << text;
  }
  try {
    check(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, to, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError(to.string() + ": cannot write here (" + ec.message() + ")");
  }
}

// The profile's paths (its kernel, the raw files its buffers are filled from), relative to `dir`
// (where the profile will be read from).
void relocate(nlohmann::ordered_json& profile, const T1Spec& t, const fs::path& dir) {
  const fs::path base = fs::weakly_canonical(fs::absolute(dir));
  auto moved = [&](const std::string& as_written) {
    const fs::path source = fs::weakly_canonical(t.path.parent_path() / as_written);
    const fs::path rel = source.lexically_relative(base);
    return rel.empty() ? source.string() : rel.string();
  };
  const std::string text = moved(profile["template"].get<std::string>());
  profile["template"] = text;
  if (profile["reference"].contains("template")) profile["reference"]["template"] = text;
  for (auto& b : profile["buffers"])
    if (b.contains("init") && b["init"].value("dist", "") == "raw") b["init"]["file"] = moved(b["init"]["file"].get<std::string>());
}

}  // namespace

int cmd_import_t1(const Globals& g, const std::string& file, const std::string& to) {
  T1Spec t = read_t1(file);
  const bool to_stdout = to.empty();
  relocate(t.profile, t, to_stdout ? fs::current_path() : fs::absolute(to).parent_path());
  const std::string text = t.profile.dump(2) + "\n";
  std::size_t valid = 0;
  auto check = [&](const fs::path& p) {
    const Profile prof = load_profile(p);
    valid = KnobSpace(prof).enumerate_valid().size();
  };
  if (to_stdout) {
    check(file);
    std::cout << text;
  } else {
    write_checked(to, text, check);
  }
  std::ostream& info = to_stdout ? std::cerr : std::cout;
  info << (to_stdout ? "" : "wrote " + to + ": ") << "profile " << t.name << ", " << t.knobs.size() << " knobs, " << valid
       << " configurations pass the " << t.conditions.size() << " conditions; reference: " << t1_reference_text(t) << "\n";
  return 0;
}

int cmd_import_landscape(const Globals& g, const ImportLandscapeArgs& a) {
  const T1Spec t = read_t1(a.t1, /*need_kernel=*/false);
  const LandscapeImport im = import_landscape(a.file, t);
  if (im.landscape.points.empty())
    throw UserError(a.file + ": none of its " + std::to_string(im.entries) + " entries is a configuration of " + a.t1 +
                    " that passes its conditions");
  const std::string text = landscape_text(im.landscape);
  const std::string line = a.file + ": " + im.source + ", device " + im.landscape.device + ": " + import_summary(im);
  if (a.to.empty()) {
    std::cout << text;
    std::cerr << line << "\n";
    return 0;
  }
  // Read back as `evo run --replay` reads it: every point valid, none twice, the baseline valid.
  write_checked(a.to, text, [](const fs::path& p) { ReplayEvaluator check(p); });
  std::cout << "wrote " << a.to << ": " << line << "\n";
  return 0;
}

}  // namespace evo::cli
