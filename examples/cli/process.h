// Running another program: always from an argument vector, never through a shell. A path or a
// config value that contains `;`, `$(...)`, quotes or spaces is then one argument, not a command.
#pragma once

#include <string>
#include <vector>

namespace tapegrad::cli {

enum class ChildOutput {
  kInherit,   // the child writes where this process does
  kToStderr,  // the child's standard output goes to our standard error (keeps stdout for results)
  kDiscard,   // both streams to /dev/null (probes)
};

// Runs argv[0] (searched on PATH when it has no '/') with arguments argv[1..] and waits for it.
// Returns its exit status, 128 + the signal that ended it, or -1 when it could not be started.
int run_process(const std::vector<std::string>& argv, ChildOutput output = ChildOutput::kInherit);

}  // namespace tapegrad::cli
