#include "differ/run_digest.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <istream>
#include <mutex>
#include <new>
#include <stdexcept>
#include <streambuf>
#include <system_error>
#include <thread>
#include <utility>

#include "core/check_line_fast.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"
#include "core/text_compare.h"
#include "differ/id_order.h"

namespace driftgate {

namespace {

// The bytes a digest was read from, and memory it lends to a later read against it.
//
// Fresh memory is dear here: the kernel faults in and zeroes every page the first time
// it is touched (on a VM with free page reporting, the host backs it again), and the
// checks of a million-check run fill a hundred megabytes. The vectors a read used for
// its halves are kept (emptied, their pages still there) with its bytes, and a read
// with that digest as `like` (a diff's baseline, read after its run) fills them again
// instead of fresh ones, and gives back what it does not keep.
class ReadBytes : public RunBytes {
 public:
  // A vector no longer needed: emptied, it remembers how many checks' room its pages hold.
  struct Spare {
    std::vector<CheckDigest> checks;
    size_t touched = 0;
  };
  void lend(std::vector<CheckDigest> checks, size_t touched) const {
    touched = std::max(touched, checks.size());
    checks.clear();
    if (checks.capacity() == 0) {
      return;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    m_spares.push_back(Spare{std::move(checks), touched});
  }
  // The spare with the most room, or none.
  Spare borrow() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_spares.empty()) {
      return {};
    }
    auto most = std::max_element(m_spares.begin(), m_spares.end(), [](const Spare& a, const Spare& b) {
      return a.checks.capacity() < b.checks.capacity();
    });
    Spare spare = std::move(*most);
    m_spares.erase(most);
    return spare;
  }

 private:
  mutable std::mutex m_mutex;
  mutable std::vector<Spare> m_spares;
};

class StringBytes : public ReadBytes {
 public:
  explicit StringBytes(std::string text) : m_text(std::move(text)) {}
  std::string_view text() const override { return m_text; }

 private:
  std::string m_text;
};

// A read-only private mapping of a regular file: its pages come from the page cache,
// nothing is copied, and a page is read when first touched.
class MappedBytes : public ReadBytes {
 public:
  MappedBytes(void* address, size_t size) : m_address(address), m_size(size) {}
  ~MappedBytes() override { ::munmap(m_address, m_size); }
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  std::string_view text() const override { return {static_cast<const char*>(m_address), m_size}; }

 private:
  void* m_address;
  size_t m_size;
};

std::shared_ptr<const ReadBytes> open_bytes(const std::string& path, const InputKind& kind) {
  InputFile file(path, kind);  // a regular file within the cap, or driftgate::Error
  if (file.size() > 0) {
    auto size = static_cast<size_t>(file.size());
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (address != MAP_FAILED) {
      ::madvise(address, size, MADV_SEQUENTIAL);
      return std::make_shared<MappedBytes>(address, size);
    }
  }
  // An empty file or one that cannot be mapped: read it.
  return std::make_shared<StringBytes>(file.read_all());
}

// An istream over bytes in memory, for the strict reader, without a copy.
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(std::string_view text) {
    char* begin = const_cast<char*>(text.data());
    setg(begin, begin, begin + text.size());
  }
};

// The strict reader over the whole text: it throws the error the digest reader
// refused the file for. Should it accept what the digest reader did not, its
// records are used.
RunDigest strict_digest(std::string_view text, const std::string& name) {
  ViewBuffer buffer(text);
  std::istream in(&buffer);
  return digest_of(std::make_shared<const RunFile>(parse_run(in, name)));
}

// The line of `text` starting at `at` (without its newline); `next` is set past it.
std::string_view line_at(std::string_view text, size_t at, size_t& next) {
  const void* newline = std::memchr(text.data() + at, '\n', text.size() - at);
  size_t end = newline == nullptr ? text.size() : static_cast<size_t>(static_cast<const char*>(newline) - text.data());
  next = end + 1;
  return text.substr(at, end - at);
}

void fill_from_record(CheckDigest& digest, const CheckRecord& check) {
  digest = CheckDigest{};
  digest.id = check.id;
  digest.experiment = check.experiment;
  digest.output = check.output;
  digest.message = check.message;
  digest.record = &check;
  digest.status = check.status;
  digest.has_stats = check.stats.has_value();
  digest.max_abs = check.stats ? check.stats->max_abs : 0.0;
}

// Fills `digest.id_order`; false when two checks share an id.
bool order_ids(RunDigest& digest) {
  std::vector<std::string_view> ids;
  ids.reserve(digest.checks.size());
  for (const auto& check : digest.checks) {
    ids.push_back(check.id);
  }
  // A stored baseline is canonical (sorted by id): one linear pass instead of a sort.
  bool sorted = true;
  for (size_t i = 1; i < ids.size() && sorted; ++i) {
    sorted = text_less(ids[i - 1], ids[i]);
  }
  if (sorted) {
    digest.id_order.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      digest.id_order[i] = i;
    }
    return true;
  }
  digest.id_order = id_order(ids);
  for (size_t i = 1; i < digest.id_order.size(); ++i) {
    if (same_text(ids[digest.id_order[i - 1]], ids[digest.id_order[i]])) {
      return false;
    }
  }
  return true;
}

uint64_t next_serial() {
  static std::atomic<uint64_t> serial{0};
  return ++serial;
}

// Copies of short texts in blocks that never move (views into them stay valid).
class NameArena {
 public:
  std::string_view keep(std::string_view text) {
    if (text.size() > m_left) {
      size_t size = std::max(k_block, text.size());
      m_blocks.push_back(std::shared_ptr<char[]>(new char[size]));
      m_at = m_blocks.back().get();
      m_left = size;
    }
    std::memcpy(m_at, text.data(), text.size());
    std::string_view kept(m_at, text.size());
    m_at += text.size();
    m_left -= text.size();
    return kept;
  }
  std::vector<std::shared_ptr<char[]>>& blocks() { return m_blocks; }

 private:
  static constexpr size_t k_block = size_t{1} << 20;
  std::vector<std::shared_ptr<char[]>> m_blocks;
  char* m_at = nullptr;
  size_t m_left = 0;
};

// Has the kernel fault in the pages of [begin, begin + size) that lie wholly inside it,
// writable, in one call: cheaper than a fault per page when they are first written.
// Pages already there are left as they are; where the kernel cannot (before Linux
// 5.14), the writes fault them in as they would have.
void prefault(const void* begin, size_t size) {
#if defined(MADV_POPULATE_WRITE)
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto first = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  auto last = (reinterpret_cast<uintptr_t>(begin) + size) & ~(page - 1);
  if (last > first) {
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  }
#else
  (void)begin;
  (void)size;
#endif
}

// Work on a thread joined when it goes (or before, by join()); done here and now where
// no thread can be started.
class Background {
 public:
  template <typename Work>
  explicit Background(Work work) {
    try {
      m_thread = std::thread(work);
    } catch (const std::system_error&) {
      work();
    }
  }
  ~Background() { join(); }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  void join() {
    if (m_thread.joinable()) {
      m_thread.join();
    }
  }

 private:
  std::thread m_thread;
};

// Consecutive checks with the same experiment, output and status (views of the same
// names: neighbours mostly are), for the summary: it only counts them.
struct KeyRun {
  CheckKey key;
  size_t count;
};

// The check lines of one slice of a file, read on one thread.
struct Part {
  std::vector<CheckDigest> checks;                          // in the file's order
  size_t touched = 0;                                       // room in `checks` whose pages are there
  std::vector<size_t> order;                                // their id order; empty when that is the file's
  std::vector<std::unique_ptr<const CheckRecord>> records;  // checks read in full
  NameArena names;                                          // ids, experiments and outputs of `checks`
  std::vector<KeyRun> keys;                                 // `checks`' keys, in runs
  bool refused = false;                                     // the strict reader must decide
};

void note_key(std::vector<KeyRun>& keys, const CheckDigest& check) {
  if (!keys.empty()) {
    KeyRun& last = keys.back();
    if (last.key.experiment.data() == check.experiment.data() &&
        last.key.experiment.size() == check.experiment.size() && last.key.output.data() == check.output.data() &&
        last.key.output.size() == check.output.size() && last.key.status == check.status) {
      ++last.count;
      return;
    }
  }
  keys.push_back(KeyRun{CheckKey{check.experiment, check.output, check.status}, 1});
}

// Moves the check's id, experiment and output views into `names` (experiment and output
// shared with the previous check's when equal: neighbours mostly are). Only a previous
// check whose names are in name blocks lends them: one read in full views its record,
// which a digest vouched for by this one would not keep alive.
void keep_names(CheckDigest& check, const CheckDigest* previous, NameArena& names) {
  if (previous != nullptr && previous->record != nullptr) {
    previous = nullptr;
  }
  check.id = names.keep(check.id);
  check.experiment = previous != nullptr && same_text(previous->experiment, check.experiment)
                         ? previous->experiment
                         : names.keep(check.experiment);
  check.output =
      previous != nullptr && same_text(previous->output, check.output) ? previous->output : names.keep(check.output);
}

// The id a check line starts with as the writer writes it, or "" (the line is then
// read on its own). A wrong guess (an escaped quote) only costs the fast path.
std::string_view leading_id(std::string_view line) {
  constexpr size_t k_start = k_check_line_prefix.size() + 1;  // and the id's opening quote
  if (line.size() <= k_start || !same_bytes(line.data(), k_check_line_prefix.data(), k_check_line_prefix.size()) ||
      line[k_check_line_prefix.size()] != '"') {
    return {};
  }
  size_t end = line.find('"', k_start);
  return end == std::string_view::npos ? std::string_view() : line.substr(k_start, end - k_start);
}

const CheckDigest k_blank{};

// How many checks' room read_part prefaults at a time (two megabytes).
constexpr size_t k_prefault_checks = (size_t{2} << 20) / sizeof(CheckDigest);

// Reads the check lines in [begin, end) of `text` into `part`. `like` (checks in id
// order, or null): a digest whose canonical lines vouch for identical lines here.
void read_lines(std::string_view text, size_t begin, size_t end, size_t reserve_for, const RunDigest* like,
                Part& part) {
  try {
    CanonicalMemo memo;  // views into `text`, which outlives this part's reading
    const std::vector<CheckDigest>* known = like != nullptr ? &like->checks : nullptr;
    size_t pos = 0;  // in `known`: the first check whose id is not below the last one looked up
    bool positioned = false;
    size_t next = 0;
    // Sized once from the first line, erring on the large side: growing a vector of a
    // million digests by doubling touches (and the kernel zeroes) twice the memory.
    // Room for `reserve_for` bytes of lines: the first part's vector takes the second's
    // checks too when the file is sorted (try_digest); room not used is never touched.
    size_t first = begin;
    while (first < end && text[first] == '\n') {
      ++first;  // blank lines say nothing of the others' length
    }
    size_t first_line = line_at(text, first, next).size() + 1;
    part.checks.reserve(reserve_for / first_line * 5 / 4 + 16);
    std::vector<std::string_view> ids;  // once `sorted` is false
    bool sorted = true;
    // The line at `at` into `check`; `next` is set past it.
    auto read_line = [&](size_t at, CheckDigest& check) {
      // The lines from here to the part's end, which is a line's start: the last byte
      // is a '\n', as the *_at readers require.
      std::string_view rest = text.substr(at, end - at);
      if (known != nullptr) {
        std::string_view id = leading_id(rest);
        if (!id.empty()) {
          if (!positioned) {
            pos = static_cast<size_t>(std::partition_point(known->begin(), known->end(),
                                                           [id](const CheckDigest& c) { return text_less(c.id, id); }) -
                                      known->begin());
            positioned = true;
          }
          while (pos < known->size() && text_less((*known)[pos].id, id)) {
            ++pos;
          }
          if (pos < known->size() && same_text((*known)[pos].id, id)) {
            size_t length = read_check_like_at(rest, (*known)[pos], check);
            if (length != 0) {
              // Id, experiment and output stay like's views, into its name blocks,
              // which the digest then shares (try_digest).
              check.twin = static_cast<uint32_t>(pos);
              ++pos;
              next = at + length + 1;
              return;
            }
          }
        }
      }
      size_t length = read_canonical_check_at(rest, check, &memo);
      if (length != 0) {
        next = at + length + 1;
        const CheckDigest* previous = part.checks.size() >= 2 ? &part.checks[part.checks.size() - 2] : nullptr;
        keep_names(check, previous, part.names);
        return;
      }
      std::string_view line = line_at(text, at, next);
      auto record = std::make_unique<const CheckRecord>(parse_check_line(line));
      fill_from_record(check, *record);
      part.records.push_back(std::move(record));
    };
    for (size_t at = begin; at < end; at = next) {
      if (text[at] == '\n') {
        next = at + 1;  // an empty line
        continue;
      }
      if (part.checks.size() == part.touched && part.touched < part.checks.capacity()) {
        // Fresh room: its pages faulted in a chunk at a time, not one by one.
        size_t until = std::min(part.checks.capacity(), part.touched + k_prefault_checks);
        prefault(part.checks.data() + part.touched, (until - part.touched) * sizeof(CheckDigest));
        part.touched = until;
      }
      // A copy of a blank digest, not one built in place: that zeroes it with a
      // `rep stos`, slow to start for a hundred bytes.
      part.checks.push_back(k_blank);
      CheckDigest& check = part.checks.back();
      read_line(at, check);
      note_key(part.keys, check);
      // Whether the ids come in order; once they do not, the ids for the sort (compact,
      // where the digests are a hundred bytes apart), those before this one first.
      if (sorted) {
        size_t size = part.checks.size();
        if (size >= 2 && !text_less(part.checks[size - 2].id, check.id)) {
          sorted = false;
          ids.reserve((end - begin) / first_line * 5 / 4 + 16);
          for (const CheckDigest& before : part.checks) {
            ids.push_back(before.id);
          }
        }
      } else {
        ids.push_back(check.id);
      }
    }
    if (!sorted) {
      // The id order, found here on this thread; the merge of the parts gathers the
      // checks in it (one pass, no copy of the part in between).
      part.order = id_order(ids);
    }
  } catch (...) {
    part.refused = true;
  }
}

// The room the merge of two parts' checks will fill (try_digest): the part read first,
// when it has to be merged (its ids not in order), prefaults it while the other is
// still being read, a chunk at a time until that one is done too. Its core would idle.
struct MergeRoom {
  const CheckDigest* room = nullptr;
  size_t capacity = 0;
  std::atomic<int> done{0};  // parts read

  void part_read(const Part& part) {
    bool first = done.fetch_add(1) == 0;
    if (!first || part.order.empty()) {
      return;
    }
    size_t limit = std::min(capacity, 2 * part.checks.size() + k_prefault_checks);
    for (size_t at = 0; at < limit && done.load() < 2; at += k_prefault_checks) {
      prefault(room + at, std::min(k_prefault_checks, limit - at) * sizeof(CheckDigest));
    }
  }
};

// read_lines on one of a file's two parts; see MergeRoom.
void read_part(std::string_view text, size_t begin, size_t end, size_t reserve_for, const RunDigest* like, Part& part,
               MergeRoom& merge_room) {
  read_lines(text, begin, end, reserve_for, like, part);
  merge_room.part_read(part);
}

// Where the second of two parts of [begin, end) starts: the line after the middle.
size_t middle_line(std::string_view text, size_t begin, size_t end) {
  size_t middle = begin + (end - begin) / 2;
  const void* newline = std::memchr(text.data() + middle, '\n', end - middle);
  return newline == nullptr ? end : static_cast<size_t>(static_cast<const char*>(newline) - text.data()) + 1;
}

// Where a run text's check lines lie: after the header (the first line that is not
// empty) and before the summary (the last), whose values `digest` gets. False where
// the strict reader must decide (no two lines, or either line refused).
bool read_frame(std::string_view text, RunDigest& digest, size_t& checks_begin, size_t& checks_end) {
  size_t last_end = text.size();
  while (last_end > 0 && text[last_end - 1] == '\n') {
    --last_end;
  }
  size_t last_begin = text.rfind('\n', last_end == 0 ? 0 : last_end - 1);
  last_begin = last_begin == std::string_view::npos ? 0 : last_begin + 1;
  size_t at = 0;
  while (at < text.size() && text[at] == '\n') {
    ++at;
  }
  if (at >= last_begin) {
    return false;  // no line, or one line only
  }
  try {
    digest.header = parse_header_line(line_at(text, at, checks_begin));
    digest.summary = parse_summary_line(text.substr(last_begin, last_end - last_begin));
  } catch (...) {
    return false;
  }
  checks_end = last_begin;
  return true;
}

// Why: fresh memory is dear (see ReadBytes). The two parts start from the vectors
// like's read lent, and give theirs back when done: to the lender, or to this read's
// bytes for a read against this digest later (none for a like that lends none).
class SpareRoom {
 public:
  SpareRoom(Part (&parts)[2], const ReadBytes* bytes, const RunDigest* like) : m_parts(parts) {
    const ReadBytes* lender = like != nullptr ? dynamic_cast<const ReadBytes*>(like->bytes.get()) : nullptr;
    if (lender != nullptr) {
      for (Part& part : parts) {  // the larger for the first half, which may take all checks
        ReadBytes::Spare spare = lender->borrow();
        part.checks = std::move(spare.checks);
        part.touched = spare.touched;
      }
    }
    m_keeper = lender != nullptr ? lender : like == nullptr ? bytes : nullptr;
  }
  ~SpareRoom() {
    if (m_keeper != nullptr) {
      for (Part& part : m_parts) {
        m_keeper->lend(std::move(part.checks), part.touched);
      }
    }
  }
  SpareRoom(const SpareRoom&) = delete;
  SpareRoom& operator=(const SpareRoom&) = delete;

 private:
  Part (&m_parts)[2];
  const ReadBytes* m_keeper = nullptr;
};

// Reads the check lines in [begin, end) as two halves, one on another thread (both
// cores read), into `parts`. Room for their merge, should they need one, is reserved
// in `digest.checks` first: as much as the first part's vector reserves (read_part),
// erring on the large side; none where that cannot be had (the merge asks for it).
void read_halves(std::string_view text, size_t begin, size_t end, const RunDigest* like, Part (&parts)[2],
                 RunDigest& digest) {
  size_t split = middle_line(text, begin, end);
  MergeRoom merge_room;
  try {
    size_t first = begin;
    while (first < end && text[first] == '\n') {
      ++first;
    }
    size_t ignored = 0;
    digest.checks.reserve((end - begin) / (line_at(text, first, ignored).size() + 1) * 5 / 4 + 16);
    merge_room.room = digest.checks.data();
    merge_room.capacity = digest.checks.capacity();
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  std::thread second(read_part, text, split, end, end - split, like, std::ref(parts[1]), std::ref(merge_room));
  read_part(text, begin, split, end - begin, like, parts[0], merge_room);
  second.join();
}

// The run's summary derived from the keys the parts noted as they read (a few runs of
// equal keys, not a pass over a hundred megabytes of digests); nullopt where it
// cannot be made (the strict reader decides).
std::optional<RunSummary> summary_of_keys(const RunHeader& header, const std::vector<KeyRun>& keys, size_t count) {
  try {
    size_t run = 0;
    size_t run_start = 0;  // the index of run's first check
    return summarize_keys(header, count, [&keys, &run, &run_start](size_t i) {
      while (i < run_start) {
        run_start -= keys[--run].count;
      }
      while (i >= run_start + keys[run].count) {
        run_start += keys[run++].count;
      }
      return keys[run].key;
    });
  } catch (...) {
    return std::nullopt;
  }
}

// Appends the two parts' checks to `checks` in id order: the second after the first
// when the file is sorted (a stored baseline), else one merge of their id orders.
// False on a repeated id.
bool gather_in_id_order(const Part& first, const Part& second, bool in_file_order, std::vector<CheckDigest>& checks) {
  if (in_file_order) {
    checks.insert(checks.end(), second.checks.begin(), second.checks.end());
    return true;
  }
  auto first_at = [&first](size_t i) -> const CheckDigest& {
    return first.checks[first.order.empty() ? i : first.order[i]];
  };
  auto second_at = [&second](size_t i) -> const CheckDigest& {
    return second.checks[second.order.empty() ? i : second.order[i]];
  };
  size_t a = 0;
  size_t b = 0;
  while (a < first.checks.size() || b < second.checks.size()) {
    bool take_first =
        b == second.checks.size() || (a < first.checks.size() && text_less(first_at(a).id, second_at(b).id));
    const CheckDigest& check = take_first ? first_at(a++) : second_at(b++);
    if (!checks.empty() && !text_less(checks.back().id, check.id)) {
      return false;  // equal neighbours: a repeated id
    }
    checks.push_back(check);
  }
  return true;
}

// The digest of `text`, or nullopt where the strict reader must decide. Its checks
// come out in id order (id_order is the identity).
std::optional<RunDigest> try_digest(std::shared_ptr<const ReadBytes> bytes, const RunDigest* like) {
  std::string_view text = bytes->text();
  RunDigest digest;
  digest.bytes = bytes;
  size_t begin = 0;
  size_t end = 0;
  if (!read_frame(text, digest, begin, end)) {
    return std::nullopt;
  }
  Part parts[2];
  SpareRoom spare_room(parts, bytes.get(), like);
  read_halves(text, begin, end, like, parts, digest);
  if (parts[0].refused || parts[1].refused) {
    return std::nullopt;
  }
  const size_t count = parts[0].checks.size() + parts[1].checks.size();
  Part& first = parts[0];
  const bool in_file_order = first.order.empty() && parts[1].order.empty() &&
                             (first.checks.empty() || parts[1].checks.empty() ||
                              text_less(first.checks.back().id, parts[1].checks.front().id));
  if (in_file_order) {
    digest.checks = std::move(first.checks);  // the second half follows the first's
    first.checks = {};
  }
  digest.checks.reserve(count);
  // Why a second thread here: while this one gathers the checks, it prefaults the
  // further half of the fresh room they go to (this thread's writes fault in the nearer
  // half meanwhile), then writes the identity id order and derives the summary.
  const size_t coming = count - digest.checks.size();
  const CheckDigest* further = digest.checks.data() + digest.checks.size() + coming / 2;
  const size_t further_bytes = (coming - coming / 2) * sizeof(CheckDigest);
  std::vector<KeyRun> keys = std::move(parts[0].keys);
  keys.insert(keys.end(), parts[1].keys.begin(), parts[1].keys.end());
  std::optional<RunSummary> derived;
  Background side([&digest, &keys, &derived, count, further, further_bytes] {
    prefault(further, further_bytes);
    try {
      digest.id_order.reserve(count);
      for (size_t i = 0; i < count; ++i) {
        digest.id_order.push_back(i);
      }
      derived = summary_of_keys(digest.header, keys, count);
    } catch (...) {
      derived.reset();  // the strict reader decides
    }
  });
  if (!gather_in_id_order(first, parts[1], in_file_order, digest.checks)) {
    return std::nullopt;
  }
  for (auto& part : parts) {
    for (auto& record : part.records) {
      digest.records.push_back(std::move(record));
    }
    for (auto& block : part.names.blocks()) {
      digest.names.push_back(std::move(block));
    }
  }
  if (like != nullptr) {
    digest.names.insert(digest.names.end(), like->names.begin(), like->names.end());  // twins' names
  }
  digest.serial = next_serial();
  digest.like_serial = like != nullptr ? like->serial : 0;
  side.join();
  if (!derived || !same_summary(*derived, digest.summary)) {
    return std::nullopt;
  }
  return digest;
}

RunDigest digest_bytes(const std::shared_ptr<const ReadBytes>& bytes, const std::string& name, const RunDigest* like) {
  std::optional<RunDigest> digest = try_digest(bytes, like);
  if (digest) {
    return std::move(*digest);
  }
  return strict_digest(bytes->text(), name);
}

}  // namespace

RunDigest read_run_digest(const std::string& path, const RunDigest* like, const InputKind& kind) {
  return digest_bytes(open_bytes(path, kind), path, like);
}

RunDigest digest_run_text(std::string text, const std::string& name_for_messages, const RunDigest* like) {
  return digest_bytes(std::make_shared<const StringBytes>(std::move(text)), name_for_messages, like);
}

RunDigest digest_view(const RunFile& run) {
  RunDigest digest;
  digest.header = run.header;
  digest.summary = run.summary;
  digest.checks.resize(run.checks.size());
  for (size_t i = 0; i < run.checks.size(); ++i) {
    fill_from_record(digest.checks[i], run.checks[i]);
  }
  // A parsed run has unique ids (parse_run refuses repeats); one built by hand is taken as it is.
  order_ids(digest);
  digest.serial = next_serial();
  return digest;
}

RunDigest digest_of(std::shared_ptr<const RunFile> run) {
  RunDigest digest = digest_view(*run);
  digest.run = std::move(run);
  return digest;
}

std::string check_line_of(const CheckDigest& check) {
  return check.record != nullptr ? check_to_json_line(*check.record) : std::string(check.line);
}

}  // namespace driftgate
