// The admin side's JSON codec of the REST API v1: pools, quotas, budgets' settings, nodes
// and instances, tokens and audit rows, the guardrail settings, and a pool's learned
// availability. `admin apply` decodes with the same functions as the single routes, so a
// field means one thing everywhere. Pure: no I/O, no clock; errors name their field.
#pragma once

#include "api/codec_json.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/pool.h"
#include "scheduler/store/admin_store.h"
#include "scheduler/store/instance_store.h"
#include "scheduler/store/pool_availability.h"

namespace frugal::api {

json EncodePool(const model::Pool& p);
StatusOr<model::Pool> DecodePool(const json& body);
json EncodeQuota(const std::string& team, const store::QuotaSpec& q);
StatusOr<store::QuotaSpec> DecodeQuota(const json& body);
// `with_webhook`: the webhook URL is an admin's to see.
json EncodeBudgetSpec(const std::string& team, const store::BudgetSpec& b, bool with_webhook);
// The webhook URL is taken as text: whether the alert sender can POST to it is the
// routes' check (CheckWebhookUrl, api/webhook_sender.h), which knows how it was built.
StatusOr<store::BudgetSpec> DecodeBudget(const json& body);

json EncodeNode(const store::NodeInfo& n);
json EncodeInstance(const store::Instance& x);
json EncodeToken(const store::TokenInfo& t);
json EncodeAudit(const store::AuditEntry& e);

json EncodeSettings(const model::GuardrailSettings& s);
// A partial update: what the body names replaces the value in `s`; the rest stays.
Status MergeSettings(const json& body, model::GuardrailSettings& s);

// A spot pool's learned availability model and its bins' hazards (decision 0023).
json EncodeAvailability(const store::PoolAvailability& a);

}  // namespace frugal::api
