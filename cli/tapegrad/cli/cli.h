// Command-line plumbing shared by the programs: parse with CLI11 and turn every failure into one
// line on stderr and a conventional exit status — 2 for usage errors (unknown flag, missing or
// bad value), 1 for runtime errors (a file that cannot be read, a diverged run) — never an
// uncaught exception, a core dump or a stack of text.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tapegrad/error.h"
#include "tapegrad/lm/usage_error.h"

namespace CLI {
class App;
class Validator;
}

namespace tapegrad::lm {
class Communicator;
}

namespace tapegrad::cli {

// The program's processes: an MPI communicator when tapegrad was built with its MPI component
// (lm/mpi_communicator.h; one process unless launched by mpirun/srun), else one process. Call it
// first thing in main(), once.
std::unique_ptr<lm::Communicator> start_communicator(int* argc, char*** argv);

using lm::UsageError;  // a bad setting found after parsing: reported like a parse error, exit 2

// Parses argv into `app`, then runs `body`. Returns the process exit status. Under MPI (`comm`
// with several ranks): usage errors, the same on every rank, are printed by rank 0 alone and every
// rank returns 2; any other error is printed by the rank that hit it, prefixed with its rank, and
// ends the whole job (MPI_Abort) — the other ranks may be waiting in a collective.
int run_cli(CLI::App& app, int argc, char** argv, const std::function<int()>& body,
            const lm::Communicator* comm = nullptr);

// JSON config files for CLI11's --config: {"flag-name": value, ...}.
void use_json_config(CLI::App& app);

// Flag validators with readable messages ("must be positive, got 0"); CLI11's PositiveNumber
// prints its range up to DBL_MAX.
// All refuse NaN and infinities.
CLI::Validator positive();
CLI::Validator non_negative();
CLI::Validator in_range(double low, double high);
// A seed: decimal digits only, at most 2^64 - 1 (no "-1" wrapping to 2^64 - 1, no saturation).
CLI::Validator unsigned_integer();

// Whole-number flags are decimal, and range-checked on the text typed: on every option of `app`
// whose type is INT or UINT, "010" (octal to CLI11), "0x10", "+5" and numbers outside the type's
// range are refused naming the text. run_cli applies it to every program's App before parsing.
void require_decimal_integers(CLI::App& app);
// On/off flags read "true" or "false" when given a value (--bias=false, a config file's false):
// CLI11 alone would take "yes", "off", "2" and "-1" (false), a number's sign deciding. run_cli
// applies it to every flag of every program's App, as the one above.
void require_boolean_words(CLI::App& app);
// (The check itself is text::decimal_whole_number, tapegrad/text/lexical.h.)

}  // namespace tapegrad::cli
