// An advisory lock on a file (flock), shared by every evo process of a host that names the same
// file: the GPU workers of one run, and of other runs over the same compile cache. Held by this
// object, released when it goes, and by the kernel when its process dies, so a worker killed by
// its watchdog never leaves anything locked. Two threads of one process exclude each other too
// (each opens the file itself).
//
// Used for work that must not be done twice at once (GREEN's reference outputs of one trial,
// engine/trial_store.h) or that must not overlap across devices (the CUPTI metrics pass,
// engine/worker.cpp).
#pragma once
#include <filesystem>
#include <functional>
#include <optional>

namespace evo {

class FileLock {
 public:
  // Held at once, or nullopt while another holder has it. The file (and its folder) is created if
  // missing and left in place afterwards: removing it would let a waiter that had opened it and a
  // newcomer that creates it afresh both hold "the" lock. Throws UserError when it cannot be
  // opened or created.
  static std::optional<FileLock> try_acquire(const std::filesystem::path& file);
  // Waits until held. While another holds it, `waiting` is called about every `every_s` seconds
  // (a worker's heartbeat, so that its watchdog knows it is waiting, not hung).
  static FileLock acquire(const std::filesystem::path& file, const std::function<void()>& waiting = {},
                          double every_s = 1.0);

  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace evo
