// What the test suites share: a scratch folder per test and the path of the evo binary under test.
#pragma once
#include <cuda_runtime_api.h>
#include <stdlib.h>  // defines: mkdtemp
#include <unistd.h>  // defines: getpid

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace evo::test {

// A fresh folder, removed with everything in it afterwards (permissions a test took away from it
// are given back first, or removal would fail).
struct TempDir {
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "evo-test-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// A pool of warm workers a developer keeps running (`evo pool start`, engine/pool.h) must not
// serve the tests' runs: each test process looks for pools in a folder of its own, where only a
// test that starts one finds one.
inline const bool kOwnPoolFolder = [] {
  const std::string d = (std::filesystem::temp_directory_path() / ("evo-test-pool-" + std::to_string(::getpid()))).string();
  return ::setenv("EVO_POOL_DIR", d.c_str(), 1) == 0;
}();

// $EVO_BINARY (a bundle on the GPU machine), else the binary this build made.
inline std::string evo_binary() {
  if (const char* e = std::getenv("EVO_BINARY"); e && *e) return e;
  return EVO_BINARY;
}

// The repository root, for the tests' data (tests/data, profiles, templates, docs): $EVO_TEST_ROOT,
// else the first folder holding tests/data/landscape_synthetic.json walking up from the working
// directory (ctest's is the root; so is the GPU machine's, running bundle/evo_tests), else walking up
// from this executable (a build folder inside the checkout). Never a compile-time path.
inline std::filesystem::path source_root() {
  namespace fs = std::filesystem;
  if (const char* e = std::getenv("EVO_TEST_ROOT"); e && *e) return e;
  auto walk = [](fs::path d) -> fs::path {
    for (; !d.empty(); d = d.parent_path()) {
      std::error_code ec;
      if (fs::exists(d / "tests" / "data" / "landscape_synthetic.json", ec)) return d;
      if (d == d.parent_path()) break;
    }
    return {};
  };
  std::error_code ec;
  if (auto r = walk(fs::current_path(ec)); !r.empty()) return r;
  if (auto r = walk(fs::read_symlink("/proc/self/exe", ec).parent_path()); !r.empty()) return r;
  std::fprintf(stderr, "evo_tests: cannot find the repository root (tests/data/landscape_synthetic.json) above the "
                       "working directory or the executable; run from the checkout or set EVO_TEST_ROOT\n");
  std::exit(2);
}

// "" when this process can use a CUDA device, else the reason a GPU test skips. Initialises CUDA
// in the test process: only for tests that launch kernels themselves (the others ask a worker).
inline std::string no_cuda_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  return "";
}

}  // namespace evo::test
