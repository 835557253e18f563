# Writes OUTPUT, a C++ file defining `const std::string& NAMESPACE::FUNCTION()` that returns
# the bytes of INPUT, so a binary can serve a document without the source tree. The text is
# cut into raw-string parts of at most 8000 bytes and joined at run time: ISO C++ promises
# only 65536 characters per string literal (-Woverlength-strings under -Wpedantic).
file(READ "${INPUT}" text)
string(FIND "${text}" ")frugal_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )frugal_text\"")
endif()
string(LENGTH "${text}" length)
set(body "// Generated from ${INPUT} by cmake/embed_text.cmake. Do not edit.\n")
string(APPEND body "#include <string>\n\nnamespace ${NAMESPACE} {\n\n")
string(APPEND body "const std::string& ${FUNCTION}() {\n  static const char* const kParts[] = {\n")
set(offset 0)
while(offset LESS length)
  string(SUBSTRING "${text}" ${offset} 8000 part)
  string(APPEND body "      R\"frugal_text(${part})frugal_text\",\n")
  math(EXPR offset "${offset} + 8000")
endwhile()
string(APPEND body "      nullptr};\n  static const std::string kText = [] {\n")
string(APPEND body "    std::string out;\n    for (const char* const* p = kParts; *p; ++p) out += *p;\n")
string(APPEND body "    return out;\n  }();\n  return kText;\n}\n\n}  // namespace ${NAMESPACE}\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
