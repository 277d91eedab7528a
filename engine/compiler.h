// NVRTC compilation of templates, a content-addressed on-disk cache of the results, and a pool of
// compile-worker processes (NVRTC serialises compiles inside one process: CUDA_NOTES.md).
// A compile error is data (Build.ok = false with the NVRTC log), never an exception.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/evaluation.h"
#include "engine/profile.h"
#include "engine/space.h"

namespace evo {

// Everything that determines the cubin (and nothing else: the cache key is a hash of it).
struct CompileRequest {
  std::string source_path;                     // template file
  std::string name_expression;                 // entry point: extern "C" name or C++ name expression
  std::vector<std::string> more_names;         // the template's other entry points a profile launches (same program)
  std::map<std::string, std::string> defines;  // fixed defines + knobs (-DNAME=value)
  std::vector<std::string> options;            // extra NVRTC options from the profile
  std::vector<std::string> include_dirs;       // extra include folders (absolute)
  std::string arch;                            // "sm_90", "sm_89", "sm_90a"; "compute_90" gives PTX
};

// What builds the candidate for one configuration: one request per distinct template of its
// launches, in the order they first appear, each naming that template's entry points once
// (name_expression, then more_names). Arch "" means the profile's.
std::vector<CompileRequest> candidate_requests(const Profile& p, const Config& c, const std::string& arch = "");
CompileRequest candidate_request(const Profile& p, const Config& c, const std::string& arch = "");  // the first
// The trusted reference's, alike. They get the profile's include_dirs but not its compile_options,
// which tune the candidate (--use_fast_math, -maxrregcount) and must not weaken what it is checked
// against, except a configuration of the candidate (`reference.config`), which is compiled as that
// candidate is. None for a command or data reference; reference_request (the first) throws UserError then.
std::vector<CompileRequest> reference_requests(const Profile& p, const std::string& arch = "");
CompileRequest reference_request(const Profile& p, const std::string& arch = "");

// One Build for a sequence of launches, from the Builds of its requests (in request order): ok
// when every one is, kernels one per launch in launch order (the first's also in lowered_name,
// cubin_path, ptxas), the logs joined, key launch_build_key of theirs. A single launch's single
// Build comes back as it is.
Build launch_build(const std::vector<const KernelSpec*>& launches, const std::vector<CompileRequest>& requests,
                   const std::vector<Build>& builds);
std::string launch_build_key(const std::vector<std::string>& keys);  // one key: itself; several: their hash
// The line of an NVRTC log that says what went wrong (often a knob's static_assert).
std::string first_error_line(const std::string& log);

std::string nvrtc_version();  // "13.0"; throws UserError if NVRTC cannot be queried

// One of evo's own kernels (GREEN's comparison, the integrity check) as a cubin for `arch`, from
// `source` (no CUDA headers: NVRTC builds it in tens of ms). Throws UserError naming `what`.
std::vector<char> builtin_cubin(const std::string& source, const std::string& file_name, const std::string& arch,
                                const std::string& what);
// Where builtin_cubin keeps what it built, for the process and those after it ("": not kept).
// A GPU worker sets it from its job (WorkerJob::builtin_cache, the compile cache's builtin/): each
// worker process built both kernels again before its first candidate, 0.1-0.3 s, and a worker
// restarts after every fault. A file is named by the hash of (source, file name, arch, NVRTC
// version) and ends with the xxh64 of its cubin: one that does not match is built again.
void set_builtin_cache(const std::filesystem::path& dir);

// Content-addressed, on disk: <dir>/<key[0:2]>/<key>.json (the Build) beside <key>.cubin (or
// <key>.ptx for a virtual arch). The .json is written last, by rename: an entry either exists
// whole or not at all, whatever concurrent processes or kill -9 do. Failed builds are cached too
// (json only), so a second attempt costs a file read.
class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir);  // created if missing

  // SHA-256 over: evo's fixed options, the NVRTC version, the arch, the entry name, the defines,
  // the options, the template text and the text of every file it #includes that is found beside
  // it or in include_dirs (recursively; CUDA's own headers are covered by the NVRTC version).
  // Throws UserError if the template cannot be read.
  std::string key(const CompileRequest& r) const;
  std::optional<Build> lookup(const std::string& key) const;  // from_cache = true, cubin_path set
  Build store(Build b, const std::string& cubin);             // b.key must be set; returns b with cubin_path
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// $EVO_CACHE, else $XDG_CACHE_HOME/evo/compile, else ~/.cache/evo/compile.
std::filesystem::path default_cache_dir();

// In-process NVRTC, cache first. Never throws for a compile error (ok = false, log kept); throws
// UserError if the template cannot be read or NVRTC itself is unusable. compile_ms is the real
// NVRTC time, kept in the cached Build.
Build compile(const CompileRequest& r, CompileCache& cache);

// The -Xptxas=-v figures of the entry `lowered_name` (a log may hold several entries and helper
// functions; only that entry's lines count). registers = -1 if the entry is not in the log.
// wgmma_serialized: ptxas's "wgmma.mma_async instructions are serialized due to ..." lines that
// name this entry ("in the function 'NAME'") or no function at all (those count for every entry).
PtxasReport parse_ptxas(const std::string& log, const std::string& lowered_name);

// N compile-worker processes, forked at construction: the owner must not have initialised CUDA
// (evo's coordinator never does; the GPU lives in a separate worker process). Each worker takes
// one request at a time over a socket (length-prefixed JSON), compiles it with the shared on-disk
// cache and answers the Build. A worker that dies answers its request with ok = false and
// "compile worker died (signal N)", and is replaced. Single-threaded: the parent uses poll().
// A compile that runs this long is stopped and answered as a failed build (`--compile-timeout`):
// NVRTC on a pathological unroll can run for many minutes, and nothing else would end it. The
// longest compiles evo has recorded are under a minute (Kernel Tuner's convolution, 50 s).
constexpr double kDefaultCompileTimeout_s = 600;
// The failed build's log for a compile stopped at the limit after ran_s: the compile pool's and a
// replay's alike ("compile stopped after ..."; the store never reads such a failure back).
std::string compile_timeout_log(double ran_s, double limit_s);

// A process the compile pool started as one of its workers (this program run again, with
// EVO_COMPILE_WORKER naming the cache and its socket as fd 3) serves compiles here and exits; in
// any other process it returns at once. Every program that uses a CompilePool calls it first
// thing in main().
void serve_if_compile_worker();

class CompilePool {
 public:
  // jobs <= 0: hardware cores. A compile running longer than timeout_s is stopped (its worker
  // killed and started again when next needed) and answered as a failed build saying so; the
  // failure is not cached, so a later run with a longer limit compiles it again.
  CompilePool(int jobs, std::filesystem::path cache_dir, double timeout_s = kDefaultCompileTimeout_s);
  ~CompilePool();                                          // stops and reaps the workers
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Non-blocking: cache hits are answered without a worker; a request whose key is already being
  // compiled waits for that compile. Throws UserError if the template cannot be read.
  std::uint64_t submit(const CompileRequest& r);
  // The next finished request, or nullopt when nothing is pending or timeout_s (< 0: none) passed.
  // Throws UserError if a worker reports that NVRTC is unusable.
  std::optional<std::pair<std::uint64_t, Build>> wait_any(double timeout_s = -1);
  std::vector<Build> compile_all(const std::vector<CompileRequest>& rs);  // in request order
  std::size_t pending() const;  // submitted, not yet returned by wait_any
  // These requests' answers are no longer wanted: each is forgotten, and a compile no other
  // request waits for is stopped (its worker killed, started again when next needed). Unknown
  // ids are ignored. Returns the seconds the stopped compiles had run.
  double cancel(const std::vector<std::uint64_t>& ids);
  // The requests a worker is compiling now, each with the seconds it has run (ids waiting for the
  // same build each get its seconds).
  std::vector<std::pair<std::uint64_t, double>> running() const;
  int jobs() const;

 private:
  struct Impl;  // workers, queue, finished results: engine/compiler.cpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace evo
