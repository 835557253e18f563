// `frugal admin pool set|list`: define capacity pools (kind, GPU type, price, size).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <ostream>

#include "cli/command_table.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

struct PoolOptions {
  std::string name;
  std::string kind;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  int max_gpus = 0;
  std::string price;  // dollars as typed; the server parses it exactly
  double speed = 1.0;
  std::string startup_delay;  // duration as typed ("90s"); empty: server default
  std::string idle_timeout;
  std::optional<double> preemption_prior;  // spot reclaims per node-hour expected
  std::optional<int> committed_gpus;       // reserved: GPUs paid for, used or not
};

Status RunPoolSet(Session& s, const PoolOptions& o) {
  json body = {{"name", o.name},         {"capacity_kind", o.kind},   {"gpu_type", o.gpu_type},
               {"gpu_mem_gb", o.gpu_mem_gb}, {"max_gpus", o.max_gpus},
               {"price_per_gpu_hour", o.price}, {"speed", o.speed}};
  for (auto [field, text] : {std::pair{"startup_delay_seconds", &o.startup_delay},
                             std::pair{"idle_timeout_seconds", &o.idle_timeout}}) {
    if (text->empty()) continue;
    ASSIGN_OR_RETURN(Seconds d, ParseDuration(*text, true));  // checked when parsed
    body[field] = d.count();
  }
  if (o.preemption_prior) body["preemption_prior_per_node_hour"] = *o.preemption_prior;
  if (o.committed_gpus) body["committed_gpus"] = *o.committed_gpus;
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/pools", body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  if (s.output == OutputFormat::kJson) {
    s.out << r.body.dump(2) << "\n";
  } else {
    s.out << "Pool " << o.name << ": " << o.kind << ", " << o.max_gpus << " x " << o.gpu_type
          << " (" << o.gpu_mem_gb << " GB) at $" << r.body.value("price_per_gpu_hour", o.price)
          << "/GPU-hour\n";
  }
  return Status::Ok();
}

Status RunPoolList(Session& s) {
  ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/pools"));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  if (s.output == OutputFormat::kJson) {
    s.out << r.body.dump(2) << "\n";
    return Status::Ok();
  }
  s.out << "NAME                KIND       GPU TYPE  MEM GB  MAX GPUS  $/GPU-HOUR\n";
  for (const auto& p : r.body["pools"]) {
    char line[200];
    std::snprintf(line, sizeof line, "%-19s %-10s %-9s %6d  %8d  %s\n",
                  p["name"].get<std::string>().c_str(),
                  p["capacity_kind"].get<std::string>().c_str(),
                  p["gpu_type"].get<std::string>().c_str(), p["gpu_mem_gb"].get<int>(),
                  p["max_gpus"].get<int>(), p["price_per_gpu_hour"].get<std::string>().c_str());
    s.out << line;
  }
  return Status::Ok();
}

class PoolSet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override;

 private:
  PoolOptions options_;
};

void PoolSet::Register(CLI::App& parent, Registrar& registrar) {
  CLI::App* set = parent.add_subcommand("set", "Create or update a pool");
  PoolOptions& o = options_;
  set->add_option("NAME", o.name, "Pool name, e.g. a100-spot")->required();
  set->add_option("--kind", o.kind, "reserved, on_demand or spot")
      ->required()
      ->check(CLI::IsMember({"reserved", "on_demand", "spot"}));
  set->add_option("--gpu-type", o.gpu_type, "GPU type, e.g. a100")->required();
  set->add_option("--gpu-mem", o.gpu_mem_gb, "GPU memory in GB")->required()->check(CLI::Range(1, 4096));
  set->add_option("--max-gpus", o.max_gpus, "Most GPUs the pool may hold")
      ->required()
      ->check(CLI::Range(0, 1000000));
  set->add_option("--price", o.price, "Price per GPU-hour in dollars, e.g. 1.20")->required();
  set->add_option("--speed", o.speed, "Relative speed (1.0 = reference GPU)")
      ->check(CLI::Range(0.01, 100.0))
      ->capture_default_str();
  // Durations like 90s, 15m; 0 allowed. CLI11 turns a failed check into a usage error (2).
  const CLI::Validator duration(
      [](std::string& v) -> std::string {
        auto d = ParseDuration(v, true);
        return d.ok() ? "" : d.status().message();
      },
      "DURATION");
  set->add_option("--startup-delay", o.startup_delay,
                  "Time for a new node to join, e.g. 90s (weighs waiting vs starting)")
      ->check(duration);
  set->add_option("--idle-timeout", o.idle_timeout, "Release nodes idle this long (0 = never)")
      ->check(duration);
  set->add_option("--preemption-prior", o.preemption_prior,
                  "Spot: expected reclaims per node-hour before any are observed")
      ->check(CLI::Range(0.0, 1000.0));
  set->add_option("--committed-gpus", o.committed_gpus,
                  "Reserved: GPUs paid for whether used or not (default: the registered nodes')")
      ->check(CLI::Range(0, 1000000));
  registrar.OnParsed(*set, [this](Session& s) { return RunPoolSet(s, options_); });
}

class PoolList final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* list = parent.add_subcommand("list", "List pools");
    registrar.OnParsed(*list, [](Session& s) { return RunPoolList(s); });
  }
};

}  // namespace

std::unique_ptr<Command> NewPoolSet() { return std::make_unique<PoolSet>(); }
std::unique_ptr<Command> NewPoolList() { return std::make_unique<PoolList>(); }

}  // namespace frugal::cli
