// A toy multi-node training job for the gang tests (decision 0032): rank 0 listens on
// MASTER_PORT, the other ranks connect to MASTER_ADDR:MASTER_PORT, and every step rank 0
// sends the step number to each peer, which answers with it. Rank 0 checkpoints every 5
// steps (a file, then `$FRUGAL_CLI checkpoint`), resumes from FRUGAL_RESUME_STEP, and on
// SIGTERM writes a final checkpoint. A peer that vanishes is an error, as a collective
// timing out would be.
//
// Usage: frugal_gang_toy STEPS STEP_MS
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;

int Env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

[[noreturn]] void Die(const std::string& why) {
  std::printf("rank %d: %s\n", Env("NODE_RANK", 0), why.c_str());
  std::exit(1);
}

// One line from `fd`, waiting at most 30 s; empty if the peer closed the connection.
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) {
      if (g_stop) std::exit(143);
      Die("no word from a peer for 30 s");
    }
    const ssize_t n = read(fd, &c, 1);
    if (n <= 0) return "";
    if (c == '\n') return line;
    line += c;
  }
}

void WriteLine(int fd, const std::string& s) {
  const std::string line = s + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    Die("a peer went away");
}

void Checkpoint(int step, int steps) {
  const char* dir = std::getenv("FRUGAL_CHECKPOINT_DIR");
  if (!dir || !*dir) return;
  const std::string path = std::string(dir) + "/step-" + std::to_string(step);
  std::ofstream(path) << "step=" << step << "\n";
  const char* cli = std::getenv("FRUGAL_CLI");
  const std::string cmd = std::string(cli ? cli : "frugal") + " checkpoint --step " +
                          std::to_string(step) + " --progress " +
                          std::to_string(static_cast<double>(step) / steps) + " --uri file://" +
                          path + " >/dev/null";
  if (std::system(cmd.c_str()) == 0) std::printf("rank 0: checkpoint step %d\n", step);
}

int Listen(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0)
    Die("cannot listen on port " + std::to_string(port));
  return fd;
}

int Connect(const std::string& host, int port) {
  for (int i = 0; i < 300 && !g_stop; ++i) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      const bool ok = connect(fd, res->ai_addr, res->ai_addrlen) == 0;
      freeaddrinfo(res);
      if (ok) return fd;
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Die("cannot reach rank 0 at " + host + ":" + std::to_string(port));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc != 3) Die("usage: frugal_gang_toy STEPS STEP_MS");
  const int steps = std::atoi(argv[1]), step_ms = std::atoi(argv[2]);
  const int rank = Env("NODE_RANK", -1), nodes = Env("NNODES", 0), port = Env("MASTER_PORT", 0);
  const char* master = std::getenv("MASTER_ADDR");
  if (rank < 0 || nodes < 2 || port <= 0 || !master) Die("not a part of a gang");
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGPIPE, SIG_IGN);

  int step = 0;
  std::vector<int> peers;
  if (rank == 0) {
    step = Env("FRUGAL_RESUME_STEP", 0);
    const int lfd = Listen(port);
    while (static_cast<int>(peers.size()) < nodes - 1) {
      pollfd p{lfd, POLLIN, 0};
      if (poll(&p, 1, 30000) <= 0) Die("the other ranks did not come within 30 s");
      peers.push_back(accept(lfd, nullptr, nullptr));
    }
    for (int fd : peers) WriteLine(fd, "start " + std::to_string(step));
  } else {
    peers.push_back(Connect(master, port));
    const std::string start = ReadLine(peers[0]);
    if (start.rfind("start ", 0) != 0) Die("rank 0 went away before the start");
    step = std::atoi(start.c_str() + 6);
  }
  std::printf("rank %d of %d: met at %s:%d, starting at step %d\n", rank, nodes, master, port,
              step);
  const int first = step + 1;
  while (step < steps) {
    if (g_stop) {
      if (rank == 0 && step >= first) Checkpoint(step, steps);
      std::printf("rank %d: stopped at step %d\n", rank, step);
      return 143;
    }
    ++step;
    if (rank == 0) {
      for (int fd : peers) WriteLine(fd, "step " + std::to_string(step));
      for (int fd : peers)
        if (ReadLine(fd) != "ack " + std::to_string(step)) Die("a peer went away");
      if (step % 5 == 0) Checkpoint(step, steps);
    } else {
      const std::string got = ReadLine(peers[0]);
      if (got.empty()) Die("rank 0 went away");
      if (got != "step " + std::to_string(step)) Die("out of step: got '" + got + "'");
      WriteLine(peers[0], "ack " + std::to_string(step));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
  }
  std::printf("rank %d: exchanged steps %d..%d\n", rank, first, steps);
  return 0;
}
