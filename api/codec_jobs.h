// The jobs' JSON codec of the REST API v1: decodes and validates an untrusted job spec, and
// encodes jobs, their details, list items and arrays for responses. Pure: no I/O, no clock.
// Every validation error names the offending field (Status::field()).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "api/codec_json.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/model/job.h"
#include "scheduler/store/job_store.h"

namespace frugal::api {

// Validates a submit request. Unknown fields, wrong types and out-of-range values are
// InvalidArgument. Whether a deadline can still be met is admission's to say, in database
// time (service::CheckDeadline), not the decoder's.
StatusOr<model::JobSpec> DecodeJobSpec(const json& body);

json EncodeJob(const model::Job& job);
json EncodeJobDetail(const store::JobDetail& detail);
// A job as `GET /v1/jobs` lists it; `summary` (may be null) adds its cost and attempts.
json EncodeJobListItem(const model::Job& job, const store::JobSummary* summary);
json EncodeArray(const store::ArraySummary& array);

}  // namespace frugal::api
