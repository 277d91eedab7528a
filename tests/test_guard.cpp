// The judge's own safety (engine/guard.h): guard zones, checksums of what it trusts, and the
// findings' words. The checksum and the texts need no GPU; the GuardedDevice tests plant writes
// with cudaMemset (no kernel needed) and skip, saying why, without a device.
#include <gtest/gtest.h>

#include <stdexcept>

#include <cstring>
#include <random>
#include <vector>

#include "engine/error.h"
#include "engine/guard.h"
#include "tests/support.h"

namespace evo {
namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

TEST(Guard, ChecksumMovesWithAnyChangedSwappedOrZeroedWord) {
  const auto b = random_bytes(4099, 1);  // a ragged last word
  const std::uint64_t base = region_checksum(b.data(), b.size());
  EXPECT_EQ(base, region_checksum(b.data(), b.size()));
  auto changed = b;
  changed[4098] ^= 1;  // in the zero-padded last word
  EXPECT_NE(region_checksum(changed.data(), changed.size()), base);
  auto swapped = b;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);  // words 0 and 1 trade places
  EXPECT_NE(region_checksum(swapped.data(), swapped.size()), base);
  auto zeroed = b;
  std::memset(zeroed.data() + 800, 0, 8);
  EXPECT_NE(region_checksum(zeroed.data(), zeroed.size()), base);
}

TEST(Guard, ZonesAreAQuarterOfTheBufferWithinTwoAndSixtyFourMiB) {
  const std::size_t MiB = std::size_t(1) << 20;
  EXPECT_EQ(guard_bytes(4), 2 * MiB);
  EXPECT_EQ(guard_bytes(16 * MiB), 4 * MiB);
  EXPECT_EQ(guard_bytes(100 * MiB + 3) % (64 << 10), 0u);
  EXPECT_GE(guard_bytes(100 * MiB + 3), 25 * MiB);
  EXPECT_EQ(guard_bytes(std::size_t(1) << 40), 64 * MiB);
}

TEST(Guard, FindingsSayWhichBufferAndHowFar) {
  RegionFinding past;
  past.label = "output out";
  past.guard = past.changed = true;
  past.buffer_bytes = 1000;
  past.bytes_changed = 24;
  past.first_offset = 1000;
  past.last_offset = 1023;
  EXPECT_EQ(past.text(), "output out: 24 bytes written out of bounds (up to 24 bytes past its end)");
  RegionFinding before = past;
  before.first_offset = -4096;
  before.last_offset = -1;
  EXPECT_EQ(before.text(), "output out: 24 bytes written out of bounds (4096 bytes before its start)");
  RegionFinding copy;
  copy.label = "evo's reference output O (problem long, seed 0, trial 1)";
  copy.changed = true;
  EXPECT_EQ(copy.text(), "evo's reference output O (problem long, seed 0, trial 1): written by the candidate (its checksum changed)");
}

TEST(Guard, IntegrityKernelCompilesForHopperWithoutAGpu) {
  const std::vector<char> cubin = guard_kernel_cubin("sm_90");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(std::string(cubin.data() + 1, 3), "ELF");
}

#define REQUIRE_CUDA() \
  if (const std::string why = test::no_cuda_device_reason(); !why.empty()) GTEST_SKIP() << why

// A poisoned buffer's expected checksum, made without its bytes, is the checksum of its bytes: at
// every length (whole words and a tail of 1 to 7 bytes) and for both poison bytes.
TEST(Guard, RepeatedByteChecksumIsTheChecksumOfThoseBytes) {
  for (unsigned char byte : {0xFF, 0x80, 0x00})
    for (std::size_t n : {0, 1, 7, 8, 9, 15, 64, 1000, 4099}) {
      const std::vector<unsigned char> bytes(n, byte);
      EXPECT_EQ(repeated_byte_checksum(byte, n), region_checksum(bytes.data(), n)) << int(byte) << " x " << n;
      EXPECT_EQ(repeated_byte_checksum(byte, n), region_checksum(bytes.data(), n)) << "kept: " << n;
    }
  EXPECT_NE(repeated_byte_checksum(0xFF, 4096), repeated_byte_checksum(0x80, 4096));
}

TEST(GuardedDevice, DeviceAndHostChecksumsAgree) {
  REQUIRE_CUDA();
  for (std::size_t n : {std::size_t(1), std::size_t(4099), (std::size_t(3) << 20) + 5}) {
    const auto b = random_bytes(n, n);
    DeviceBuffer d(n);
    ASSERT_EQ(cudaMemcpy(d.get(), b.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(device_checksum(d.get(), n, nullptr), region_checksum(b.data(), n)) << n << " bytes";
  }
}

TEST(GuardedDevice, WritesIntoEitherZoneAreFoundWithTheirExtent) {
  REQUIRE_CUDA();
  const std::size_t n = (std::size_t(1) << 20) + 12;  // a ragged buffer: its end is not a word boundary
  GuardedBuffer b(n, nullptr);
  IntegrityCheck check;
  check.add_guards("output out", b);
  check.run(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(check.findings().empty());
  // Inside the buffer: allowed. 100 bytes past its end and 4096 before its start: found.
  ASSERT_EQ(cudaMemset(b.get(), 0, n), cudaSuccess);
  ASSERT_EQ(cudaMemset(static_cast<char*>(b.get()) + n, 0, 100), cudaSuccess);
  ASSERT_EQ(cudaMemset(static_cast<char*>(b.get()) - 4096, 0, 1), cudaSuccess);
  check.run(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto f = check.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].bytes_changed, 101u);
  EXPECT_EQ(f[0].first_offset, -4096);
  EXPECT_EQ(f[0].last_offset, static_cast<std::int64_t>(n) + 99);
  EXPECT_NE(f[0].text().find("4096 bytes before its start and up to 100 bytes past its end"), std::string::npos)
      << f[0].text();
  b.rearm(nullptr);
  check.run(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(check.findings().empty()) << "rearmed zones hold the guard byte again";
}

// The memory around a guarded buffer's zones is reserved and never mapped (DeviceBuffer::moated):
// a store there faults (the fault itself is GpuGreenSafety's PLANT=5, in a worker; a test process
// cannot survive one). Here: the mapping is whole granules, usable to its last byte, and the
// addresses just before it and 1 MiB past it belong to no allocation.
TEST(GuardedDevice, AMoatedBufferIsWholeGranulesBetweenUnmappedAddresses) {
  REQUIRE_CUDA();
  const std::size_t want = (std::size_t(3) << 20) + 5;
  DeviceBuffer d = DeviceBuffer::moated(want);
  ASSERT_TRUE(d.has_moat()) << "no virtual memory management on this device";
  EXPECT_GE(d.bytes(), want);
  EXPECT_EQ(d.bytes() % (std::size_t(2) << 20), 0u) << d.bytes();
  const auto bytes = random_bytes(d.bytes(), 11);
  ASSERT_EQ(cudaMemcpy(d.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(device_checksum(d.get(), d.bytes(), nullptr), region_checksum(bytes.data(), bytes.size()));
  auto mapped = [](const void* p) {
    cudaPointerAttributes a{};
    const bool device = cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
    cudaGetLastError();
    return device;
  };
  const char* base = static_cast<const char*>(d.get());
  EXPECT_TRUE(mapped(base));
  EXPECT_TRUE(mapped(base + d.bytes() - 1));
  EXPECT_FALSE(mapped(base - 1));
  EXPECT_FALSE(mapped(base + d.bytes() + (std::size_t(1) << 20)));
  EXPECT_FALSE(mapped(base + d.bytes() + (std::size_t(64) << 20)));
  DeviceBuffer moved = std::move(d);  // the reservation moves with it, freed once
  EXPECT_TRUE(moved.has_moat());
  EXPECT_FALSE(d.has_moat());
  GuardedBuffer g((std::size_t(16) << 20), nullptr);  // PLANT=5's 'big' output: 64 MiB past it is moat
  EXPECT_FALSE(mapped(static_cast<const char*>(g.get()) + (std::size_t(80) << 20)));
  EXPECT_TRUE(mapped(static_cast<const char*>(g.get()) + (std::size_t(16) << 20)));  // its trailing zone
}

TEST(GuardedDevice, AChangedTrustedCopyIsNamedAndAFreedOneIsForgotten) {
  REQUIRE_CUDA();
  const auto bytes = random_bytes(3 << 20, 5);
  auto kept = TrustedCopy::from_host("evo's fill of Q (seed 0, trial 0)", bytes.data(), bytes.size(),
                                      region_checksum(bytes.data(), bytes.size()), nullptr);
  {
    auto gone = TrustedCopy::from_host("a copy freed before the check", bytes.data(), 64,
                                       region_checksum(bytes.data(), 64), nullptr);
  }
  EXPECT_TRUE(check_trusted_copies(nullptr).empty());
  ASSERT_EQ(cudaMemset(const_cast<char*>(static_cast<const char*>(kept->get())) + 1234567, 7, 1), cudaSuccess);
  const auto f = check_trusted_copies(nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].label, "evo's fill of Q (seed 0, trial 0)");
  kept.reset();
  EXPECT_TRUE(check_trusted_copies(nullptr).empty());
}

// The caller's checksum of the host bytes is what the device copy is proved against: bytes that
// are not those it was computed from are refused, naming the copy.
TEST(GuardedDevice, AnUploadWhoseBytesAreNotThoseOfItsChecksumIsRefused) {
  REQUIRE_CUDA();
  auto bytes = random_bytes(1 << 20, 7);
  const std::uint64_t sum = region_checksum(bytes.data(), bytes.size());
  EXPECT_NO_THROW(TrustedCopy::from_host("evo's fill of K (seed 1, trial 0)", bytes.data(), bytes.size(), sum, nullptr));
  bytes[4321] ^= 0x10;
  try {
    TrustedCopy::from_host("evo's fill of K (seed 1, trial 0)", bytes.data(), bytes.size(), sum, nullptr);
    FAIL() << "a copy of other bytes was trusted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("evo's fill of K (seed 1, trial 0)"), std::string::npos) << e.what();
  }
}

// Zeroed scratch (FAST's L2-flush buffer) is watched like a copy: a store into it is named, and
// restoring it makes it trusted again, so the next candidate is not blamed for the last one's.
TEST(GuardedDevice, WrittenZeroedScratchIsNamedAndRestored) {
  REQUIRE_CUDA();
  auto scratch = TrustedCopy::zeros("evo's L2-flush buffer", 5 << 20, nullptr);
  const auto bytes = random_bytes(64, 6);
  auto copy = TrustedCopy::from_host("a kept copy", bytes.data(), bytes.size(),
                                     region_checksum(bytes.data(), bytes.size()), nullptr);
  EXPECT_THROW(copy->writable_zeros(), std::logic_error);
  EXPECT_TRUE(check_trusted_copies(nullptr).empty());
  ASSERT_EQ(cudaMemset(static_cast<char*>(scratch->writable_zeros()) + (4 << 20), 0x5A, 16), cudaSuccess);
  const auto f = check_trusted_copies(nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].label, "evo's L2-flush buffer");
  restore_zeroed_copies(nullptr);
  EXPECT_TRUE(check_trusted_copies(nullptr).empty());
}

}  // namespace
}  // namespace evo
