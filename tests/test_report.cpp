// `evo report` and `evo export-t4` on a database of replay runs (no GPU): the report opened in a
// real headless browser (Debian's chromium: charts drawn, no console errors, a screenshot kept in
// the build folder as report-test.png), and the T4 output validated against Kernel Tuner's T4
// schema with python3-jsonschema. Both tools come from scripts/install-deps.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/support.h"

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command; its exit status (stdout and stderr land where the command says).
int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

bool have(const std::string& tool_check) { return sh(tool_check + " >/dev/null 2>&1") == 0; }

// One database for the suite: an evo run, a second seed, random and exhaustive on the H100 landscape.
class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new evo::test::TempDir;
    const std::string landscape = (evo::test::source_root() / "tests/data/landscape_sdpa_fp8_h100.json").string();
    for (const std::string extra : {"", "--seed 1", "--strategy random", "--strategy exhaustive"})
      ASSERT_EQ(evo("run --replay " + quoted(landscape) + " --budget 60 -q " + extra), 0) << extra;
  }
  static void TearDownTestSuite() { delete dir_; }

  // `evo --db <suite db> ARGS` in the suite's folder; output in out.txt / err.txt there.
  static int evo(const std::string& args) {
    return sh("cd " + quoted(dir_->path.string()) + " && EVO_REPLAY_DELAY_MS=1 " + quoted(evo::test::evo_binary()) +
              " --db evo.db " + args + " >out.txt 2>err.txt");
  }
  static std::string err() { return read_text(dir_->path / "err.txt"); }
  static fs::path at(const std::string& name) { return dir_->path / name; }

  static evo::test::TempDir* dir_;
};
evo::test::TempDir* Report::dir_ = nullptr;

// chromium headless on a file: the DOM after load, and the browser's log (console messages and
// failed loads are logged there with --enable-logging=stderr).
struct Browsed {
  int rc = 0;
  std::string dom, log;
};
Browsed browse(const fs::path& html, const fs::path& screenshot = {}) {
  const fs::path dir = html.parent_path();
  const std::string base = "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                           "--no-first-run --enable-logging=stderr --v=0 --user-data-dir=" +
                           quoted((dir / "chromium-profile").string()) + " ";
  Browsed b;
  b.rc = sh(base + "--dump-dom " + quoted("file://" + html.string()) + " >" + quoted((dir / "dom.html").string()) +
            " 2>" + quoted((dir / "browser.log").string()));
  b.dom = read_text(dir / "dom.html");
  b.log = read_text(dir / "browser.log");
  if (!screenshot.empty())
    sh(base + "--window-size=1060,2600 --screenshot=" + quoted(screenshot.string()) + " " +
       quoted("file://" + html.string()) + " >/dev/null 2>&1");
  return b;
}

// The log lines a page caused: console messages and uncaught errors (not the browser's own
// complaints about a missing D-Bus or GPU in a container).
std::vector<std::string> page_errors(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (l.find("CONSOLE") != std::string::npos || l.find("Uncaught") != std::string::npos ||
        l.find("net::ERR_") != std::string::npos)
      out.push_back(l);
  return out;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST_F(Report, OpensInAHeadlessBrowserWithEveryChartDrawnAndNoConsoleErrors) {
  if (!have("chromium --version")) GTEST_SKIP() << "no chromium to open the report in (scripts/install-deps.sh installs it)";
  ASSERT_EQ(evo("report 1 --to report.html"), 0) << err();
  const std::string html = read_text(at("report.html"));
  // Self-contained: nothing fetched, no script.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);

  const fs::path shot = fs::path(evo::test::evo_binary()).parent_path() / "report-test.png";
  fs::remove(shot);
  const Browsed b = browse(at("report.html"), shot);
  ASSERT_EQ(b.rc, 0) << b.log;
  // Two best-so-far charts with a line per run of sdpa_fp8 (4), the report's run bold; the outcome
  // and time bars; one chart per knob (sdpa_fp8 has 11).
  EXPECT_EQ(count(b.dom, "<svg"), 2 + 2 + 11) << b.dom.substr(0, 2000);
  EXPECT_EQ(count(b.dom, "class=\"line\""), 2 * 3);
  EXPECT_EQ(count(b.dom, "class=\"line main\""), 2);
  const std::regex step_path("class=\"line main\"[^>]* d=\"M[0-9.]+,[0-9.]+(H[0-9.]+V[0-9.]+){2,}\"");
  EXPECT_TRUE(std::regex_search(b.dom, step_path)) << "no best-so-far line with at least two steps";
  EXPECT_GE(count(b.dom, "<circle"), 8);
  EXPECT_GE(count(b.dom, "<rect"), 11 + 4 + 1);
  for (const char* heading : {"Best so far", "Outcomes", "Knobs", "Elites and their lineage", "Where the time went"})
    EXPECT_NE(b.dom.find(heading), std::string::npos) << heading;
  EXPECT_NE(b.dom.find("model"), std::string::npos) << "no elite found by the model-led search in its lineage";
  EXPECT_EQ(page_errors(b.log), std::vector<std::string>{});
  EXPECT_TRUE(fs::exists(shot) && fs::file_size(shot) > 10000) << "no screenshot at " << shot;
}

TEST_F(Report, ConsoleErrorCheckSeesAPageThatFails) {
  // The check above is only worth something if a failing page trips it.
  if (!have("chromium --version")) GTEST_SKIP() << "no chromium (scripts/install-deps.sh installs it)";
  std::ofstream(at("bad.html")) << "<!doctype html><body><script>console.error('planted'); no_such_fn();</script>";
  EXPECT_FALSE(page_errors(browse(at("bad.html")).log).empty());
}

TEST_F(Report, NewestRunByDefault) {
  ASSERT_EQ(evo("report --to newest.html"), 0) << err();
  EXPECT_NE(read_text(at("newest.html")).find("<h1>evo run 4: sdpa_fp8</h1>"), std::string::npos);
}

TEST_F(Report, UnknownRunIsOneLineAndExit2) {
  EXPECT_EQ(evo("report 99 --to nope.html"), 2);
  EXPECT_EQ(err(), "evo: no run 99 in evo.db (see `evo runs`)\n");
  EXPECT_FALSE(fs::exists(at("nope.html")));
}

TEST_F(Report, ExportT4UnknownRunIsOneLineAndExit2) {
  EXPECT_EQ(evo("export-t4 99 --to nope.json"), 2);
  EXPECT_EQ(err(), "evo: no run 99 in evo.db (see `evo runs`)\n");
  EXPECT_FALSE(fs::exists(at("nope.json")));
}

// jsonschema's verdict on `file` against the T4 results schema: "" when valid, else its message.
std::string t4_validation_error(const fs::path& file, int& rc) {
  const fs::path schema = evo::test::source_root() / "tests/data/t4/results-schema.json";
  const fs::path out = file.parent_path() / "validate.txt";
  rc = sh("python3 -c " +
          quoted("import json, sys, jsonschema\n"
                 "schema = json.load(open(sys.argv[1]))\n"
                 "jsonschema.Draft202012Validator.check_schema(schema)\n"
                 "jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))\n") +
          " " + quoted(schema.string()) + " " + quoted(file.string()) + " >" + quoted(out.string()) + " 2>&1");
  return read_text(out);
}

TEST_F(Report, ExportT4ValidatesAgainstTheT4Schema) {
  if (!have("python3 -c 'import jsonschema'"))
    GTEST_SKIP() << "no python3-jsonschema to validate with (scripts/install-deps.sh installs it)";
  ASSERT_EQ(evo("export-t4 1 --to run1.t4.json"), 0) << err();
  int rc = 0;
  const std::string why = t4_validation_error(at("run1.t4.json"), rc);
  EXPECT_EQ(rc, 0) << why;

  const auto doc = nlohmann::json::parse(read_text(at("run1.t4.json")));
  EXPECT_EQ(doc.at("schema_version"), "1.0.0");
  EXPECT_EQ(doc.at("metadata").at("timeunit"), "milliseconds");
  ASSERT_EQ(doc.at("results").size(), 60u);
  int correct = 0;
  for (const auto& r : doc.at("results")) {
    EXPECT_EQ(r.at("configuration").size(), 11u);
    if (r.at("invalidity") == "correct") {
      ++correct;
      EXPECT_EQ(r.at("correctness"), 1);
      EXPECT_EQ(r.at("measurements").at(0).at("name"), "time");
      EXPECT_GT(r.at("measurements").at(0).at("value").get<double>(), 0.001);  // ms: microsecond kernels
      EXPECT_LT(r.at("measurements").at(0).at("value").get<double>(), 1.0);
    }
  }
  EXPECT_GT(correct, 0);

  // The validation is real: the same file with an invalidity T4 does not know fails it.
  auto bad = doc;
  bad["results"][0]["invalidity"] = "slow";
  std::ofstream(at("bad.t4.json")) << bad.dump();
  t4_validation_error(at("bad.t4.json"), rc);
  EXPECT_NE(rc, 0) << "the schema accepted invalidity 'slow'";
}

}  // namespace
