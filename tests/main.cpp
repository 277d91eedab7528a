// evo_tests' main: GoogleTest's, after the one thing every program with a compile pool does first
// (its workers are this program started again: engine/compiler.h).
#include <gtest/gtest.h>

#include "engine/compiler.h"

int main(int argc, char** argv) {
  evo::serve_if_compile_worker();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
