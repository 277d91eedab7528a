// GREEN's trials on disk, shared by every GPU worker of a host through the compile cache's folder
// (<cache>/reference, beside a command reference's results): the inputs of each trial as drawn from
// its seed, and a kernel reference's expected outputs for them. Drawing the inputs (sdpa's `long`
// problem draws 25 M normal values per trial) and running the reference are the fixed part of a
// run's GPU work. Without this store every worker pays it, two workers of one run at the same
// time, and a worker restarted after a crash again; with it, each trial is made once per host and
// read back everywhere else. Host only: nothing here touches a GPU, so all of it is tested on any
// machine.
//
// Files: <dir>/<sha256(key)[0:2]>/<sha256(key)>.fill (one buffer's encoded fill) or .out (one
// trial's reference outputs): a line of JSON (format, the whole key text, each tensor's name,
// dtype and shape, the payload's size and XXH64) and then the payload. Written whole or not at all
// (a temporary file renamed over it). Read back checked: format, key, names, dtypes, shapes, size,
// checksum, and for outputs the digest of the inputs they were computed from against the reader's
// own. A file that fails is removed with one warning and made again, never trusted.
//
// Keys name everything that determines the bytes. A fill's: the buffer's name, dtype, element
// count, init, scaling, seed and trial, and the generator's fingerprint (values drawn and encoded
// by this binary: a change of fill_seed, draw_values, encode or of the C++ library's normal
// distribution is a new key). Reference outputs': reference_outputs_key below.
//
// Who makes what: a claim per key (an flock on <file>.lock, engine/file_lock.h). share_work runs a
// list of keys so that workers going through it at once split it: each takes the keys nobody holds,
// then waits for and reads the others'.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/buffers.h"  // defines: HostTensor
#include "engine/file_lock.h"
#include "engine/profile.h"

namespace evo {

// One buffer's inputs for a trial, encoded in its dtype (draw_values, then encode).
struct StoredFill {
  std::vector<std::uint8_t> bytes;
  float descale = 1;        // scaled fp8: the scale its values were divided by
  std::uint64_t digest = 0; // XXH64 of bytes
};

// A value as keys write it: every digit (%.17g), so two values that differ are two keys.
std::string key_number(double v);
// 16 hex digits over a fixed set of draws through draw_values and encode, every init kind and dtype.
const std::string& generator_fingerprint();
// What determines buffer b's fill of n elements for (seed, trial).
std::string fill_key(const BufferSpec& b, std::int64_t n, std::uint64_t seed, int trial);

// What kernel `k`'s arguments hold for problem `prob` and config `c` once the buffers are filled
// for (seed, trial), as pack() will pass them: inputs and inout buffers by their fills' keys,
// outputs by dtype and shape (poisoned before every launch), scratch by dtype and shape (what the
// last kernel left: a reference that reads scratch is not reproducible, stored or not), scalars,
// descales (their buffer's fill), sizes and tensor maps by value, then every __constant__ symbol
// buffer's fill.
std::string args_recipe(const Profile& p, const KernelSpec& k, const Problem& prob, const Config& c,
                        std::uint64_t seed, int trial);

// The key of a kernel reference's outputs for one trial: the format, the device model (a
// reference's results on another GPU model may differ in the last bit), the reference's modules
// (`modules`: each cubin's file name, which is its compile key over the template text, defines and
// options, and its content hash) and entry points, each reference launch's geometry and
// args_recipe, the problem and its sizes, seed and trial, and the outputs' dtypes and shapes.
std::string reference_outputs_key(const Profile& p, const Problem& prob, const Config& c, const std::string& device,
                                  const std::vector<std::string>& modules, const std::vector<std::string>& entries,
                                  std::uint64_t seed, int trial);

class TrialStore {
 public:
  using Warn = std::function<void(const std::string&)>;
  // `warn` receives each one-line warning (a damaged file); the folder is created when first written.
  TrialStore(std::filesystem::path dir, Warn warn);
  const std::filesystem::path& dir() const { return dir_; }

  // Whether a fill is stored under `key` (not whether it is whole: read_fill checks that).
  bool has_fill(const std::string& key) const;
  // A fill of `dtype` and `n` elements stored under `key`; nullopt when there is none or it is damaged.
  std::optional<StoredFill> read_fill(const std::string& key, DType dtype, std::int64_t n) const;
  // Stores it. A cache that cannot be written only costs a draw: never an error.
  void write_fill(const std::string& key, DType dtype, const StoredFill& f) const;

  bool has_outputs(const std::string& key) const;
  // Outputs stored under `key` with the names, dtypes and shapes of `expected` (bytes ignored),
  // computed from inputs whose digest is `inputs_digest`; nullopt when absent or failing a check.
  std::optional<std::vector<HostTensor>> read_outputs(const std::string& key, const std::vector<HostTensor>& expected,
                                                      const std::string& inputs_digest) const;
  void write_outputs(const std::string& key, const std::vector<HostTensor>& outputs,
                     const std::string& inputs_digest) const;  // never an error, as write_fill

  // The claim on a key: whoever holds it makes that key's file. Throws UserError when the lock
  // file cannot be made (share_work then makes the key unclaimed).
  std::optional<FileLock> try_claim(const std::string& key) const;
  FileLock claim(const std::string& key, const std::function<void()>& waiting) const;

 private:
  std::filesystem::path file(const std::string& key, const char* ext) const;
  std::filesystem::path dir_;
  Warn warn_;
};

// Each of `keys` made once by whichever process sharing `store` gets to it first. For each key in
// order: have(i) (already made: read it) or, when nobody holds its claim, make(i) holding it; a
// key another holds is left for later. Then the keys left: waited for (waiting(i) about once a
// second meanwhile), and have(i), else make(i) (the holder died or could not store it). Two workers
// calling this at once over the same keys split them about evenly. Returns how many it made.
std::size_t share_work(const TrialStore& store, const std::vector<std::string>& keys,
                       const std::function<bool(std::size_t)>& have, const std::function<void(std::size_t)>& make,
                       const std::function<void(std::size_t)>& waiting);

}  // namespace evo
