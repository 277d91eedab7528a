// The one exception evo throws for the user's mistakes and broken environments (DESIGN.md):
// a bad profile, an unreadable database, no NVRTC. cli/ catches it once and prints
// "evo: <what>" with a non-zero exit. A gate that says no is never an exception: it is a verdict.
#pragma once
#include <stdexcept>
#include <string>

namespace evo {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// For "file: field: message" errors about a profile or another input file.
[[noreturn]] inline void fail_at(const std::string& where, const std::string& field, const std::string& msg) {
  throw UserError(where + ": " + (field.empty() ? "" : field + ": ") + msg);
}

}  // namespace evo
