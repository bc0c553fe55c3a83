// Whole-file reads and crash-safe writes.
//
// write_file_atomic writes to a temporary file in the same directory, flushes it to disk
// (fsync), then rename()s it over the target and syncs the directory: a reader — or a run
// restarted after SIGKILL or a power cut — sees either the old file or the new one, never half
// of one. Checkpoints and result files go through it.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::io {

// The file's bytes. Errors name the file and the reason (missing, a directory, unreadable).
std::string read_file(const std::string& path);

void write_file_atomic(const std::string& path, std::string_view bytes);

// Throws unless `dir` exists (creating it and its parents if needed) and a file can be created
// in it: "output directory 'x' is not writable: Permission denied".
void ensure_writable_directory(const std::string& dir);

}  // namespace tapegrad::io
