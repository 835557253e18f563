#include "scheduler/store/pg/pg_server.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/subprocess.h"

namespace fs = std::filesystem;

namespace frugal::store {

StatusOr<std::string> FindPostgresBinDir() {
  std::vector<std::string> candidates;
  std::error_code ec;
  if (fs::is_directory("/usr/lib/postgresql", ec)) {
    for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
      candidates.push_back(e.path().string() + "/bin");
    }
  }
  // Highest version first ("15" > "13"; good enough for the versions Debian ships).
  std::sort(candidates.rbegin(), candidates.rend());
  auto pgc = RunSubprocess({"pg_config", "--bindir"});
  if (pgc.ok() && pgc->exit_code == 0) {
    std::string dir = pgc->output.substr(0, pgc->output.find_first_of("\r\n"));
    candidates.push_back(dir);
  }
  for (const auto& c : candidates) {
    if (access((c + "/initdb").c_str(), X_OK) == 0 && access((c + "/pg_ctl").c_str(), X_OK) == 0)
      return c;
  }
  return NotFound(
      "PostgreSQL server binaries (initdb, pg_ctl) not found; install them with "
      "'apt-get install postgresql-15' or set database_url");
}

PgServer::PgServer(PgServerOptions options) : options_(std::move(options)) {
  fs::path base = fs::absolute(options_.dir);
  data_dir_ = (base / "data").string();
  socket_dir_ = (base / "run").string();
  if (geteuid() == 0) run_as_ = "postgres";
}

PgServer::~PgServer() { (void)Stop(); }

Status PgServer::PrepareDir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Unavailable("cannot create " + path + ": " + ec.message());
  fs::permissions(path, fs::perms::owner_all, ec);
  if (!run_as_.empty()) {
    struct passwd* pw = getpwnam(run_as_.c_str());
    if (pw == nullptr) {
      return Unavailable("running as root needs the '" + run_as_ +
                         "' system user to own PostgreSQL (install postgresql-15)");
    }
    if (chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return Unavailable("cannot chown " + path + " to " + run_as_);
    }
    auto probe = RunSubprocessAs(run_as_, {"test", "-w", path});
    if (!probe.ok() || probe->exit_code != 0) {
      return Unavailable("the '" + run_as_ + "' user cannot reach " + path +
                         "; put the state directory ($FRUGAL_HOME) where every parent "
                         "directory is world-searchable (chmod o+x)");
    }
  }
  return Status::Ok();
}

std::string PgServer::InitDbDir() const { return data_dir_ + ".initdb-tmp"; }

Status PgServer::InitDb() {
  // initdb writes PG_VERSION first, so a kill during it used to leave a data directory that
  // looked initialised and never started. Build the cluster beside its place and rename it
  // there only once initdb has finished: the data directory exists only when complete.
  const std::string tmp = InitDbDir();
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (ec) return Unavailable("cannot remove the unfinished " + tmp + ": " + ec.message());
  RETURN_IF_ERROR(PrepareDir(tmp));
  std::vector<std::string> argv = {bin_dir_ + "/initdb", "-D", tmp, "-U", "frugal",
                                   "--auth=trust", "-E", "UTF8", "--locale=C"};
  if (options_.fast_unsafe) argv.push_back("--no-sync");
  ASSIGN_OR_RETURN(auto r, RunSubprocessAs(run_as_, argv));
  if (r.exit_code != 0) return Unavailable("initdb failed: " + r.output);
  // rename(2) replaces an empty directory (one left by an older version killed before
  // initdb wrote anything) but refuses a non-empty one, which is then the user's to sort.
  fs::rename(tmp, data_dir_, ec);
  if (ec) return Unavailable("cannot move " + tmp + " to " + data_dir_ + ": " + ec.message());
  return Status::Ok();
}

bool PgServer::IsRunning() const {
  if (bin_dir_.empty()) return false;
  auto r = RunSubprocessAs(run_as_, {bin_dir_ + "/pg_ctl", "status", "-D", data_dir_});
  return r.ok() && r->exit_code == 0;
}

Status PgServer::Start() {
  if (socket_dir_.size() + 20 > 107) {
    return FailedPrecondition("state directory path too long for a Unix socket: " + socket_dir_);
  }
  ASSIGN_OR_RETURN(bin_dir_, FindPostgresBinDir());
  std::error_code ec;
  if (!fs::exists(data_dir_ + "/PG_VERSION", ec)) {
    RETURN_IF_ERROR(InitDb());
  } else {
    fs::remove_all(InitDbDir(), ec);  // left by a start killed during initdb; unused now
  }
  RETURN_IF_ERROR(PrepareDir(socket_dir_));
  if (IsRunning()) return Status::Ok();
  std::string opts = "-c listen_addresses='' -k '" + socket_dir_ + "' -p " +
                     std::to_string(options_.port);
  if (options_.fast_unsafe) opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  ASSIGN_OR_RETURN(auto r, RunSubprocessAs(run_as_, {bin_dir_ + "/pg_ctl", "start", "-w", "-t",
                                                     "60", "-D", data_dir_, "-l",
                                                     data_dir_ + "/server.log", "-o", opts}));
  if (r.exit_code != 0) {
    // Another process may have started it between our check and our start: reuse it.
    if (IsRunning()) return Status::Ok();
    return Unavailable("pg_ctl start failed (see " + data_dir_ + "/server.log): " + r.output);
  }
  started_by_us_ = true;
  return Status::Ok();
}

Status PgServer::Stop(bool force) {
  if (!started_by_us_ && !force) return Status::Ok();
  if (bin_dir_.empty()) return Status::Ok();
  started_by_us_ = false;
  ASSIGN_OR_RETURN(auto r, RunSubprocessAs(run_as_, {bin_dir_ + "/pg_ctl", "stop", "-w", "-m",
                                                     "fast", "-D", data_dir_}));
  if (r.exit_code != 0 && IsRunning()) return Unavailable("pg_ctl stop failed: " + r.output);
  return Status::Ok();
}

std::string PgServer::ConnString(const std::string& dbname) const {
  return "host=" + socket_dir_ + " port=" + std::to_string(options_.port) +
         " user=frugal dbname=" + dbname;
}

}  // namespace frugal::store
