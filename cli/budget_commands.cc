// Budgets: `frugal admin budget set|get TEAM` (admins) and `frugal budget [TEAM]` (the
// team's spend, commitments, what is left and this period's alerts). Amounts are dollars.
#include <CLI/CLI.hpp>
#include <ostream>
#include <vector>

#include "cli/command_table.h"
#include "cli/format.h"
#include "common/money.h"

namespace frugal::cli {

using nlohmann::json;

namespace {

// "30.000000" -> "$30.00"; a negative amount (over budget) -> "-$5.00".
std::string Usd(const json& o, const char* key) {
  auto m = ParseDollars(Text(o, key), /*allow_negative=*/true);
  if (!m.ok()) return Text(o, key);
  return *m < 0 ? "-$" + FormatDollars(-*m) : "$" + FormatDollars(*m);
}

void PrintSpec(Session& s, const json& b) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(b);
    return;
  }
  std::string alerts;
  for (const auto& p : Field(b, "alert_at_pct")) alerts += (alerts.empty() ? "" : ", ") + p.dump() + "%";
  s.out << RenderKeyValues({{"Team", Text(b, "team")},
                            {"Period", Text(b, "period")},
                            {"Limit", Usd(b, "limit")},
                            {"Hard", Field(b, "hard").dump()},
                            {"Alert at", alerts.empty() ? "-" : alerts},
                            {"Webhook", Field(b, "webhook_url").is_string()
                                            ? Text(b, "webhook_url") : "-"}});
}

void PrintStatus(Session& s, const json& b) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(b);
    return;
  }
  s.out << RenderKeyValues({{"Team", Text(b, "team")},
                            {"Period", Text(b, "period") + " from " + Text(b, "period_start") +
                                           " to " + Text(b, "period_end")},
                            {"Limit", Usd(b, "limit") + (Field(b, "hard").get<bool>()
                                                             ? " (hard: paid capacity stops)"
                                                             : " (soft: alerts only)")},
                            {"Spent", Usd(b, "spent")},
                            {"Committed", Usd(b, "committed") + " (running jobs, expected)"},
                            {"Left", Usd(b, "left")}});
  const json& alerts = Field(b, "alerts");
  if (alerts.empty()) {
    s.out << "\nNo alerts this period.\n";
    return;
  }
  s.out << "\nAlerts this period:\n";
  Table t({"THRESHOLD", "FIRED", "USED", "WEBHOOK"});
  for (const auto& a : alerts) {
    t.AddRow({Text(a, "threshold_pct") + "%", FormatTimeWithAge(Field(a, "fired_at"), s.now),
              Usd(a, "used"), Text(a, "delivery_state")});
  }
  s.out << t.Render();
}

class BudgetSet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override;

 private:
  Status Run(Session& s) const;

  std::string team_;
  std::string monthly_, weekly_;       // dollars; exactly one
  std::vector<std::string> alert_at_;  // "80%" or "80"
  bool hard_ = false;
  std::string webhook_;
};

void BudgetSet::Register(CLI::App& parent, Registrar& registrar) {
  CLI::App* set = parent.add_subcommand("set", "Replace a team's budget");
  set->add_option("TEAM", team_, "Team name")->required();
  auto* monthly = set->add_option("--monthly", monthly_, "Dollars per UTC calendar month");
  auto* weekly = set->add_option("--weekly", weekly_, "Dollars per ISO week (from Monday)");
  monthly->excludes(weekly);
  set->add_option("--alert-at", alert_at_,
                  "Alert at this share of the limit, e.g. 80% (repeatable)")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::string n = !v.empty() && v.back() == '%' ? v.substr(0, v.size() - 1) : v;
            if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos ||
                std::stoi(n) < 1 || std::stoi(n) > 100)
              return "expected a whole percent from 1% to 100%, got '" + v + "'";
            return "";
          },
          "PCT%"));
  set->add_flag("--hard", hard_, "At the limit, no new paid (on-demand, spot) capacity");
  set->add_option("--webhook", webhook_, "POST alerts as JSON to this http(s) URL");
  registrar.OnParsed(*set, [this](Session& s) { return Run(s); });
}

Status BudgetSet::Run(Session& s) const {
  if (monthly_.empty() == weekly_.empty())
    return InvalidArgument("give the limit with --monthly DOLLARS or --weekly DOLLARS", "monthly");
  json body = {{"period", monthly_.empty() ? "weekly" : "monthly"},
               {"limit", monthly_.empty() ? weekly_ : monthly_},
               {"hard", hard_},
               {"alert_at_pct", json::array()}};
  for (std::string a : alert_at_) {
    if (!a.empty() && a.back() == '%') a.pop_back();
    body["alert_at_pct"].push_back(std::stoi(a));
  }
  if (!webhook_.empty()) body["webhook_url"] = webhook_;
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/teams/" + team_ + "/budget", body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  PrintSpec(s, r.body);
  return Status::Ok();
}

class BudgetGet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* get = parent.add_subcommand("get", "Show a team's budget");
    get->add_option("TEAM", team_, "Team name")->required();
    registrar.OnParsed(*get, [this](Session& s) -> Status {
      ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/teams/" + team_ + "/budget"));
      RETURN_IF_ERROR(api::ResponseStatus(r));
      PrintSpec(s, r.body);
      return Status::Ok();
    });
  }

 private:
  std::string team_;
};

// `frugal budget [TEAM]`: for researchers, so it lives at the top level, not under admin.
class Budget final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand(
        "budget", "Your team's budget: spent, committed, left, and this period's alerts");
    sub->add_option("TEAM", team_, "Team (default: your own)");
    registrar.OnParsed(*sub, [this](Session& s) -> Status {
      std::string team = team_;
      if (team.empty()) {
        ASSIGN_OR_RETURN(auto me, s.client.Get("/v1/whoami"));
        RETURN_IF_ERROR(api::ResponseStatus(me));
        team = Text(me.body, "team");
      }
      ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/teams/" + team + "/budget"));
      RETURN_IF_ERROR(api::ResponseStatus(r));
      PrintStatus(s, r.body);
      return Status::Ok();
    });
  }

 private:
  std::string team_;
};

}  // namespace

std::unique_ptr<Command> NewBudget() { return std::make_unique<Budget>(); }
std::unique_ptr<Command> NewBudgetSet() { return std::make_unique<BudgetSet>(); }
std::unique_ptr<Command> NewBudgetGet() { return std::make_unique<BudgetGet>(); }

}  // namespace frugal::cli
