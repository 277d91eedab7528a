// GREEN's trials shared on disk between the GPU workers of a host (engine/trial_store.h) and the
// lock that keeps their metrics passes apart (engine/file_lock.h). Nothing here needs a GPU: the
// "workers" are threads and forked processes making files, as the real ones do around their
// kernels (tests/test_gpu.cpp has those: GpuReferenceStore).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/buffers.h"
#include "engine/error.h"
#include "engine/file_lock.h"
#include "engine/files.h"
#include "engine/hash.h"
#include "engine/profile.h"
#include "engine/trial_store.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Appends one line with O_APPEND (atomic for short lines, across processes).
void append_line(const fs::path& p, const std::string& line) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  const std::string l = line + "\n";
  ASSERT_EQ(::write(fd, l.data(), l.size()), static_cast<ssize_t>(l.size()));
  ::close(fd);
}

// ---- the lock ----

// Threads of one process exclude each other too: each acquire opens the file itself.
TEST(FileLock, TwoHoldersNeverOverlapAcrossThreads) {
  TempDir dir;
  const fs::path lock = dir.path / "locks" / "metrics.lock";
  std::atomic<int> inside{0}, most{0}, passes{0};
  auto holder = [&] {
    for (int i = 0; i < 25; ++i) {
      FileLock held = FileLock::acquire(lock);
      const int now = ++inside;
      most = std::max(most.load(), now);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      --inside;
      ++passes;
    }
  };
  std::thread a(holder), b(holder), c(holder);
  a.join(), b.join(), c.join();
  EXPECT_EQ(passes.load(), 75);
  EXPECT_EQ(most.load(), 1) << "two holders were inside at once";
}

// The workers are processes: each writes "begin" and "end" around its hold; the log must never
// show another's begin between one's begin and end.
TEST(FileLock, TwoHoldersNeverOverlapAcrossProcesses) {
  TempDir dir;
  const fs::path lock = dir.path / "metrics.lock", log = dir.path / "log.txt";
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 20; ++i) {
        FileLock held = FileLock::acquire(lock);
        append_line(log, "begin " + std::to_string(k));
        ::usleep(1000);
        append_line(log, "end " + std::to_string(k));
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t p : kids) {
    int st = 0;
    ASSERT_EQ(::waitpid(p, &st, 0), p);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  const auto lines = lines_of(log);
  ASSERT_EQ(lines.size(), 80u);
  std::set<char> who;
  for (std::size_t i = 0; i < lines.size(); i += 2) {
    EXPECT_EQ(lines[i].substr(0, 6), "begin ") << "line " << i;
    EXPECT_EQ(lines[i + 1], "end " + lines[i].substr(6)) << "another holder came in at line " << i + 1;
    who.insert(lines[i].back());
  }
  EXPECT_EQ(who.size(), 2u) << "both processes held it";
}

TEST(FileLock, TryFailsWhileHeldAndTheWaiterBeatsUntilItIsFree) {
  TempDir dir;
  const fs::path lock = dir.path / "k.lock";
  auto held = FileLock::try_acquire(lock);
  ASSERT_TRUE(held);
  EXPECT_FALSE(FileLock::try_acquire(lock)) << "a second holder";
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    held.reset();
  });
  int beats = 0;
  const auto t0 = Clock::now();
  FileLock mine = FileLock::acquire(lock, [&] { ++beats; }, 0.1);
  release.join();
  EXPECT_GE(seconds_since(t0), 0.3) << "it waited for the holder";
  EXPECT_GE(beats, 2) << "the waiter beats while it waits";
  EXPECT_FALSE(FileLock::try_acquire(lock)) << "now the waiter holds it";
}

// A worker killed by its watchdog (SIGKILL) never leaves the lock held.
TEST(FileLock, ReleasedWhenItsHolderIsKilled) {
  TempDir dir;
  const fs::path lock = dir.path / "k.lock", ready = dir.path / "ready";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FileLock held = FileLock::acquire(lock);
    write_text(ready, "held");
    for (;;) ::pause();
  }
  for (int i = 0; i < 500 && !fs::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(ready));
  EXPECT_FALSE(FileLock::try_acquire(lock)) << "the child holds it";
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_TRUE(FileLock::try_acquire(lock)) << "released with its holder";
}

// ---- keys ----

// A profile with a kernel reference, in its own folder; `edit` changes its JSON before loading.
Profile reference_profile(const TempDir& dir, const std::function<void(nlohmann::json&)>& edit = {}) {
  write_text(dir.path / "k.cu", "extern \"C\" __global__ void scale(const float* X, float* Y, float a, int N) {}\n");
  write_text(dir.path / "ref.cu", "extern \"C\" __global__ void ref(const float* X, float* Y, float a, int N) {}\n");
  nlohmann::json j = {
      {"name", "keys"},
      {"template", "k.cu"},
      {"kernel", "scale"},
      {"knobs", {{"BLOCK", {64, 128}}}},
      {"baseline", {{"BLOCK", 64}}},
      {"problems", {{{"name", "small"}, {"sizes", {{"N", 500}}}}}},
      {"buffers",
       {{{"name", "X"}, {"dtype", "f16"}, {"shape", {"N"}}, {"init", {{"dist", "normal"}, {"mean", 0}, {"std", 1}}}},
        {{"name", "Y"}, {"dtype", "f32"}, {"shape", {"N"}}, {"role", "output"}}}},
      {"scalars", {{{"name", "a"}, {"dtype", "f32"}, {"value", "2.5"}}}},
      {"args", {"X", "Y", "a", "N"}},
      {"launch", {{"grid", {"cdiv(N, BLOCK)"}}, {"block", {"BLOCK"}}}},
      {"reference",
       {{"template", "ref.cu"}, {"kernel", "ref"}, {"args", {"X", "Y", "a", "N"}},
        {"launch", {{"grid", {"cdiv(N, 128)"}}, {"block", {128}}}}}}};
  if (edit) edit(j);
  write_text(dir.path / "keys.json", j.dump(2));
  return load_profile(dir.path / "keys.json");
}

struct KeyArgs {
  std::string device = "NVIDIA H200 sm_90 driver 580.159.04";
  std::vector<std::string> modules{"4f1c.cubin:9a0e"};
  std::vector<std::string> entries{"ref"};
  std::uint64_t seed = 0;
  int trial = 0;
};
std::string key_of(const Profile& p, const KeyArgs& a = {}, const Config& c = {{"BLOCK", 64}}) {
  return reference_outputs_key(p, p.problems.front(), c, a.device, a.modules, a.entries, a.seed, a.trial);
}

TEST(TrialStore, ReferenceOutputsKeyChangesWithEachFieldThatDeterminesThem) {
  TempDir dir;
  const Profile p = reference_profile(dir);
  const std::string base = key_of(p);
  EXPECT_EQ(base, key_of(p)) << "the same trial, the same key";
  EXPECT_EQ(base, key_of(p, {}, {{"BLOCK", 128}})) << "a knob that sizes nothing the reference sees is not part of it";
  EXPECT_NE(base.find(generator_fingerprint()), std::string::npos) << "the inputs' generator is named";

  std::map<std::string, std::string> keys;
  auto with = [&](const std::string& what, KeyArgs a) { keys[what] = key_of(p, a); };
  KeyArgs a;
  a.device = "NVIDIA H100 80GB HBM3 sm_90 driver 580.159.04";
  with("device model", a);
  a = {};
  a.modules = {"4f1c.cubin:9a0f"};
  with("reference module content", a);
  a = {};
  a.modules = {"77aa.cubin:9a0e"};
  with("reference compile key (template text, defines, options)", a);
  a = {};
  a.entries = {"ref2"};
  with("reference entry", a);
  a = {};
  a.seed = 1;
  with("seed", a);
  a = {};
  a.trial = 1;
  with("trial", a);
  auto edited = [&](const std::string& what, const std::function<void(nlohmann::json&)>& edit) {
    TempDir d;
    keys[what] = key_of(reference_profile(d, edit));
  };
  edited("problem size", [](nlohmann::json& j) { j["problems"][0]["sizes"]["N"] = 501; });
  edited("problem name", [](nlohmann::json& j) { j["problems"][0]["name"] = "other"; });
  edited("input init", [](nlohmann::json& j) { j["buffers"][0]["init"]["std"] = 2; });
  edited("input init kind", [](nlohmann::json& j) { j["buffers"][0]["init"] = {{"dist", "uniform"}, {"low", 0}, {"high", 1}}; });
  edited("input dtype", [](nlohmann::json& j) { j["buffers"][0]["dtype"] = "bf16"; });
  edited("output dtype", [](nlohmann::json& j) { j["buffers"][1]["dtype"] = "f16"; });
  edited("scalar value", [](nlohmann::json& j) { j["scalars"][0]["value"] = "2.25"; });
  edited("reference launch", [](nlohmann::json& j) { j["reference"]["launch"]["block"] = {256}; });
  edited("reference args", [](nlohmann::json& j) { j["reference"]["args"] = {"X", "Y", "N", "a"}; });
  ASSERT_EQ(keys.size(), 15u);
  std::set<std::string> distinct{base};
  for (const auto& [what, k] : keys) {
    EXPECT_NE(k, base) << what << " does not change the key";
    distinct.insert(k);
  }
  EXPECT_EQ(distinct.size(), keys.size() + 1) << "two changes gave the same key";
}

TEST(TrialStore, FillKeyChangesWithEachFieldThatDeterminesTheBytes) {
  BufferSpec b;
  b.name = "Q";
  b.dtype = DType::FP8_E4M3;
  b.init = {InitSpec::Kind::Normal, 0, 1, {}, {}};
  const std::string base = fill_key(b, 1000, 2, 1);
  EXPECT_EQ(base, fill_key(b, 1000, 2, 1));
  std::set<std::string> keys{base};
  auto differs = [&](const std::string& what, const std::string& k) {
    EXPECT_NE(k, base) << what;
    keys.insert(k);
  };
  differs("n", fill_key(b, 1001, 2, 1));
  differs("seed", fill_key(b, 1000, 3, 1));
  differs("trial", fill_key(b, 1000, 2, 0));
  BufferSpec c = b;
  c.name = "K";
  differs("name (it seeds the draw)", fill_key(c, 1000, 2, 1));
  c = b;
  c.dtype = DType::FP8_E5M2;
  differs("dtype", fill_key(c, 1000, 2, 1));
  c = b;
  c.init.b = 1.0000001;
  differs("init std (every digit)", fill_key(c, 1000, 2, 1));
  c = b;
  c.init.kind = InitSpec::Kind::Uniform;
  differs("init kind", fill_key(c, 1000, 2, 1));
  c = b;
  c.scale_arg = "q_descale";
  differs("scaling", fill_key(c, 1000, 2, 1));
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_EQ(generator_fingerprint().size(), 16u);
  EXPECT_NE(base.find(generator_fingerprint()), std::string::npos);
}

// ---- files ----

std::vector<HostTensor> some_outputs() {
  HostTensor o{"O", DType::F16, {2, 3}, {}}, m{"M", DType::F32, {4}, {}};
  for (int i = 0; i < 12; ++i) o.bytes.push_back(static_cast<std::uint8_t>(i * 7 + 1));
  for (int i = 0; i < 16; ++i) m.bytes.push_back(static_cast<std::uint8_t>(255 - i));
  return {o, m};
}
std::vector<HostTensor> shapes_of(std::vector<HostTensor> ts) {
  for (auto& t : ts) t.bytes.clear();
  return ts;
}

struct Store {
  TempDir dir;
  std::vector<std::string> warnings;
  TrialStore store{dir.path / "reference", [this](const std::string& w) { warnings.push_back(w); }};
};

// The one file of `ext` under the store.
fs::path only_file(const fs::path& dir, const std::string& ext) {
  fs::path found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ext) {
      EXPECT_TRUE(found.empty()) << "two " << ext << " files";
      found = e.path();
    }
  return found;
}

TEST(TrialStore, OutputsAndFillsReadBackEqualWhatWasStored) {
  Store s;
  const auto outs = some_outputs();
  EXPECT_FALSE(s.store.has_outputs("trial A"));
  EXPECT_FALSE(s.store.read_outputs("trial A", shapes_of(outs), "X=1;"));
  s.store.write_outputs("trial A", outs, "X=1;");
  EXPECT_TRUE(s.store.has_outputs("trial A"));
  EXPECT_FALSE(s.store.has_outputs("trial B"));
  const auto back = s.store.read_outputs("trial A", shapes_of(outs), "X=1;");
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*back)[i].name, outs[i].name);
    EXPECT_EQ((*back)[i].dtype, outs[i].dtype);
    EXPECT_EQ((*back)[i].shape, outs[i].shape);
    EXPECT_EQ((*back)[i].bytes, outs[i].bytes) << outs[i].name;
  }

  BufferSpec b;
  b.name = "V";
  b.dtype = DType::FP8_E4M3;
  b.scale_arg = "v_descale";
  StoredFill f;
  f.bytes = encode(b.dtype, draw_values(b.init, 300, 1, 0, b.name), true, &f.descale);
  f.digest = xxh64(std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()));
  const std::string key = fill_key(b, 300, 1, 0);
  EXPECT_FALSE(s.store.read_fill(key, b.dtype, 300));
  s.store.write_fill(key, b.dtype, f);
  const auto g = s.store.read_fill(key, b.dtype, 300);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->bytes, f.bytes);
  EXPECT_EQ(g->descale, f.descale);
  EXPECT_NE(f.descale, 1.0f) << "scaled fp8: a real descale went through";
  EXPECT_EQ(g->digest, f.digest);
  EXPECT_TRUE(s.warnings.empty());
}

// A fill of megabytes is written in pieces (its header line, then its bytes as they are) and read
// straight into place: the file is still exactly the line and the bytes, the line's size and XXH64
// those of the bytes, and a header larger than the first read, or a file without a newline, read
// as such.
TEST(TrialStore, ALargeFillIsStoredAsItsHeaderLineThenItsBytesAndReadBackWhole) {
  Store s;
  BufferSpec b;
  b.name = "image";
  b.dtype = DType::F32;
  const std::int64_t n = 1 << 20;  // 4 MB: many times the first 64 KB read
  StoredFill f;
  f.bytes = encode(b.dtype, draw_values(b.init, n, 3, 0, b.name), false, &f.descale);
  f.digest = xxh64(std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()));
  const std::string key = fill_key(b, n, 3, 0);
  s.store.write_fill(key, b.dtype, f);
  const fs::path file = only_file(s.dir.path, ".fill");
  const std::optional<std::string> text = read_file(file);
  ASSERT_TRUE(text);
  const auto eol = text->find('\n');
  ASSERT_NE(eol, std::string::npos);
  const auto header = nlohmann::json::parse(text->substr(0, eol));
  EXPECT_EQ(header.at("bytes").get<std::size_t>(), f.bytes.size());
  EXPECT_EQ(header.at("xxh64").get<std::string>(), xxh64_hex(text->substr(eol + 1)));
  EXPECT_EQ(text->size() - eol - 1, f.bytes.size());
  EXPECT_EQ(0, std::memcmp(text->data() + eol + 1, f.bytes.data(), f.bytes.size()));
  const auto g = s.store.read_fill(key, b.dtype, n);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->bytes, f.bytes);
  EXPECT_EQ(g->digest, f.digest);

  // The reader alone: a line longer than its first read, and a file with no newline.
  const std::string line(100000, 'h');
  write_atomic(s.dir.path / "long", std::vector<std::string_view>{line, "\n", "body"}, "a test file");
  const auto h = read_headed_file(s.dir.path / "long");
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->newline);
  EXPECT_EQ(h->head, line);
  EXPECT_EQ(std::string(h->body.begin(), h->body.end()), "body");
  write_atomic(s.dir.path / "flat", "no newline here", "a test file");
  const auto flat = read_headed_file(s.dir.path / "flat");
  ASSERT_TRUE(flat);
  EXPECT_FALSE(flat->newline);
  EXPECT_EQ(flat->head, "no newline here");
  EXPECT_TRUE(flat->body.empty());
  EXPECT_FALSE(read_headed_file(s.dir.path / "none"));
  EXPECT_TRUE(s.warnings.empty());
}

// Every way a stored file can be wrong: one warning naming it, the file removed, nothing returned
// (the caller makes the trial again). Never trusted.
TEST(TrialStore, DamagedFileIsRemovedWithOneWarningAndNotTrusted) {
  const auto outs = some_outputs();
  struct Damage {
    const char* what;
    std::function<void(std::string&)> apply;
  };
  const std::vector<Damage> damages = {
      {"a payload byte flipped", [](std::string& t) { t.back() ^= 0x01; }},
      {"truncated", [](std::string& t) { t.resize(t.size() - 3); }},
      {"a byte too many", [](std::string& t) { t += "x"; }},
      {"no header line", [](std::string& t) { t = "garbage"; }},
      {"header not JSON", [](std::string& t) { t = "{nope\n" + t.substr(t.find('\n') + 1); }},
      {"empty", [](std::string& t) { t.clear(); }},
  };
  for (const auto& d : damages) {
    Store s;
    s.store.write_outputs("trial A", outs, "X=1;");
    const fs::path f = only_file(s.store.dir(), ".out");
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    in.close();
    std::string t = text.str();
    d.apply(t);
    write_text(f, t);
    EXPECT_FALSE(s.store.read_outputs("trial A", shapes_of(outs), "X=1;")) << d.what;
    ASSERT_EQ(s.warnings.size(), 1u) << d.what;
    EXPECT_NE(s.warnings[0].find("damaged"), std::string::npos) << s.warnings[0];
    EXPECT_NE(s.warnings[0].find(f.string()), std::string::npos) << s.warnings[0];
    EXPECT_FALSE(fs::exists(f)) << d.what << ": removed, so it is made again";
    s.store.write_outputs("trial A", outs, "X=1;");
    EXPECT_TRUE(s.store.read_outputs("trial A", shapes_of(outs), "X=1;")) << d.what << ": made again, read again";
  }
}

TEST(TrialStore, StoredOutputsAreOnlyUsedWithTheirOwnInputsShapesAndKey) {
  const auto outs = some_outputs();
  {
    Store s;  // outputs computed from other inputs: the generator changed under its fingerprint
    s.store.write_outputs("trial A", outs, "X=1;");
    EXPECT_FALSE(s.store.read_outputs("trial A", shapes_of(outs), "X=2;"));
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_NE(s.warnings[0].find("other inputs"), std::string::npos) << s.warnings[0];
  }
  {
    Store s;  // the caller expects another shape (a profile edited under the same key)
    s.store.write_outputs("trial A", outs, "X=1;");
    auto want = shapes_of(outs);
    want[0].shape = {3, 2};
    EXPECT_FALSE(s.store.read_outputs("trial A", want, "X=1;"));
    EXPECT_EQ(s.warnings.size(), 1u);
  }
  {
    Store s;  // a fill of another dtype under the key
    BufferSpec b;
    b.name = "X";
    StoredFill f{std::vector<std::uint8_t>(40, 7), 1, 0};
    s.store.write_fill("fill", DType::F32, f);
    EXPECT_FALSE(s.store.read_fill("fill", DType::I32, 10)) << "dtype";
    s.store.write_fill("fill", DType::F32, f);
    EXPECT_FALSE(s.store.read_fill("fill", DType::F32, 11)) << "element count";
    EXPECT_EQ(s.warnings.size(), 2u);
  }
}

// ---- sharing ----

// One "worker": share_work over `keys` with a TrialStore of its own (its own memo, as a worker
// process has), making each key in `cost_s` and logging it to `log`. Returns how many it made.
std::size_t work(const fs::path& dir, const std::vector<std::string>& keys, double cost_s, const fs::path& log,
                 std::size_t* read = nullptr) {
  TrialStore store(dir, {});
  const auto outs = some_outputs();
  std::set<std::size_t> memo;
  auto have = [&](std::size_t i) {
    if (memo.count(i)) return true;
    if (!store.read_outputs(keys[i], shapes_of(outs), "X=1;")) return false;
    memo.insert(i);
    if (read) ++*read;
    return true;
  };
  auto make = [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(cost_s));
    append_line(log, keys[i]);
    store.write_outputs(keys[i], outs, "X=1;");
    memo.insert(i);
  };
  const std::size_t made = share_work(store, keys, have, make, [](std::size_t) {});
  EXPECT_EQ(memo.size(), keys.size()) << "every key is had in the end";
  return made;
}

std::vector<std::string> trial_keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back("problem long, seed " + std::to_string(i / 2) + ", trial " + std::to_string(i % 2));
  return keys;
}

// Two workers asking for the same trials at once: each trial is made once, the two split them,
// and together they take about half the time one would.
TEST(TrialStore, TwoWorkersAskingAtOnceMakeEachTrialOnceAndSplitThem) {
  TempDir dir;
  const auto keys = trial_keys(12);
  const double cost = 0.05;
  const fs::path log = dir.path / "made.txt";
  std::size_t made[2] = {0, 0};
  const auto t0 = Clock::now();
  std::thread a([&] { made[0] = work(dir.path / "reference", keys, cost, log); });
  std::thread b([&] { made[1] = work(dir.path / "reference", keys, cost, log); });
  a.join(), b.join();
  const double wall = seconds_since(t0);
  const auto lines = lines_of(log);
  std::map<std::string, int> times;
  for (const auto& l : lines) ++times[l];
  EXPECT_EQ(lines.size(), keys.size()) << "each trial made once";
  for (const auto& k : keys) EXPECT_EQ(times[k], 1) << k;
  EXPECT_EQ(made[0] + made[1], keys.size());
  EXPECT_GE(std::min(made[0], made[1]), keys.size() / 2 - 2) << "split: " << made[0] << " and " << made[1];
  EXPECT_LT(wall, 0.8 * keys.size() * cost) << "the two made trials side by side";
}

// The same between processes, the way two GPU workers run.
TEST(TrialStore, TwoProcessesAskingAtOnceMakeEachTrialOnce) {
  TempDir dir;
  const auto keys = trial_keys(10);
  const fs::path log = dir.path / "made.txt";
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::size_t n = work(dir.path / "reference", keys, 0.03, log);
      ::_exit(::testing::Test::HasFailure() ? 100 : static_cast<int>(n));
    }
    kids.push_back(pid);
  }
  int made = 0;
  for (pid_t p : kids) {
    int st = 0;
    ASSERT_EQ(::waitpid(p, &st, 0), p);
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_NE(WEXITSTATUS(st), 100) << "a child's expectation failed";
    EXPECT_GE(WEXITSTATUS(st), 1) << "both processes made some";
    made += WEXITSTATUS(st);
  }
  EXPECT_EQ(made, static_cast<int>(keys.size()));
  std::map<std::string, int> times;
  for (const auto& l : lines_of(log)) ++times[l];
  EXPECT_EQ(times.size(), keys.size());
  for (const auto& [k, n] : times) EXPECT_EQ(n, 1) << k;
}

// A worker started after the trials were made (a second worker of the run, or one restarted after
// a crash) reads every one of them and makes none.
TEST(TrialStore, ALaterWorkerReadsWhatTheFirstMade) {
  TempDir dir;
  const auto keys = trial_keys(6);
  const fs::path log = dir.path / "made.txt";
  EXPECT_EQ(work(dir.path / "reference", keys, 0, log), keys.size());
  std::size_t read = 0;
  EXPECT_EQ(work(dir.path / "reference", keys, 0, log, &read), 0u);
  EXPECT_EQ(read, keys.size());
  EXPECT_EQ(lines_of(log).size(), keys.size());
}

// A holder that dies without storing (a worker killed mid-trial): the waiter makes it itself.
TEST(TrialStore, AWaiterMakesTheTrialItsHolderDiedWithout) {
  TempDir dir;
  TrialStore store(dir.path / "reference", {});
  const std::vector<std::string> keys{"trial 0"};
  const fs::path ready = dir.path / "ready";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto held = store.try_claim(keys[0]);
    write_text(ready, held ? "held" : "not");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::_exit(9);  // dies holding the claim, nothing stored
  }
  for (int i = 0; i < 500 && !fs::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int made = 0, waits = 0;
  const auto t0 = Clock::now();
  share_work(store, keys, [&](std::size_t) { return store.has_outputs(keys[0]); },
             [&](std::size_t) {
               ++made;
               store.write_outputs(keys[0], some_outputs(), "");
             },
             [&](std::size_t) { ++waits; });
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(made, 1);
  EXPECT_GE(seconds_since(t0), 0.2) << "it waited for the holder first";
  EXPECT_TRUE(store.has_outputs(keys[0]));
}

// The coordinator draws GREEN's inputs into the store while the workers start
// (store_fills_ahead): every drawn input of every problem's trials, with a problem's own seeds and
// trials where it gives them, each the bytes a worker would draw itself; nothing twice, and a
// second call writes nothing.
TEST(TrialStore, FillsAheadAreEveryTrialsInputsAsAWorkerDrawsThem) {
  TempDir dir;
  const Profile p = reference_profile(dir, [](nlohmann::json& j) {
    j["problems"] = {{{"name", "small"}, {"sizes", {{"N", 500}}}},
                     {{"name", "big"}, {"sizes", {{"N", 5000}}}, {"green", {{"seeds", {7}}, {"trials", 1}}}}};
    j["gates"] = {{"green", {{"seeds", {0, 1}}, {"trials", 2}}}};
  });
  TrialStore store(dir.path / "reference", nullptr);
  store_fills_ahead(p, {{"BLOCK", 64}}, store);
  const BufferSpec& x = p.buffers.front();
  ASSERT_EQ(x.name, "X");
  struct Want {
    std::int64_t n;
    std::uint64_t seed;
    int trial;
  };
  const std::vector<Want> want{{500, 0, 0}, {500, 0, 1}, {500, 1, 0}, {500, 1, 1}, {5000, 7, 0}};
  for (const auto& w : want) {
    auto f = store.read_fill(fill_key(x, w.n, w.seed, w.trial), x.dtype, w.n);
    ASSERT_TRUE(f) << "n " << w.n << ", seed " << w.seed << ", trial " << w.trial;
    EXPECT_EQ(f->bytes, encode(x.dtype, draw_values(x.init, w.n, w.seed, w.trial, x.name), false, nullptr));
  }
  std::map<fs::path, fs::file_time_type> files;
  for (const auto& e : fs::recursive_directory_iterator(dir.path / "reference"))
    if (e.path().extension() == ".fill") files[e.path()] = fs::last_write_time(e.path());
  EXPECT_EQ(files.size(), want.size()) << "one file a trial's input, the output Y none";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  store_fills_ahead(p, {{"BLOCK", 64}}, store);
  for (const auto& [f, t] : files) EXPECT_EQ(fs::last_write_time(f), t) << f << " written again";
}

// Large fills are drawn several at once where the threads allow (gemm_fp16's twelve of 4 M values
// kept 5 threads of 64 busy one at a time): each is still the bytes drawn alone, and all are there.
TEST(TrialStore, LargeFillsDrawnSeveralAtOnceAreEachTheBytesDrawnAlone) {
  TempDir dir;
  const std::int64_t n = 4 * static_cast<std::int64_t>(kDrawChunk) + 1000;  // past the size drawn alone
  const Profile p = reference_profile(dir, [&](nlohmann::json& j) {
    j["problems"] = {{{"name", "big"}, {"sizes", {{"N", n}}}}};
    j["gates"] = {{"green", {{"seeds", {0, 1}}, {"trials", 2}}}};
  });
  const char* kept = std::getenv("EVO_DRAW_THREADS");
  const std::string was = kept ? kept : "";
  ::setenv("EVO_DRAW_THREADS", "20", 1);  // four of them at once (5 chunks each)
  TrialStore store(dir.path / "reference", nullptr);
  store_fills_ahead(p, {{"BLOCK", 64}}, store);
  if (was.empty()) ::unsetenv("EVO_DRAW_THREADS");
  else ::setenv("EVO_DRAW_THREADS", was.c_str(), 1);
  const BufferSpec& x = p.buffers.front();
  int files = 0;
  for (std::uint64_t seed : {0, 1})
    for (int trial : {0, 1}) {
      auto f = store.read_fill(fill_key(x, n, seed, trial), x.dtype, n);
      ASSERT_TRUE(f) << "seed " << seed << ", trial " << trial;
      EXPECT_EQ(f->bytes, encode(x.dtype, draw_values(x.init, n, seed, trial, x.name), false, nullptr))
          << "seed " << seed << ", trial " << trial;
      ++files;
    }
  EXPECT_EQ(files, 4);
}

// Each fill is drawn once on the host: a fill whose claim another process holds (a worker, or the
// coordinator drawing ahead) is not drawn here but waited for, while the others are drawn, and then
// read as that process stored it; one whose holder let go without storing it is drawn here. Without
// the claims, a 4-GPU run drew gemm_fp16's inputs five times at once (docs/results/scale12).
TEST(TrialStore, AFillAnotherProcessIsDrawingIsWaitedForAndReadNotDrawnAgain) {
  TempDir dir;
  const Profile p = reference_profile(dir, [](nlohmann::json& j) {
    j["problems"] = {{{"name", "small"}, {"sizes", {{"N", 500}}}}};
    j["gates"] = {{"green", {{"seeds", {0}}, {"trials", 3}}}};
  });
  const BufferSpec& x = p.buffers.front();
  TrialStore store(dir.path / "reference", nullptr);
  const std::string held_key = fill_key(x, 500, 0, 1), dropped_key = fill_key(x, 500, 0, 2);
  std::optional<FileLock> held = store.try_claim(held_key), dropped = store.try_claim(dropped_key);
  ASSERT_TRUE(held && dropped);
  std::atomic<bool> done{false};
  std::thread ahead([&] {
    store_fills_ahead(p, {{"BLOCK", 64}}, store);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "it went on without the fills another holds";
  EXPECT_TRUE(store.has_fill(fill_key(x, 500, 0, 0))) << "the fill nobody held is drawn meanwhile";
  EXPECT_FALSE(store.has_fill(held_key));
  // The holder stores bytes of its own (valid, not what this seed draws) and lets go; the other
  // lets go without storing anything (it died).
  const std::vector<std::uint8_t> theirs = encode(x.dtype, std::vector<double>(500, 0.25), false, nullptr);
  store.write_fill(held_key, x.dtype, StoredFill{theirs, 1, xxh64(std::string_view(reinterpret_cast<const char*>(theirs.data()), theirs.size()))});
  held.reset();
  dropped.reset();
  ahead.join();
  auto f = store.read_fill(held_key, x.dtype, 500);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bytes, theirs) << "read as its holder stored it, not drawn again over it";
  auto g = store.read_fill(dropped_key, x.dtype, 500);
  ASSERT_TRUE(g) << "a fill whose holder let go without it is drawn by the waiter";
  EXPECT_EQ(g->bytes, encode(x.dtype, draw_values(x.init, 500, 0, 2, x.name), false, nullptr));
}

// The run's end profiles its best several to a collection where one set of kept buffers serves
// them all (gates/metrics.h, collect_metrics_batch): grouped by their buffer shapes, in the order
// given (the fastest first), no group larger than the profiler's room allows, none left out but
// the candidates that did not build.
TEST(MetricsBatches, CandidatesShareACollectionOnlyWhereTheirBuffersAreAlike) {
  TempDir dir;
  const Profile p = reference_profile(dir, [](nlohmann::json& j) {
    j["knobs"] = {{"BLOCK", {64, 128}}, {"PAD", {0, 32}}};
    j["baseline"] = {{"BLOCK", 64}, {"PAD", 0}};
    j["buffers"].push_back({{"name", "S"}, {"dtype", "f32"}, {"shape", {"BLOCK + PAD"}}, {"role", "scratch"}});
  });
  const Problem& prob = p.problems.front();
  auto config = [](int block, int pad) { return std::optional<Config>(Config{{"BLOCK", block}, {"PAD", pad}}); };
  // Shapes by BLOCK + PAD: 64 (a), 96 (b), 128 (c, twice over: 128+0 and 64+64 is not in the space).
  const std::vector<std::optional<Config>> cs{config(64, 0), config(128, 0), config(64, 32), std::nullopt,
                                              config(64, 0),  config(128, 0), config(64, 0), config(128, 32)};
  EXPECT_EQ(batches_by_buffers(p, prob, cs, 16),
            (std::vector<std::vector<std::size_t>>{{0, 4, 6}, {1, 5}, {2}, {7}}));
  EXPECT_EQ(batches_by_buffers(p, prob, cs, 2),
            (std::vector<std::vector<std::size_t>>{{0, 4}, {1, 5}, {2}, {6}, {7}}))
      << "a full group closes; the next alike starts its own";
  EXPECT_EQ(batches_by_buffers(p, prob, cs, 0).size(), 7u) << "each alone: at least one a group";
  EXPECT_TRUE(batches_by_buffers(p, prob, {std::nullopt}, 16).empty());
}

// A fill that cannot be made while others are made beside it (a raw input file gone since the
// profile was read) is one error naming the file, raised to the caller, not the end of the process
// (an exception leaving a drawing thread would call std::terminate).
TEST(TrialStore, AFillThatCannotBeMadeBesideOthersIsOneErrorNotAnAbort) {
  TempDir dir;
  write_text(dir.path / "x.bin", std::string(500 * 2, '\1'));
  write_text(dir.path / "z.bin", std::string(500 * 2, '\2'));
  const Profile p = reference_profile(dir, [](nlohmann::json& j) {
    j["buffers"][0]["init"] = {{"dist", "raw"}, {"file", "x.bin"}};
    j["buffers"].push_back({{"name", "Z"}, {"dtype", "f16"}, {"shape", {"N"}}, {"init", {{"dist", "raw"}, {"file", "z.bin"}}}});
    j["args"] = {"X", "Y", "a", "N", "Z"};
  });
  fs::remove(dir.path / "x.bin");
  fs::remove(dir.path / "z.bin");
  const char* kept = std::getenv("EVO_DRAW_THREADS");
  const std::string was = kept ? kept : "";
  ::setenv("EVO_DRAW_THREADS", "4", 1);  // both at once, on threads of their own
  TrialStore store(dir.path / "reference", nullptr);
  try {
    store_fills_ahead(p, {{"BLOCK", 64}}, store);
    ADD_FAILURE() << "inputs whose files are gone were made";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
  }
  if (was.empty()) ::unsetenv("EVO_DRAW_THREADS");
  else ::setenv("EVO_DRAW_THREADS", was.c_str(), 1);
}

}  // namespace
}  // namespace evo

// A large fill is drawn in chunks, each from its own generator, so that all cores draw it: chunk c
// holds what an mt19937_64 seeded with evo::draw_chunk_seed(..., c) draws, whatever the thread count,
// and two draws of the same trial are the same bytes.
TEST(TrialStore, ALargeFillIsDrawnChunkByChunkFromEachChunksOwnGenerator) {
  const evo::InitSpec normal{evo::InitSpec::Kind::Normal, 0, 1, {}, {}};
  const std::int64_t n = static_cast<std::int64_t>(evo::kDrawChunk) + 10;
  const std::vector<double> a = evo::draw_values(normal, n, 3, 1, "Q");
  EXPECT_EQ(a, evo::draw_values(normal, n, 3, 1, "Q"));
  for (std::size_t c : {std::size_t(0), std::size_t(1)}) {
    std::mt19937_64 rng(evo::draw_chunk_seed(3, 1, "Q", c));
    std::normal_distribution<double> d(0, 1);
    for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(a[c * evo::kDrawChunk + i], d(rng)) << "chunk " << c << ", value " << i;
  }
  EXPECT_EQ(evo::draw_chunk_seed(3, 1, "Q", 0), evo::fill_seed(3, 1, "Q"));  // a small fill: one generator, as before
  EXPECT_NE(evo::draw_chunk_seed(3, 1, "Q", 1), evo::draw_chunk_seed(3, 1, "Q", 2));
  EXPECT_NE(a[0], a[evo::kDrawChunk]);
}

