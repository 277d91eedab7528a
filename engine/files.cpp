#include "engine/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/error.h"

namespace evo {

namespace fs = std::filesystem;

namespace {

// Reads fd to its end into b from `at`, b sized beforehand to what fstat said. When b is full, a
// small probe asks for more (the file grew since fstat, or is not a regular file), so that the
// usual end, read(2) answering 0, never makes b grow and move. b ends at what was read; false on
// an error.
template <typename Buffer>
bool read_to_end(int fd, Buffer& b, std::size_t at) {
  for (;;) {
    if (at == b.size()) {
      char probe[4096];
      const ssize_t n = ::read(fd, probe, sizeof probe);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) break;
      b.insert(b.end(), probe, probe + n);
      at += static_cast<std::size_t>(n);
      continue;
    }
    const ssize_t n = ::read(fd, b.data() + at, b.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    at += static_cast<std::size_t>(n);
  }
  b.resize(at);
  return true;
}

}  // namespace

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
  const bool whole = read_to_end(fd, s, 0);
  ::close(fd);
  if (!whole) return std::nullopt;
  return s;
}

std::optional<HeadedFile> read_headed_file(const fs::path& p) {
  // The first 64 KB hold the line (a header of a few hundred bytes); what follows it there is the
  // body's start, and the rest of the body is read into place.
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto read_some = [fd](void* at, std::size_t want) -> ssize_t {
    for (;;) {
      const ssize_t n = ::read(fd, at, want);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  HeadedFile f;
  std::string first(65536, '\0');
  std::size_t got = 0;
  std::size_t eol = std::string::npos;
  while (eol == std::string::npos) {
    if (got == first.size()) first.resize(first.size() * 2);
    const ssize_t n = read_some(first.data() + got, first.size() - got);
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    const std::size_t from = got;
    got += static_cast<std::size_t>(n);
    if (const void* nl = std::memchr(first.data() + from, '\n', got - from))
      eol = static_cast<std::size_t>(static_cast<const char*>(nl) - first.data());
  }
  if (eol == std::string::npos) {
    ::close(fd);
    f.head = first.substr(0, got);
    return f;
  }
  f.newline = true;
  f.head = first.substr(0, eol);
  const std::size_t size = static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0);
  const std::size_t start = got - eol - 1;  // body bytes read with the line
  f.body.resize(std::max(size > eol + 1 ? size - eol - 1 : 0, start));
  std::memcpy(f.body.data(), first.data() + eol + 1, start);
  const bool whole = read_to_end(fd, f.body, start);
  ::close(fd);
  if (!whole) return std::nullopt;
  return f;
}

void write_atomic(const fs::path& path, std::string_view data, const std::string& what) {
  write_atomic(path, std::vector<std::string_view>{data}, what);
}

void write_atomic(const fs::path& path, const std::vector<std::string_view>& pieces, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(tmp.string() + ": cannot write " + what + ": " + std::strerror(errno));
  for (std::string_view data : pieces) {
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
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw UserError(path.string() + ": cannot write " + what + ": " + std::strerror(err));
  }
}

}  // namespace evo
