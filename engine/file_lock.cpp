#include "engine/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "engine/error.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

int open_lock_file(const fs::path& file) {
  std::error_code ec;
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(file.string() + ": cannot open the lock file: " + std::strerror(errno));
  return fd;
}

// True when held; false when another holder has it. Other failures are the environment's.
bool try_flock(int fd, const fs::path& file) {
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno == EWOULDBLOCK) return false;
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd);
    throw UserError(file.string() + ": cannot lock: " + std::strerror(e));
  }
}

}  // namespace

std::optional<FileLock> FileLock::try_acquire(const fs::path& file) {
  const int fd = open_lock_file(file);
  if (try_flock(fd, file)) return FileLock(fd);
  ::close(fd);
  return std::nullopt;
}

FileLock FileLock::acquire(const fs::path& file, const std::function<void()>& waiting, double every_s) {
  const int fd = open_lock_file(file);
  // Polled rather than blocking in flock, so the waiter can keep beating. The nap grows to 5 ms:
  // a lock held for a metrics pass (a quarter of a second) is taken within a few ms of its release.
  auto last_beat = std::chrono::steady_clock::now();
  for (auto nap = std::chrono::microseconds(200);; nap = std::min(nap * 2, std::chrono::microseconds(5000))) {
    if (try_flock(fd, file)) return FileLock(fd);
    if (waiting && std::chrono::duration<double>(std::chrono::steady_clock::now() - last_beat).count() >= every_s) {
      waiting();
      last_beat = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(nap);
  }
}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

}  // namespace evo
