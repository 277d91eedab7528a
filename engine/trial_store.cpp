#include "engine/trial_store.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "engine/error.h"
#include "engine/expr.h"   // defines: eval_expr
#include "engine/files.h"  // defines: read_headed_file, write_atomic
#include "engine/hash.h"
#include "engine/launch.h"  // defines: launch_geometry, tensor_map_layout
#include "engine/space.h"   // defines: expression_vars

namespace evo {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The files' format: bump it when the header or payload layout changes. What the bytes mean is
// the key's business (the generator fingerprint, the caller's reference text).
constexpr const char* kFormat = "evo-trial/1";

const char* init_name(InitSpec::Kind k) {
  switch (k) {
    case InitSpec::Kind::Normal: return "normal";
    case InitSpec::Kind::Uniform: return "uniform";
    case InitSpec::Kind::Zeros: return "zeros";
    case InitSpec::Kind::Constant: return "constant";
    case InitSpec::Kind::Raw: return "raw";
  }
  return "?";
}

std::size_t bytes_of(const HostTensor& t) {
  std::size_t n = dtype_bytes(t.dtype);
  for (auto d : t.shape) n *= static_cast<std::size_t>(d);
  return n;
}

Json describe(const std::vector<HostTensor>& ts) {
  Json out = Json::array();
  for (const auto& t : ts) out.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
  return out;
}

std::string_view bytes_view(const std::vector<std::uint8_t>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// An entry: its header line (with the payload's size and XXH64), then the parts as they are,
// written in pieces, so a payload of megabytes is not joined into another copy first. `digest`:
// the XXH64 of the parts together when the caller has it already (a fill's).
void store_entry(const fs::path& f, Json header, const std::vector<const std::vector<std::uint8_t>*>& parts,
                 std::optional<std::uint64_t> digest = std::nullopt) {
  std::size_t n = 0;
  for (const auto* p : parts) n += p->size();
  if (!digest) {
    Xxh64 h;  // several outputs: XXH64 runs over them as one, piece by piece
    for (const auto* p : parts) h.update(bytes_view(*p));
    digest = h.digest();
  }
  header["bytes"] = n;
  header["xxh64"] = digest_hex(*digest);
  const std::string line = header.dump() + "\n";
  std::vector<std::string_view> pieces{line};
  for (const auto* p : parts) pieces.push_back(bytes_view(*p));
  std::error_code ec;
  fs::create_directories(f.parent_path(), ec);
  try {
    write_atomic(f, pieces, "the trial store");
  } catch (const UserError&) {
    // Read-only or full: every worker makes the trial itself, as it would without the store.
  }
}

struct Stored {
  Json header;
  std::vector<std::uint8_t> payload;  // checked against the header's size and checksum
  std::uint64_t digest = 0;  // XXH64 of payload
};

// The file's header and payload when it is whole and of this `kind` and `key` with tensors as
// `expected`; nullopt when there is no file. One that fails is removed, with one warning.
std::optional<Stored> read_stored(const fs::path& f, const char* kind, const std::string& key,
                                  const std::vector<HostTensor>& expected, const TrialStore::Warn& warn) {
  std::error_code ec;
  if (!fs::exists(f, ec)) return std::nullopt;
  std::optional<HeadedFile> text = read_headed_file(f);
  std::string why;
  Stored s;
  if (!text) {
    why = "cannot be read";
  } else if (!text->newline) {
    why = "no header";
  } else {
    s.header = Json::parse(text->head, nullptr, false);
    s.payload = std::move(text->body);  // read into place: no copy of a payload of megabytes
    std::size_t want = 0;
    for (const auto& t : expected) want += bytes_of(t);
    if (s.header.is_discarded() || !s.header.is_object()) why = "header is not JSON";
    else if (s.header.value("format", "") != kFormat) why = "format " + s.header.value("format", "?") + ", not " + kFormat;
    else if (s.header.value("kind", "") != kind || s.header.value("key", "") != key) why = "another entry's header";
    else if (s.header.value("tensors", Json()) != describe(expected)) why = "names, dtypes or shapes differ";
    else if (s.header.value("bytes", std::size_t{0}) != want || s.payload.size() != want)
      why = std::to_string(s.payload.size()) + " bytes, " + std::to_string(want) + " expected";
    else if (s.digest = xxh64(bytes_view(s.payload)); s.header.value("xxh64", "") != digest_hex(s.digest)) why = "checksum differs";
  }
  if (why.empty()) return s;
  fs::remove(f, ec);
  if (warn) warn("trial store: " + f.string() + " is damaged (" + why + "): removed, made again");
  return std::nullopt;
}

}  // namespace

std::string key_number(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

const std::string& generator_fingerprint() {
  static const std::string fp = [] {
    // Values drawn exactly as a trial draws them, through every init kind and dtype, scaled fp8
    // too: their bytes and descales change when anything that makes a fill does.
    auto spec = [](InitSpec::Kind k, double a, double b) {
      InitSpec i;
      i.kind = k, i.a = a, i.b = b;
      return i;
    };
    const InitSpec inits[] = {spec(InitSpec::Kind::Normal, 0, 1), spec(InitSpec::Kind::Uniform, -2, 3),
                              spec(InitSpec::Kind::Constant, 0.7, 0)};
    const std::vector<DType>& dtypes = all_dtypes();
    std::string all;
    for (const auto& init : inits)
      for (DType t : dtypes)
        for (bool scaled : {false, true}) {
          if (scaled && t != DType::FP8_E4M3 && t != DType::FP8_E5M2) continue;
          float descale = 1;
          const auto b = encode(t, draw_values(init, 97, 20261124, 3, "fingerprint"), scaled, &descale);
          all.append(reinterpret_cast<const char*>(b.data()), b.size());
          all.append(reinterpret_cast<const char*>(&descale), sizeof descale);
        }
    // And where a second chunk's generator starts (draw_values draws chunks of kDrawChunk apart).
    const auto two = draw_values(inits[0], static_cast<std::int64_t>(kDrawChunk) + 7, 20261124, 3, "fingerprint");
    all.append(reinterpret_cast<const char*>(two.data() + kDrawChunk - 2), 9 * sizeof(double));
    return xxh64_hex(all);
  }();
  return fp;
}

std::string fill_key(const BufferSpec& b, std::int64_t n, std::uint64_t seed, int trial) {
  // A raw file's bytes are the same for every seed and trial: one key, the file's content.
  if (b.init.kind == InitSpec::Kind::Raw)
    return "evo-fill/1|raw=" + b.init.file_hash + "|buffer=" + b.name + "|" + dtype_name(b.dtype) + "|n=" + std::to_string(n);
  return std::string("evo-fill/1|generator=") + generator_fingerprint() + "|buffer=" + b.name + "|" +
         dtype_name(b.dtype) + "|init=" + init_name(b.init.kind) + "," + key_number(b.init.a) + "," + key_number(b.init.b) +
         "|n=" + std::to_string(n) + "|seed=" + std::to_string(seed) + "|trial=" + std::to_string(trial) +
         (b.scale_arg.empty() ? "|plain" : "|scaled");
}

std::string args_recipe(const Profile& p, const KernelSpec& k, const Problem& prob, const Config& c,
                        std::uint64_t seed, int trial) {
  auto shape_text = [&](const BufferSpec& b) {
    std::string s = dtype_name(b.dtype);
    for (auto d : buffer_shape(b, p.kernel, prob, c)) s += "," + std::to_string(d);
    return s;
  };
  auto fill_text = [&](const BufferSpec& b) {
    if (p.reference_data && p.reference_data->inputs.count(b.name)) return "file:" + p.reference_data->inputs.at(b.name).string();
    std::int64_t n = 1;
    for (auto d : buffer_shape(b, p.kernel, prob, c)) n *= d;
    return fill_key(b, n, seed, trial);
  };
  const Vars vars = expression_vars(p.kernel, prob, c);  // scalars are evaluated as BufferSet does
  std::string r;
  // pack()'s order of lookup: buffer, scalar, descale, tensor map, size.
  for (const auto& name : k.args) {
    r += name + "=";
    const BufferSpec* scaled = nullptr;
    for (const auto& b : p.buffers)
      if (b.scale_arg == name) scaled = &b;
    const ScalarSpec* scalar = nullptr;
    for (const auto& s : p.scalars)
      if (s.name == name) scalar = &s;
    if (const BufferSpec* b = p.find_buffer(name)) {
      if (b->role == BufferRole::Output || b->role == BufferRole::Scratch)
        r += std::string(b->role == BufferRole::Output ? "output:" : "scratch:") + shape_text(*b);
      else
        r += "input:" + shape_text(*b) + ":" + fill_text(*b);
    } else if (scalar) {
      r += std::string(dtype_name(scalar->dtype)) + ":" + key_number(eval_expr(scalar->value, vars));
    } else if (scaled) {
      r += "descale:" + fill_text(*scaled);
    } else if (const TensorMapSpec* m = p.find_tensor_map(name)) {
      const TensorMapLayout l = tensor_map_layout(*m, p, prob, c);
      r += "tensor_map:" + m->buffer + ":" + dtype_name(l.dtype) + ":rank" + std::to_string(l.rank);
      for (int d = 0; d < l.rank; ++d) r += ":" + std::to_string(l.dims[d]) + "/" + std::to_string(l.box[d]);
      for (int d = 0; d + 1 < l.rank; ++d) r += ":stride" + std::to_string(l.strides_bytes[d]);
      r += ":swizzle" + std::to_string(l.swizzle_bytes) + ":l2_" + std::to_string(l.l2_promotion_bytes);
    } else if (auto it = prob.sizes.find(name); it != prob.sizes.end()) {
      r += "size:" + key_number(it->second);
    } else {
      throw UserError("args: '" + name + "' is not a buffer, scalar, descale, tensor map or size");
    }
    r += ";";
  }
  for (const auto& b : p.buffers)  // uploaded to every module that declares the symbol
    if (!b.symbol.empty()) r += "symbol " + b.symbol + "=" + shape_text(b) + ":" + fill_text(b) + ";";
  return r;
}

std::string reference_outputs_key(const Profile& p, const Problem& prob, const Config& c, const std::string& device,
                                  const std::vector<std::string>& modules, const std::vector<std::string>& entries,
                                  std::uint64_t seed, int trial) {
  std::string k = "evo-reference-outputs/1|device=" + device + "|modules=";
  for (const auto& m : modules) k += m + ";";
  k += "|entries=";
  for (const auto& e : entries) k += e + ";";
  k += "|problem=" + prob.name;
  for (const auto& [name, v] : prob.sizes) k += "," + name + "=" + key_number(v);
  k += "|seed=" + std::to_string(seed) + "|trial=" + std::to_string(trial);
  const auto launches = p.reference_launches();
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const LaunchGeometry g = launch_geometry(*launches[i], prob, {});  // a reference has no knobs
    k += "|launch " + std::to_string(i) + " " + launches[i]->name + ": grid " + std::to_string(g.grid[0]) + "," +
         std::to_string(g.grid[1]) + "," + std::to_string(g.grid[2]) + " block " + std::to_string(g.block[0]) + "," +
         std::to_string(g.block[1]) + "," + std::to_string(g.block[2]) + " smem " + std::to_string(g.shared_bytes) +
         " args " + args_recipe(p, *launches[i], prob, c, seed, trial);
  }
  for (const auto& b : p.buffers) {
    if (!b.compared()) continue;
    k += "|output " + b.name + ":" + dtype_name(b.dtype);
    for (auto d : buffer_shape(b, p.kernel, prob, c)) k += "," + std::to_string(d);
  }
  return k;
}

TrialStore::TrialStore(fs::path dir, Warn warn) : dir_(std::move(dir)) {
  // Fills are read on several threads at once (BufferSet::prepare_fills): one warning at a time.
  if (warn)
    warn_ = [warn = std::move(warn), mu = std::make_shared<std::mutex>()](const std::string& w) {
      std::lock_guard<std::mutex> lock(*mu);
      warn(w);
    };
}

fs::path TrialStore::file(const std::string& key, const char* ext) const {
  const std::string h = sha256_hex(key);
  return dir_ / h.substr(0, 2) / (h + ext);
}

bool TrialStore::has_fill(const std::string& key) const {
  std::error_code ec;
  return fs::exists(file(key, ".fill"), ec);
}

std::optional<StoredFill> TrialStore::read_fill(const std::string& key, DType dtype, std::int64_t n) const {
  HostTensor shape{"fill", dtype, {n}, {}};
  auto s = read_stored(file(key, ".fill"), "fill", key, {shape}, warn_);
  if (!s) return std::nullopt;
  StoredFill f;
  f.bytes = std::move(s->payload);
  f.descale = s->header.value("descale", 1.0f);
  f.digest = s->digest;
  return f;
}

void TrialStore::write_fill(const std::string& key, DType dtype, const StoredFill& f) const {
  const std::int64_t n = static_cast<std::int64_t>(f.bytes.size() / dtype_bytes(dtype));
  Json h{{"format", kFormat}, {"kind", "fill"}, {"key", key}, {"tensors", describe({HostTensor{"fill", dtype, {n}, {}}})},
         {"descale", f.descale}};
  store_entry(file(key, ".fill"), std::move(h), {&f.bytes}, f.digest);
}

bool TrialStore::has_outputs(const std::string& key) const {
  std::error_code ec;
  return fs::exists(file(key, ".out"), ec);
}

std::optional<std::vector<HostTensor>> TrialStore::read_outputs(const std::string& key,
                                                                const std::vector<HostTensor>& expected,
                                                                const std::string& inputs_digest) const {
  const fs::path f = file(key, ".out");
  auto s = read_stored(f, "outputs", key, expected, warn_);
  if (!s) return std::nullopt;
  if (s->header.value("inputs", "") != inputs_digest) {
    // The same key, other inputs: the generator changed under its fingerprint. Never used.
    std::error_code ec;
    fs::remove(f, ec);
    if (warn_)
      warn_("trial store: " + f.string() + " was computed from other inputs (" + s->header.value("inputs", "?") +
            ", these are " + inputs_digest + "): removed, made again");
    return std::nullopt;
  }
  std::vector<HostTensor> out = expected;
  std::size_t at = 0;
  for (auto& t : out) {
    const std::size_t n = bytes_of(t);
    t.bytes.assign(s->payload.begin() + static_cast<std::ptrdiff_t>(at), s->payload.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return out;
}

void TrialStore::write_outputs(const std::string& key, const std::vector<HostTensor>& outputs,
                               const std::string& inputs_digest) const {
  std::vector<const std::vector<std::uint8_t>*> parts;
  for (const auto& t : outputs) {
    if (t.bytes.size() != bytes_of(t))
      throw UserError("trial store: output " + t.name + " holds " + std::to_string(t.bytes.size()) + " bytes, its shape " +
                      std::to_string(bytes_of(t)));
    parts.push_back(&t.bytes);
  }
  Json h{{"format", kFormat}, {"kind", "outputs"}, {"key", key}, {"tensors", describe(outputs)}, {"inputs", inputs_digest}};
  store_entry(file(key, ".out"), std::move(h), parts);
}

std::optional<FileLock> TrialStore::try_claim(const std::string& key) const {
  return FileLock::try_acquire(file(key, ".lock"));
}

FileLock TrialStore::claim(const std::string& key, const std::function<void()>& waiting) const {
  return FileLock::acquire(file(key, ".lock"), waiting);
}

std::size_t share_work(const TrialStore& store, const std::vector<std::string>& keys,
                       const std::function<bool(std::size_t)>& have, const std::function<void(std::size_t)>& make,
                       const std::function<void(std::size_t)>& waiting) {
  std::size_t made = 0;
  auto make_unless_had = [&](std::size_t i) {
    if (have(i)) return;
    make(i);
    ++made;
  };
  std::vector<std::size_t> later;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (have(i)) continue;
    std::optional<FileLock> held;
    try {
      held = store.try_claim(keys[i]);
    } catch (const UserError&) {
      make(i);  // no lock file can be made here: made unshared, as without a store
      ++made;
      continue;
    }
    if (!held) {
      later.push_back(i);  // another worker is making it: the next key meanwhile
      continue;
    }
    make_unless_had(i);  // it may have been stored between the look and the claim
  }
  for (std::size_t i : later) {
    FileLock held = store.claim(keys[i], [&] { waiting(i); });
    make_unless_had(i);
  }
  return made;
}

}  // namespace evo
