// `evo run` as users run it (the real binary, EVO_BINARY): kill -9 and --resume, Ctrl-C, and the
// bad inputs that must give one line and a non-zero exit. CPU only: every run is a replay.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "engine/replay.h"
#include "engine/evaluator.h"
#include "population/landscape.h"
#include "population/store.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

const fs::path kLandscape = evo::test::source_root() / "tests" / "data" / "landscape_synthetic.json";

using test::evo_binary;

using test::TempDir;

struct Result {
  int code;
  std::string out, err;
};

// Runs evo with `args` (shell words), capturing stdout and stderr separately.
Result evo(const fs::path& dir, const std::string& args, const std::string& env = "") {
  const std::string out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
  const std::string cmd = env + " '" + evo_binary() + "' --db '" + (dir / "evo.db").string() + "' " + args + " >'" +
                          out + "' 2>'" + err + "'";
  int st = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
}

std::string replay_args(int budget) {
  return "run --replay '" + kLandscape.string() + "' --budget " + std::to_string(budget) + " --seed 3 -q";
}

// Starts a slow replay run in the background; returns its pid.
pid_t start_slow_run(const fs::path& dir, int budget) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("EVO_REPLAY_DELAY_MS", "15", 1);
    const std::string db = (dir / "evo.db").string(), land = kLandscape.string(), b = std::to_string(budget);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl(evo_binary().c_str(), "evo", "--db", db.c_str(), "run", "--replay", land.c_str(), "--budget", b.c_str(),
          "--seed", "3", "-q", (char*)nullptr);
    _exit(127);
  }
  return pid;
}

// Waits until run 1 holds at least n evaluations.
void wait_for(const fs::path& dir, std::size_t n) {
  for (int i = 0; i < 1000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!fs::exists(dir / "evo.db")) continue;
    try {
      Store s(dir / "evo.db");
      if (s.run(1) && s.evaluations_of_run(1).size() >= n) return;
    } catch (const std::exception&) {
    }
  }
  FAIL() << "the run never recorded " << n << " evaluations";
}

void expect_complete_run(const fs::path& dir, const std::vector<StoredEvaluation>& before, int budget) {
  Store s(dir / "evo.db");
  auto after = s.evaluations_of_run(1);
  // Nothing lost: every evaluation committed before the kill is still there, unchanged.
  ASSERT_GE(after.size(), before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].id, before[i].id);
    EXPECT_EQ(after[i].eval.config_hash, before[i].eval.config_hash);
  }
  // Nothing twice, and exactly the budget of new evaluations.
  std::set<std::string> hashes;
  for (const auto& e : after) EXPECT_TRUE(hashes.insert(e.eval.config_hash).second) << e.eval.config_hash;
  EXPECT_EQ(s.run(1)->new_evaluations, budget);
  EXPECT_EQ(s.run(1)->status, "finished");
  EXPECT_TRUE(s.check().ok);
}

TEST(RunCommand, KillNineThenResumeLosesAndRepeatsNothing) {
  TempDir d;
  pid_t pid = start_slow_run(d.path, 60);
  wait_for(d.path, 15);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  std::vector<StoredEvaluation> before;
  {
    Store s(d.path / "evo.db");
    before = s.evaluations_of_run(1);
    ASSERT_LT(before.size(), 60u) << "the run finished before it was killed";
    EXPECT_EQ(s.run(1)->status, "running");
  }
  Result r = evo(d.path, "run --resume 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_complete_run(d.path, before, 60);
  EXPECT_EQ(evo(d.path, "db check").code, 0);
}

TEST(RunCommand, CtrlCFinishesTheCandidateAndLeavesTheRunResumable) {
  TempDir d;
  pid_t pid = start_slow_run(d.path, 60);
  wait_for(d.path, 10);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  std::vector<StoredEvaluation> before;
  {
    Store s(d.path / "evo.db");
    EXPECT_EQ(s.run(1)->status, "interrupted");
    before = s.evaluations_of_run(1);
  }
  EXPECT_EQ(evo(d.path, "db check").code, 0);
  Result r = evo(d.path, "run --resume 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_complete_run(d.path, before, 60);
}

TEST(RunCommand, SameSeedSameRun) {
  TempDir a, b;
  ASSERT_EQ(evo(a.path, replay_args(40)).code, 0);
  ASSERT_EQ(evo(b.path, replay_args(40)).code, 0);
  Store sa(a.path / "evo.db"), sb(b.path / "evo.db");
  auto ea = sa.evaluations_of_run(1), eb = sb.evaluations_of_run(1);
  ASSERT_EQ(ea.size(), eb.size());
  for (std::size_t i = 0; i < ea.size(); ++i) EXPECT_EQ(ea[i].eval.config_hash, eb[i].eval.config_hash);
}

// Repeating a finished run reads its results back in the same order and stops where it stopped;
// a different budget is a different search and goes on past the read-back candidates.
TEST(RunCommand, RepeatingAFinishedRunReadsItBackAndMeasuresNothing) {
  TempDir d;
  ASSERT_EQ(evo(d.path, replay_args(30)).code, 0);
  const Result again = evo(d.path, replay_args(30));
  ASSERT_EQ(again.code, 0) << again.err;
  Store s(d.path / "evo.db");
  auto first = s.evaluations_of_run(1), second = s.evaluations_of_run(2);
  ASSERT_EQ(second.size(), first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(second[i].reused) << i;
    EXPECT_EQ(second[i].eval.config_hash, first[i].eval.config_hash) << i;
  }
  ASSERT_EQ(evo(d.path, replay_args(40)).code, 0);
  const auto third = s.evaluations_of_run(3);
  std::size_t fresh = 0;
  for (const auto& e : third) fresh += e.reused ? 0 : 1;
  EXPECT_EQ(fresh, 40u);
}

TEST(RunCommand, ExportedLandscapeReplaysTheRun) {
  TempDir d;
  ASSERT_EQ(evo(d.path, replay_args(30)).code, 0);
  Result r = evo(d.path, "export-landscape 1 --to '" + (d.path / "landscape_copy.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  Landscape l = read_landscape(d.path / "landscape_copy.json");
  EXPECT_EQ(l.points.size(), 30u);
  EXPECT_EQ(l.profile, "synthetic_sdpa");
  ReplayEvaluator again(d.path / "landscape_copy.json");  // a valid landscape: every point in its space
  EXPECT_GT(again.time_baseline().p50_us, 0);
}

// A run cut short exports what it evaluated; export and replay both say how much of the valid
// space the file holds (a replay gives the rest as failures), and say nothing of a whole one.
TEST(RunCommand, ALandscapeOfARunCutShortSaysHowMuchOfTheSpaceItHolds) {
  TempDir d;
  ASSERT_EQ(evo(d.path, replay_args(30)).code, 0);
  const fs::path part = d.path / "part.json";
  const Result r = evo(d.path, "export-landscape 1 --to '" + part.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const Landscape whole_space = read_landscape(kLandscape);
  const LandscapeCoverage c = landscape_coverage(whole_space, KnobSpace(landscape_profile(whole_space, kLandscape)));
  ASSERT_EQ(c.unrecorded(), 0u) << "the synthetic landscape is a whole space";
  const std::string held = "holds 30 of the " + std::to_string(c.valid) + " configurations";
  EXPECT_NE(r.out.find(held), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("other " + std::to_string(c.valid - 30) + " as failures"), std::string::npos) << r.out;
  TempDir d2, d3;
  const Result replayed = evo(d2.path, "run --replay '" + part.string() + "' --budget 5");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  EXPECT_NE((replayed.out + replayed.err).find(held), std::string::npos) << replayed.out << replayed.err;

  const Result whole = evo(d3.path, "run --replay '" + kLandscape.string() + "' --budget 5");
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ((whole.out + whole.err).find("configurations that pass its constraints"), std::string::npos) << whole.out;
}

// Exhaustive and random read no metrics while they run: no candidate is profiled mid-run, and the
// run's ten best are at its end, their records completed in the store (issue 35). The model-led
// default reads them (the insight rules) and is profiled as it goes.
TEST(RunCommand, AStrategyThatReadsNoMetricsGetsItsBestProfiledAtTheEnd) {
  const fs::path stencil = evo::test::source_root() / "tests" / "data" / "landscape_kt_stencil_h100.json";
  const Landscape land = read_landscape(stencil);
  std::map<std::string, const LandscapePoint*> recorded;
  for (const auto& p : land.points) recorded[config_hash(p.knobs)] = &p;
  for (const std::string strategy : {"exhaustive", "random", "evo"}) {
    SCOPED_TRACE(strategy);
    TempDir d;
    Result r = evo(d.path, "run --replay '" + stencil.string() + "' --strategy " + strategy + " --budget 60 --seed 2");
    ASSERT_EQ(r.code, 0) << r.err;
    Store store(d.path / "evo.db");
    auto evals = store.evaluations_of_run(1);
    std::vector<const StoredEvaluation*> measured;
    for (const auto& e : evals)
      if (e.eval.status == Status::Measured) measured.push_back(&e);
    std::stable_sort(measured.begin(), measured.end(), [](const StoredEvaluation* a, const StoredEvaluation* b) {
      return a->eval.fast.p50_us < b->eval.fast.p50_us;
    });
    ASSERT_GT(measured.size(), 10u);
    std::size_t deferred = 0;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      const Evaluation& e = measured[i]->eval;
      const LandscapePoint& p = *recorded.at(config_hash(e.config));
      if (e.metrics.reason == kMetricsDeferred) ++deferred;
      if (strategy == "evo") {
        EXPECT_NE(e.metrics.reason, kMetricsDeferred);
      } else if (i < 10) {  // the ten best: what the GPU gave when the landscape was recorded
        EXPECT_NE(e.metrics.reason, kMetricsDeferred) << "best #" << i;
        EXPECT_EQ(e.metrics.values, p.metrics) << "best #" << i;
        EXPECT_EQ(e.metrics.outcome, p.metrics.empty() ? Outcome::Skipped : Outcome::Passed);
      } else {
        EXPECT_EQ(e.metrics.reason, kMetricsDeferred) << "#" << i;
        EXPECT_TRUE(e.metrics.values.empty());
        EXPECT_EQ(e.seconds_metrics, 0.0) << "#" << i << ": no pass, no time";
      }
    }
    if (strategy != "evo") {
      EXPECT_EQ(deferred, measured.size() - 10);
      EXPECT_NE((r.out + r.err).find("metrics of the run's 10 best, profiled at its end"), std::string::npos) << r.out << r.err;
    }
  }
}

// One line on stderr, starting "evo: ", and a non-zero exit.
void expect_one_line_error(const Result& r, const std::string& says) {
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err.rfind("evo: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

TEST(RunCommand, BadInputsAreOneLineErrors) {
  TempDir d;
  expect_one_line_error(evo(d.path, "run --profile no_such_profile --budget 5"), "unknown profile 'no_such_profile'");
  expect_one_line_error(evo(d.path, replay_args(0)), "--budget 0");
  expect_one_line_error(evo(d.path, "run --replay '" + kLandscape.string() + "' --budget -5"), "--budget -5");
  expect_one_line_error(evo(d.path, replay_args(5) + " --strategy annealing"), "unknown strategy 'annealing'");
  expect_one_line_error(evo(d.path, "run --resume 1"), "no such database");
  ASSERT_EQ(evo(d.path, replay_args(5)).code, 0);
  expect_one_line_error(evo(d.path, "run --resume 1"), "the run is finished");
  expect_one_line_error(evo(d.path, "run --resume 99"), "--resume 99: no such run");
  expect_one_line_error(evo(d.path, "export best --profile other_profile"), "no elites for profile other_profile");
  std::ofstream(d.path / "a_file") << "x";
  const std::string under_file = (d.path / "a_file" / "sub").string();
  expect_one_line_error(evo(d.path, "export-landscape 1 --to '" + under_file + "/l.json'"), "a_file/sub");
  expect_one_line_error(evo(d.path, "export-landscape 7 --to x.json"), "no run 7");
}

}  // namespace
}  // namespace evo
