// Spot interruption notices. A notice may come from any of three sources, all optional:
// a file that appears (tests, demos, a node's own shutdown hook), SIGUSR1 sent to the
// worker, or the cloud's metadata server (AWS spot instance-action, GCP preempted). A file
// or metadata notice stands while its source says so: the file removed, or the metadata
// answering "no notice" again (AWS 404, GCP FALSE), withdraws it (decision 0021). SIGUSR1
// cannot be taken back: it stands for the worker's life. AWS's rebalance recommendation is
// an early hint, reported apart (hint()): it drains nothing.
//
// Metadata (--notice-url URL --notice-format aws|gcp; plain http:// only):
//  aws: URL is the instance-action URL, normally
//       http://169.254.169.254/latest/meta-data/spot/instance-action. Its scheme, host and
//       port (BASE) give IMDSv2's token, PUT BASE/latest/api/token with
//       X-aws-ec2-metadata-token-ttl-seconds: aws_token_ttl, and the rebalance
//       recommendation, BASE/latest/meta-data/events/recommendations/rebalance. Once per
//       poll_interval both are read with X-aws-ec2-metadata-token: 200 with
//       {"action":"terminate"|"stop"|"hibernate",...} is a notice, 200 with
//       {"noticeTime":...} the hint, 404 none. A 401 means the token expired: one new token,
//       one retry. IMDSv1 (no token) is kept only for when the PUT itself answers 403, 404
//       or 405 (IMDSv2 switched off, or a proxy that refuses PUT). That is safe here: the
//       watcher sends nothing secret and reads only these two paths, and whether IMDSv1
//       answers is the instance's own setting (one that requires tokens answers 401, and
//       the watcher asks for a token again). A PUT that times out is no answer, never a
//       reason to drop the token.
//  gcp: URL is normally http://metadata.google.internal/computeMetadata/v1/instance/preempted,
//       always asked with Metadata-Flavor: Google. The first GET reads the value and its
//       ETag; each next one hangs on the server
//       (?wait_for_change=true&last_etag=ETAG&timeout_sec=T, T = poll_interval rounded up
//       to whole seconds) until the value changes or T passes, so a preemption is seen
//       within moments, not a poll interval. Body TRUE is a notice, FALSE none. An answer
//       without the response header Metadata-Flavor: Google is not the metadata server's.
// Anything else (another status, a body that does not parse, no answer within
// http_timeout, 64 KiB exceeded) is no answer: the last usable answer stands, and before
// the first one there is no notice. A server that stops answering is logged once (warn),
// and once again when it answers.
//
// Threading: Check() and the accessors are for one thread (the agent's). The metadata is
// read on a thread the watcher owns, so a slow, absent or hanging server never blocks
// Check(), which takes the poller's last answer. The destructor stops and joins that
// thread, cutting off a request in flight: it takes at most about http_timeout. The SIGUSR1
// handler only sets a sig_atomic_t flag, which Check() reads.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"

namespace frugal::worker {

struct NoticeOptions {
  std::string file;            // empty: not watched
  std::string url;             // empty: no metadata polling
  std::string format = "aws";  // aws | gcp
  // aws: between reads. gcp: the longest a hanging request waits (and, against a server
  // that ignores wait_for_change, between reads). Shorter sees a notice sooner, for one
  // more request to a local server each interval.
  std::chrono::milliseconds poll_interval{5000};
  // Bounds connecting and each answer (plus T for a hanging GCP read), and so shutdown.
  std::chrono::milliseconds http_timeout{1000};
  std::chrono::seconds aws_token_ttl{21600};  // the longest IMDSv2 grants: 6 hours
};

class MetadataPoller;  // the polling thread (notice_watcher.cc)

class NoticeWatcher {
 public:
  // Starts the metadata thread when options.url is set and url_status() is OK.
  explicit NoticeWatcher(NoticeOptions options);
  ~NoticeWatcher();
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;

  // InvalidArgument (field notice_url or notice_format) when the URL cannot be polled: not
  // http://, no host, a bad port, an unknown format. It is then not polled; the file and
  // SIGUSR1 still work. The worker refuses to start with it.
  const Status& url_status() const { return url_status_; }

  // Makes SIGUSR1 a notice. Call once, before the agent runs.
  static void InstallSignalHandler();

  // Looks at every source, never waiting on the network. True while any source gives
  // notice. Also takes the poller's current hint (below).
  bool Check();

  // Which source gives notice ("file /path", "SIGUSR1", "metadata http://..."), or "".
  const std::string& source() const { return source_; }

  // The early hint as of the last Check(): AWS's rebalance recommendation, which says the
  // instance is at higher risk of interruption. Not a notice: nothing is drained for it.
  bool hint() const { return !hint_source_.empty(); }
  // What the hint is ("rebalance recommendation, noticeTime ... (http://...)"), or "".
  const std::string& hint_source() const { return hint_source_; }
  // Whether the last Check() found the hint different from the Check() before it: log it
  // then, once per change.
  bool hint_changed() const { return hint_changed_; }

 private:
  const NoticeOptions options_;
  Status url_status_;
  std::unique_ptr<MetadataPoller> poller_;  // null: no usable URL
  std::string source_;
  std::string hint_source_;
  bool hint_changed_ = false;
};

}  // namespace frugal::worker
