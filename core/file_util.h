// Files written so that a reader never sees half of them, and content hashes.
//
// Every file driftgate writes (run files, baselines, reports) goes through
// write_file_atomic: a temporary file in the same directory, fsync, rename over
// the target, fsync of the directory. A crash leaves the old file or the new one.
#pragma once

#include <cstddef>
#include <string>

namespace driftgate {

// Reads a whole regular file of up to 4 GiB (read_input_file with k_any_file).
// Inputs are read with their own kind (core/input_file.h) and its cap instead.
std::string read_file(const std::string& path);

// Atomically replaces `path` with `content`, creating parent directories.
// Throws driftgate::Error (and leaves no temporary file) on any failure.
void write_file_atomic(const std::string& path, const std::string& content);

// The git blob id (SHA-1 of "blob <size>\0<bytes>", as `git hash-object`) of a file.
// Throws driftgate::Error when the file cannot be read.
std::string hash_file(const std::string& path);

// Writes all `size` bytes to a file descriptor (pipe, socket or file), retrying short
// writes and EINTR. False on any other error or when nothing more can be written.
bool write_fully(int fd, const char* data, std::size_t size);

// Reads exactly `size` bytes, retrying short reads and EINTR. False on an error or
// when the descriptor ends first.
bool read_fully(int fd, char* data, std::size_t size);

// The directory part of a path ("." when it has none).
std::string parent_directory(const std::string& path);

// `path` if absolute, else `base_dir/path` (lexically normalized).
std::string resolve_path(const std::string& base_dir, const std::string& path);

}  // namespace driftgate
