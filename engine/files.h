// Whole files, as the caches under the compile cache's folder use them: read at once, and written
// so that a reader sees all of a file or none of it, whatever concurrent processes or kill -9 do.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace evo {

std::optional<std::string> read_file(const std::filesystem::path& p);  // nullopt: cannot be read

// A private temporary file in the same folder, then rename(2), which replaces atomically. Throws
// UserError("<file>: cannot write <what>: <why>"), leaving nothing behind.
void write_atomic(const std::filesystem::path& path, std::string_view data, const std::string& what);

}  // namespace evo
