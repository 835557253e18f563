// JSON codec of the REST API v1: decodes and validates untrusted request bodies into model
// values, and encodes model values for responses. Pure: no I/O, `now` is a parameter.
// Every validation error names the offending field (Status::field()).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/model/job.h"
#include "scheduler/store/job_store.h"

namespace frugal::api {

using nlohmann::json;

// Parses `body` after CheckJsonLimits; it must be a JSON object.
StatusOr<json> ParseObject(const std::string& body);

// Validates a submit request. Unknown fields, wrong types and out-of-range values are
// InvalidArgument. Whether a deadline can still be met is admission's to say, in database
// time (service::CheckDeadline), not the decoder's.
StatusOr<model::JobSpec> DecodeJobSpec(const json& body);

json EncodeJob(const model::Job& job);
json EncodeJobDetail(const store::JobDetail& detail);
json EncodeError(const Status& status);

// Checks a name of a team or user against the schema's pattern; `field` names it.
Status ValidateName(const std::string& value, const std::string& field, bool allow_upper);

}  // namespace frugal::api
