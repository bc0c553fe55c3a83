#include "tapegrad/cli/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace tapegrad::cli {

namespace {

// Starts argv with the given output; `input`, if not -1, becomes its standard input. Returns its
// pid, or -1.
pid_t spawn(const std::vector<std::string>& argv, ChildOutput output, int input) {
  if (argv.empty() || argv[0].empty()) return -1;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  bool ok = input < 0 || posix_spawn_file_actions_adddup2(&actions, input, STDIN_FILENO) == 0;
  if (output == ChildOutput::kToStderr) {
    ok = ok && posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO) == 0;
  } else if (output == ChildOutput::kDiscard) {
    ok = ok && posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0) == 0 &&
         posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO) == 0;
  }
  pid_t pid = -1;
  const int rc = ok ? posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) : -1;
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

int run_process(const std::vector<std::string>& argv, ChildOutput output) {
  const pid_t pid = spawn(argv, output, -1);
  return pid < 0 ? -1 : wait_for(pid);
}

std::optional<StartedProcess> StartedProcess::start(const std::vector<std::string>& argv, ChildOutput output) {
  // A socket rather than a pipe: send() with MSG_NOSIGNAL reports a child that has exited as an
  // error instead of raising SIGPIPE in this process. Both ends close on exec; the child's copy of
  // its end is made by dup2, which does not carry the flag.
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return std::nullopt;
  const pid_t pid = spawn(argv, output, ends[1]);
  close(ends[1]);
  if (pid < 0) {
    close(ends[0]);
    return std::nullopt;
  }
  return StartedProcess(pid, ends[0]);
}

StartedProcess::StartedProcess(StartedProcess&& other) noexcept : pid_(other.pid_), input_(other.input_) {
  other.pid_ = other.input_ = -1;
}

StartedProcess& StartedProcess::operator=(StartedProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ >= 0) finish();
    pid_ = other.pid_, input_ = other.input_;
    other.pid_ = other.input_ = -1;
  }
  return *this;
}

StartedProcess::~StartedProcess() {
  if (pid_ >= 0) finish();
}

bool StartedProcess::send(std::string_view bytes) {
  while (!bytes.empty()) {
    if (input_ < 0) return false;
    const ssize_t n = ::send(input_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int StartedProcess::finish() {
  if (input_ >= 0) close(input_);
  input_ = -1;
  const pid_t pid = pid_;
  pid_ = -1;
  return pid < 0 ? -1 : wait_for(pid);
}

}  // namespace tapegrad::cli
