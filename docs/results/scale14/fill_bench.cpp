#include "engine/buffers.h"
#include "engine/profile.h"
#include "engine/trial_store.h"
#include <chrono>
#include <cstdio>
#include <atomic>
using namespace evo;
int main(int argc, char** argv) {
  Profile p = load_profile(argv[1]);
  Config c(p.baseline.begin(), p.baseline.end());
  TrialStore store(argv[2], [](const std::string& w) { std::fprintf(stderr, "%s\n", w.c_str()); });
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> stop{false};
  store_fills_ahead(p, c, store, &stop);
  auto t1 = std::chrono::steady_clock::now();
  std::printf("store_fills_ahead %.3f s\n", std::chrono::duration<double>(t1 - t0).count());
  // draw only
  t0 = std::chrono::steady_clock::now();
  auto v = draw_values(p.buffers[1].init, 4112LL * 4112, 0, 0, "x");
  t1 = std::chrono::steady_clock::now();
  std::printf("draw_values 16.9M %.3f s\n", std::chrono::duration<double>(t1 - t0).count());
  t0 = std::chrono::steady_clock::now();
  auto b = encode(DType::F32, v, false, nullptr);
  t1 = std::chrono::steady_clock::now();
  std::printf("encode %.3f s\n", std::chrono::duration<double>(t1 - t0).count());
}
