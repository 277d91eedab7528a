#include "engine/buffers.h"
#include "engine/guard.h"
#include "engine/hash.h"
#include "engine/profile.h"
#include "engine/trial_store.h"
#include <chrono>
#include <cstdio>
using namespace evo;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  Profile p = load_profile(argv[1]);
  TrialStore store(argv[2], [](const std::string& w) { std::fprintf(stderr, "%s\n", w.c_str()); });
  const BufferSpec& b = p.buffers[1];
  const std::int64_t n = 4112LL * 4112;
  double t = now();
  auto v = draw_values(b.init, n, 0, 0, "x"); double t1 = now();
  auto bytes = encode(DType::F32, v, false, nullptr); double t2 = now();
  auto d = xxh64(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())); double t3 = now();
  store.write_fill("k", DType::F32, StoredFill{bytes, 1.0f, d}); double t4 = now();
  auto cs = region_checksum(bytes.data(), bytes.size()); double t5 = now();
  auto r = store.read_fill("k", DType::F32, n); double t6 = now();
  std::printf("draw %.3f encode %.3f xxh64 %.3f write_fill %.3f region_checksum %.3f read_fill %.3f (%llx %d)\n",
              t1 - t, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, (unsigned long long)cs, r ? 1 : 0);
}
