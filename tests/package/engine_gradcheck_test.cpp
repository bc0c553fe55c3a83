// Builds docs/engine.md's gradcheck test case (engine_gradcheck_test.inc, extracted by run.sh) as
// a Catch2 program, on the op the same page defines first (examples/custom_op.cpp, extracted as
// custom_op.cpp), and runs it: the block's own REQUIREs are the check.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#define main custom_op_example_main  // the example's own main; this program's is Catch2's
#include "custom_op.cpp"
#undef main

#include "engine_gradcheck_test.inc"
