#include "worker/attempt_state.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace frugal::worker {

namespace fs = std::filesystem;
using nlohmann::json;

json AttemptStateJson(const AttemptState& s) {
  json j = {{"attempt_id", s.attempt_id}, {"job_id", s.job_id},
            {"lease_epoch", s.lease_epoch}, {"fence", s.fence},
            {"pgid", s.pgid}, {"leader_start", s.leader_start},
            {"lease_kill", s.lease_kill}};
  if (s.uid) j["uid"] = *s.uid;
  if (s.outcome) j["outcome"] = protocol::ToString(*s.outcome);
  if (s.exit_code) j["exit_code"] = *s.exit_code;
  return j;
}

std::optional<AttemptState> ParseAttemptState(const json& j) {
  try {
    AttemptState s;
    s.attempt_id = j.at("attempt_id").get<std::int64_t>();
    s.job_id = j.at("job_id").get<std::int64_t>();
    s.lease_epoch = j.at("lease_epoch").get<std::int64_t>();
    s.fence = j.at("fence").get<std::string>();
    s.pgid = j.at("pgid").get<pid_t>();
    s.leader_start = j.at("leader_start").get<std::uint64_t>();
    s.lease_kill = j.value("lease_kill", false);
    if (j.contains("uid")) s.uid = j["uid"].get<uid_t>();
    if (j.contains("outcome")) {
      auto o = protocol::ParseOutcome(j["outcome"].get<std::string>());
      if (!o.ok()) return std::nullopt;
      s.outcome = *o;
    }
    if (j.contains("exit_code")) s.exit_code = j["exit_code"].get<int>();
    if (s.attempt_id < 1 || !protocol::IsFence(s.fence)) return std::nullopt;
    return s;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::vector<std::pair<std::string, AttemptState>> LoadLegacyAttemptStates(
    const std::string& work_dir) {
  std::vector<std::pair<std::string, AttemptState>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(work_dir, ec)) {
    if (e.path().filename().string().rfind("attempt-", 0) != 0) continue;
    std::ifstream in(e.path() / "state.json");
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (auto s = ParseAttemptState(j)) out.emplace_back(e.path().string(), *s);
  }
  return out;
}

std::optional<std::uint64_t> ProcessStartTime(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // Fields after the command (which may hold spaces and parentheses) start after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // The rest starts at field 3 (state); the start time is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  return std::stoull(field);
}

bool KillIfSameLeader(pid_t pgid, std::uint64_t leader_start) {
  if (pgid <= 1) return false;
  const auto start = ProcessStartTime(pgid);
  if (!start || *start != leader_start) return false;
  kill(-pgid, SIGKILL);
  return true;
}

}  // namespace frugal::worker
