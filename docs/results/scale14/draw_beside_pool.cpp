// store_fills_ahead (Kernel Tuner's convolution: two 67 MB fills) while a compile pool of N workers
// starts and compiles N small kernels, against the draw alone.
#include "engine/buffers.h"
#include "engine/compiler.h"
#include "engine/profile.h"
#include "engine/trial_store.h"
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
using namespace evo;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  serve_if_compile_worker();
  Profile p = load_profile(argv[1]);
  const int n = std::atoi(argv[3]);
  Config c(p.baseline.begin(), p.baseline.end());
  std::filesystem::remove_all(argv[2]);
  TrialStore store(std::string(argv[2]) + "/ref", [](const std::string&) {});
  { std::ofstream f(std::string("/tmp/fb/k.cu")); f << "template <int N> __global__ void k(float* x) { x[threadIdx.x] *= N; }\n"; }
  double pool_s = 0;
  std::thread t;
  if (n > 0) t = std::thread([&] {
    double t0 = now();
    CompilePool pool(n, std::string(argv[2]) + "/cache");
    std::vector<CompileRequest> rs;
    for (int i = 0; i < n; ++i) { CompileRequest r; r.source_path = "/tmp/fb/k.cu"; r.name_expression = "k<" + std::to_string(i + 1) + ">"; r.arch = "sm_90"; rs.push_back(r); }
    auto b = pool.compile_all(rs);
    pool_s = now() - t0;
  });
  double t0 = now();
  std::atomic<bool> stop{false};
  store_fills_ahead(p, c, store, &stop);
  double draw = now() - t0;
  if (t.joinable()) t.join();
  std::printf("workers %d: draw %.3f s, pool start+compile %.3f s\n", n, draw, pool_s);
}
