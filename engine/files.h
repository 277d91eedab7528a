// Whole files, as the caches under the compile cache's folder use them: read at once, and written
// so that a reader sees all of a file or none of it, whatever concurrent processes or kill -9 do.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evo {

std::optional<std::string> read_file(const std::filesystem::path& p);  // nullopt: cannot be read

// A file of one text line and a binary body after it (the trial store's entries): the line
// without its newline, and the body read straight into its own buffer, so a body of megabytes is
// never copied or moved once read. `newline` false: the file has no newline (body empty).
struct HeadedFile {
  std::string head;
  std::vector<std::uint8_t> body;
  bool newline = false;
};
std::optional<HeadedFile> read_headed_file(const std::filesystem::path& p);  // nullopt: cannot be read

// A private temporary file in the same folder, then rename(2), which replaces atomically. Throws
// UserError("<file>: cannot write <what>: <why>"), leaving nothing behind.
void write_atomic(const std::filesystem::path& path, std::string_view data, const std::string& what);
// The same with the file's bytes given in pieces, written one after the other (no joined copy).
void write_atomic(const std::filesystem::path& path, const std::vector<std::string_view>& pieces, const std::string& what);

}  // namespace evo
