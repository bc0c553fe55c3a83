// Whole-file reads and crash-safe writes.
//
// write_file_atomic writes to a temporary file in the same directory, flushes it to disk
// (fsync), then rename()s it over the target and syncs the directory: a reader — or a run
// restarted after SIGKILL or a power cut — sees either the old file or the new one, never half
// of one. Checkpoints and result files go through it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tapegrad::io {

inline constexpr int64_t kMaxFileBytes = int64_t{1} << 30;  // 1 GiB: any corpus or checkpoint here

// Throws unless `path` is a usable path: not empty, and no NUL byte (the system would read it up
// to the NUL: '.../x\0evil' names '.../x'). `what` names where it came from ("--data", "Trainer.save
// dir"); the message shows the path with control bytes escaped. Every function here checks its
// paths with it, so no path reaches the system cut.
void check_path(const std::string& path, const std::string& what = "path");

// The file's bytes. Errors name the file and the reason: missing, a directory, not a regular file
// (a FIFO or device: never waited on or read without end), larger than max_bytes, unreadable.
std::string read_file(const std::string& path, int64_t max_bytes = kMaxFileBytes);

// `path` replaced whole, through a temporary file with an unpredictable name, created exclusively
// and renamed over it. Only a regular file (or nothing) at `path` is replaced: a link, device,
// FIFO, socket or folder there is refused naming it; a failed write removes its temporary file.
void write_file_atomic(const std::string& path, std::string_view bytes);
// A log file opened for appending (created if missing; emptied first if `truncate`). A symbolic
// link or anything but a regular file at `path` is refused, not written through.
FILE* open_for_append(const std::string& path, bool truncate);

// Throws unless `dir` exists (creating it and its parents if needed) and a file can be created
// in it: "output directory 'x' is not writable: Permission denied".
void ensure_writable_directory(const std::string& dir);

// ensure_writable_directory for a folder a program makes inside its own (a sweep's records/): a
// symbolic link there is refused, naming it, never followed (writes through it would land in
// another folder and replace its files).
void ensure_own_directory(const std::string& dir);

// Throws unless `dir` is an existing directory; `what` names it in the message ("checkpoint
// directory 'x' does not exist", "... 'x' is a file, not a directory").
void require_directory(const std::string& dir, const std::string& what);

// Deletes the temporary files that write_file_atomic and ensure_writable_directory leave behind
// when their process is killed mid-write — names of their exact form, with tapegrad's marker
// (".x.tapegrad-tmp.Ab12Cd") — in `dir` and its immediate subfolders (links are removed, never
// followed). Only the folder's one writer may call it — the files of a live write look the same.
// Returns how many were removed.
int remove_stale_temp_files(const std::string& dir);

}  // namespace tapegrad::io
