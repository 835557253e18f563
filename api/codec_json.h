// The JSON building blocks every API codec shares (api/codec_*.h): parsing an untrusted
// body, the error reply, field checks that name the field at fault, and the encodings of
// times and money the whole API uses. Pure: no I/O, no clock.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/money.h"
#include "common/status.h"

namespace frugal::api {

using nlohmann::json;

// Parses `body` after CheckJsonLimits; it must be a JSON object.
StatusOr<json> ParseObject(const std::string& body);
// The reply body of an error: {"error": {"code", "message", "field"}}.
json EncodeError(const Status& status);
// InvalidArgument "FIELD: MSG", naming `field`.
Status FieldError(const std::string& field, const std::string& msg);

// Checks a name of a team or user against the schema's pattern; `field` names it.
Status ValidateName(const std::string& value, const std::string& field, bool allow_upper);
// Rejects fields of `body` not in `allowed`, naming the first unknown one.
Status CheckFields(const json& body, std::initializer_list<const char*> allowed);
// body[field] as the given type, or InvalidArgument naming the field.
StatusOr<std::string> RequiredString(const json& body, const char* field);
StatusOr<std::int64_t> RequiredInt(const json& body, const char* field, std::int64_t lo,
                                   std::int64_t hi);
// Text PostgreSQL can store: UTF-8 without NUL.
bool IsStorableText(const std::string& s);

// A time as RFC 3339, or null.
json OptTime(const std::optional<Timestamp>& t);
// Whole seconds from `t` to `as_of` (a row's database time); null when there is no `t`.
json AgeSeconds(const std::optional<Timestamp>& t, Timestamp as_of);
// Seconds as a number, or null.
json OptSeconds(const std::optional<Seconds>& s);
// Money as a decimal string of dollars ("2.48"), never a float.
json Money(Micros m);

}  // namespace frugal::api
