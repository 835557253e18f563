// A PostgreSQL cluster that Frugal owns: the embedded default of frugal-scheduler and the
// throwaway database of every test binary. Wraps initdb and pg_ctl from the system's
// PostgreSQL. The server listens only on a Unix socket inside the state directory.
//
// When this process is root, initdb and the server run as the `postgres` system user
// (initdb refuses root) and the cluster's directories are chowned to it.
//
// Sharing: several processes may open the same directory. Start() reuses a server that is
// already running there; only the process that started it stops it. Not thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace frugal::store {

struct PgServerOptions {
  std::string dir;          // state directory; data in dir/data, socket in dir/run
  int port = 5432;          // only names the socket file; nothing listens on TCP
  bool fast_unsafe = false; // tests: no fsync (throwaway data only)
};

class PgServer {
 public:
  explicit PgServer(PgServerOptions options);
  ~PgServer();  // Stop()s a server this object started
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // initdb if the data directory is new, then start the server unless one already runs.
  Status Start();
  // Stops the server if this object started it (or if `force`).
  Status Stop(bool force = false);
  bool IsRunning() const;

  // libpq connection string for `dbname` on this cluster's socket.
  std::string ConnString(const std::string& dbname = "frugal") const;
  const std::string& socket_dir() const { return socket_dir_; }
  const std::string& data_dir() const { return data_dir_; }

 private:
  // initdb into InitDbDir(), then rename to data_dir_ (never a half-made data directory).
  Status InitDb();
  std::string InitDbDir() const;
  Status PrepareDir(const std::string& path);

  PgServerOptions options_;
  std::string bin_dir_;
  std::string data_dir_;
  std::string socket_dir_;
  std::string run_as_;  // "postgres" when root, else empty
  bool started_by_us_ = false;
};

// Directory holding initdb/pg_ctl, or NotFound with the apt command to fix it.
StatusOr<std::string> FindPostgresBinDir();

}  // namespace frugal::store
