// Running another program: always from an argument vector, never through a shell. A path or a
// config value that contains `;`, `$(...)`, quotes or spaces is then one argument, not a command.
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// A child started now and waited for later, its standard input a stream this process writes: it
// can load what it needs (an interpreter, its libraries) on a core that is free now, then read
// what it is to do once that is known. Closing the input without sending anything tells it it is
// not needed. Move-only; destroying it closes the input and waits, so it never outlives its owner's
// scope as a zombie.
class StartedProcess {
 public:
  // nullopt when argv[0] could not be started (not found, not executable).
  static std::optional<StartedProcess> start(const std::vector<std::string>& argv, ChildOutput output);
  StartedProcess(StartedProcess&& other) noexcept;
  StartedProcess& operator=(StartedProcess&& other) noexcept;  // finishes the child it held
  StartedProcess(const StartedProcess&) = delete;
  ~StartedProcess();

  // Writes `bytes` to the child's input; false when it no longer reads (it exited), never SIGPIPE.
  bool send(std::string_view bytes);
  // Closes the child's input and waits for it: its exit status as run_process returns it.
  int finish();

 private:
  StartedProcess(int pid, int input) : pid_(pid), input_(input) {}
  int pid_ = -1;
  int input_ = -1;  // our end of the child's standard input
};

}  // namespace tapegrad::cli
