// The `evo` command as a user meets it: the real binary (EVO_BINARY) run in a child process,
// its exit code, its stdout and its one stderr line, and what it left (or did not leave) on disk.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/npy.h"  // defines: write_npy, NpyArray
#include "engine/profile.h"
#include "engine/replay.h"  // defines: Landscape, landscape_text
#include "engine/space.h"
#include "population/store.h"
#include "tests/slow_compile_landscape.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;
const fs::path kSource = evo::test::source_root();

using test::TempDir;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

using test::evo_binary;

struct Result {
  int code = -1;  // exit status; 128 + N if killed by signal N
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
};

// Runs `evo args...` in `cwd`, stdout and stderr captured through files (no pipe to fill up).
// `wrapper` (a command found on PATH, such as setpriv with its options) runs evo, when given.
Result run_evo(const std::vector<std::string>& args, const fs::path& cwd, const std::vector<std::string>& wrapper = {}) {
  TempDir io;
  const fs::path out = io.path / "stdout", err = io.path / "stderr";
  const std::string bin = evo_binary();
  std::vector<std::string> line = wrapper;
  line.push_back(bin);
  line.insert(line.end(), args.begin(), args.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    std::vector<char*> argv;
    for (const auto& a : line) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  Result r;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_bytes(out);
  r.err = read_bytes(err);
  return r;
}

// Every file under `dir` with its size and content hash: what a command must not change.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? read_bytes(e.path()) : "<dir>";
  return files;
}

// The shipped gemm profile with absolute template paths, so that it can be edited and written
// anywhere.
ordered_json gemm_json() {
  std::ifstream in(kSource / "profiles/gemm_fp16.json");
  auto j = ordered_json::parse(in);
  j["template"] = (kSource / "templates/gemm.cu").string();
  j["reference"]["template"] = (kSource / "templates/reference/gemm_ref.cu").string();
  return j;
}

// ---- a user's bad input: one line naming the file and field, exit 2, nothing written ------------

struct BadInput {
  std::string name;
  std::function<std::string(ordered_json&)> edit;  // edits the profile; or returns raw file text
  std::string field_and_message;                  // expected after "evo: <file>: "
};
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }  // (else gtest prints raw bytes)

class CliBadProfile : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadProfile, OneLineNamingFileAndFieldExit2NothingWritten) {
  TempDir t;
  auto j = gemm_json();
  const std::string raw = GetParam().edit(j);
  const fs::path profile = t.path / (GetParam().name + ".json");
  write_text(profile, raw.empty() ? j.dump(2) : raw);
  const auto before = snapshot(t.path);
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"check", profile.string()},
        std::vector<std::string>{"--db", (t.path / "evo.db").string(), "--cache", (t.path / "cache").string(), "compile",
                                 profile.string(), "--all", "--arch", "sm_90"}}) {
    SCOPED_TRACE(cmd[0] == "check" ? "evo check" : "evo compile --all");
    const Result r = run_evo(cmd, t.path);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    const std::string want = "evo: " + profile.string() + ": " + GetParam().field_and_message;
    EXPECT_EQ(lines[0].rfind(want, 0), 0u) << lines[0] << "\nwanted it to start with\n" << want;
    EXPECT_EQ(snapshot(t.path), before) << "the command wrote something";
    EXPECT_FALSE(fs::exists(t.path / "evo.db"));
    EXPECT_FALSE(fs::exists(t.path / "cache"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, CliBadProfile,
    ::testing::Values(
        BadInput{"malformed_json", [](ordered_json&) { return std::string("{\"name\": \"x\", \"knobs\": {\"A\": [1, 2]\n"); },
                 "malformed JSON"},
        BadInput{"unknown_field", [](ordered_json& j) { j["constriants"] = ordered_json::array(); return std::string(); },
                 "constriants: unknown field"},
        BadInput{"knob_no_values", [](ordered_json& j) { j["knobs"]["STAGES"] = ordered_json::array(); return std::string(); },
                 "knobs.STAGES: knob with no values"},
        BadInput{"constraint_not_expression",
                 [](ordered_json& j) { j["constraints"].push_back("BLOCK_M %% ) 16"); return std::string(); },
                 "constraints[7]: "},
        BadInput{"constraints_leave_no_config",
                 [](ordered_json& j) { j["constraints"].push_back("BLOCK_M > 1000"); return std::string(); },
                 "constraints: no configuration satisfies them"},
        BadInput{"missing_template",
                 [](ordered_json& j) { j["template"] = (kSource / "templates/nope.cu").string(); return std::string(); },
                 "template: template file not found"},
        BadInput{"kernel_not_in_template", [](ordered_json& j) { j["kernel"] = "gemm_fp17"; return std::string(); },
                 "kernel: kernel 'gemm_fp17' not found"},
        BadInput{"unknown_dtype", [](ordered_json& j) { j["buffers"][0]["dtype"] = "fp4"; return std::string(); },
                 "buffers[0].dtype: unknown dtype 'fp4'"}),
    [](const auto& info) { return info.param.name; });

// ---- a profile's paths: every error the filesystem can give is the field's one line, exit 2 ------

// A folder with a small kernel, its reference, stored data and the things a path can run into: a
// regular file to go through, a symbolic link to itself, a folder nobody but its owner can enter.
struct PathsFixture {
  TempDir t;
  PathsFixture() {
    write_text(t.path / "k.cu",
               "extern \"C\" __global__ void scale(const float* X, float* Y, int N) {\n"
               "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) Y[i] = 2.0f * X[i]; }\n"
               "extern \"C\" __global__ void twice(float* Y, int N) {\n"
               "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) Y[i] *= 2.0f; }\n");
    write_text(t.path / "ref.cu",
               "extern \"C\" __global__ void scale_ref(const float* X, float* Y, int N) {\n"
               "  for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i]; }\n");
    fs::create_directories(t.path / "data");
    const NpyArray four{"<f4", {4}, std::vector<std::uint8_t>(16, 0)};
    write_npy(t.path / "data/x.npy", four);
    write_npy(t.path / "data/y.npy", four);
    write_text(t.path / "plainfile", "a regular file, not a folder\n");
    fs::create_directory_symlink("loop", t.path / "loop");
    fs::create_directories(t.path / "locked");
    write_text(t.path / "locked/k.cu", read_bytes(t.path / "k.cu"));
    fs::permissions(t.path / "locked", fs::perms::owner_all);  // 0700: only its owner (root) may enter
    // The rest stays readable by the unprivileged user the permission case runs as.
    fs::permissions(t.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  }
  static ordered_json single() {
    return {{"template", "k.cu"},
            {"kernel", "scale"},
            {"include_dirs", {"inc"}},
            {"knobs", {{"BLOCK", {64, 128}}}},
            {"baseline", {{"BLOCK", 64}}},
            {"problems", {{{"name", "fixed"}, {"sizes", {{"N", 4}}}}}},
            {"buffers",
             {{{"name", "X"}, {"dtype", "f32"}, {"shape", {"N"}}},
              {{"name", "Y"}, {"dtype", "f32"}, {"shape", {"N"}}, {"role", "output"}}}},
            {"args", {"X", "Y", "N"}},
            {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}},
            {"reference", {{"template", "ref.cu"}, {"kernel", "scale_ref"}, {"launch", {{"grid", {1}}, {"block", {1}}}}}}};
  }
  static ordered_json launches() {
    ordered_json j = single();
    for (const char* k : {"kernel", "args", "launch"}) j.erase(k);
    j["launches"] = {{{"kernel", "scale"}, {"args", {"X", "Y", "N"}}, {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}}},
                     {{"template", "k.cu"}, {"kernel", "twice"}, {"args", {"Y", "N"}},
                      {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}}}};
    j["reference"] = {{"launches", {{{"template", "ref.cu"}, {"kernel", "scale_ref"}, {"args", {"X", "Y", "N"}},
                                     {"launch", {{"grid", {1}}, {"block", {1}}}}}}}};
    return j;
  }
  static ordered_json data() {
    ordered_json j = single();
    j["reference"] = {{"data", {{"inputs", {{"X", "data/x.npy"}}}, {"outputs", {{"Y", "data/y.npy"}}}}}};
    return j;
  }
};

// Runs evo as an unprivileged user where this process is root (root enters any folder); "" or why not.
std::string unprivileged_wrapper(std::vector<std::string>& wrapper) {
  if (::geteuid() != 0) return "";
  if (std::system("command -v setpriv >/dev/null 2>&1") != 0)
    return "running as root and setpriv (util-linux) is missing: cannot make a folder unreadable";
  wrapper = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  return "";
}

TEST(CliBadInput, EveryFilesystemErrorOfAProfilePathIsOneLineNamingTheFieldExit2) {
  struct Field {
    std::function<ordered_json()> profile;
    std::string pointer, field;
  };
  const std::vector<Field> fields = {
      {PathsFixture::single, "/template", "template"},
      {PathsFixture::single, "/reference/template", "reference.template"},
      {PathsFixture::single, "/include_dirs/0", "include_dirs[0]"},
      {PathsFixture::launches, "/template", "template"},
      {PathsFixture::launches, "/launches/1/template", "launches[1].template"},
      {PathsFixture::launches, "/reference/launches/0/template", "reference.launches[0].template"},
      {PathsFixture::data, "/reference/data/inputs/X", "reference.data.inputs.X"},
      {PathsFixture::data, "/reference/data/outputs/Y", "reference.data.outputs.Y"},
  };
  struct Breakage {
    std::string name, path, why;
  };
  const std::vector<Breakage> breakages = {
      {"a name of 400 characters", std::string(400, 'n') + ".cu", "File name too long"},
      {"a path through a regular file", "plainfile/k.cu", "Not a directory"},
      {"a loop of symbolic links", "loop/k.cu", "Too many levels of symbolic links"},
      {"a folder without permission", "locked/k.cu", "Permission denied"},
  };
  std::vector<std::string> as_user;
  const std::string no_user = unprivileged_wrapper(as_user);
  PathsFixture fx;
  for (const auto& f : fields)
    for (const auto& b : breakages) {
      // A folder that is not there is no error for include_dirs (NVRTC skips it), and a path
      // through a file names no folder that exists.
      if (f.field == "include_dirs[0]" && b.path == "plainfile/k.cu") continue;
      const bool permission = b.why == "Permission denied";
      if (permission && !no_user.empty()) {
        ADD_FAILURE() << no_user;
        continue;
      }
      SCOPED_TRACE(f.field + " through " + b.name);
      ordered_json j = f.profile();
      j[ordered_json::json_pointer(f.pointer)] = b.path;
      const fs::path profile = fx.t.path / "broken.json";
      write_text(profile, j.dump(2));
      fs::permissions(profile, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
      for (const std::vector<std::string>& cmd :
           {std::vector<std::string>{"check", profile.string()},
            std::vector<std::string>{"--db", (fx.t.path / "evo.db").string(), "--cache", (fx.t.path / "cache").string(),
                                     "compile", profile.string(), "--all"}}) {
        const Result r = run_evo(cmd, fx.t.path, permission ? as_user : std::vector<std::string>{});
        EXPECT_EQ(r.code, 2) << r.out << r.err;
        const auto lines = r.err_lines();
        ASSERT_EQ(lines.size(), 1u) << r.err;
        const std::string want = "evo: " + profile.string() + ": " + f.field + ": ";
        EXPECT_EQ(lines[0].rfind(want, 0), 0u) << lines[0] << "\nwanted it to start with\n" << want;
        EXPECT_NE(lines[0].find(b.why), std::string::npos) << lines[0];
        EXPECT_FALSE(fs::exists(fx.t.path / "cache"));
      }
    }
  // The unbroken profiles load: each failure above is the one path's.
  for (const auto& make : {PathsFixture::single, PathsFixture::launches, PathsFixture::data}) {
    write_text(fx.t.path / "whole.json", make().dump(2));
    const Result r = run_evo({"check", (fx.t.path / "whole.json").string()}, fx.t.path);
    EXPECT_EQ(r.code, 0) << r.err;
  }
}

TEST(CliBadInput, AProfilePathThatCannotBeReadIsOneLineExit2) {
  PathsFixture fx;
  struct Case {
    fs::path profile;
    std::string why;
  };
  const std::vector<Case> cases = {{fx.t.path / (std::string(400, 'p') + ".json"), "cannot read the profile: File name too long"},
                                   {fx.t.path / "loop" / "p.json", "cannot read the profile: Too many levels of symbolic links"},
                                   {fx.t.path / "data", "cannot read the profile: not a regular file"}};
  for (const auto& c : cases)
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"check", c.profile.string()},
          std::vector<std::string>{"--db", (fx.t.path / "evo.db").string(), "run", "--profile", c.profile.string()}}) {
      SCOPED_TRACE(cmd[0] + " " + c.why);
      const Result r = run_evo(cmd, fx.t.path);
      EXPECT_EQ(r.code, 2) << r.out << r.err;
      ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
      EXPECT_EQ(r.err_lines()[0], "evo: " + c.profile.string() + ": " + c.why);
      EXPECT_FALSE(fs::exists(fx.t.path / "evo.db"));
    }
}

TEST(CliBadInput, ACompileTimeLimitOfNoTimeIsOneLineExit2AndNothingWritten) {
  TempDir t;
  for (const std::string limit : {"0", "-3"}) {
    const Result r = run_evo({"--compile-timeout", limit, "--db", (t.path / "evo.db").string(), "run", "--budget", "3"},
                             t.path);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err_lines()[0], "evo: --compile-timeout " + limit + ": must be more than 0 seconds");
    EXPECT_FALSE(fs::exists(t.path / "evo.db"));
  }
}

TEST(CliBadInput, UnknownProfileNameListsTheShippedOnes) {
  TempDir t;
  const Result r = run_evo({"check", "no_such_profile"}, kSource);
  EXPECT_EQ(r.code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("unknown profile 'no_such_profile'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemm_fp16"), std::string::npos) << r.err;
}

// The database cases: the file is named, the exit is 2, and the file is left as it was.
void expect_db_refused(const fs::path& dir, const fs::path& db, const std::vector<std::string>& command) {
  const auto before = snapshot(dir);
  std::vector<std::string> args{"--db", db.string()};
  args.insert(args.end(), command.begin(), command.end());
  const Result r = run_evo(args, dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("evo: " + db.string() + ": ", 0), 0u) << lines[0];
  EXPECT_EQ(snapshot(dir), before) << "the database folder changed";
}

TEST(CliBadInput, CorruptDatabaseIsRefusedAndLeftAsItWas) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  std::string junk;
  for (int i = 0; i < 200; ++i) junk += "this is not an SQLite database, it is a text file\n";
  write_text(db, junk);
  for (const auto& cmd : {std::vector<std::string>{"runs"}, std::vector<std::string>{"show-elites"},
                          std::vector<std::string>{"db", "check"}, std::vector<std::string>{"export", "best"}}) {
    SCOPED_TRACE(cmd[0]);
    expect_db_refused(t.path, db, cmd);
  }
}

TEST(CliBadInput, TruncatedDatabaseIsRefusedAndLeftAsItWas) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  {
    Store s(db);
    RunInfo info;
    info.profile = "gemm_fp16";
    info.strategy = "random";
    s.begin_run(info);
  }
  std::error_code ec;
  fs::remove(t.path / "evo.db-wal", ec);
  fs::remove(t.path / "evo.db-shm", ec);
  const std::string whole = read_bytes(db);
  ASSERT_GT(whole.size(), 4096u);
  write_text(db, whole.substr(0, whole.size() / 2 + 100));  // torn mid-page
  expect_db_refused(t.path, db, {"runs"});
}

TEST(CliBadInput, UnwritableDatabasePathIsNamed) {
  TempDir t;
  write_text(t.path / "plainfile", "x");
  const fs::path db = t.path / "plainfile" / "evo.db";  // through a regular file: unwritable even for root
  const auto before = snapshot(t.path);
  const Result r = run_evo({"--db", db.string(), "run", "--replay", (kSource / "tests/data/landscape_synthetic.json").string(),
                            "--budget", "3", "--strategy", "random", "-q"},
                           t.path);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("evo: " + db.string() + ": ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("cannot create database"), std::string::npos) << lines[0];
  EXPECT_EQ(snapshot(t.path), before);

  // The same run with a database it can create succeeds: the path was the only fault.
  const Result ok = run_evo({"--db", (t.path / "evo.db").string(), "run", "--replay",
                             (kSource / "tests/data/landscape_synthetic.json").string(), "--budget", "3", "--strategy",
                             "random", "-q"},
                            t.path);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(t.path / "evo.db"));
}

TEST(CliBadInput, DevicesThatAreNotOrdinalsAreRefusedBeforeAnythingIsWritten) {
  TempDir t;
  for (const std::string bad : {"0,x", "1,1", "-2", ","}) {
    const Result r = run_evo({"--db", (t.path / "evo.db").string(), "run", "--devices", bad, "--replay",
                              (kSource / "tests/data/landscape_synthetic.json").string()}, t.path);
    EXPECT_EQ(r.code, 2) << bad;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(t.path / "evo.db")) << bad;
  }
}

TEST(CliBadInput, ReadingCommandsDoNotCreateAMissingDatabase) {
  TempDir t;
  const fs::path db = t.path / "typo.db";
  for (const auto& cmd : {std::vector<std::string>{"runs"}, std::vector<std::string>{"db", "check"},
                          std::vector<std::string>{"export", "best"}}) {
    SCOPED_TRACE(cmd[0]);
    expect_db_refused(t.path, db, cmd);
    EXPECT_FALSE(fs::exists(db));
  }
}

// ---- what a user reads ------------------------------------------------------------------------------

TEST(Cli, HelpListsEveryCommand) {
  const Result r = run_evo({"--help"}, kSource);
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* cmd : {"profiles", "check", "compile", "eval", "run", "runs", "compare", "show-elites", "export",
                          "export-landscape", "report", "export-t4", "db", "worker"})
    EXPECT_NE(r.out.find(std::string("  ") + cmd), std::string::npos) << cmd << " missing from:\n" << r.out;
  // `evo worker` is a user's command for a run spread over hosts; its internal use stays out of sight.
  const Result w = run_evo({"worker", "--help"}, kSource);
  EXPECT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.out.find("--queue"), std::string::npos) << w.out;
  EXPECT_EQ(w.out.find("--one-shot"), std::string::npos) << w.out;
}

TEST(CliBadInput, AMistakeInTheCommandLineIsOneLineNamingTheCommandExit2AndNothingWritten) {
  TempDir t;
  const std::string db = (t.path / "evo.db").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--db", db, "run", "--budgget"}, "evo: The following argument was not expected: --budgget (evo run --help lists what it takes)"},
      {{"--db", db, "run", "--budget", "three"}, "evo: Could not convert: --budget = three (evo run --help lists what it takes)"},
      {{"--db", db, "db", "check", "--fix"}, "evo: The following argument was not expected: --fix (evo db check --help lists what it takes)"},
      {{"check"}, "evo: profile is required (evo check --help lists what it takes)"}};
  for (const auto& [args, want] : cases) {
    const Result r = run_evo(args, t.path);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err, want + "\n");
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(t.path / "evo.db"));
  EXPECT_EQ(run_evo({"run", "--help"}, t.path).code, 0);  // asking for help is not a mistake
}

TEST(Cli, ProfilesListsEveryShippedProfileWithItsSpace) {
  const Result r = run_evo({"profiles", "--json"}, kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  std::set<std::string> listed;
  for (const auto& p : j) listed.insert(p.at("name").get<std::string>());
  std::size_t shipped = 0;
  for (const auto& e : fs::directory_iterator(kSource / "profiles")) {
    if (e.path().extension() != ".json") continue;
    ++shipped;
    const Profile p = load_profile(e.path());
    EXPECT_TRUE(listed.count(p.name)) << p.name;
  }
  EXPECT_EQ(j.size(), shipped);
  for (const auto& p : j)
    if (p["name"] == "gemm_fp16") {
      EXPECT_EQ(p["space"].get<std::uint64_t>(), 3u * 3 * 3 * 3 * 3 * 3 * 2);
      EXPECT_EQ(p["knobs"].get<int>(), 7);
      EXPECT_EQ(p["objective"], "mission");
    }
  const Result table = run_evo({"profiles"}, kSource);
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("gemm_fp16"), std::string::npos) << table.out;
}

TEST(Cli, CheckGemmReportsSpaceValidConfigsAndBaseline) {
  const Profile p = load_profile(kSource / "profiles/gemm_fp16.json");
  const KnobSpace space(p);
  const auto valid = space.enumerate_valid().size();

  const Result r = run_evo({"check", "gemm_fp16", "--json"}, kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["profile"], "gemm_fp16");
  EXPECT_EQ(j["space"].get<std::uint64_t>(), space.size());
  EXPECT_EQ(j["valid"].get<std::size_t>(), valid);
  EXPECT_GT(valid, 0u);
  EXPECT_LT(valid, space.size());
  EXPECT_EQ(j["baseline_valid"], true);
  EXPECT_EQ(j["baseline"]["BLOCK_M"], 64);

  const Result text = run_evo({"check", "gemm_fp16"}, kSource);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find(std::to_string(space.size()) + " combinations, " + std::to_string(valid) + " pass the constraints"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(config_text(p.baseline) + "  valid"), std::string::npos) << text.out;
}

TEST(Cli, CheckSaysWhyTheBaselineIsInvalidAndExits1) {
  TempDir t;
  auto j = gemm_json();
  j["constraints"].push_back("BLOCK_M >= 128");  // the baseline has BLOCK_M = 64
  const fs::path profile = t.path / "strict.json";
  write_text(profile, j.dump(2));
  const Result r = run_evo({"check", profile.string()}, t.path);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("INVALID: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLOCK_M >= 128"), std::string::npos) << r.out;
  const Result js = run_evo({"check", profile.string(), "--json"}, t.path);
  EXPECT_EQ(json::parse(js.out)["baseline_valid"], false);
}

// ---- compile from the command line -----------------------------------------------------------------

TEST(CliCompile, AllJsonParsesAndSecondRunComesFromTheCache) {
  TempDir t;
  const std::string profile = (kSource / "tests/data/profiles/foreign_kernel.json").string();
  const std::vector<std::string> cmd{"--cache", (t.path / "cache").string(), "-j", "2", "compile", profile, "--all",
                                     "--json"};
  const Result first = run_evo(cmd, t.path);
  ASSERT_EQ(first.code, 0) << first.err;
  const json j = json::parse(first.out);
  EXPECT_EQ(j["profile"], "foreign_kernel");
  EXPECT_EQ(j["arch"], "sm_90");
  ASSERT_EQ(j["results"].size(), 19u);
  std::set<std::string> hashes;
  for (const auto& res : j["results"]) {
    EXPECT_EQ(res["build"]["ok"], true) << res.dump();
    EXPECT_EQ(res["build"]["from_cache"], false);
    EXPECT_EQ(res["build"]["lowered_name"].get<std::string>().rfind("_ZN7foreign5scaleIf", 0), 0u) << res.dump();
    EXPECT_EQ(res["static"]["outcome"], "passed") << res.dump();
    hashes.insert(res["config_hash"].get<std::string>());
  }
  EXPECT_EQ(hashes.size(), 19u);

  const Result second = run_evo(cmd, t.path);
  ASSERT_EQ(second.code, 0) << second.err;
  const json k = json::parse(second.out);
  for (const auto& res : k["results"]) EXPECT_EQ(res["build"]["from_cache"], true);
  EXPECT_LT(k["wall_s"].get<double>(), j["wall_s"].get<double>());
}

TEST(CliCompile, ForeignKernelChecksAndCompiles) {
  TempDir t;
  const std::string profile = (kSource / "tests/data/profiles/foreign_kernel.json").string();
  const Result check = run_evo({"check", profile}, t.path);
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_NE(check.out.find("kernel foreign::scale<float, block_size_x, tile_size_x>"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("20 combinations, 19 pass the constraints"), std::string::npos) << check.out;
  const Result baseline = run_evo({"--cache", (t.path / "cache").string(), "compile", profile}, t.path);
  EXPECT_EQ(baseline.code, 0) << baseline.err;
  EXPECT_NE(baseline.out.find("1 passed"), std::string::npos) << baseline.out;
}

TEST(CliCompile, GemmSampleForSm89) {
  TempDir t;
  const Result r = run_evo({"--cache", (t.path / "cache").string(), "compile", "gemm_fp16", "--sample", "2", "--seed",
                            "5", "--arch", "sm_89", "--json"},
                           kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["arch"], "sm_89");
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& res : j["results"]) {
    EXPECT_EQ(res["build"]["ok"], true) << res.dump();
    EXPECT_EQ(res["build"]["lowered_name"], "gemm_fp16");
    EXPECT_GT(res["build"]["ptxas"]["registers"].get<int>(), 0);
  }
}

// tests/data/profiles/wgmma_serialized.json: CALL_BETWEEN=1 is a kernel ptxas serialises (C7511).
// By default it passes and the table says so; with "reject" the static gate turns it away, naming
// the code and the reason.
TEST(CliCompile, SerialisedWgmmaIsShownAndRejectedWhenTheProfileSaysReject) {
  TempDir t;
  const fs::path shipped = kSource / "tests/data/profiles/wgmma_serialized.json";
  const std::string cache = (t.path / "cache").string();
  const Result shown = run_evo({"--cache", cache, "compile", shipped.string(), "--all"}, t.path);
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("wgmma serialised (C7511)"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("2 passed, 0 rejected by the static gate, 0 failed to compile, 1 with wgmma serialised by ptxas"),
            std::string::npos)
      << shown.out;

  std::ifstream in(shipped);
  auto j = ordered_json::parse(in);
  j["template"] = (kSource / "tests/data/templates/wgmma_serialized.cu").string();
  j["reference"]["template"] = j["template"];
  j["gates"]["static"] = {{"wgmma_serialized", "reject"}};
  write_text(t.path / "reject.json", j.dump(2));
  const Result r = run_evo({"--cache", cache, "compile", (t.path / "reject.json").string(), "--all", "--json"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["results"].size(), 2u);
  for (const auto& res : out["results"]) {
    const bool serial = res["config"]["CALL_BETWEEN"] == 1;
    EXPECT_EQ(res["build"]["from_cache"], true) << "the option is no part of the compile";
    if (serial) {
      EXPECT_EQ(res["static"]["outcome"], "rejected") << res.dump();
      EXPECT_EQ(res["static"]["reason"],
                "wgmma serialised by ptxas (C7511: insufficient register resources for the wgmma pipeline; "
                "gates.static.wgmma_serialized: reject)");
      EXPECT_EQ(res["build"]["ptxas"]["wgmma_serialized"],
                json::array({"C7511: insufficient register resources for the wgmma pipeline"}));
    } else {
      EXPECT_EQ(res["static"]["outcome"], "passed") << res.dump();
      EXPECT_FALSE(res["build"]["ptxas"].contains("wgmma_serialized")) << res.dump();
    }
  }
}

// ---- export -------------------------------------------------------------------------------------------

RunInfo gemm_run() {
  RunInfo r;
  r.profile = "gemm_fp16";
  r.profile_path = (kSource / "profiles/gemm_fp16.json").string();
  r.strategy = "random";
  r.device = "NVIDIA H100 80GB HBM3";
  r.driver = "580.159";
  r.arch = "sm_90";
  r.budget = 10;
  return r;
}

EvalKey gemm_key(const Config& c) {
  return {"gemm_fp16", "build-" + config_hash(c), "NVIDIA H100 80GB HBM3", "mission", "5e7a000000000001"};
}

// A kernel that passed every gate and was timed at `us` on `problem` (what export reads).
Evaluation measured_evaluation(const Config& c, const std::string& lowered_name, const std::string& problem, double us) {
  Evaluation e;
  e.config = c;
  e.config_hash = config_hash(c);
  e.status = Status::Measured;
  e.build.ok = true;
  e.build.lowered_name = lowered_name;
  e.green.outcome = Outcome::Passed;
  e.fast = {Outcome::Passed, problem, "events", 30, us, us * 1.1, us, 1.0, 0.01, us * 0.95, ""};
  return e;
}

TEST(CliExport, NoElitesIsAClearErrorAndWritesNothing) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const Profile p = load_profile(kSource / "profiles/gemm_fp16.json");
  std::int64_t failed_id = 0;
  {
    Store s(db);
    const auto run = s.begin_run(gemm_run());
    Evaluation e;
    e.config = p.baseline;
    e.config_hash = config_hash(p.baseline);
    e.status = Status::GreenFailed;
    e.message = "max abs error 3.5 > 0.01";
    failed_id = s.record(run, gemm_key(p.baseline), e, false);
  }
  const auto before = snapshot(t.path);
  const Result r = run_evo({"--db", db.string(), "export", "best", "--to", (t.path / "kernels").string()}, t.path);
  EXPECT_EQ(r.code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("evo: no elites for profile gemm_fp16 in " + db.string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(t.path / "kernels"));

  const Result by_id =
      run_evo({"--db", db.string(), "export", std::to_string(failed_id), "--to", (t.path / "kernels").string()}, t.path);
  EXPECT_EQ(by_id.code, 2);
  EXPECT_NE(by_id.err.find("green_failed, not a measured kernel"), std::string::npos) << by_id.err;
  EXPECT_FALSE(fs::exists(t.path / "kernels"));
  EXPECT_EQ(read_bytes(db), before.at("evo.db")) << "export changed the database";
}

// A replayed run's profile path is its landscape (no template): export takes the profile the
// landscape names, and says in one line how to give one when it is not at hand.
TEST(CliExport, AfterAReplayExportsTheKernelOfTheProfileTheLandscapeNames) {
  TempDir t;
  const std::string db = (t.path / "evo.db").string();
  const Result run = run_evo({"--db", db, "run", "--replay", (kSource / "tests/data/landscape_sdpa_fp8_h100.json").string(),
                              "--budget", "20", "-q"}, t.path);
  ASSERT_EQ(run.code, 0) << run.err;
  const Result r = run_evo({"--db", db, "export", "best", "--to", (t.path / "kernels").string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  int cu = 0;
  for (const auto& f : fs::directory_iterator(t.path / "kernels"))
    if (f.path().extension() == ".cu") {
      ++cu;
      EXPECT_EQ(f.path().filename().string().rfind("sdpa_fp8-", 0), 0u) << f.path();
      EXPECT_NE(read_bytes(f.path()).find("sdpa_fwd"), std::string::npos) << "the template's text is exported";
    }
  EXPECT_EQ(cu, 1);

  const Result synthetic = run_evo({"--db", (t.path / "s.db").string(), "run", "--replay",
                                    (kSource / "tests/data/landscape_synthetic.json").string(), "--budget", "5", "-q"}, t.path);
  ASSERT_EQ(synthetic.code, 0) << synthetic.err;
  const Result none = run_evo({"--db", (t.path / "s.db").string(), "export", "best", "--to", (t.path / "k2").string()}, t.path);
  EXPECT_EQ(none.code, 2);
  ASSERT_EQ(none.err_lines().size(), 1u) << none.err;
  EXPECT_NE(none.err.find("give the profile with --profile"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(t.path / "k2"));
}

// A replay spends no compile or GPU time here: its summary says nothing of a pipeline, unless it
// simulates one (then the figures are the simulation's, and say so).
TEST(CliReplay, PrintsAPipelineLineOnlyForASimulatedPipeline) {
  TempDir t;
  const std::string landscape = (kSource / "tests/data/landscape_synthetic.json").string();
  const Result plain = run_evo({"--db", (t.path / "a.db").string(), "run", "--replay", landscape, "--budget", "30",
                                "--strategy", "random", "-q"}, t.path);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("best: "), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("pipeline"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("busy"), std::string::npos) << plain.out;
  const Result simulated = run_evo({"--db", (t.path / "b.db").string(), "-j", "2", "run", "--replay", landscape,
                                    "--budget", "30", "--strategy", "random", "--replay-compile-s", "0.01",
                                    "--replay-gpu-s", "0.005", "-q"}, t.path);
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_NE(simulated.out.find("pipeline (simulated by the replay): 2 compile workers busy"), std::string::npos)
      << simulated.out;
  // When the first result came (the part of a run no count of GPUs divides), a number of seconds.
  const auto at = simulated.out.find(", the first result after ");
  ASSERT_NE(at, std::string::npos) << simulated.out;
  EXPECT_GE(std::stod(simulated.out.substr(at + 25)), 0.0);
}

// At the budget's end idle compile workers take extra candidates (engine/run.cpp): the summary says
// how many were dropped and, beside the bound of the recorded compiles, the bound with theirs.
TEST(CliReplay, TheSummarySaysWhatWasDroppedAtTheBudgetsEndAndTheBoundWithItsCompiles) {
  TempDir t;
  const fs::path landscape = test::write_slow_compile_landscape(kSource, t.path, 2.0, 0.01).path;
  const Result r = run_evo({"--db", (t.path / "a.db").string(), "-j", "4", "run", "--replay", landscape.string(),
                            "--budget", "30", "--strategy", "exhaustive", "--replay-compile-s", "-1", "--replay-gpu-s",
                            "0.001", "-q"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("30 new, 0 read back"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("more in flight dropped, not recorded (extras compiled on idle workers at the budget's end)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" dropped, bound "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("one compile alone took 2.0 s"), std::string::npos) << "the slow one was dropped: " << r.out;
}

// Transfer (engine/search/transfer.h): the same profile recorded on another device (here the H200
// landscape of sdpa_fp8, replayed into the database) is where a run on the H100 starts: one line
// says so, the two proposals after the baseline are its fastest, and --no-transfer starts afresh.
TEST(CliTransfer, ARunStartsFromTheSameProfilesOtherDeviceInTheDatabase) {
  TempDir t;
  const std::string db = (t.path / "e.db").string();
  const std::string h200 = (kSource / "tests/data/landscape_sdpa_fp8_h200.json").string();
  const std::string h100 = (kSource / "tests/data/landscape_sdpa_fp8_h100.json").string();
  Result r = run_evo({"--db", db, "run", "--replay", h200, "--budget", "20", "--no-sanitize"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("transfer"), std::string::npos) << "nothing related in the database yet: " << r.out;
  r = run_evo({"--db", db, "run", "--replay", h100, "--budget", "8", "--no-sanitize"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("transfer: 2 of the fastest on problem mission on replay:landscape_sdpa_fp8_h200 proposed first"),
            std::string::npos)
      << r.out;
  r = run_evo({"--db", db, "run", "--replay", h100, "--budget", "8", "--seed", "1", "--no-transfer", "--no-sanitize"},
              t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("transfer"), std::string::npos) << r.out;
  Store s(db, Store::Open::Existing);
  const auto with = s.evaluations_of_run(2);
  ASSERT_EQ(with.size(), 8u);
  EXPECT_EQ(with[0].eval.origin.kind, "baseline");
  for (int i = 1; i <= 2; ++i) EXPECT_EQ(with[i].eval.origin.kind, "transfer") << i;
  EXPECT_NE(with[3].eval.origin.kind, "transfer");
  for (const auto& e : s.evaluations_of_run(3)) EXPECT_NE(e.eval.origin.kind, "transfer") << e.id;
}

TEST(CliTransfer, AFileThatIsNotALandscapeIsOneLineExit2AndNothingWritten) {
  TempDir t;
  write_text(t.path / "not.json", "{\"format\": \"something else\"}");
  const Result r = run_evo({"--db", (t.path / "e.db").string(), "run", "--replay",
                            (kSource / "tests/data/landscape_sdpa_fp8_h100.json").string(), "--budget", "4",
                            "--transfer-from", (t.path / "not.json").string(), "-q"},
                           t.path);
  EXPECT_EQ(r.code, 2) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("not.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(t.path / "e.db"));
}

// A strategy option evo cannot read is refused before the database is created (transfer reads the
// database before the strategy is made, and only one that exists).
TEST(CliBadInput, ABadStrategyOptionIsOneLineExit2AndNothingWritten) {
  TempDir t;
  for (const std::string o : {"transfer=abc", "trees=0", "no_such_option=1"}) {
    const Result r = run_evo({"--db", (t.path / "e.db").string(), "run", "--replay",
                              (kSource / "tests/data/landscape_sdpa_fp8_h100.json").string(), "--budget", "4", "-o",
                              o, "-q"},
                             t.path);
    EXPECT_EQ(r.code, 2) << o << ": " << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("strategy evo: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(o.substr(0, o.find('='))), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(t.path / "e.db")) << o;
  }
}

// EVO_TRACE=FILE: the run's timeline, one Chrome trace event a line, each span where it ran.
// A simulated replay measures on one lane: one "measure" span a measured candidate, in order.
TEST(CliReplay, ATraceHasASpanForEachMeasurement) {
  TempDir t;
  const std::string landscape = (kSource / "tests/data/landscape_synthetic.json").string();
  const fs::path trace = t.path / "trace.jsonl";
  const Result r = run_evo({"--db", (t.path / "a.db").string(), "-j", "2", "run", "--replay", landscape, "--budget",
                            "12", "--strategy", "random", "--replay-compile-s", "0.01", "--replay-gpu-s", "0.02", "-q"},
                           t.path, {"env", "EVO_TRACE=" + trace.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(trace);
  int measures = 0;
  std::int64_t last_end = 0;
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line);
    EXPECT_EQ(e.at("ph"), "X") << line;
    EXPECT_GE(e.at("dur").get<std::int64_t>(), 0) << line;
    if (e.at("name") != "measure") continue;
    ++measures;
    EXPECT_EQ(e.at("tid"), "lane 0") << line;
    // One lane measures one candidate at a time: a span starts after the one before it ended.
    EXPECT_GE(e.at("ts").get<std::int64_t>(), last_end) << line;
    EXPECT_GE(e.at("dur").get<std::int64_t>(), 15000) << line;  // the simulated 0.02 s, less clock slack
    last_end = e.at("ts").get<std::int64_t>() + e.at("dur").get<std::int64_t>();
  }
  // Those that compiled reach the GPU; the summary's valid share says how many of the 12.
  const auto at = r.out.find("0 read back, ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(measures, static_cast<int>(std::lround(12 * std::stod(r.out.substr(at + 13)) / 100))) << r.out;
  EXPECT_GT(measures, 0) << r.out;
}

// `--profile FILE` beside `--replay`: the file is read as a profile and must hold the landscape's
// space, field by field; a name must be the landscape's.
TEST(CliReplay, AProfileFileMustHoldTheLandscapesSpace) {
  PathsFixture fx;
  const TempDir& t = fx.t;
  ordered_json p = PathsFixture::single();
  p["name"] = "scale";
  write_text(t.path / "scale.json", p.dump(2));
  Landscape l;
  l.profile = "scale";
  l.problem = l.objective = "fixed";
  l.device = "test";
  l.baseline = {{"BLOCK", 64}};
  l.knobs = {{"BLOCK", {64, 128}}};
  l.problems = {{"fixed", {{"N", 4}}, {}, 0}};
  l.launch.block = {"BLOCK", "1", "1"};
  LandscapePoint slow, fast;
  slow.knobs = {{"BLOCK", 64}};
  fast.knobs = {{"BLOCK", 128}};
  slow.p50_us = slow.p90_us = 10;
  fast.p50_us = fast.p90_us = 8;
  l.points = {slow, fast};
  write_text(t.path / "l.json", landscape_text(l));
  auto run = [&](const std::string& profile) {
    return run_evo({"--db", (t.path / "evo.db").string(), "run", "--profile", profile, "--replay",
                    (t.path / "l.json").string(), "--budget", "5", "--strategy", "exhaustive", "-q"}, t.path);
  };
  const Result same = run((t.path / "scale.json").string());
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.out.find("best: #"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("BLOCK=128"), std::string::npos) << same.out;

  struct Change {
    std::function<void(ordered_json&)> edit;
    std::string field_and_what;
  };
  const std::vector<Change> changes = {
      {[](ordered_json& j) { j["knobs"]["BLOCK"].push_back(256); }, "knobs.BLOCK: [64, 128, 256], the landscape records [64, 128]"},
      {[](ordered_json& j) { j["constraints"] = {"BLOCK >= 64"}; }, "constraints: [BLOCK >= 64], the landscape records []"},
      {[](ordered_json& j) { j["problems"][0]["sizes"]["N"] = 8; }, "problems[0].sizes: {N=8}, the landscape records {N=4}"},
      {[](ordered_json& j) { j["launch"]["grid"] = {2}; }, "launch.grid: [2, 1, 1], the landscape records [1, 1, 1]"},
      {[](ordered_json& j) { j["baseline"]["BLOCK"] = 128; }, "baseline: BLOCK=128, the landscape records BLOCK=64"},
      {[](ordered_json& j) { j["name"] = "other"; }, "name: 'other', the landscape records 'scale'"},
  };
  for (const auto& c : changes) {
    ordered_json j = p;
    c.edit(j);
    write_text(t.path / "changed.json", j.dump(2));
    const Result r = run((t.path / "changed.json").string());
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err_lines()[0].rfind("evo: " + (t.path / "changed.json").string() + ": " + c.field_and_what, 0), 0u)
        << r.err_lines()[0];
  }
  const Result name = run("not_the_landscapes");
  EXPECT_EQ(name.code, 2);
  EXPECT_NE(name.err.find("is of profile scale"), std::string::npos) << name.err;
}

TEST(CliExport, ExportedKernelCompilesWithNvcc) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const Profile p = load_profile(kSource / "profiles/gemm_fp16.json");
  Config best = p.baseline;
  best["BLOCK_M"] = 128;
  best["WARPS_M"] = 4;
  {
    Store s(db);
    const auto run = s.begin_run(gemm_run());
    for (const auto& [c, us] : {std::pair{p.baseline, 120.0}, std::pair{best, 80.0}}) {
      Evaluation e = measured_evaluation(c, "gemm_fp16", "mission", us);
      e.green.problems = {{"small", Outcome::Passed, 1e-3, 1e-4, 1e-4, 0, 0, 0, 0, 4, ""},
                          {"mission", Outcome::Passed, 2e-3, 2e-4, 1e-4, 0, 0, 0, 0, 4, ""}};
      e.speedup = 120.0 / us;
      s.record(run, gemm_key(c), e, false);
    }
  }
  const Result r = run_evo({"--db", db.string(), "export", "best", "--to", (t.path / "kernels").string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string stem = "gemm_fp16-" + config_hash(best);
  const fs::path cu = t.path / "kernels" / (stem + ".cu"), prov = t.path / "kernels" / (stem + ".json");
  ASSERT_TRUE(fs::exists(cu)) << r.out;
  ASSERT_TRUE(fs::exists(prov)) << r.out;
  const json j = json::parse(read_bytes(prov));
  EXPECT_EQ(j["profile"], "gemm_fp16");
  EXPECT_EQ(j["knobs"]["BLOCK_M"], 128);
  EXPECT_EQ(j["knobs"]["WARPS_M"], 4);
  EXPECT_EQ(j["timing"]["p50_us"], 80.0);
  const std::string text = read_bytes(cu);
  EXPECT_NE(text.find("#define BLOCK_M 128"), std::string::npos);
  EXPECT_NE(text.find("#define WARPS_M 4"), std::string::npos);

  const fs::path nvcc = fs::path(EVO_CUDA_HOME) / "bin" / "nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc at " << nvcc << ": the export was written but not compiled";
  const std::string command = nvcc.string() + " -arch=sm_90 -std=c++17 -c " + cu.string() + " -o " +
                              (t.path / "k.o").string() + " > " + (t.path / "nvcc.log").string() + " 2>&1";
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << read_bytes(t.path / "nvcc.log");
  EXPECT_TRUE(fs::exists(t.path / "k.o"));
}

// A kernel taking TMA tensor maps is exported with what its user must encode: each map's
// cuTensorMapEncodeTiled arguments for the measured problem, and their expressions.
TEST(CliExport, TensorMapArgumentsAreStatedForTheUser) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const fs::path profile = kSource / "tests/data/profiles/tma_copy.json";
  const Profile p = load_profile(profile);
  const Config best{{"SWIZZLE", 128}};
  {
    Store s(db);
    RunInfo info = gemm_run();
    info.profile = "tma_copy";
    info.profile_path = profile.string();
    info.arch = "sm_90a";
    const auto run = s.begin_run(info);
    Evaluation e = measured_evaluation(best, "tma_copy", "ragged", 3.0);
    e.speedup = 1.0;
    s.record(run, {"tma_copy", "build-" + config_hash(best), "NVIDIA H100 80GB HBM3", "ragged", "5e7a000000000001"}, e, false);
  }
  const Result r = run_evo({"--db", db.string(), "export", "best", "--profile", "tma_copy", "--to",
                            (t.path / "kernels").string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string stem = "tma_copy-" + config_hash(best);
  const json j = json::parse(read_bytes(t.path / "kernels" / (stem + ".json")));
  ASSERT_TRUE(j.contains("tensor_maps")) << j.dump(2);
  ASSERT_EQ(j["tensor_maps"].size(), 2u);
  const json& m = j["tensor_maps"][1];
  EXPECT_EQ(m["name"], "x_map_sw128");
  EXPECT_EQ(m["argument"], 1);
  EXPECT_EQ(m["buffer"], "X");
  EXPECT_EQ(m["data_type"], "CU_TENSOR_MAP_DATA_TYPE_FLOAT16");
  EXPECT_EQ(m["dims"], json::array({64, 250}));  // problem ragged: ROWS = 250
  EXPECT_EQ(m["strides_bytes"], json::array({128}));
  EXPECT_EQ(m["box"], json::array({64, 16}));
  EXPECT_EQ(m["swizzle_bytes"], 128);
  EXPECT_EQ(m["l2_promotion_bytes"], 128);
  EXPECT_EQ(m["dims_expr"], json::array({"64", "ROWS"}));
  EXPECT_EQ(j["args"], json(p.kernel.args));  // the existing fields stay
  const std::string text = read_bytes(t.path / "kernels" / (stem + ".cu"));
  EXPECT_NE(text.find("// tensor map x_map_sw128 (ragged): pass by value (const __grid_constant__ CUtensorMap)"),
            std::string::npos)
      << text.substr(0, 2000);
  EXPECT_NE(text.find("dims {64, 250} = (64, ROWS), byte strides {128}, box {64, 16} = (64, 16), swizzle 128B"),
            std::string::npos)
      << text.substr(0, 2000);
}

// A profile of two launches exports both kernels, in the order to launch them.
TEST(CliExport, SeveralLaunchesAreExportedInTheirOrder) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const fs::path profile = kSource / "profiles/reduce_sum.json";
  const Profile p = load_profile(profile);
  const Config best{{"BLOCK", 512}, {"ITEMS", 4}, {"FINAL_BLOCK", 128}};
  {
    Store s(db);
    RunInfo info = gemm_run();
    info.profile = "reduce_sum";
    info.profile_path = profile.string();
    const auto run = s.begin_run(info);
    Evaluation e = measured_evaluation(best, "partial_sums", "main", 9.5);
    e.build.kernels = {{"partial_sums", "partial_sums", "/c/r.cubin", {}}, {"final_sum", "final_sum", "/c/r.cubin", {}}};
    e.speedup = 1.2;
    s.record(run, {"reduce_sum", "build-" + config_hash(best), "NVIDIA H100 80GB HBM3", "main", "5e7a000000000001"}, e, false);
  }
  const Result r = run_evo({"--db", db.string(), "export", "best", "--to", (t.path / "kernels").string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string stem = "reduce_sum-" + config_hash(best);
  const json j = json::parse(read_bytes(t.path / "kernels" / (stem + ".json")));
  ASSERT_TRUE(j.contains("launches")) << j.dump(2);
  ASSERT_EQ(j["launches"].size(), 2u);
  EXPECT_EQ(j["launches"][0]["kernel"], "partial_sums");
  EXPECT_EQ(j["launches"][1]["kernel"], "final_sum");
  EXPECT_EQ(j["launches"][0]["lowered_name"], "partial_sums");
  EXPECT_FALSE(j["launches"][1].contains("lowered_name"));  // the database keeps the first launch's only
  EXPECT_EQ(j["launches"][1]["args"], json::array({"PARTIAL", "SUM", "partials"}));
  EXPECT_EQ(j["launches"][0]["launch"]["grid"], json::array({4194304 / (512 * 4), 1, 1}));  // problem main
  EXPECT_EQ(j["launches"][1]["launch"]["block"], json::array({128, 1, 1}));
  EXPECT_EQ(j["kernel"], "partial_sums");  // the existing fields: the first launch's
  const std::string text = read_bytes(t.path / "kernels" / (stem + ".cu"));
  const auto one = text.find("// launch 1 of 2: partial_sums(X, PARTIAL, N) from reduce.cu, grid (2048, 1, 1) block (512, 1, 1)");
  const auto two = text.find("// launch 2 of 2: final_sum(PARTIAL, SUM, partials) from reduce.cu, grid (1, 1, 1) block (128, 1, 1)");
  EXPECT_NE(one, std::string::npos) << text.substr(0, 2500);
  EXPECT_NE(two, std::string::npos) << text.substr(0, 2500);
  EXPECT_LT(one, two);
  EXPECT_NE(text.find("#define FINAL_BLOCK 128"), std::string::npos);
  // the scratch a caller allocates, at the objective's sizes: cdiv(N, BLOCK * ITEMS) partial sums
  EXPECT_NE(text.find("// scratch (main): PARTIAL 2048 f32, zeros before the first launch (shapes: reduce_sum.json or the "
                      ".json beside this file)"),
            std::string::npos)
      << text.substr(0, 2500);
  EXPECT_NE(text.find("void __launch_bounds__(FINAL_BLOCK) final_sum("), std::string::npos) << "both kernels' source";

  const fs::path nvcc = fs::path(EVO_CUDA_HOME) / "bin" / "nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc at " << nvcc << ": the export was written but not compiled";
  const fs::path cu = t.path / "kernels" / (stem + ".cu");
  const std::string command = nvcc.string() + " -arch=sm_90 -std=c++17 -c " + cu.string() + " -o " +
                              (t.path / "k.o").string() + " > " + (t.path / "nvcc.log").string() + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << read_bytes(t.path / "nvcc.log");
}

TEST(Cli, CheckListsEveryLaunchAndANonKernelReference) {
  const Result r = run_evo({"check", "reduce_sum"}, kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto one = r.out.find("launch 1  "), two = r.out.find("launch 2  ");
  ASSERT_NE(one, std::string::npos) << r.out;
  ASSERT_NE(two, std::string::npos) << r.out;
  EXPECT_LT(one, two);
  EXPECT_NE(r.out.find("reduce.cu  kernel final_sum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reduce_ref.cu  kernel reduce_ref"), std::string::npos) << r.out;
  const json j = json::parse(run_evo({"check", "reduce_sum", "--json"}, kSource).out);
  ASSERT_EQ(j["launches"].size(), 2u);
  EXPECT_EQ(j["launches"][1]["kernel"], "final_sum");
  EXPECT_EQ(j["reference"]["kind"], "kernel");

  const Result c = run_evo({"check", "stencil3"}, kSource);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("reference command `python3 ../templates/examples/stencil3_ref.py {in} {out}`"), std::string::npos)
      << c.out;
  EXPECT_EQ(json::parse(run_evo({"check", "stencil3", "--json"}, kSource).out)["reference"]["kind"], "command");
}

// A scratch sized by knobs beside an input of gigabytes: GREEN keeps a set of buffers per shape, so
// `evo check` says how many and how large, naming the scratch (Kernel Tuner's reduction made eleven
// sets of 3.2 GB and ran at 20 s a candidate). The shipped reduce_sum (4 M floats) says nothing.
TEST(Cli, CheckWarnsOfKnobSizedScratchBesideGigabytesOfInput) {
  const Result plain = run_evo({"check", "reduce_sum", "--json"}, kSource);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_TRUE(json::parse(plain.out)["notes"].empty()) << plain.out;

  TempDir t;
  json j = json::parse(std::ifstream(kSource / "profiles" / "reduce_sum.json"));
  j["template"] = (kSource / "templates/examples/reduce.cu").string();
  j["reference"]["template"] = (kSource / "templates/examples/reduce_ref.cu").string();
  j["problems"][1]["sizes"]["N"] = 800000000;
  std::ofstream(t.path / "big.json") << j.dump(1);
  const Result r = run_evo({"check", (t.path / "big.json").string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  // BLOCK x ITEMS takes 7 values from 128 to 8192: 7 shapes of PARTIAL on the main problem.
  EXPECT_NE(r.out.find("note      problem main: 7 sets of buffers of up to 3.2 GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("as scratch PARTIAL is sized by knobs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("problem small:"), std::string::npos) << r.out;  // kilobytes: nothing to say
}

TEST(CliCompile, BothKernelsOfATwoLaunchProfilePassTheStaticGate) {
  TempDir t;
  const Result r = run_evo({"--cache", (t.path / "cache").string(), "compile", "reduce_sum", "--json"}, kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  const json& b = j["results"][0]["build"];
  EXPECT_EQ(b["ok"], true) << b.dump();
  ASSERT_EQ(b["kernels"].size(), 2u) << b.dump();
  EXPECT_EQ(b["kernels"][0]["lowered_name"], "partial_sums");
  EXPECT_EQ(b["kernels"][1]["lowered_name"], "final_sum");
  EXPECT_GT(b["kernels"][1]["ptxas"]["registers"].get<int>(), 0);
  EXPECT_EQ(j["results"][0]["static"]["outcome"], "passed") << j.dump();
  EXPECT_EQ(j["results"][0]["static"]["threads_per_block"], 256);
}

// ---- a kernel per shape: --objective, show-elites per problem, export --dispatch / --torch ---------

TEST(CliBadInput, UnknownObjectiveProblemIsRefusedBeforeAnythingIsWritten) {
  TempDir t;
  const std::string land = (kSource / "tests/data/landscape_sdpa_fp8_h100.json").string();
  const Result r = run_evo({"--db", "evo.db", "run", "--replay", land, "--objective", "mission,nope", "-q"}, t.path);
  EXPECT_EQ(r.code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--objective mission,nope: profile sdpa_fp8 has no problem 'nope' (its problems: small, mission,"),
            std::string::npos) << r.err;
  const Result twice = run_evo({"--db", "evo.db", "run", "--replay", land, "--objective", "mission,mission", "-q"}, t.path);
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("problem mission named twice"), std::string::npos) << twice.err;
  // A landscape holds one problem's timings: --objective all cannot be replayed from it.
  const Result all = run_evo({"--db", "evo.db", "run", "--replay", land, "--objective", "all", "-q"}, t.path);
  EXPECT_EQ(all.code, 2);
  EXPECT_NE(all.err.find("recorded problem mission only"), std::string::npos) << all.err;
  EXPECT_FALSE(fs::exists(t.path / "evo.db"));
  // The landscape's own problem named on purpose is the same run as none named, recorded as asked.
  const Result ok = run_evo({"--db", "evo.db", "run", "--replay", land, "--objective", "mission", "--budget", "5", "-q"}, t.path);
  ASSERT_EQ(ok.code, 0) << ok.err;
  Store s(t.path / "evo.db");
  ASSERT_EQ(s.runs().size(), 1u);
  EXPECT_EQ(json::parse(s.runs()[0].options_json).at("objective"), "mission");
  for (const auto& e : s.evaluations_of_run(s.runs()[0].id)) EXPECT_EQ(e.key.problem, "mission");
}

// Two problems of gemm_fp16, each with its own best: the database of an `evo run --objective all`.
struct TwoShapes {
  Config small_best, mission_best, baseline;
};

// same_best: one configuration is the best of both problems.
TwoShapes record_two_shapes(const fs::path& db, bool same_best = false) {
  const Profile p = load_profile(kSource / "profiles/gemm_fp16.json");
  TwoShapes t{p.baseline, p.baseline, p.baseline};
  t.small_best["BLOCK_M"] = 32, t.small_best["BLOCK_N"] = 32, t.small_best["WARPS_M"] = 1, t.small_best["WARPS_N"] = 2;
  t.mission_best["BLOCK_M"] = 128, t.mission_best["BLOCK_N"] = 128, t.mission_best["BLOCK_K"] = 64;
  t.mission_best["WARPS_M"] = 4;
  if (same_best) t.mission_best = t.small_best;
  Store s(db);
  for (const auto& [problem, best, best_us, base_us] :
       {std::tuple{std::string("small"), t.small_best, 6.0, 9.0}, std::tuple{std::string("mission"), t.mission_best, 80.0, 120.0}}) {
    RunInfo info = gemm_run();
    info.options_json = json{{"objective", problem}}.dump();
    const auto run = s.begin_run(info);
    for (const auto& [c, us] : {std::pair{p.baseline, base_us}, std::pair{best, best_us}}) {
      Evaluation e = measured_evaluation(c, "gemm_fp16", problem, us);
      e.speedup = base_us / us;
      EvalKey k = gemm_key(c);
      k.problem = problem;
      s.record(run, k, e, false);
    }
  }
  return t;
}

TEST(CliElites, ShowElitesRanksEachProblemApart) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const TwoShapes shapes = record_two_shapes(db);
  const Result r = run_evo({"--db", db.string(), "show-elites", "--profile", "gemm_fp16", "--top", "1"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto small = r.out.find("problem small"), mission = r.out.find("problem mission");
  ASSERT_NE(small, std::string::npos) << r.out;
  ASSERT_NE(mission, std::string::npos) << r.out;
  // --top 1 per problem: each table holds its own best only, the fastest problem's first.
  EXPECT_LT(small, mission);
  EXPECT_NE(r.out.find(config_text(shapes.small_best), small), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(config_text(shapes.mission_best), mission), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(config_text(shapes.baseline)), std::string::npos) << "--top 1 shows the baseline\n" << r.out;

  const Result j = run_evo({"--db", db.string(), "show-elites", "--profile", "gemm_fp16", "--json"}, t.path);
  ASSERT_EQ(j.code, 0) << j.err;
  std::map<std::string, int> firsts;
  for (const auto& e : json::parse(j.out))
    if (e["rank"] == 1) firsts[e["problem"].get<std::string>()] = e["evaluation"]["fast"]["p50_us"].get<double>();
  EXPECT_EQ(firsts, (std::map<std::string, int>{{"mission", 80}, {"small", 6}}));
}

// A profile whose persistent grid is min(tiles, NUM_SMS): the header's Sizes carries the device's SM
// count (132 unless set) and launch() sizes the grid by it, the way evo's worker does.
TEST(CliExport, DispatchHeaderSizesAPersistentGridByTheDevicesSmCount) {
  TempDir t;
  const fs::path db = t.path / "evo.db", out = t.path / "kernels";
  const fs::path land = kSource / "tests" / "data" / "landscape_sdpa_fp8pv_h100.json";
  // 96 evaluations (30 %) of the evo strategy find the space's best, 128x224 with PERSIST=1 (docs/search.md)
  Result r = run_evo({"--db", db.string(), "run", "--replay", land.string(), "--budget", "96", "--seed", "1", "-q"}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_evo({"--db", db.string(), "export", "best", "--dispatch", "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  // the landscape predates STREAM_K: the export takes its baseline value (off) and says so
  EXPECT_NE((r.out + r.err).find("recorded before profile sdpa_fp8pv_wgmma had this knob: exported with the baseline's "
                                  "value (STREAM_K=0)"),
            std::string::npos)
      << r.out << r.err;
  const std::string said = r.out + r.err, once = "had this knob";
  EXPECT_EQ(said.find(once, said.find(once) + 1), std::string::npos) << "said twice:\n" << said;
  const std::string h = read_bytes(out / "sdpa_fp8pv_wgmma_dispatch.h");
  EXPECT_NE(h.find("double NUM_SMS = 132;"), std::string::npos) << h;
  const json table = json::parse(read_bytes(out / "sdpa_fp8pv_wgmma_dispatch.json"));
  ASSERT_EQ(table["entries"].size(), 1u);  // a replay measures the objective problem only
  const json knobs = json::parse(read_bytes(out / table["entries"][0]["export"].get<std::string>()))["knobs"];
  ASSERT_EQ(knobs["PERSIST"], 1) << knobs.dump();
  EXPECT_EQ(knobs["STREAM_K"], 0) << knobs.dump();
  write_text(t.path / "grid.cpp", R"(#include "sdpa_fp8pv_wgmma_dispatch.h"
#include <cstdio>
int main() {
  using namespace evo_sdpa_fp8pv_wgmma;
  Sizes s{};
  s.B = 2; s.H = 16; s.S = 4096; s.D = 64; s.causal = 0;
  std::printf("%u ", launch(0, s).grid[0]);
  s.NUM_SMS = 114;
  std::printf("%u\n", launch(0, s).grid[0]);
}
)");
  const std::string cxx = "g++ -std=c++17 -Wall -Werror -I" + out.string() + " " + (t.path / "grid.cpp").string() + " -o " +
                          (t.path / "grid").string() + " > " + (t.path / "cxx.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cxx.c_str()), 0) << read_bytes(t.path / "cxx.log");
  ASSERT_EQ(std::system(((t.path / "grid").string() + " > " + (t.path / "grid.out").string()).c_str()), 0);
  ASSERT_GT(4096 / knobs["TILE_M"].get<int>() * 2 * 16, 132);  // more query tiles than SMs: the grid is NUM_SMS
  EXPECT_EQ(read_bytes(t.path / "grid.out"), "132 114\n");
}

TEST(CliExport, DispatchWritesEachProblemsBestAndAHeaderThatPicksByTheDocumentedRule) {
  TempDir t;
  const fs::path db = t.path / "evo.db", out = t.path / "kernels";
  const TwoShapes shapes = record_two_shapes(db);
  const Result r = run_evo({"--db", db.string(), "export", "best", "--dispatch", "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string small = "gemm_fp16-" + config_hash(shapes.small_best), mission = "gemm_fp16-" + config_hash(shapes.mission_best);
  for (const auto& f : {small + ".cu", small + ".json", mission + ".cu", mission + ".json", std::string("gemm_fp16_dispatch.h"),
                        std::string("gemm_fp16_dispatch.json")})
    EXPECT_TRUE(fs::exists(out / f)) << f << "\n" << r.out;
  EXPECT_FALSE(fs::exists(out / ("gemm_fp16-" + config_hash(shapes.baseline) + ".cu"))) << "the baseline is no problem's best";
  const json table = json::parse(read_bytes(out / "gemm_fp16_dispatch.json"));
  EXPECT_EQ(table["format"], "evo-dispatch/1");
  EXPECT_EQ(table["sizes"], json::array({"K", "M", "N"}));
  ASSERT_EQ(table["entries"].size(), 2u);
  EXPECT_EQ(table["entries"][0]["problem"], "small");  // the profile's order of problems
  EXPECT_EQ(table["entries"][0]["export"], small + ".json");
  EXPECT_EQ(table["entries"][1]["problem"], "mission");
  EXPECT_EQ(table["entries"][1]["entry"], "gemm_fp16__mission");
  // Each kernel its own entry, so that both link into one program.
  EXPECT_NE(read_bytes(out / (small + ".cu")).find("#define gemm_fp16 gemm_fp16__small"), std::string::npos);
  const json prov = json::parse(read_bytes(out / (mission + ".json")));
  EXPECT_EQ(prov["problem"], "mission");
  EXPECT_EQ(prov["buffers"][0]["name"], "A");
  EXPECT_EQ(prov["buffers"][0]["torch_dtype"], "float16");
  EXPECT_EQ(prov["constraints"].size(), 7u);

  // The header, compiled and run: exact shapes pick their own kernel, others the nearest whose
  // constraints hold (M % BLOCK_M == 0 ...), and none when no kernel's constraints hold.
  write_text(t.path / "pick.cpp", R"(#include "gemm_fp16_dispatch.h"
#include <cstdio>
int main() {
  using namespace evo_gemm_fp16;
  const Sizes cases[] = {{256, 256, 256}, {2048, 2048, 2048}, {1024, 1024, 1024}, {96, 96, 96}, {4096, 4096, 4096}, {100, 100, 100}};
  for (const Sizes& s : cases) {
    const int i = pick(s);
    const Launch l = i < 0 ? Launch{} : launch(i, s);
    std::printf("%d %u %u %u %llu\n", i, l.grid[0], l.grid[1], l.block[0], l.shared_bytes);
  }
}
)");
  const std::string cxx = "g++ -std=c++17 -Wall -Werror -I" + out.string() + " " + (t.path / "pick.cpp").string() + " -o " +
                          (t.path / "pick").string() + " > " + (t.path / "cxx.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cxx.c_str()), 0) << read_bytes(t.path / "cxx.log");
  ASSERT_EQ(std::system(((t.path / "pick").string() + " > " + (t.path / "pick.out").string()).c_str()), 0);
  // small: 32x32 blocks (1x2 warps), 64 threads; mission: 128x128 (4x2 warps), 256 threads.
  const std::string smem_small = std::to_string(2 * (32 * (32 + 8) + 32 * (32 + 8)) * 2 + 32 * (32 + 4) * 4);
  const std::string smem_mission = std::to_string(2 * (128 * (64 + 8) + 64 * (128 + 8)) * 2 + 128 * (128 + 4) * 4);
  EXPECT_EQ(read_bytes(t.path / "pick.out"), "0 8 8 64 " + smem_small + "\n" +      // 256^3: small's own
                                                 "1 16 16 256 " + smem_mission + "\n" +  // 2048^3: mission's own
                                                 "1 8 8 256 " + smem_mission + "\n" +    // 1024^3: nearer mission
                                                 "0 3 3 64 " + smem_small + "\n" +       // 96^3: 128 does not divide it
                                                 "1 32 32 256 " + smem_mission + "\n" +  // 4096^3
                                                 "-1 0 0 0 0\n");                        // 100^3: no kernel's constraints hold

  // Both kernels in one program: their entries do not collide.
  const fs::path nvcc = fs::path(EVO_CUDA_HOME) / "bin" / "nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc at " << nvcc << ": the kernels were exported but not linked together";
  std::string cmd;
  for (const auto& stem : {small, mission})
    cmd += nvcc.string() + " -arch=sm_90 -std=c++17 -Xcompiler -fPIC -c " + (out / (stem + ".cu")).string() + " -o " +
           (t.path / (stem + ".o")).string() + " && ";
  cmd += "g++ -shared " + (t.path / (small + ".o")).string() + " " + (t.path / (mission + ".o")).string() + " -o " +
         (t.path / "libboth.so").string() + " > " + (t.path / "nvcc.log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_bytes(t.path / "nvcc.log");
}

TEST(CliExport, DispatchWritesAConfigurationBestOnTwoProblemsOnceWithOneEntry) {
  TempDir t;
  const fs::path db = t.path / "evo.db", out = t.path / "kernels";
  const TwoShapes shapes = record_two_shapes(db, true);
  const Result r = run_evo({"--db", db.string(), "export", "best", "--dispatch", "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string stem = "gemm_fp16-" + config_hash(shapes.small_best);
  const json table = json::parse(read_bytes(out / "gemm_fp16_dispatch.json"));
  ASSERT_EQ(table["entries"].size(), 2u);
  for (const auto& e : table["entries"]) {
    EXPECT_EQ(e["export"], stem + ".json");
    EXPECT_EQ(e["entry"], "gemm_fp16__small") << "both problems name the one entry the file defines";
  }
  EXPECT_EQ(table["entries"][1]["problem"], "mission");
  EXPECT_EQ(table["entries"][1]["sizes"]["M"], 2048);
  const std::string cu = read_bytes(out / (stem + ".cu"));
  EXPECT_NE(cu.find("#define gemm_fp16 gemm_fp16__small"), std::string::npos);
  EXPECT_EQ(cu.find("gemm_fp16__mission"), std::string::npos) << "written once, not again per problem";
  EXPECT_EQ(read_bytes(out / "gemm_fp16_dispatch.h").find("gemm_fp16__mission"), std::string::npos);
}

TEST(CliExport, TorchWritesTheCubinsTheDispatchAndAModuleThatPicksAsTheHeaderDoes) {
  TempDir t;
  const fs::path db = t.path / "evo.db", out = t.path / "kernels";
  const TwoShapes shapes = record_two_shapes(db);
  const Result r = run_evo({"--db", db.string(), "--cache", (t.path / "cache").string(), "export", "best", "--dispatch",
                            "--torch", "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::pair<std::string, Config>> bests{{"small", shapes.small_best}, {"mission", shapes.mission_best}};
  for (const auto& [problem, best] : bests) {
    const std::string stem = "gemm_fp16-" + config_hash(best);
    const json prov = json::parse(read_bytes(out / (stem + ".json")));
    EXPECT_EQ(prov["problem"], problem);
    ASSERT_EQ(prov["cubin"], stem + ".cubin");
    const std::string cubin = read_bytes(out / (stem + ".cubin"));
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
    // The recorded build key is not today's (the fixture's is made up): the export says so.
    EXPECT_EQ(prov["cubin_built_as_measured"], false);
  }
  EXPECT_NE((r.out + r.err).find("the cubin is built from today's text"), std::string::npos) << r.out << r.err;
  const json table = json::parse(read_bytes(out / "gemm_fp16_dispatch.json"));
  ASSERT_EQ(table["entries"].size(), 2u);
  ASSERT_TRUE(fs::exists(out / "evo_torch.py"));

  // The module picks and sizes launches as the header does (the same cases and figures as the
  // header's test above); it needs no torch for that.
  write_text(t.path / "pick.py", "import sys\nsys.path.insert(0, sys.argv[1])\nimport evo_torch\n"
                                 "d = evo_torch.load(sys.argv[1] + '/gemm_fp16_dispatch.json')\n"
                                 "for n in (256, 2048, 1024, 96, 4096, 100):\n"
                                 "    s = {'M': n, 'N': n, 'K': n}\n"
                                 "    i = d.pick(s)\n"
                                 "    if i is None:\n        print('-1 0 0 0 0')\n        continue\n"
                                 "    g, b, smem = d.kernels[i].geometry(s)\n"
                                 "    print(i, g[0], g[1], b[0], smem)\n");
  const std::string cmd = "python3 " + (t.path / "pick.py").string() + " " + out.string() + " > " +
                          (t.path / "pick.out").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_bytes(t.path / "pick.out");
  const std::string smem_small = std::to_string(2 * (32 * (32 + 8) + 32 * (32 + 8)) * 2 + 32 * (32 + 4) * 4);
  const std::string smem_mission = std::to_string(2 * (128 * (64 + 8) + 64 * (128 + 8)) * 2 + 128 * (128 + 4) * 4);
  EXPECT_EQ(read_bytes(t.path / "pick.out"), "0 8 8 64 " + smem_small + "\n" + "1 16 16 256 " + smem_mission + "\n" +
                                                 "1 8 8 256 " + smem_mission + "\n" + "0 3 3 64 " + smem_small + "\n" +
                                                 "1 32 32 256 " + smem_mission + "\n" + "-1 0 0 0 0\n");
}

TEST(CliExport, TorchRefusesABufferItCannotPassAsATensor) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  const Profile p = load_profile(kSource / "tests/data/profiles/foreign_kernel.json");
  {
    Store s(db);
    RunInfo info = gemm_run();
    info.profile = p.name;
    info.profile_path = p.path.string();
    const auto run = s.begin_run(info);
    s.record(run, {p.name, "build-x", "NVIDIA H100 80GB HBM3", "small", "5e7a000000000001"}, measured_evaluation(p.baseline, "x", "small", 3.0), false);
  }
  const Result r = run_evo({"--db", db.string(), "export", "best", "--torch", "--to", (t.path / "k").string()}, t.path);
  EXPECT_EQ(r.code, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--torch: profile foreign_kernel: buffer coeffs fills the __constant__ symbol coeffs"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(t.path / "k" / ("foreign_kernel-" + config_hash(p.baseline) + ".cu")));
}

TEST(CliDb, CheckOnAGoodDatabaseIsOk) {
  TempDir t;
  const fs::path db = t.path / "evo.db";
  {
    Store s(db);
    s.begin_run(gemm_run());
  }
  const Result r = run_evo({"--db", db.string(), "db", "check"}, t.path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok (schema v" + std::to_string(Store::schema_version())), std::string::npos) << r.out;
}

// ---- T1 files and others' landscapes ------------------------------------------------------------

const fs::path kT1 = kSource / "tests/data/t1";

// The issue's acceptance figures for the benchmark hub's convolution_milo.json, as published.
TEST(CliT1, CheckOfTheHubsConvolutionMiloCountsItsSpace) {
  const Result r = run_evo({"check", (kT1 / "convolution_milo.json").string()}, kSource);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("10240 combinations, 4362 pass the constraints (4 constraints)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference the default configuration block_size_x=16,block_size_y=16,tile_size_x=1,"), std::string::npos)
      << r.out;
  const Result js = run_evo({"check", (kT1 / "convolution_milo.json").string(), "--json"}, kSource);
  ASSERT_EQ(js.code, 0) << js.err;
  const json j = json::parse(js.out);
  EXPECT_EQ(j["space"], 10240);
  EXPECT_EQ(j["valid"], 4362);
  EXPECT_EQ(j["baseline_valid"], true);
}

TEST(CliT1, CompileSampleOfTheHubsConvolutionMiloPasses) {
  TempDir t;
  const Result r = run_evo({"--cache", (t.path / "cache").string(), "-j", "2", "compile",
                            (kT1 / "convolution_milo.json").string(), "--sample", "4", "--json"},
                           t.path);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  for (const auto& res : j["results"]) {
    EXPECT_EQ(res["build"]["ok"], true) << res.dump();
    // A C++ entry point (not extern "C"), resolved by name.
    EXPECT_EQ(res["build"]["lowered_name"], "_Z18convolution_kernelPfS_S_") << res.dump();
    EXPECT_EQ(res["static"]["outcome"], "passed") << res.dump();
  }
}

TEST(CliT1, ImportT1WritesAProfileThatIsTheSameSpaceFromAnotherFolder) {
  TempDir t;
  const fs::path out = t.path / "profiles" / "conv.json";
  fs::create_directories(out.parent_path());
  const Result r = run_evo({"import-t1", (kT1 / "convolution_milo.json").string(), "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out.string() + ": profile convolution_milo, 10 knobs, 4362 configurations pass the 4 "
                       "conditions; reference: the default configuration block_size_x=16,"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out.string() + ".evo-tmp"));
  const Profile written = load_profile(out);
  const Profile direct = load_profile(kT1 / "convolution_milo.json");
  EXPECT_EQ(written.kernel.source, direct.kernel.source);  // the template path, relative to where it was written
  EXPECT_EQ(written.baseline, direct.baseline);
  EXPECT_EQ(KnobSpace(written).enumerate_valid().size(), 4362u);
  const ordered_json j = ordered_json::parse(read_bytes(out));
  EXPECT_EQ(j["template"], fs::relative(kT1 / "convolution_milo.cu", out.parent_path()).string());
  // Without --to it is printed, its paths relative to where evo runs.
  const Result printed = run_evo({"import-t1", (kT1 / "convolution_milo.json").string()}, kT1);
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_EQ(ordered_json::parse(printed.out)["template"], "convolution_milo.cu");
  EXPECT_NE(printed.err.find("profile convolution_milo"), std::string::npos);
}

// A BinaryRaw argument's DataSource moves with the profile as its kernel does: the written profile
// fills the buffer from the same file, named relative to where the profile was written.
TEST(CliT1, ImportT1WritesARawFilesPathRelativeToTheProfile) {
  TempDir t;
  fs::create_directories(t.path / "t1" / "data");
  fs::copy_file(kT1 / "small_types.cu", t.path / "t1" / "small_types.cu");
  ordered_json j = ordered_json::parse(read_bytes(kT1 / "small_types.json"));
  ordered_json& signal = j["KernelSpecification"]["Arguments"][3];
  signal["FillType"] = "BinaryRaw";
  signal["DataSource"] = "data/signal.bin";
  signal.erase("FillValue");
  std::ofstream(t.path / "t1" / "data" / "signal.bin", std::ios::binary) << std::string(100000, '\x07');
  std::ofstream(t.path / "t1" / "raw.json") << j.dump();
  const fs::path out = t.path / "profiles" / "raw.json";
  fs::create_directories(out.parent_path());
  const Result r = run_evo({"import-t1", (t.path / "t1" / "raw.json").string(), "--to", out.string()}, t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  const ordered_json written = ordered_json::parse(read_bytes(out));
  EXPECT_EQ(written["buffers"][3]["init"]["file"], "../t1/data/signal.bin");
  EXPECT_EQ(load_profile(out).find_buffer("signal")->init.file, fs::weakly_canonical(t.path / "t1" / "data" / "signal.bin"));
}

// A malformed T1 file: one line naming the field, exit 2, nothing written; for check, compile,
// import-t1 and run alike.
TEST(CliT1, MalformedT1FilesAreOneLineNamingTheFieldAndWriteNothing) {
  struct Case {
    std::function<void(ordered_json&)> edit;
    std::string field_and_message;
  };
  const std::vector<Case> cases{
      {[](ordered_json& j) { j["KernelSpecification"]["KernelFile"] = "missing.cu"; },
       "KernelSpecification.KernelFile: file not found: "},
      {[](ordered_json& j) { j["KernelSpecification"]["Arguments"][1]["FillType"] = "Generator"; },
       "KernelSpecification.Arguments[1].FillType: 'Generator' is not supported (Constant, Random, BinaryRaw)"},
      {[](ordered_json& j) { j["ConfigurationSpace"]["Conditions"][0]["Expression"] = "use_padding==0 or or block_size_x"; },
       "ConfigurationSpace.Conditions[0].Expression: 'use_padding==0 or or block_size_x': unexpected 'or' at column 19"},
      {[](ordered_json& j) { j["KernelSpecification"]["Language"] = "HIP"; },
       "KernelSpecification.Language: 'HIP' is not supported (evo compiles CUDA with NVRTC)"},
      // The schema lets an argument go unnamed, but a constant-memory one is found by its name.
      {[](ordered_json& j) { j["KernelSpecification"]["Arguments"][2].erase("Name"); },
       "KernelSpecification.Arguments[2].Name: missing: a MemType Constant argument fills the __constant__ symbol of its name"},
      {[](ordered_json& j) { j["KernelSpecification"]["Arguments"][2]["Name"] = "d_filter2"; },
       "KernelSpecification.Arguments[2].Name: 'd_filter2' not found in "},
      // A size no GPU holds is the file's mistake, said before anything is compiled; 10**30 was
      // "-9223372036854775808 elements" (a cast out of range), 2**40 floats passed.
      {[](ordered_json& j) { j["KernelSpecification"]["Arguments"][1]["Size"] = "10**30"; },
       "KernelSpecification.Arguments[1].Size: '10**30' is 1e+30 elements, more than any GPU holds"},
      {[](ordered_json& j) { j["KernelSpecification"]["Arguments"][1]["Size"] = "2**38"; },
       "KernelSpecification.Arguments[1].Size: 274877906944 elements of float are 1099511627776 bytes, more than any GPU holds"}};
  for (const auto& c : cases) {
    TempDir t;
    fs::copy_file(kT1 / "convolution_milo.cu", t.path / "convolution_milo.cu");
    ordered_json j = ordered_json::parse(read_bytes(kT1 / "convolution_milo.json"));
    c.edit(j);
    const fs::path file = t.path / "convolution_milo.json";
    write_text(file, j.dump(4));
    const auto before = snapshot(t.path);
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"check", file.string()},
                                               {"--cache", (t.path / "cache").string(), "compile", file.string()},
                                               {"import-t1", file.string(), "--to", (t.path / "p.json").string()},
                                               {"--db", (t.path / "evo.db").string(), "run", "--profile", file.string()}}) {
      const Result r = run_evo(args, t.path);
      EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err << r.out;
      ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
      const std::string want = "evo: " + file.string() + ": " + c.field_and_message;
      EXPECT_EQ(r.err.substr(0, want.size()), want) << r.err;
      EXPECT_EQ(snapshot(t.path), before) << args[0] << " wrote something";
    }
  }
  // The hub's gemm_milo.json is OpenCL: said in one line.
  const Result gemm = run_evo({"check", (kT1 / "gemm_milo.json").string()}, kSource);
  EXPECT_EQ(gemm.code, 2);
  EXPECT_EQ(gemm.err, "evo: " + (kT1 / "gemm_milo.json").string() +
                          ": KernelSpecification.Language: 'OpenCL' is not supported (evo compiles CUDA with NVRTC)\n");
}

TEST(CliT1, ImportLandscapeWritesAReplayableLandscapeAndSaysWhatIsMissing) {
  TempDir t;
  const fs::path out = t.path / "land.json";
  const Result r = run_evo({"import-landscape", (kT1 / "small_saxpy_cache.json").string(), "--t1",
                            (kT1 / "small_saxpy.json").string(), "--to", out.string()},
                           t.path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Kernel Tuner cache, device Hand-written test device: 5 configurations (1 compile_error, 2 "
                       "measured, 2 static_rejected); 67 of the 72 configurations that pass the T1 conditions missing "
                       "from the file; 2 of its 7 entries outside them, left out"),
            std::string::npos)
      << r.out;
  const Landscape l = read_landscape(out);
  EXPECT_EQ(l.points.size(), 5u);
  EXPECT_EQ(l.profile, "small_saxpy");
  // It replays: the baseline is the T1 default configuration, its median the cache's time.
  const Result run = run_evo({"--db", (t.path / "evo.db").string(), "run", "--replay", out.string(), "--strategy",
                              "exhaustive", "--budget", "100", "-q"},
                             t.path);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("72 new"), std::string::npos) << run.out;
  // A cache of another space: one line, nothing written.
  const Result bad = run_evo({"import-landscape", (kT1 / "small_saxpy_cache.json").string(), "--t1",
                              (kT1 / "convolution_milo.json").string(), "--to", (t.path / "bad.json").string()},
                             t.path);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err_lines().size(), 1u) << bad.err;
  EXPECT_NE(bad.err.find("tune_params_keys: 'tile' is not a tuning parameter of convolution_milo.json"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(t.path / "bad.json"));
}

}  // namespace
}  // namespace evo
