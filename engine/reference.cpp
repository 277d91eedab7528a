#include "engine/reference.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/expr.h"
#include "engine/hash.h"
#include "engine/npy.h"
#include "engine/space.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

std::string where_text(const Problem& prob, std::uint64_t seed, int trial) {
  return "problem " + prob.name + ", seed " + std::to_string(seed) + ", trial " + std::to_string(trial);
}

std::vector<std::int64_t> shape_of(const Profile& p, const BufferSpec& b, const Problem& prob) {
  return buffer_shape(b, p.kernel, prob, {});  // only scratch shapes use knobs, and those are never exchanged
}

// The values a kernel computes with: decoded, and multiplied back by a scaled fp8 buffer's descale.
NpyArray to_npy(const HostTensor& t, float descale) {
  NpyArray a;
  a.descr = npy_descr(t.dtype);
  a.shape = t.shape;
  if (npy_exact(t.dtype)) {
    a.bytes = t.bytes;  // NumPy has these: the same bits
    return a;
  }
  const std::vector<double> v = decode(t);
  a.bytes.resize(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i] * descale);
    std::memcpy(a.bytes.data() + 4 * i, &f, 4);
  }
  return a;
}

// An expected output read back: exactly the buffer's shape and npy_descr, stored in its dtype.
// `who` opens every message ("reference command `...`: output Y").
HostTensor expected_output(const BufferSpec& b, const std::vector<std::int64_t>& shape, const fs::path& file,
                           const std::string& who, const std::string& where, bool written) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw ReferenceError(who + ": " + (written ? "wrote no " + file.filename().string() : "no file " + file.string()) +
                         " (" + where + "; expected " + npy_type_name(npy_descr(b.dtype)) + " " + npy_shape_text(shape) + ")");
  NpyArray a;
  try {
    a = read_npy(file);
  } catch (const UserError& e) {
    throw ReferenceError(who + ": " + e.what() + " (" + where + ")");
  }
  const std::string want = npy_descr(b.dtype);
  if (a.descr != want)
    throw ReferenceError(who + ": " + file.filename().string() + " is " + npy_type_name(a.descr) + " ('" + a.descr +
                         "'), the buffer (" + dtype_name(b.dtype) + ") needs " + npy_type_name(want) + " ('" + want +
                         "'): write it with .astype(numpy." + npy_type_name(want) + ") (" + where + ")");
  if (a.shape != shape)
    throw ReferenceError(who + ": " + file.filename().string() + " is " + npy_shape_text(a.shape) + ", the buffer is " +
                         npy_shape_text(shape) + " (" + where + ")");
  HostTensor t;
  t.name = b.name;
  t.dtype = b.dtype;
  t.shape = shape;
  if (npy_exact(b.dtype)) t.bytes = std::move(a.bytes);
  else t.bytes = encode(b.dtype, npy_values(a), false, nullptr);  // rounded as a kernel's store would
  return t;
}

// Every file a command line names in the profile's folder (its script, a table it loads): their
// content is part of the disk cache's key, so editing ref.py is a new key.
std::string named_files_hash(const CommandReference& c) {
  std::istringstream words(c.command);
  std::string w, all;
  while (words >> w) {
    w.erase(std::remove_if(w.begin(), w.end(), [](char ch) { return ch == '\'' || ch == '"'; }), w.end());
    if (w.find('{') != std::string::npos) continue;
    std::error_code ec;
    const fs::path f = c.dir / w;
    if (!fs::is_regular_file(f, ec)) continue;
    std::ifstream in(f, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    all += w + ":" + sha256_hex(s.str()) + ";";
  }
  return all;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The last non-empty line of a file, cut to 200 characters: what a failing script said last.
std::string last_line(const fs::path& f) {
  std::ifstream in(f);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 200) last = last.substr(0, 197) + "...";
  return last;
}

// Runs `line` with sh -c in `dir`, stdout and stderr to files in `work`, within timeout_s (then the
// whole process group is killed). Returns a wait status, or -1 on timeout.
int run_shell(const std::string& line, const fs::path& dir, const fs::path& work, double timeout_s) {
  const std::string out = (work / "stdout.txt").string(), err = (work / "stderr.txt").string();
  const pid_t pid = ::fork();
  if (pid < 0) throw ReferenceError(std::string("reference command: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here: the parent may be a worker with CUDA's threads.
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    // Nothing else of the parent's (the worker's protocol pipe above all) reaches the command.
    if (::close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    if (::chdir(dir.c_str()) != 0) {
      static const char msg[] = "evo: cannot enter the profile's folder\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(126);
    }
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (auto nap = std::chrono::milliseconds(1);; nap = std::min(nap * 2, std::chrono::milliseconds(50))) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) throw ReferenceError(std::string("reference command: waitpid: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(nap);
  }
}

// A folder of its own under `parent`, removed with its contents when this goes.
struct ScratchDir {
  explicit ScratchDir(const fs::path& parent) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    std::string t = (parent / "evo-reference-XXXXXX").string();
    if (!::mkdtemp(t.data()))
      throw ReferenceError("reference command: cannot make a folder in " + parent.string() + ": " + std::strerror(errno));
    path = t;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// Output and inout buffers, profile order, with their shapes for `prob`.
std::vector<std::pair<const BufferSpec*, std::vector<std::int64_t>>> compared(const Profile& p, const Problem& prob) {
  std::vector<std::pair<const BufferSpec*, std::vector<std::int64_t>>> out;
  for (const auto& b : p.buffers)
    if (b.compared()) out.emplace_back(&b, shape_of(p, b, prob));
  return out;
}

std::vector<HostTensor> read_outputs(const Profile& p, const Problem& prob, const fs::path& folder,
                                     const std::string& command_text, const std::string& where) {
  std::vector<HostTensor> out;
  for (const auto& [b, shape] : compared(p, prob))
    out.push_back(expected_output(*b, shape, folder / (b->name + ".npy"),
                                  "reference command `" + command_text + "`: output " + b->name, where, true));
  return out;
}

// Results for the process, per reference_key (bounded: cleared when they pass 1 GB).
struct Memo {
  std::mutex m;
  std::map<std::string, std::vector<HostTensor>> outputs;
  std::size_t bytes = 0;
};
Memo& memo() {
  static Memo* m = new Memo;  // never destroyed: no order-of-destruction questions at exit
  return *m;
}

}  // namespace

HostInputs host_inputs(const Profile& p, const Problem& prob, std::uint64_t seed, int trial) {
  HostInputs in;
  for (const auto& b : p.buffers) {
    if (!b.filled_per_trial()) continue;
    HostTensor t;
    t.name = b.name;
    t.dtype = b.dtype;
    t.shape = shape_of(p, b, prob);
    std::int64_t n = 1;
    for (auto d : t.shape) n *= d;
    float descale = 1;
    if (p.reference_data && p.reference_data->inputs.count(b.name))
      t.bytes = data_input_bytes(b, p.reference_data->inputs.at(b.name), n, &descale);
    else
      t.bytes = initial_bytes(b, n, seed, trial, &descale);
    if (!b.scale_arg.empty()) in.descales[b.scale_arg] = descale;
    in.buffers.push_back(std::move(t));
  }
  return in;
}

std::vector<std::uint8_t> data_input_bytes(const BufferSpec& b, const fs::path& file, std::int64_t elements,
                                           float* descale) {
  NpyArray a;
  try {
    a = read_npy(file);
  } catch (const UserError& e) {
    throw ReferenceError("reference.data.inputs." + b.name + ": " + e.what());
  }
  if (a.elements() != elements || a.descr != npy_descr(b.dtype))
    throw ReferenceError("reference.data.inputs." + b.name + ": " + file.string() + " is " + npy_type_name(a.descr) + " " +
                         npy_shape_text(a.shape) + ", the buffer needs " + npy_type_name(npy_descr(b.dtype)) + " of " +
                         std::to_string(elements) + " elements");
  if (npy_exact(b.dtype)) {
    if (descale) *descale = 1;
    return std::move(a.bytes);
  }
  return encode(b.dtype, npy_values(a), !b.scale_arg.empty(), descale);
}

std::string reference_key(const Profile& p, const Problem& prob, std::uint64_t seed, int trial) {
  std::string k = p.path.string() + "|" + (p.reference_command ? "command:" + p.reference_command->command : "data") +
                  "|" + prob.name;
  for (const auto& [name, v] : prob.sizes) k += "|" + name + "=" + number_text(v);
  if (p.reference_data) return k;  // fixed inputs: every seed and trial alike
  return k + "|seed=" + std::to_string(seed) + "|trial=" + std::to_string(trial);
}

std::vector<HostTensor> run_reference_command(const Profile& p, const Problem& prob, std::uint64_t seed, int trial,
                                              const fs::path& cache_dir) {
  if (!p.reference_command) throw UserError(p.path.string() + ": reference: not a command");
  const CommandReference& cmd = *p.reference_command;
  const std::string where = where_text(prob, seed, trial);
  const HostInputs in = host_inputs(p, prob, seed, trial);

  // problem.json: what a script needs besides the arrays.
  nlohmann::ordered_json meta{{"problem", prob.name}, {"sizes", prob.sizes}, {"seed", seed}, {"trial", trial}};
  {
    // Scalars that depend on knobs describe a configuration, not the function computed: left out.
    std::vector<std::string> known;
    for (const auto& [name, _] : expression_vars(p.kernel, prob, {})) known.push_back(name);
    for (const auto& k : p.knobs) known.push_back(k.name);
    const Vars vars = expression_vars(p.kernel, prob, {});
    nlohmann::ordered_json scalars = nlohmann::ordered_json::object();
    for (const auto& s : p.scalars) {
      Expr e(s.value, known);
      const auto& used = e.used_vars();
      if (std::any_of(used.begin(), used.end(), [&](const std::string& v) { return p.find_knob(v) != nullptr; })) continue;
      scalars[s.name] = e.eval(vars);
    }
    meta["scalars"] = scalars;
    meta["descales"] = in.descales;
  }
  auto describe = [](const BufferSpec& b, const std::vector<std::int64_t>& shape) {
    return nlohmann::ordered_json{{"dtype", dtype_name(b.dtype)}, {"npy", npy_type_name(npy_descr(b.dtype))},
                                  {"shape", shape}, {"role", b.role == BufferRole::InOut ? "inout" : b.role == BufferRole::Output ? "output" : "input"}};
  };
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object(), outputs = nlohmann::ordered_json::object();
  std::vector<NpyArray> arrays;
  std::string key_text = "evo-reference/1|" + cmd.command + "|" + named_files_hash(cmd);
  for (const auto& t : in.buffers) {
    const BufferSpec& b = *p.find_buffer(t.name);
    inputs[t.name] = describe(b, t.shape);
    const auto d = b.scale_arg.empty() ? 1.0f : in.descales.at(b.scale_arg);
    arrays.push_back(to_npy(t, d));
    key_text += "|" + t.name + ":" + arrays.back().descr + npy_shape_text(t.shape) + ":" +
                sha256_hex(std::string_view(reinterpret_cast<const char*>(arrays.back().bytes.data()), arrays.back().bytes.size()));
  }
  for (const auto& [b, shape] : compared(p, prob)) outputs[b->name] = describe(*b, shape);
  meta["inputs"] = inputs;
  meta["outputs"] = outputs;
  key_text += "|" + meta.dump();
  const std::string key = sha256_hex(key_text);

  // A result already on disk (a worker before this one ran it): read it, checked like a fresh one.
  const fs::path cached = cache_dir.empty() ? fs::path() : cache_dir / key.substr(0, 2) / key;
  std::error_code ec;
  if (!cached.empty() && fs::is_directory(cached, ec)) {
    try {
      return read_outputs(p, prob, cached, cmd.command, where);
    } catch (const ReferenceError&) {
      fs::remove_all(cached, ec);  // damaged: run again
    }
  }

  ScratchDir work(cache_dir.empty() ? fs::temp_directory_path() : cache_dir);
  const fs::path in_dir = work.path / "in", out_dir = work.path / "out";
  fs::create_directories(in_dir);
  fs::create_directories(out_dir);
  for (std::size_t i = 0; i < in.buffers.size(); ++i) write_npy(in_dir / (in.buffers[i].name + ".npy"), arrays[i]);
  std::ofstream(in_dir / "problem.json") << meta.dump(2) << "\n";

  std::string names;
  for (const auto& [b, _] : compared(p, prob)) names += (names.empty() ? "" : ", ") + b->name;
  const std::string line = replace_all(replace_all(cmd.command, "{in}", quoted(in_dir)), "{out}", quoted(out_dir));
  const std::string who = "reference command `" + cmd.command + "`: output" + (names.find(',') == std::string::npos ? " " : "s ") + names;
  const int status = run_shell(line, cmd.dir, work.path, cmd.timeout_s);
  const std::string said = last_line(work.path / "stderr.txt");
  const std::string tail = said.empty() ? "" : "; its stderr ends: " + said;
  if (status == -1)
    throw ReferenceError(who + ": did not finish within " + number_text(cmd.timeout_s) + " s, killed (" + where + ")");
  if (WIFSIGNALED(status))
    throw ReferenceError(who + ": killed by signal " + std::to_string(WTERMSIG(status)) + " (" + where + ")" + tail);
  if (WEXITSTATUS(status) != 0)
    throw ReferenceError(who + ": exited with status " + std::to_string(WEXITSTATUS(status)) + " (" + where + ")" + tail);
  std::vector<HostTensor> out = read_outputs(p, prob, out_dir, cmd.command, where);

  if (!cached.empty()) {
    // Whole or not at all: the folder appears by rename. Another process may have stored the same
    // result first, and a cache that cannot be written only costs a run: neither is an error.
    fs::create_directories(cached.parent_path(), ec);
    (void)::rename(out_dir.c_str(), cached.c_str());
  }
  return out;
}

std::vector<HostTensor> reference_outputs(const Profile& p, const Problem& prob, std::uint64_t seed, int trial,
                                          const fs::path& cache_dir) {
  if (p.reference_is_kernel()) throw UserError(p.path.string() + ": reference: a kernel, not a command or data");
  const std::string key = reference_key(p, prob, seed, trial);
  Memo& m = memo();
  {
    std::lock_guard<std::mutex> lock(m.m);
    if (auto it = m.outputs.find(key); it != m.outputs.end()) return it->second;
  }
  std::vector<HostTensor> out;
  if (p.reference_command) {
    out = run_reference_command(p, prob, seed, trial, cache_dir);
  } else {
    for (const auto& [b, shape] : compared(p, prob))
      out.push_back(expected_output(*b, shape, p.reference_data->outputs.at(b->name),
                                    "reference.data.outputs." + b->name, "problem " + prob.name, false));
  }
  std::size_t bytes = 0;
  for (const auto& t : out) bytes += t.bytes.size();
  std::lock_guard<std::mutex> lock(m.m);
  if (m.bytes + bytes > (std::size_t(1) << 30)) m.outputs.clear(), m.bytes = 0;
  m.bytes += bytes;
  m.outputs[key] = out;
  return out;
}

}  // namespace evo
