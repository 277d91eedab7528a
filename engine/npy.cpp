#include "engine/npy.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/error.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

const char kMagic[] = "\x93NUMPY";  // 6 bytes before the version

struct TypeRow {
  char kind;  // f i u b
  std::size_t bytes;
  const char* name;
};
const TypeRow kTypes[] = {{'f', 2, "float16"}, {'f', 4, "float32"}, {'f', 8, "float64"}, {'i', 1, "int8"},
                          {'i', 2, "int16"},   {'i', 4, "int32"},   {'i', 8, "int64"},   {'u', 1, "uint8"},
                          {'u', 2, "uint16"},  {'u', 4, "uint32"},  {'u', 8, "uint64"},  {'b', 1, "bool"}};

// The row of a descr such as "<f4" or "|u1"; nullptr when evo does not read it. A one-byte type
// has no byte order ('|'); NumPy writes '<' for the little-endian rest.
const TypeRow* find_type(const std::string& d) {
  if (d.size() < 3) return nullptr;
  const char order = d[0], kind = d[1];
  std::size_t bytes = 0;
  for (std::size_t i = 2; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9') return nullptr;
    bytes = bytes * 10 + static_cast<std::size_t>(d[i] - '0');
  }
  for (const auto& t : kTypes)
    if (t.kind == kind && t.bytes == bytes) {
      if (order == '<' || (order == '|' && bytes == 1) || (order == '=' && bytes == 1)) return &t;
      return nullptr;
    }
  return nullptr;
}

[[noreturn]] void fail(const fs::path& p, const std::string& msg) { throw UserError(p.string() + ": " + msg); }

// IEEE binary16 to double (exact).
double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(frac, -24);
  else if (exp == 31) v = frac ? NAN : INFINITY;
  else v = std::ldexp(frac + 1024, exp - 25);
  return sign ? -v : v;
}

// The value after `key` in a header dict: the text up to the next top-level ',' or '}'.
std::string header_value(const fs::path& p, const std::string& header, const std::string& key) {
  std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) at = header.find("\"" + key + "\"");
  if (at == std::string::npos) fail(p, "NPY header has no '" + key + "' (header: " + header + ")");
  at = header.find(':', at);
  if (at == std::string::npos) fail(p, "NPY header is malformed at '" + key + "'");
  ++at;
  int depth = 0;
  std::size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = header.substr(at, end - at);
  const auto first = v.find_first_not_of(" \t");
  const auto last = v.find_last_not_of(" \t");
  return first == std::string::npos ? "" : v.substr(first, last - first + 1);
}

struct Parsed {
  NpyArray a;
  std::size_t data_offset = 0;
};

Parsed parse_header(const fs::path& p, std::istream& in) {
  char pre[8];
  if (!in.read(pre, 8) || std::memcmp(pre, kMagic, 6) != 0) fail(p, "not an NPY file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(pre[6]);
  std::size_t header_len = 0, prefix = 0;
  if (major == 1) {
    unsigned char l[2];
    if (!in.read(reinterpret_cast<char*>(l), 2)) fail(p, "NPY file ends inside its header");
    header_len = l[0] | (l[1] << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    if (!in.read(reinterpret_cast<char*>(l), 4)) fail(p, "NPY file ends inside its header");
    header_len = l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<std::size_t>(l[3]) << 24);
    prefix = 12;
  } else {
    fail(p, "NPY version " + std::to_string(major) + "." + std::to_string(static_cast<unsigned char>(pre[7])) +
                " (evo reads 1.0, 2.0 and 3.0)");
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) fail(p, "NPY file ends inside its header");
  while (!header.empty() && (header.back() == '\n' || header.back() == ' ' || header.back() == '\0')) header.pop_back();

  Parsed r;
  r.data_offset = prefix + header_len;
  const std::string descr = header_value(p, header, "descr");
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    fail(p, "dtype " + descr + " is a structured type (evo reads plain numeric arrays)");
  r.a.descr = descr.substr(1, descr.size() - 2);
  if (!r.a.descr.empty() && r.a.descr[0] == '>')
    fail(p, "dtype '" + r.a.descr + "' is big-endian (write it little-endian: .astype('<" + r.a.descr.substr(1) + "'))");
  if (!find_type(r.a.descr))
    fail(p, "dtype '" + r.a.descr + "' not supported (evo reads little-endian float16/32/64, int8..64, uint8..64, bool)");
  const std::string fortran = header_value(p, header, "fortran_order");
  if (fortran == "True") fail(p, "array is in Fortran order (write it in C order: numpy.ascontiguousarray)");
  if (fortran != "False") fail(p, "NPY header's fortran_order is '" + fortran + "'");
  const std::string shape = header_value(p, header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') fail(p, "NPY header's shape is '" + shape + "'");
  std::stringstream dims(shape.substr(1, shape.size() - 2));
  std::string d;
  while (std::getline(dims, d, ',')) {
    const auto first = d.find_first_not_of(" \t");
    if (first == std::string::npos) continue;  // the trailing comma of (3,)
    d = d.substr(first, d.find_last_not_of(" \tL") - first + 1);
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 0) fail(p, "NPY header's shape is '" + shape + "'");
    r.a.shape.push_back(v);
  }
  return r;
}

}  // namespace

std::int64_t NpyArray::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::size_t npy_item_bytes(const std::string& descr) {
  const TypeRow* t = find_type(descr);
  return t ? t->bytes : 0;
}

std::string npy_type_name(const std::string& descr) {
  const TypeRow* t = find_type(descr);
  return t ? t->name : descr;
}

std::string npy_shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyArray read_npy_header(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot read (" + std::string(std::strerror(errno)) + ")");
  return parse_header(path, in).a;
}

NpyArray read_npy(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot read (" + std::string(std::strerror(errno)) + ")");
  Parsed r = parse_header(path, in);
  const std::size_t want = static_cast<std::size_t>(r.a.elements()) * npy_item_bytes(r.a.descr);
  r.a.bytes.resize(want);
  if (want > 0 && !in.read(reinterpret_cast<char*>(r.a.bytes.data()), static_cast<std::streamsize>(want)))
    fail(path, "holds " + std::to_string(in.gcount()) + " bytes of data, its header " + npy_shape_text(r.a.shape) +
                   " " + npy_type_name(r.a.descr) + " needs " + std::to_string(want));
  return std::move(r.a);
}

void write_npy(const fs::path& path, const NpyArray& a) {
  if (!find_type(a.descr)) fail(path, "cannot write dtype '" + a.descr + "'");
  if (a.bytes.size() != static_cast<std::size_t>(a.elements()) * npy_item_bytes(a.descr))
    fail(path, std::to_string(a.bytes.size()) + " bytes do not make a " + npy_shape_text(a.shape) + " " +
                   npy_type_name(a.descr) + " array");
  std::string header = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + npy_shape_text(a.shape) + ", }";
  // The data starts on a multiple of 64 bytes: prefix + header + padding + '\n'.
  const bool v2 = header.size() + 11 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const std::size_t n = header.size();
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += header;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path, "cannot write (" + std::string(std::strerror(errno)) + ")");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.write(reinterpret_cast<const char*>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()));
  if (!f) fail(path, "cannot write (" + std::string(std::strerror(errno)) + ")");
}

std::vector<double> npy_values(const NpyArray& a) {
  const TypeRow* t = find_type(a.descr);
  if (!t) throw UserError("npy: dtype '" + a.descr + "' not supported");
  const std::size_t n = a.bytes.size() / t->bytes;
  std::vector<double> v(n);
  const std::uint8_t* p = a.bytes.data();
  for (std::size_t i = 0; i < n; ++i, p += t->bytes) {
    std::uint64_t u = 0;  // little-endian on disk: assembled byte by byte, whatever the host order
    for (std::size_t b = 0; b < t->bytes; ++b) u |= static_cast<std::uint64_t>(p[b]) << (8 * b);
    switch (t->kind) {
      case 'f':
        if (t->bytes == 2) v[i] = half_to_double(static_cast<std::uint16_t>(u));
        else if (t->bytes == 4) {
          const std::uint32_t w = static_cast<std::uint32_t>(u);
          float f;
          std::memcpy(&f, &w, 4);
          v[i] = f;
        } else {
          double d;
          std::memcpy(&d, &u, 8);
          v[i] = d;
        }
        break;
      case 'i': {
        const int shift = static_cast<int>(64 - 8 * t->bytes);  // sign-extend
        v[i] = static_cast<double>(static_cast<std::int64_t>(u << shift) >> shift);
        break;
      }
      default: v[i] = static_cast<double>(u);  // u, b
    }
  }
  return v;
}

}  // namespace evo
