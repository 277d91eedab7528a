// Where evo's data is found (engine/data_dir.h) and which profile `evo run` takes when none is
// named (engine/default_profile.h): both decided without a GPU, so pinned here on the CPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/data_dir.h"
#include "engine/default_profile.h"
#include "engine/error.h"
#include "engine/profile.h"
#include "tests/support.h"

namespace fs = std::filesystem;

namespace {

// The checkout's profiles with their best_for, as `evo run` would list them once installed.
std::vector<evo::ProfileCandidate> checkout_profiles() {
  std::vector<evo::ProfileCandidate> out;
  for (const auto& e : fs::directory_iterator(evo::test::source_root() / "profiles"))
    if (e.path().extension() == ".json") out.push_back({e.path().stem().string(), evo::load_profile(e.path()).best_for});
  return out;
}

TEST(DefaultProfile, HopperTakesTheFp8WgmmaProfile) {
  const auto c = evo::choose_default_profile("sm_90", checkout_profiles());
  EXPECT_EQ(c.name, "sdpa_fp8_wgmma");
  EXPECT_NE(c.reason.find("sm_90"), std::string::npos) << c.reason;
}

TEST(DefaultProfile, OtherDevicesTakeSdpaFp8AndSayWhy) {
  for (const char* cc : {"sm_80", "sm_89", "sm_100", "sm_120"}) {
    const auto c = evo::choose_default_profile(cc, checkout_profiles());
    EXPECT_EQ(c.name, "sdpa_fp8") << cc;
    EXPECT_NE(c.reason.find(cc), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("best_for"), std::string::npos) << c.reason;
  }
}

TEST(DefaultProfile, SeveralForOneDeviceTakeTheFirstByNameAndNameTheOthers) {
  const auto c = evo::choose_default_profile(
      "sm_89", {{"zeta", {"sm_89"}}, {"alpha", {"sm_80", "sm_89"}}, {"mid", {"sm_90"}}, {"sdpa_fp8", {}}});
  EXPECT_EQ(c.name, "alpha");
  EXPECT_NE(c.reason.find("zeta"), std::string::npos) << c.reason;
  EXPECT_EQ(c.reason.find("mid"), std::string::npos) << c.reason;
}

TEST(DefaultProfile, EveryShippedBestForIsADeviceArch) {
  for (const auto& p : checkout_profiles())
    for (const auto& a : p.best_for) EXPECT_TRUE(a.rfind("sm_", 0) == 0 && a.back() != 'a') << p.name << ": " << a;
}

TEST(DefaultProfile, MalformedBestForIsNamedWithItsValue) {
  evo::test::TempDir dir;
  std::ifstream in(evo::test::source_root() / "profiles/gemm_fp16.json");
  auto j = nlohmann::ordered_json::parse(in);
  j["template"] = (evo::test::source_root() / "templates/gemm.cu").string();
  j["reference"]["template"] = (evo::test::source_root() / "templates/reference/gemm_ref.cu").string();
  for (const auto& [bad, want] : std::vector<std::pair<nlohmann::ordered_json, std::string>>{
           {nlohmann::ordered_json::array({"hopper"}), "'hopper' is not a device arch"},
           {"sm_90", "must be a list of strings"}}) {
    j["best_for"] = bad;
    const fs::path p = dir.path / "p.json";
    std::ofstream(p) << j.dump(2);
    try {
      evo::load_profile(p);
      ADD_FAILURE() << "accepted best_for " << bad.dump();
    } catch (const evo::UserError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("best_for"), std::string::npos) << msg;
      EXPECT_NE(msg.find(want), std::string::npos) << msg;
    }
  }
}

TEST(DataDir, InstalledPrefixFirstThenBesideTheExecutable) {
  const auto c = evo::data_dir_candidates("/opt/x/bin/evo", "");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], fs::path("/opt/x/share/evo"));
  EXPECT_EQ(c[1], fs::path("/opt/x/bin/share/evo"));
}

TEST(DataDir, EnvironmentOverridesEverything) {
  const auto c = evo::data_dir_candidates("/opt/x/bin/evo", "/data/evo");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], fs::path("/data/evo"));
}

TEST(DataDir, BuildTreeFindsTheShippedProfiles) {
  // This test binary sits beside build/evo: build/share/evo is CMake's link to the checkout's data.
  const auto exe = evo::executable_path();
  bool found = false;
  for (const auto& c : evo::data_dir_candidates(exe, ""))
    found = found || fs::exists(c / "profiles" / "sdpa_fp8.json");
  EXPECT_TRUE(found) << "no share/evo/profiles beside " << exe;
}

}  // namespace

namespace {

// Without a GPU, `evo run` with no --profile fails as before choosing: one line naming the missing
// device, nothing created. (With one, it says which profile it took: a GPU test for the main session.)
TEST(DefaultProfile, RunWithoutADeviceFailsBeforeChoosingAndCreatesNothing) {
  if (const std::string why = evo::test::no_cuda_device_reason(); why.empty()) GTEST_SKIP() << "a CUDA device is present";
  evo::test::TempDir dir;
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + evo::test::evo_binary() +
                          "' --db evo.db run --budget 2 -q >out.txt 2>err.txt";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  std::ifstream in(dir.path / "err.txt");
  std::string line, rest;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("evo: no CUDA device is present: ", 0), 0u) << line;
  EXPECT_FALSE(std::getline(in, rest)) << "more than one line: " << rest;
  EXPECT_FALSE(fs::exists(dir.path / "evo.db"));
}

}  // namespace
