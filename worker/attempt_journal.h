// The worker's durable record of its attempts (decision 0036): one append-only file,
// `<work_dir>/attempts.journal` (mode 0600, the worker's own), one JSON line per change:
// `{"put": <AttemptState>}` when an attempt starts or ends, `{"forget": <attempt id>}` once
// the scheduler has its result. Reading it back, the last line about an attempt wins.
//
// Changes are buffered and made durable together by Sync(): one write and one fsync for
// everything a pass of the agent's loop changed, where a file per attempt cost two file
// creations, two fsyncs and two renames per attempt. The agent syncs before it reports a
// result, so a result the scheduler may act on is on disk first; a forget that never
// reached the disk only makes the next life report a result again, which the scheduler
// refuses as stale.
//
// A crash can cut the last line short: a line that is not a whole record is skipped. When
// the file holds four times more lines than live attempts (and more than 1,024), Sync()
// rewrites it with the live records only (temporary file, fsync, rename, fsync of the
// directory).
//
// Threading: not thread-safe; the agent's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "worker/attempt_state.h"

namespace frugal::worker {

class AttemptJournal {
 public:
  AttemptJournal() = default;
  AttemptJournal(const AttemptJournal&) = delete;
  AttemptJournal& operator=(const AttemptJournal&) = delete;
  ~AttemptJournal();

  // Opens (creating) the journal in `work_dir` and reads it. The state.json files of a
  // worker from before this journal are taken in and synced, then removed.
  Status Open(const std::string& work_dir);

  // The attempts the journal holds now, by id: what was read, plus Puts, less Forgets.
  const std::map<std::int64_t, AttemptState>& attempts() const { return live_; }

  // Buffered until Sync(). Put replaces what the journal held for that attempt.
  void Put(const AttemptState& s);
  void Forget(std::int64_t attempt_id);

  // Makes every Put and Forget so far durable. A failed write leaves them buffered for the
  // next Sync. Ok at once when nothing is buffered, or before Open.
  Status Sync();

 private:
  Status Compact();
  Status Reopen();

  std::string path_;
  int fd_ = -1;
  std::map<std::int64_t, AttemptState> live_;
  std::string pending_;     // lines not yet written
  std::size_t lines_ = 0;   // lines in the file, whole or not
};

}  // namespace frugal::worker
