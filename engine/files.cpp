#include "engine/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/error.h"

namespace evo {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& p) {
  // read(2) into a string of the file's size: a stream's rdbuf() into an ostringstream took 12 ms
  // for an 8 MB trial-store fill against 0.5 ms, and a worker's first GREEN reads a dozen of them.
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string s(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0), '\0');
  std::size_t at = 0;
  for (;;) {
    if (at == s.size()) s.resize(s.size() + 65536);  // grown since fstat, or not a regular file
    const ssize_t n = ::read(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    at += static_cast<std::size_t>(n);
  }
  ::close(fd);
  s.resize(at);
  return s;
}

void write_atomic(const fs::path& path, std::string_view data, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(tmp.string() + ": cannot write " + what + ": " + std::strerror(errno));
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw UserError(tmp.string() + ": cannot write " + what + ": " + std::strerror(err));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw UserError(path.string() + ": cannot write " + what + ": " + std::strerror(err));
  }
}

}  // namespace evo
