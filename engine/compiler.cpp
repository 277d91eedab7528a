// NVRTC compilation, the ptxas report and the on-disk compile cache. The worker pool that runs
// compile() in several processes is in compile_pool.cpp.
#include "engine/compiler.h"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/files.h"  // defines: read_file, write_atomic
#include "engine/hash.h"

namespace evo {
namespace fs = std::filesystem;
namespace {

// Options every compile gets besides -arch, the include paths and the defines. Part of the cache
// key: changing this list (or kKeyVersion) invalidates every cached build.
//   -Xptxas=-v: the register/spill/stack report parse_ptxas reads.
//   -lineinfo:  source lines in the cubin, for profilers and sanitizers (no effect on the code).
//   --no-cache: CUDA 13's NVRTC keeps its own cache of ptxas results (in the driver's compute
//               cache, so only where a driver is installed): a hit prints no -Xptxas=-v report, and
//               the static gate would see "registers unknown". Seen on the GPU machine, never here;
//               evo's own cache already makes a repeated compile a file read (NVIDIA/Fuser#4694).
// Not here: -default-device (it turns unannotated functions into device functions, which changes
// the meaning of a user's kernel written for another tuner); -pch (measured on templates/gemm.cu:
// 105 ms -> 240 ms per compile, its light headers cost less than the PCH bookkeeping; a profile
// with heavy headers can add it to compile_options; docs/results/compile-cache.md).
const std::vector<std::string> kFixedOptions = {"-std=c++17", "-Xptxas=-v", "-lineinfo", "--no-cache"};
constexpr int kKeyVersion = 1;

fs::path cuda_home() {
  if (const char* e = std::getenv("CUDA_HOME"); e && *e) return e;
#ifdef EVO_CUDA_HOME
  return EVO_CUDA_HOME;
#else
  return "/usr/local/cuda";
#endif
}

bool virtual_arch(const std::string& arch) { return arch.rfind("compute_", 0) == 0; }

// Folders a `#include` may resolve to that are part of the cache key: the template's own folder
// and the request's include_dirs. CUDA's headers are not hashed: the NVRTC version pins them.
std::vector<fs::path> user_include_dirs(const CompileRequest& r) {
  std::vector<fs::path> dirs{fs::path(r.source_path).parent_path()};
  for (const auto& d : r.include_dirs) dirs.emplace_back(d);
  return dirs;
}

// The `#include` spellings of `text`, in order, with the opener: what
// ^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">] finds line by line, scanned by hand (std::regex
// took half of a cached compile's time in sdpa_fp8's 1 000-line template).
std::vector<std::pair<char, std::string>> include_spellings(const std::string& text) {
  std::vector<std::pair<char, std::string>> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto blanks = [&](std::size_t& k) {
    while (k < n && (text[k] == ' ' || text[k] == '\t')) ++k;
  };
  while (i < n) {
    const std::size_t eol = std::min(n, text.find('\n', i));
    std::size_t k = i;
    blanks(k);
    if (k < eol && text[k] == '#') {
      ++k;
      blanks(k);
      if (text.compare(k, 7, "include") == 0 && k + 7 <= eol) {
        k += 7;
        blanks(k);
        if (k < eol && (text[k] == '<' || text[k] == '"')) {
          const char opener = text[k++];
          std::size_t e = k;
          while (e < eol && text[e] != '"' && text[e] != '>') ++e;
          if (e < eol && e > k) out.emplace_back(opener, text.substr(k, e - k));
        }
      }
    }
    i = eol + 1;
  }
  return out;
}

// A file's digest and includes, computed again only when its text differs from the last read's:
// every candidate's key hashes the same template and headers (thousands of times a run), and a
// read and a compare cost far less than the hash and the scan. No timestamps: an edit within one
// tick of the clock, to the same size, still counts.
struct FileDigest {
  std::string sha256;
  std::vector<std::pair<char, std::string>> includes;
};
std::optional<FileDigest> file_digest(const fs::path& canon) {
  auto text = read_file(canon);
  if (!text) return std::nullopt;
  struct Kept {
    std::string text;
    FileDigest digest;
  };
  static std::mutex m;
  static std::map<std::string, Kept> memo;  // canonical path -> its last text and digest
  std::lock_guard<std::mutex> g(m);
  Kept& k = memo[canon.string()];
  if (k.digest.sha256.empty() || k.text != *text) {
    k.digest = {sha256_hex(*text), include_spellings(*text)};
    k.text = std::move(*text);
  }
  return k.digest;
}

// Appends [spelling, sha256(text)] for every user header `includes` names, depth first, each once.
// Every #include line counts, even under a false #if: hashing a header too many only costs a miss.
void hash_includes(const std::vector<std::pair<char, std::string>>& includes, const fs::path& including_dir,
                   const std::vector<fs::path>& dirs, std::set<fs::path>& seen, nlohmann::json& out) {
  for (const auto& [opener, spelling] : includes) {
    std::vector<fs::path> candidates;
    if (opener == '"') candidates.push_back(including_dir / spelling);  // quoted: beside the includer first
    for (const auto& d : dirs) candidates.push_back(d / spelling);
    for (const auto& c : candidates) {
      std::error_code ec;
      if (!fs::is_regular_file(c, ec)) continue;
      fs::path canon = fs::weakly_canonical(c, ec);
      if (!seen.insert(canon).second) break;
      auto header = file_digest(canon);
      if (!header) break;  // unreadable: NVRTC will say so
      out.push_back({spelling, header->sha256});
      hash_includes(header->includes, canon.parent_path(), dirs, seen, out);
      break;
    }
  }
}

std::string program_log(nvrtcProgram prog) {
  std::size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return "";
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(n - 1);  // the size counts the terminating NUL
  return log;
}

// Frees the program on every path out of compile_uncached.
struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

struct Compiled {
  Build build;
  std::string image;      // cubin, or PTX (with its NUL) for a virtual arch
  bool cacheable = false; // a real verdict on the source; not an NVRTC hiccup (out of memory ...)
};

Compiled compile_uncached(const CompileRequest& r, const std::string& key) {
  Compiled out;
  Build& b = out.build;
  b.key = key;
  const auto source = read_file(r.source_path);
  if (!source) throw UserError(r.source_path + ": cannot read the template");

  std::vector<std::string> opts{"-arch=" + r.arch};
  opts.insert(opts.end(), kFixedOptions.begin(), kFixedOptions.end());
  for (const auto& d : user_include_dirs(r)) opts.push_back("--include-path=" + d.string());
  const fs::path cuda = cuda_home();
  opts.push_back("--include-path=" + (cuda / "include").string());
  opts.push_back("--include-path=" + (cuda / "include" / "cccl").string());
  for (const auto& [name, value] : r.defines) opts.push_back("-D" + name + "=" + value);
  opts.insert(opts.end(), r.options.begin(), r.options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const auto t0 = std::chrono::steady_clock::now();
  ProgramGuard g;
  nvrtcResult rc = nvrtcCreateProgram(&g.prog, source->c_str(), r.source_path.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) throw UserError(std::string("NVRTC cannot create a program: ") + nvrtcGetErrorString(rc));
  std::vector<std::string> names{r.name_expression};
  names.insert(names.end(), r.more_names.begin(), r.more_names.end());
  for (const auto& name : names) {
    rc = nvrtcAddNameExpression(g.prog, name.c_str());
    if (rc != NVRTC_SUCCESS) {
      b.log = "entry point '" + name + "': " + nvrtcGetErrorString(rc);
      return out;
    }
  }
  rc = nvrtcCompileProgram(g.prog, static_cast<int>(argv.size()), argv.data());
  b.log = program_log(g.prog);
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  switch (rc) {
    case NVRTC_SUCCESS:
      break;
    case NVRTC_ERROR_COMPILATION:  // the source's fault: a verdict worth caching
      b.compile_ms = elapsed_ms();
      out.cacheable = true;
      return out;
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE:  // libnvrtc-builtins missing or broken
      throw UserError(std::string("NVRTC is unusable: ") + nvrtcGetErrorString(rc) +
                      " (is libnvrtc-builtins beside libnvrtc?)");
    case NVRTC_ERROR_INVALID_OPTION: {
      std::string all;
      for (const auto& o : opts) all += " " + o;
      b.log = std::string(nvrtcGetErrorString(rc)) + " among:" + all + (b.log.empty() ? "" : "\n" + b.log);
      return out;
    }
    default:
      b.log = std::string("NVRTC: ") + nvrtcGetErrorString(rc) + (b.log.empty() ? "" : "\n" + b.log);
      return out;
  }

  for (const auto& name : names) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(g.prog, name.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
      b.log += "\nentry point '" + name + "' not found in " + r.source_path;
      b.kernels.clear();
      out.cacheable = true;
      return out;
    }
    if (names.size() > 1) b.kernels.push_back(LaunchKernel{name, lowered, "", {}});
    if (b.lowered_name.empty()) b.lowered_name = lowered;
  }
  std::size_t size = 0;
  if (virtual_arch(r.arch)) {  // compute_XX: PTX, JIT-compiled by the driver at load
    if (nvrtcGetPTXSize(g.prog, &size) == NVRTC_SUCCESS && size > 0) {
      out.image.resize(size);  // keeps the NUL: cudaLibraryLoadData wants NUL-terminated PTX
      nvrtcGetPTX(g.prog, out.image.data());
    }
  } else if (nvrtcGetCUBINSize(g.prog, &size) == NVRTC_SUCCESS && size > 0) {
    out.image.resize(size);
    nvrtcGetCUBIN(g.prog, out.image.data());
  }
  b.compile_ms = elapsed_ms();
  if (out.image.empty()) {
    b.log += "\nNVRTC produced no " + std::string(virtual_arch(r.arch) ? "PTX" : "cubin");
    return out;
  }
  b.ptxas = parse_ptxas(b.log, b.lowered_name);
  for (auto& k : b.kernels) k.ptxas = parse_ptxas(b.log, k.lowered_name);
  b.ok = true;
  out.cacheable = true;
  return out;
}

// "123" out of the text just before `what` in a ptxas line ("26 registers" -> 26); -1 if absent.
std::int64_t number_before(const std::string& line, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("(\\d+) " + what))) return -1;
  return std::stoll(m[1]);
}

}  // namespace

// ---- requests ------------------------------------------------------------------------------------

namespace {

// One request per distinct template of `launches`, in first-use order, each entry named once.
std::vector<CompileRequest> grouped_requests(const std::vector<const KernelSpec*>& launches, const CompileRequest& base) {
  std::vector<CompileRequest> out;
  for (const KernelSpec* k : launches) {
    auto it = std::find_if(out.begin(), out.end(), [&](const CompileRequest& r) { return r.source_path == k->source.string(); });
    if (it == out.end()) {
      CompileRequest r = base;
      r.source_path = k->source.string();
      r.name_expression = k->name;
      out.push_back(std::move(r));
    } else if (it->name_expression != k->name &&
               std::find(it->more_names.begin(), it->more_names.end(), k->name) == it->more_names.end()) {
      it->more_names.push_back(k->name);
    }
  }
  return out;
}

}  // namespace

std::vector<CompileRequest> candidate_requests(const Profile& p, const Config& c, const std::string& arch) {
  CompileRequest base;
  base.defines = p.kernel.defines;  // the profile's: every launch's
  for (const auto& [name, value] : c) base.defines[name] = std::to_string(value);
  base.options = p.compile_options;
  base.include_dirs = p.include_dirs;
  base.arch = arch.empty() ? p.arch : arch;
  return grouped_requests(p.launches(), base);
}

CompileRequest candidate_request(const Profile& p, const Config& c, const std::string& arch) {
  return candidate_requests(p, c, arch).front();
}

std::vector<CompileRequest> reference_requests(const Profile& p, const std::string& arch) {
  CompileRequest base;
  base.defines = p.reference.defines;
  // A configuration of the candidate compiles as the candidate does: the same request, one cubin.
  if (p.reference_config) base.options = p.compile_options;
  base.include_dirs = p.include_dirs;
  base.arch = arch.empty() ? p.arch : arch;
  return grouped_requests(p.reference_launches(), base);
}

CompileRequest reference_request(const Profile& p, const std::string& arch) {
  auto rs = reference_requests(p, arch);
  if (rs.empty())
    throw UserError(p.path.string() + ": reference: a " + (p.reference_command ? "command" : "data") +
                    " reference has no kernel to compile");
  return rs.front();
}

std::string first_error_line(const std::string& log) {
  const auto pos = log.find("error");
  const std::string s = pos == std::string::npos ? log : log.substr(pos);
  return s.substr(0, s.find('\n'));
}

std::string launch_build_key(const std::vector<std::string>& keys) {
  if (keys.size() == 1) return keys.front();
  std::string all = "launches";
  for (const auto& k : keys) all += "|" + k;
  return sha256_hex(all);
}

Build launch_build(const std::vector<const KernelSpec*>& launches, const std::vector<CompileRequest>& requests,
                   const std::vector<Build>& builds) {
  if (launches.size() == 1 && builds.size() == 1) return builds.front();
  Build u;
  u.ok = !builds.empty();
  u.from_cache = !builds.empty();
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < builds.size(); ++i) {
    const Build& b = builds[i];
    u.ok = u.ok && b.ok;
    u.from_cache = u.from_cache && b.from_cache;
    u.compile_ms += b.compile_ms;
    keys.push_back(b.key);
    if (!b.log.empty())
      u.log += (builds.size() > 1 ? fs::path(requests.at(i).source_path).filename().string() + ":\n" : std::string()) +
               b.log + (b.log.back() == '\n' ? "" : "\n");
  }
  u.key = launch_build_key(keys);
  if (!u.ok) return u;
  for (const KernelSpec* k : launches) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].source_path != k->source.string()) continue;
      std::vector<std::string> names{requests[i].name_expression};
      names.insert(names.end(), requests[i].more_names.begin(), requests[i].more_names.end());
      const auto at = std::find(names.begin(), names.end(), k->name);
      const auto entries = launch_kernels(builds[i]);
      if (at == names.end() || static_cast<std::size_t>(at - names.begin()) >= entries.size())
        throw UserError("launch_build: no entry '" + k->name + "' in the build of " + requests[i].source_path);
      LaunchKernel e = entries[static_cast<std::size_t>(at - names.begin())];
      e.name_expression = k->name;
      u.kernels.push_back(std::move(e));
      break;
    }
  }
  if (u.kernels.size() != launches.size()) throw UserError("launch_build: a launch's template has no request");
  u.lowered_name = u.kernels.front().lowered_name;
  u.cubin_path = u.kernels.front().cubin_path;
  u.ptxas = u.kernels.front().ptxas;
  return u;
}

namespace {
std::mutex builtin_cache_mu;
std::filesystem::path& builtin_cache_dir() {
  static auto* dir = new std::filesystem::path;
  return *dir;
}
std::vector<char> build_builtin(const std::string& source, const std::string& file_name, const std::string& arch,
                                const std::string& what);
}  // namespace

void set_builtin_cache(const std::filesystem::path& dir) {
  std::lock_guard<std::mutex> lock(builtin_cache_mu);
  builtin_cache_dir() = dir;
}

std::vector<char> builtin_cubin(const std::string& source, const std::string& file_name, const std::string& arch,
                                const std::string& what) {
  std::filesystem::path dir;
  {
    std::lock_guard<std::mutex> lock(builtin_cache_mu);
    dir = builtin_cache_dir();
  }
  if (dir.empty()) return build_builtin(source, file_name, arch, what);
  const std::string key = xxh64_hex(source + '\0' + file_name + '\0' + arch + '\0' + nvrtc_version());
  const std::filesystem::path file = dir / (key + ".cubin");
  constexpr std::size_t kSum = 16;  // the cubin's xxh64, in hex, after it
  if (auto text = read_file(file); text && text->size() > kSum) {
    const std::string body = text->substr(0, text->size() - kSum);
    if (xxh64_hex(body) == text->substr(text->size() - kSum)) return std::vector<char>(body.begin(), body.end());
  }
  std::vector<char> cubin = build_builtin(source, file_name, arch, what);
  const std::string body(cubin.begin(), cubin.end());
  try {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    write_atomic(file, body + xxh64_hex(body), "evo's builtin kernel cache");
  } catch (const UserError&) {
    // A cache that cannot be written costs a build next time, never the candidate.
  }
  return cubin;
}

namespace {
std::vector<char> build_builtin(const std::string& source, const std::string& file_name, const std::string& arch,
                                const std::string& what) {
  auto check = [&](nvrtcResult r, const char* call, const std::string& log = "") {
    if (r != NVRTC_SUCCESS)
      throw UserError(what + ": " + call + ": " + nvrtcGetErrorString(r) + (log.empty() ? "" : "\n" + log));
  };
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), file_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  const std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--no-cache"};
  const nvrtcResult built = nvrtcCompileProgram(prog, 3, opts);
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  if (built != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    check(built, "nvrtcCompileProgram", log);
  }
  std::size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::vector<char> cubin(size);
  check(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&prog);
  return cubin;
}
}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) throw UserError("NVRTC is unusable: nvrtcVersion failed");
  return std::to_string(major) + "." + std::to_string(minor);
}

// ---- ptxas report ------------------------------------------------------------------------------
// ptxas -v prints, per function:
//   ptxas info    : Compiling entry function 'NAME' for 'sm_90'        (entries only)
//   ptxas info    : Function properties for NAME
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 26 registers, used 1 barriers, 128 bytes cumulative stack size, 1024 bytes smem, ...
// Non-inlined helpers get a "Function properties" block of their own (no "Used" line), so a line
// belongs to the function named most recently.
// On sm_90a, where ptxas cannot keep a warpgroup MMA pipeline, it also says why, before the
// function's "Compiling entry function" line (so not by position):
//   ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized
//                   due to insufficient register resources for the wgmma pipeline in the function 'NAME'
// Such a line counts for the entry it names; one that names no function, for every entry.

namespace {

// "C7511: insufficient register resources for the wgmma pipeline" and the function the line names
// ("" for none), or nullopt for any other line. Plain finds, not a regex: a mangled name can be
// thousands of characters, and std::regex recurses per character.
std::optional<std::pair<std::string, std::string>> wgmma_serialized_line(const std::string& line) {
  constexpr auto npos = std::string::npos;
  const std::string due_to = " due to ";
  const auto loss = line.find("Potential Performance Loss: wgmma");
  const auto due = loss == npos ? npos : line.find(due_to, loss);
  if (due == npos || line.find("seriali", loss) > due) return std::nullopt;
  const auto open = line.rfind("(C", loss);  // the code, "(C7511)", just before
  const auto close = open == npos ? npos : line.find(')', open);
  if (close > loss) return std::nullopt;
  std::string reason = line.substr(due + due_to.size()), function;
  while (!reason.empty() && (std::isspace(static_cast<unsigned char>(reason.back())) || reason.back() == '.'))
    reason.pop_back();
  for (const std::string in : {" in the function '", " in function '"})
    if (const auto at = reason.rfind(in); at != npos && reason.back() == '\'') {
      function = reason.substr(at + in.size(), reason.size() - at - in.size() - 1);
      reason.resize(at);
      break;
    }
  return std::make_pair(line.substr(open + 1, close - open - 1) + ": " + reason, function);
}

// The report's wgmma_serialized: the lines for `lowered_name` or for no function, each once.
std::vector<std::string> wgmma_serialized(const std::string& log, const std::string& lowered_name) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    const auto w = wgmma_serialized_line(line);
    if (!w || !(w->second.empty() || w->second == lowered_name)) continue;
    if (std::find(out.begin(), out.end(), w->first) == out.end()) out.push_back(w->first);
  }
  return out;
}

}  // namespace

PtxasReport parse_ptxas(const std::string& log, const std::string& lowered_name) {
  PtxasReport rep;
  rep.wgmma_serialized = wgmma_serialized(log, lowered_name);
  std::string current;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto at = line.find("Compiling entry function '"); at != std::string::npos) {
      const auto start = at + std::string("Compiling entry function '").size();
      current = line.substr(start, line.find('\'', start) - start);
      continue;
    }
    if (auto at = line.find("Function properties for "); at != std::string::npos) {
      current = line.substr(at + std::string("Function properties for ").size());
      while (!current.empty() && std::isspace(static_cast<unsigned char>(current.back()))) current.pop_back();
      continue;
    }
    if (current != lowered_name) continue;
    if (line.find("bytes stack frame") != std::string::npos) {
      rep.stack_bytes = std::max<std::int64_t>(rep.stack_bytes, number_before(line, "bytes stack frame"));
      rep.spill_stores = std::max<std::int64_t>(0, number_before(line, "bytes spill stores"));
      rep.spill_loads = std::max<std::int64_t>(0, number_before(line, "bytes spill loads"));
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      rep.registers = static_cast<int>(number_before(line, "registers"));
      rep.barriers = static_cast<int>(std::max<std::int64_t>(0, number_before(line, "barriers")));
      rep.static_smem = std::max<std::int64_t>(0, number_before(line, "bytes smem"));
      // With calls, the frames of the callees count too; older ptxas says "bytes lmem".
      rep.stack_bytes = std::max({rep.stack_bytes, number_before(line, "bytes cumulative stack size"),
                                  number_before(line, "bytes lmem")});
    }
  }
  return rep;
}

// ---- cache -----------------------------------------------------------------------------------------

CompileCache::CompileCache(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw UserError(dir_.string() + ": cannot create the compile cache folder");
}

std::string CompileCache::key(const CompileRequest& r) const {
  std::error_code ec;  // a path that cannot be resolved is hashed as given
  const fs::path self = fs::weakly_canonical(r.source_path, ec);
  const auto source = file_digest(ec ? fs::path(r.source_path) : self);
  if (!source) throw UserError(r.source_path + ": cannot read the template");
  nlohmann::json k;
  k["evo_key_version"] = kKeyVersion;
  k["fixed_options"] = kFixedOptions;
  k["nvrtc"] = nvrtc_version();
  k["arch"] = r.arch;
  k["entry"] = r.name_expression;
  if (!r.more_names.empty()) k["more_entries"] = r.more_names;  // absent for one: single-entry keys are as they were
  k["defines"] = r.defines;  // a std::map: sorted, so the key does not depend on order
  k["options"] = r.options;
  // Text, not paths: the same template in another checkout hits the same entries.
  nlohmann::json files = nlohmann::json::array();
  files.push_back({fs::path(r.source_path).filename().string(), source->sha256});
  std::set<fs::path> seen{ec ? fs::path(r.source_path) : self};
  hash_includes(source->includes, fs::path(r.source_path).parent_path(), user_include_dirs(r), seen, files);
  k["files"] = files;
  return sha256_hex(k.dump());
}

std::optional<Build> CompileCache::lookup(const std::string& key) const {
  if (key.size() < 3) return std::nullopt;
  const fs::path json_path = dir_ / key.substr(0, 2) / (key + ".json");
  const auto text = read_file(json_path);
  if (!text) return std::nullopt;
  Build b;
  try {
    b = nlohmann::json::parse(*text).get<Build>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // not ours, or from an incompatible evo: compile again, overwrite
  }
  if (b.ok) {
    // From the log the entry keeps, as compile() read them: so an entry cached by an evo that did
    // not read ptxas's wgmma warnings has them too, and its key (and every key) stays as it was.
    b.ptxas.wgmma_serialized = wgmma_serialized(b.log, b.lowered_name);
    for (auto& k : b.kernels) k.ptxas.wgmma_serialized = wgmma_serialized(b.log, k.lowered_name);
    // The entry may have moved with its folder: the image is beside the json, whatever was stored.
    const fs::path image = json_path.parent_path() / fs::path(b.cubin_path).filename();
    std::error_code ec;
    if (!fs::is_regular_file(image, ec) || fs::file_size(image, ec) == 0) return std::nullopt;
    b.cubin_path = image.string();
    for (auto& k : b.kernels) k.cubin_path = b.cubin_path;
  }
  b.from_cache = true;
  return b;
}

Build CompileCache::store(Build b, const std::string& cubin) {
  if (b.key.size() < 3) throw UserError("compile cache: store without a key");
  const fs::path sub = dir_ / b.key.substr(0, 2);
  std::error_code ec;
  fs::create_directories(sub, ec);
  b.from_cache = false;
  if (b.ok) {
    // A cubin is an ELF file; anything else is PTX text (virtual arch).
    const bool elf = cubin.size() >= 4 && cubin.compare(0, 4, "\x7f" "ELF") == 0;
    const fs::path image = sub / (b.key + (elf ? ".cubin" : ".ptx"));
    write_atomic(image, cubin, "the compile cache");  // first the image, then the json that points at it
    b.cubin_path = image.string();
    for (auto& k : b.kernels) k.cubin_path = b.cubin_path;
  }
  write_atomic(sub / (b.key + ".json"), nlohmann::json(b).dump(1), "the compile cache");
  return b;
}

fs::path default_cache_dir() {
  if (const char* e = std::getenv("EVO_CACHE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "evo" / "compile";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "evo" / "compile";
  return fs::temp_directory_path() / ("evo-compile-" + std::to_string(::getuid()));
}

// ---- compile ---------------------------------------------------------------------------------------

Build compile(const CompileRequest& r, CompileCache& cache) {
  const std::string key = cache.key(r);
  if (auto hit = cache.lookup(key)) return *hit;
  Compiled c = compile_uncached(r, key);
  if (!c.cacheable) return c.build;
  return cache.store(std::move(c.build), c.image);
}

}  // namespace evo
