#include "worker/waker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace frugal::worker {

namespace {

std::atomic<int> g_child_fd{-1};

void OnChildExit(int) {
  const int saved = errno;  // a handler must leave errno as it found it
  const int fd = g_child_fd.load();
  if (fd >= 0) {
    const char c = 1;
    (void)!write(fd, &c, 1);
  }
  errno = saved;
}

}  // namespace

Waker::Waker() {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
}

Waker::~Waker() {
  int expected = write_fd_;
  g_child_fd.compare_exchange_strong(expected, -1);
  if (read_fd_ >= 0) close(read_fd_);
  if (write_fd_ >= 0) close(write_fd_);
}

void Waker::Wait(Millis timeout) {
  if (read_fd_ < 0) {
    // No pipe (out of descriptors at start): plain ticks, as before wake-ups existed.
    struct timespec ts {static_cast<time_t>(timeout.count() / 1000),
                        static_cast<long>(timeout.count() % 1000) * 1000000};
    nanosleep(&ts, nullptr);
    return;
  }
  struct pollfd p {read_fd_, POLLIN, 0};
  (void)poll(&p, 1, static_cast<int>(timeout.count()));
  char buf[256];
  while (read(read_fd_, buf, sizeof buf) > 0) {
  }
}

void Waker::Notify() {
  if (write_fd_ < 0) return;
  const char c = 1;
  (void)!write(write_fd_, &c, 1);  // a full pipe already holds a wake-up
}

void Waker::NotifyOnChildExit() {
  g_child_fd.store(write_fd_);
  struct sigaction sa {};
  sa.sa_handler = OnChildExit;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
}

}  // namespace frugal::worker
