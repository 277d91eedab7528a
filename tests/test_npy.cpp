// The .npy reader and writer (engine/npy.h): round trips, NumPy's own files both ways, and the
// arrays evo refuses, each named with its file. Needs no GPU; the NumPy test skips without NumPy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/error.h"
#include "engine/npy.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

NpyArray array(const std::string& descr, std::vector<std::int64_t> shape, std::uint32_t seed) {
  NpyArray a;
  a.descr = descr;
  a.shape = std::move(shape);
  a.bytes.resize(static_cast<std::size_t>(a.elements()) * npy_item_bytes(descr));
  std::mt19937 rng(seed);
  for (auto& b : a.bytes) b = static_cast<std::uint8_t>(rng());
  return a;
}

// An NPY file with this header dict and data, written byte by byte (what NumPy could have made).
void write_raw_npy(const fs::path& p, const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + '\x01' + '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  write_text(p, out + header + data);
}

std::string npy_error(const fs::path& p) {
  try {
    read_npy(p);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTripsEveryDtypeAndShapeWithDataOn64ByteBoundary) {
  TempDir t;
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> cases = {
      {"<f4", {5}}, {"<f8", {2, 3}}, {"<f2", {4, 1, 2}}, {"<i4", {7}}, {"<i8", {3, 3}},
      {"|u1", {9}}, {"|i1", {2, 2}}, {"<u2", {3}},      {"|b1", {4}}, {"<f4", {}}, {"<f4", {0}}};
  std::uint32_t seed = 1;
  for (const auto& [descr, shape] : cases) {
    const NpyArray a = array(descr, shape, seed++);
    const fs::path f = t.path / ("a" + std::to_string(seed) + ".npy");
    write_npy(f, a);
    const NpyArray b = read_npy(f);
    SCOPED_TRACE(descr + " " + npy_shape_text(shape));
    EXPECT_EQ(b.descr, a.descr);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ((fs::file_size(f) - a.bytes.size()) % 64, 0u) << "the data must start on a 64-byte boundary";
    const NpyArray h = read_npy_header(f);
    EXPECT_EQ(h.shape, a.shape);
    EXPECT_TRUE(h.bytes.empty());
  }
}

TEST(Npy, DecodesValuesOfEveryType) {
  NpyArray h{"<f2", {3}, {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00}};  // 1, -2, the smallest subnormal
  const auto v = npy_values(h);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], -2.0);
  EXPECT_EQ(v[2], std::ldexp(1.0, -24));
  NpyArray i{"<i2", {2}, {0xff, 0xff, 0x02, 0x00}};  // -1, 2: sign-extended
  EXPECT_EQ(npy_values(i), (std::vector<double>{-1, 2}));
  NpyArray u{"<u2", {1}, {0xff, 0xff}};
  EXPECT_EQ(npy_values(u), (std::vector<double>{65535}));
  EXPECT_EQ(npy_type_name("<f4"), "float32");
  EXPECT_EQ(npy_item_bytes(">f4"), 0u);  // big-endian is not read
}

TEST(Npy, ReadsWhatNumPyWritesAndNumPyReadsWhatEvoWrites) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with NumPy is not installed (scripts/install-deps.sh: python3-numpy)";
  TempDir t;
  const std::string script =
      "import numpy as np\n"
      "np.save('f32.npy', np.arange(6, dtype=np.float32).reshape(2, 3) / 4)\n"
      "np.save('f16.npy', np.array([0.5, -3], dtype=np.float16))\n"
      "np.save('i64.npy', np.array([-7, 2**40], dtype=np.int64))\n"
      "np.save('u8.npy', np.array([1, 255], dtype=np.uint8))\n"
      "np.save('s.npy', np.float64(2.25))\n"
      "a = np.load('evo.npy')\n"
      "assert a.dtype == np.int32 and a.shape == (2, 2), (a.dtype, a.shape)\n"
      "open('evo.txt', 'w').write(' '.join(str(v) for v in a.ravel()))\n";
  write_text(t.path / "io.py", script);
  NpyArray e{"<i4", {2, 2}, {}};
  for (std::int32_t v : {1, -2, 300000, 4}) e.bytes.insert(e.bytes.end(), reinterpret_cast<std::uint8_t*>(&v),
                                                            reinterpret_cast<std::uint8_t*>(&v) + 4);
  write_npy(t.path / "evo.npy", e);
  ASSERT_EQ(std::system(("cd '" + t.path.string() + "' && python3 io.py").c_str()), 0);
  EXPECT_EQ(read_text(t.path / "evo.txt"), "1 -2 300000 4");
  const NpyArray f = read_npy(t.path / "f32.npy");
  EXPECT_EQ(f.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(npy_values(f), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  EXPECT_EQ(npy_values(read_npy(t.path / "f16.npy")), (std::vector<double>{0.5, -3}));
  EXPECT_EQ(npy_values(read_npy(t.path / "i64.npy")), (std::vector<double>{-7, 1099511627776.0}));
  EXPECT_EQ(read_npy(t.path / "u8.npy").descr, "|u1");
  const NpyArray s = read_npy(t.path / "s.npy");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(npy_values(s), (std::vector<double>{2.25}));
}

TEST(Npy, RefusesFortranOrderBigEndianStructuredAndShortFilesNamingTheFile) {
  TempDir t;
  const std::string four(16, '\0');
  struct Case {
    std::string name, dict, data, want;
  };
  const std::vector<Case> cases = {
      {"fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four, "Fortran order"},
      {"big", "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four, "big-endian"},
      {"struct", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", four, "structured"},
      {"object", "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", four, "'|O' not supported"},
      {"short", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four, "needs 20"},
      {"noshape", "{'descr': '<f4', 'fortran_order': False, }", four, "no 'shape'"},
  };
  for (const auto& c : cases) {
    const fs::path f = t.path / (c.name + ".npy");
    write_raw_npy(f, c.dict, c.data);
    const std::string err = npy_error(f);
    EXPECT_NE(err.find(f.string() + ": "), std::string::npos) << c.name << ": " << err;
    EXPECT_NE(err.find(c.want), std::string::npos) << c.name << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  write_text(t.path / "text.npy", "not numpy at all");
  EXPECT_NE(npy_error(t.path / "text.npy").find("not an NPY file"), std::string::npos);
  EXPECT_NE(npy_error(t.path / "absent.npy").find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace evo
