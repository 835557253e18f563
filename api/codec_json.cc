#include "api/codec_json.h"

#include <regex>

namespace frugal::api {

Status FieldError(const std::string& field, const std::string& msg) {
  return InvalidArgument(field + ": " + msg, field);
}

StatusOr<json> ParseObject(const std::string& body) {
  if (body.empty()) return InvalidArgument("request body is empty; send a JSON object");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("request body is not valid JSON");
  if (!j.is_object()) return InvalidArgument(std::string("request body must be a JSON object, got ") + j.type_name());
  return j;
}

json EncodeError(const Status& st) {
  return json{{"error",
               {{"code", StatusCodeName(st.code())},
                {"message", st.message()},
                {"field", st.field().empty() ? json(nullptr) : json(st.field())}}}};
}

Status ValidateName(const std::string& value, const std::string& field, bool allow_upper) {
  static const std::regex kLower("[a-z0-9][a-z0-9_.-]{0,62}");
  static const std::regex kAny("[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}");
  if (!std::regex_match(value, allow_upper ? kAny : kLower)) {
    return FieldError(field, allow_upper ? "must match [A-Za-z0-9][A-Za-z0-9_.@-]* (at most 128)"
                                  : "must match [a-z0-9][a-z0-9_.-]* (at most 63)");
  }
  return Status::Ok();
}

Status CheckFields(const json& body, std::initializer_list<const char*> allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      return InvalidArgument("unknown field '" + it.key().substr(0, 64) + "'",
                             it.key().substr(0, 64));
    }
  }
  return Status::Ok();
}

StatusOr<std::string> RequiredString(const json& body, const char* field) {
  if (!body.contains(field)) return InvalidArgument(std::string(field) + ": is required", field);
  if (!body[field].is_string()) {
    return InvalidArgument(std::string(field) + ": must be a string", field);
  }
  // PostgreSQL text cannot hold NUL: refuse it here, where the field is known.
  std::string value = body[field].get<std::string>();
  if (value.find('\0') != std::string::npos) {
    return InvalidArgument(std::string(field) + ": must not contain NUL characters", field);
  }
  return value;
}

StatusOr<std::int64_t> RequiredInt(const json& body, const char* field, std::int64_t lo,
                                   std::int64_t hi) {
  if (!body.contains(field)) return InvalidArgument(std::string(field) + ": is required", field);
  const json& v = body[field];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > 1ULL << 62) ||
      v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    return InvalidArgument(std::string(field) + ": must be an integer between " +
                               std::to_string(lo) + " and " + std::to_string(hi),
                           field);
  }
  return v.get<std::int64_t>();
}

// Query strings and headers are raw bytes; PostgreSQL text and jsonb take only UTF-8
// without NUL. nlohmann's strict encoder is the UTF-8 check the store's JSON would apply.
bool IsStorableText(const std::string& s) {
  if (s.find('\0') != std::string::npos) return false;
  try {
    (void)json(s).dump();
  } catch (const json::type_error&) {
    return false;
  }
  return true;
}

json OptTime(const std::optional<Timestamp>& t) {
  return t ? json(FormatRfc3339(*t)) : json(nullptr);
}

// Whole seconds from `t` to the row's database time; null when there is no `t`.
json AgeSeconds(const std::optional<Timestamp>& t, Timestamp as_of) {
  if (!t) return nullptr;
  return std::chrono::duration_cast<Seconds>(as_of - *t).count();
}

json Money(Micros m) { return FormatDollars(m, true); }

json OptSeconds(const std::optional<Seconds>& s) { return s ? json(s->count()) : json(nullptr); }

}  // namespace frugal::api
