// Checks requests and responses of the fake GitHub against GitHub's own OpenAPI
// description (shared/api/github/openapi-subset.json), so the fake accepts exactly
// what the real API accepts and answers in its documented shapes.
//
// A small JSON Schema subset is enough for that file: type (with nullable), enum,
// required, properties, additionalProperties: false, items, anyOf/oneOf/allOf,
// maxLength. Request bodies are checked strictly (unknown properties are
// violations); responses only for required fields and types.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace driftgate::test {

class OpenApiValidator {
 public:
  // Throws std::runtime_error when the file cannot be read or parsed.
  explicit OpenApiValidator(const std::string& path);

  // Violations of one request: unknown method/path, path and query parameters,
  // the JSON body. `path` excludes the query; `query` maps names to values.
  std::vector<std::string> check_request(const std::string& method, const std::string& path,
                                         const std::map<std::string, std::string>& query,
                                         const std::string& body) const;

  // Violations of one response body for the documented status of an operation.
  std::vector<std::string> check_response(const std::string& method, const std::string& path, int status,
                                          const std::string& body) const;

 private:
  // The operation object for (method, path), or null; fills `path_params`.
  const nlohmann::json* find_operation(const std::string& method, const std::string& path,
                                       std::map<std::string, std::string>& path_params) const;

  nlohmann::json m_spec;
};

// Violations of `value` against `schema`, each prefixed with `where`.
void check_schema(const nlohmann::json& schema, const nlohmann::json& value, const std::string& where, bool strict,
                  std::vector<std::string>& violations);

}  // namespace driftgate::test
