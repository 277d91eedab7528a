// References that are not kernels (engine/reference.h): a command run on the inputs, stored data,
// their validation and their failures. Nothing here needs a GPU; the command tests run python3
// with NumPy (scripts/install-deps.sh) and skip, saying so, where it is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/buffers.h"
#include "engine/error.h"
#include "engine/npy.h"
#include "engine/profile.h"
#include "engine/reference.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using test::TempDir;

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

int lines_in(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

// "" when python3 can import NumPy, else why the command tests cannot run.
std::string no_numpy_reason() {
  static const std::string why = [] {
    const int rc = std::system("python3 -c 'import numpy' >/dev/null 2>&1");
    return rc == 0 ? std::string() : std::string("python3 with NumPy is not installed (scripts/install-deps.sh: python3-numpy)");
  }();
  return why;
}
#define REQUIRE_NUMPY() \
  if (!no_numpy_reason().empty()) GTEST_SKIP() << no_numpy_reason()

// ---- a command reference ----

// A profile in its own folder: Y = f(X) for N = 5, the reference `python3 ref.py {in} {out}` with
// `script` as ref.py (it appends a line to count.txt each time it runs).
struct CommandProfile {
  TempDir dir;
  Profile profile;
  explicit CommandProfile(const std::string& script, const std::string& y_dtype = "f32", double timeout_s = 600) {
    write_text(dir.path / "k.cu", "extern \"C\" __global__ void scale(const float* X, float* Y, float alpha, int N) {}\n");
    write_text(dir.path / "ref.py",
               "import json, sys\nfrom pathlib import Path\nimport numpy as np\n"
               "inp, out = Path(sys.argv[1]), Path(sys.argv[2])\n"
               "open('count.txt', 'a').write('run\\n')\n" + script);
    ordered_json j = {
        {"name", "tiny"},
        {"template", "k.cu"},
        {"kernel", "scale"},
        {"knobs", {{"BLOCK", {64, 128}}}},
        {"baseline", {{"BLOCK", 64}}},
        {"problems", {{{"name", "small"}, {"sizes", {{"N", 5}}}}, {{"name", "big"}, {"sizes", {{"N", 7}}}}}},
        {"buffers",
         {{{"name", "X"}, {"dtype", "f32"}, {"shape", {"N"}}},
          {{"name", "Y"}, {"dtype", y_dtype}, {"shape", {"N"}}, {"role", "output"}}}},
        {"scalars",
         {{{"name", "alpha"}, {"dtype", "f32"}, {"value", "2.5"}},
          {{"name", "blocks"}, {"dtype", "i32"}, {"value", "cdiv(N, BLOCK)"}}}},
        {"args", {"X", "Y", "alpha", "N"}},
        {"launch", {{"grid", {"cdiv(N, BLOCK)"}}, {"block", {"BLOCK"}}}},
        {"reference", {{"command", "python3 ref.py {in} {out}"}, {"timeout_s", timeout_s}}}};
    write_text(dir.path / "tiny.json", j.dump(2));
    profile = load_profile(dir.path / "tiny.json");
  }
  const Problem& small() const { return *profile.find_problem("small"); }
  int runs() const { return fs::exists(dir.path / "count.txt") ? lines_in(dir.path / "count.txt") : 0; }
};

// Y = alpha * X, checking what evo wrote: X float32 (5,), the knob-free scalar only, Y's description.
const char* kScaleScript =
    "meta = json.loads((inp / 'problem.json').read_text())\n"
    "assert meta['scalars'] == {'alpha': 2.5}, meta['scalars']\n"
    "assert meta['outputs']['Y']['shape'] == [meta['sizes']['N']], meta['outputs']\n"
    "assert meta['inputs']['X']['npy'] == 'float32', meta['inputs']\n"
    "x = np.load(inp / 'X.npy')\n"
    "assert x.dtype == np.float32 and x.shape == (meta['sizes']['N'],), (x.dtype, x.shape)\n"
    "np.save(out / 'Y.npy', (x.astype(np.float64) * meta['scalars']['alpha']).astype(np.float32))\n";

std::vector<float> floats(const HostTensor& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

std::string reference_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ReferenceError& e) {
    return e.what();
  }
  return "";
}

TEST(ReferenceCommand, WritesTheInputsRunsTheCommandAndReadsItsOutputs) {
  REQUIRE_NUMPY();
  CommandProfile c(kScaleScript);
  ASSERT_TRUE(c.profile.reference_command);
  EXPECT_FALSE(c.profile.reference_is_kernel());
  EXPECT_TRUE(c.profile.reference_launches().empty());
  const auto out = reference_outputs(c.profile, c.small(), 0, 1, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "Y");
  EXPECT_EQ(out[0].shape, (std::vector<std::int64_t>{5}));
  // The inputs evo wrote are the ones the candidate gets: their draw, times alpha.
  const HostInputs in = host_inputs(c.profile, c.small(), 0, 1);
  ASSERT_EQ(in.buffers.size(), 1u);
  const std::vector<float> x = floats(in.buffers[0]), y = floats(out[0]);
  ASSERT_EQ(y.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(y[i], static_cast<float>(double(x[i]) * 2.5)) << i;
  // A different trial is different data.
  EXPECT_NE(floats(reference_outputs(c.profile, c.small(), 0, 2, {})[0]), y);
}

TEST(ReferenceCommand, RunsOncePerProblemSeedAndTrialInAProcess) {
  REQUIRE_NUMPY();
  CommandProfile c(kScaleScript);
  reference_outputs(c.profile, c.small(), 3, 0, {});
  reference_outputs(c.profile, c.small(), 3, 0, {});
  EXPECT_EQ(c.runs(), 1);
  reference_outputs(c.profile, c.small(), 3, 1, {});
  reference_outputs(c.profile, *c.profile.find_problem("big"), 3, 1, {});
  reference_outputs(c.profile, c.small(), 3, 1, {});
  EXPECT_EQ(c.runs(), 3);
  EXPECT_NE(reference_key(c.profile, c.small(), 3, 0), reference_key(c.profile, c.small(), 3, 1));
}

TEST(ReferenceCommand, ResultsOnDiskSpareARestartedWorkerTheRunUntilTheScriptChanges) {
  REQUIRE_NUMPY();
  CommandProfile c(kScaleScript);
  TempDir cache;
  const auto first = run_reference_command(c.profile, c.small(), 0, 0, cache.path);
  const auto again = run_reference_command(c.profile, c.small(), 0, 0, cache.path);  // no process memo here
  EXPECT_EQ(c.runs(), 1);
  EXPECT_EQ(again[0].bytes, first[0].bytes);
  // Nothing of the run's folders is left behind but the kept result.
  int kept = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache.path))
    if (e.is_regular_file()) {
      ++kept;
      EXPECT_EQ(e.path().filename(), "Y.npy") << e.path();
    }
  EXPECT_EQ(kept, 1);
  // Editing the script the command names is a new key.
  std::ofstream(c.dir.path / "ref.py", std::ios::app) << "# edited\n";
  run_reference_command(c.profile, c.small(), 0, 0, cache.path);
  EXPECT_EQ(c.runs(), 2);
  // Without a cache folder every call runs.
  run_reference_command(c.profile, c.small(), 0, 0, {});
  EXPECT_EQ(c.runs(), 3);
}

TEST(ReferenceCommand, ABf16OutputIsReadAsFloat32AndRoundedLikeAKernelsStore) {
  REQUIRE_NUMPY();
  CommandProfile c("np.save(out / 'Y.npy', np.array([1.0, 1.00390625, 3.14159, -2.0, 65504.0], dtype=np.float32))\n",
                   "bf16");
  const auto out = reference_outputs(c.profile, c.small(), 0, 0, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, DType::BF16);
  EXPECT_EQ(out[0].bytes.size(), 5u * 2);
  EXPECT_EQ(out[0].bytes, encode(DType::BF16, {1.0, 1.00390625, 3.14159, -2.0, 65504.0}, false, nullptr));
  EXPECT_EQ(decode(out[0])[2], 3.140625);  // 3.14159 rounded to bf16's 8 bits
}

// Each way a command can fail is one line naming the command and the buffer, and a ReferenceError
// (GREEN's callers stop on it; it is never a candidate's verdict).
TEST(ReferenceCommand, EachFailureIsOneLineNamingTheCommandAndTheBuffer) {
  REQUIRE_NUMPY();
  struct Case {
    std::string name, script, want;
    double timeout_s = 600;
  };
  const std::vector<Case> cases = {
      {"exit", "import sys\nsys.stderr.write('Traceback\\nValueError: boom in the script\\n')\nsys.exit(3)\n",
       "output Y: exited with status 3 (problem small, seed 0, trial 0); its stderr ends: ValueError: boom in the script"},
      {"shape", "np.save(out / 'Y.npy', np.zeros(4, dtype=np.float32))\n",
       "output Y: Y.npy is (4,), the buffer is (5,) (problem small, seed 0, trial 0)"},
      {"dtype", "np.save(out / 'Y.npy', np.zeros(5))\n",
       "output Y: Y.npy is float64 ('<f8'), the buffer (f32) needs float32 ('<f4'): write it with .astype(numpy.float32)"},
      {"nothing", "pass\n", "output Y: wrote no Y.npy (problem small, seed 0, trial 0; expected float32 (5,))"},
      {"garbage", "(out / 'Y.npy').write_text('no')\n", "output Y: "},
      {"hang", "import time\ntime.sleep(60)\n", "output Y: did not finish within 1 s, killed", 1},
  };
  for (const auto& k : cases) {
    CommandProfile c(k.script, "f32", k.timeout_s);
    const std::string err = reference_error([&] { reference_outputs(c.profile, c.small(), 0, 0, {}); });
    ASSERT_FALSE(err.empty()) << k.name << ": no ReferenceError";
    EXPECT_EQ(err.rfind("reference command `python3 ref.py {in} {out}`: output", 0), 0u) << k.name << ": " << err;
    EXPECT_NE(err.find(k.want), std::string::npos) << k.name << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << k.name << ": " << err;
    EXPECT_EQ(c.runs(), 1) << k.name;
  }
}

TEST(ReferenceCommand, ANonZeroExitNamesEveryOutputItOwed) {
  REQUIRE_NUMPY();
  TempDir t;
  write_text(t.path / "k.cu", "extern \"C\" __global__ void two(float* A, float* B) {}\n");
  ordered_json j = {{"template", "k.cu"},
                    {"kernel", "two"},
                    {"knobs", {{"K", {1}}}},
                    {"baseline", {{"K", 1}}},
                    {"problems", {{{"name", "p"}, {"sizes", {{"N", 3}}}}}},
                    {"buffers",
                     {{{"name", "A"}, {"dtype", "f32"}, {"shape", {"N"}}, {"role", "inout"}},
                      {{"name", "B"}, {"dtype", "i32"}, {"shape", {"N"}}, {"role", "output"}}}},
                    {"args", {"A", "B"}},
                    {"launch", {{"grid", {1}}, {"block", {32}}}},
                    {"reference", {{"command", "exit 4 {in} {out}"}}}};
  write_text(t.path / "two.json", j.dump());
  const Profile p = load_profile(t.path / "two.json");
  const std::string err = reference_error([&] { reference_outputs(p, p.problems[0], 1, 2, {}); });
  EXPECT_NE(err.find("reference command `exit 4 {in} {out}`: outputs A, B: exited with status 4 (problem p, seed 1, trial 2)"),
            std::string::npos)
      << err;
}

// ---- stored data ----

// A profile whose reference is data: X (f32 [4]) from x.npy, Y (f32 [4]) expected from y.npy.
struct DataProfile {
  TempDir dir;
  ordered_json j;
  NpyArray x{"<f4", {4}, {}}, y{"<f4", {4}, {}};
  DataProfile() {
    write_text(dir.path / "k.cu", "extern \"C\" __global__ void scale(const float* X, float* Y, int N) {}\n");
    for (float v : {1.5f, -2.0f, 0.25f, 8.0f}) x.bytes.insert(x.bytes.end(), reinterpret_cast<std::uint8_t*>(&v),
                                                                reinterpret_cast<std::uint8_t*>(&v) + 4);
    for (float v : {3.0f, -4.0f, 0.5f, 16.0f}) y.bytes.insert(y.bytes.end(), reinterpret_cast<std::uint8_t*>(&v),
                                                                reinterpret_cast<std::uint8_t*>(&v) + 4);
    fs::create_directories(dir.path / "data");
    write_npy(dir.path / "data/x.npy", x);
    write_npy(dir.path / "data/y.npy", y);
    j = {{"template", "k.cu"},
         {"kernel", "scale"},
         {"knobs", {{"BLOCK", {64}}}},
         {"baseline", {{"BLOCK", 64}}},
         {"problems", {{{"name", "fixed"}, {"sizes", {{"N", 4}}}}}},
         {"buffers",
          {{{"name", "X"}, {"dtype", "f32"}, {"shape", {"N"}}},
           {{"name", "Y"}, {"dtype", "f32"}, {"shape", {"N"}}, {"role", "output"}}}},
         {"args", {"X", "Y", "N"}},
         {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}},
         {"reference", {{"data", {{"inputs", {{"X", "data/x.npy"}}}, {"outputs", {{"Y", "data/y.npy"}}}}}}}};
  }
  fs::path write() const {
    write_text(dir.path / "data.json", j.dump(2));
    return dir.path / "data.json";
  }
  std::string error() const {
    try {
      load_profile(write());
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(ReferenceData, InputsComeFromTheFilesAndOutputsAreCompared) {
  DataProfile d;
  const Profile p = load_profile(d.write());
  ASSERT_TRUE(p.reference_data);
  EXPECT_FALSE(p.reference_is_kernel());
  EXPECT_EQ(p.reference_data->inputs.at("X"), fs::weakly_canonical(d.dir.path / "data/x.npy"));
  // Every seed and trial alike: the inputs are the file.
  EXPECT_EQ(host_inputs(p, p.problems[0], 7, 3).buffers.at(0).bytes, d.x.bytes);
  EXPECT_EQ(reference_key(p, p.problems[0], 0, 0), reference_key(p, p.problems[0], 7, 3));
  const auto out = reference_outputs(p, p.problems[0], 7, 3, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, d.y.bytes);
  EXPECT_EQ(out[0].name, "Y");
}

TEST(ReferenceData, ABadFileOrBufferIsOneLineNamingTheField) {
  struct Case {
    std::function<void(DataProfile&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](DataProfile& d) { write_npy(d.dir.path / "data/y.npy", NpyArray{"<f8", {4}, std::vector<std::uint8_t>(32)}); },
       "reference.data.outputs.Y: y.npy is float64 ('<f8'), buffer Y (f32) needs float32 ('<f4')"},
      {[](DataProfile& d) { write_npy(d.dir.path / "data/x.npy", NpyArray{"<f4", {2, 2}, std::vector<std::uint8_t>(16)}); },
       "reference.data.inputs.X: x.npy is (2, 2), buffer X is (4,) for problem fixed"},
      {[](DataProfile& d) { d.j["problems"].push_back({{"name", "other"}, {"sizes", {{"N", 8}}}}); },
       "reference.data.inputs.X: x.npy is (4,), buffer X is (8,) for problem other"},
      {[](DataProfile& d) { d.j["reference"]["data"]["outputs"] = ordered_json::object(); },
       "reference.data.outputs: no file for output buffer Y"},
      {[](DataProfile& d) { d.j["reference"]["data"]["outputs"]["Q"] = "data/y.npy"; }, "reference.data.outputs.Q: no buffer 'Q'"},
      {[](DataProfile& d) { d.j["reference"]["data"]["outputs"]["X"] = "data/x.npy"; },
       "reference.data.outputs.X: buffer X is not an output or inout buffer"},
      {[](DataProfile& d) { d.j["reference"]["data"]["inputs"]["X"] = "data/nope.npy"; },
       "reference.data.inputs.X: file not found"},
      {[](DataProfile& d) { d.j["reference"]["data"].erase("inputs"); }, "reference.data.inputs: missing"},
      {[](DataProfile& d) { d.j["reference"]["data"]["output"] = ordered_json::object(); },
       "reference.data.output: unknown field"},
      {[](DataProfile& d) { write_text(d.dir.path / "data/y.npy", "garbage"); }, "reference.data.outputs.Y: "},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    DataProfile d;
    cases[i].edit(d);
    const std::string err = d.error();
    EXPECT_NE(err.find("data.json: " + cases[i].want), std::string::npos) << "case " << i << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// ---- which reference ----

TEST(ReferenceForms, OneFormOnlyAndACommandNamesBothFolders) {
  DataProfile d;
  struct Case {
    std::function<void(ordered_json&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](ordered_json& j) { j["reference"] = {{"command", "python3 ref.py {in}"}}; },
       "reference.command: 'python3 ref.py {in}' must name {in} (the folder evo writes the inputs to) and {out}"},
      {[](ordered_json& j) { j["reference"] = {{"command", "python3 ref.py {in} {out}"}, {"kernel", "scale"}}; },
       "reference: give one form of reference, not command and a kernel (kernel)"},
      {[](ordered_json& j) { j["reference"] = {{"command", "python3 ref.py {in} {out}"}, {"timeout_s", 0}}; },
       "reference.timeout_s: must be positive"},
      {[](ordered_json& j) { j["reference"] = ordered_json::object(); },
       "reference: give the trusted reference as a kernel (template, kernel, launch), launches, a command, data or a "
       "configuration of the candidate (config)"},
  };
  for (const auto& c : cases) {
    DataProfile fresh;
    c.edit(fresh.j);
    const std::string err = fresh.error();
    EXPECT_NE(err.find("data.json: " + c.want), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  d.j["reference"] = {{"command", "python3 ref.py {in} {out}"}};
  const Profile p = load_profile(d.write());
  ASSERT_TRUE(p.reference_command);
  EXPECT_EQ(p.reference_command->dir, d.dir.path);
  EXPECT_EQ(p.reference_command->timeout_s, 600);
}

TEST(ReferenceForms, TheShippedCommandExampleRunsItsNumPyScript) {
  REQUIRE_NUMPY();
  const Profile p = load_profile(test::source_root() / "profiles/stencil3.json");
  ASSERT_TRUE(p.reference_command);
  const Problem& small = *p.find_problem("small");
  const auto out = run_reference_command(p, small, 0, 0, {});
  const auto x = floats(host_inputs(p, small, 0, 0).buffers.at(0));
  const auto y = floats(out.at(0));
  ASSERT_EQ(y.size(), 1000u);
  // The stencil in double, the ends clamped: what the kernel is checked against.
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double left = x[i == 0 ? 0 : i - 1], right = x[i + 1 < x.size() ? i + 1 : x.size() - 1];
    EXPECT_FLOAT_EQ(y[i], static_cast<float>(0.25 * left + 0.5 * x[i] + 0.25 * right)) << i;
  }
}

}  // namespace
}  // namespace evo
