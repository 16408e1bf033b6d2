#include "tests/ci/openapi_validator.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace driftgate::test {

namespace {

using Json = nlohmann::json;

bool type_matches(const std::string& type, const Json& value) {
  if (type == "object") {
    return value.is_object();
  }
  if (type == "array") {
    return value.is_array();
  }
  if (type == "string") {
    return value.is_string();
  }
  if (type == "integer") {
    return value.is_number_integer();
  }
  if (type == "number") {
    return value.is_number();
  }
  if (type == "boolean") {
    return value.is_boolean();
  }
  return type == "null" && value.is_null();
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  std::string part;
  while (std::getline(stream, part, '/')) {
    if (!part.empty()) {
      parts.push_back(part);
    }
  }
  return parts;
}

}  // namespace

void check_schema(const Json& schema, const Json& value, const std::string& where, bool strict,
                  std::vector<std::string>& violations) {
  if (!schema.is_object()) {
    return;
  }
  for (const char* combinator : {"anyOf", "oneOf"}) {
    if (schema.contains(combinator)) {
      for (const auto& alternative : schema[combinator]) {
        std::vector<std::string> trial;
        check_schema(alternative, value, where, strict, trial);
        if (trial.empty()) {
          return;
        }
      }
      violations.push_back(where + ": matches none of " + combinator);
      return;
    }
  }
  if (schema.contains("allOf")) {
    for (const auto& part : schema["allOf"]) {
      check_schema(part, value, where, strict, violations);
    }
  }
  if (value.is_null() && (schema.value("nullable", false) || !schema.contains("type"))) {
    return;
  }
  if (schema.contains("type")) {
    const Json& type = schema["type"];
    bool ok = false;
    if (type.is_string()) {
      ok = type_matches(type.get<std::string>(), value);
    } else if (type.is_array()) {
      for (const auto& each : type) {
        ok = ok || type_matches(each.get<std::string>(), value);
      }
    }
    if (!ok) {
      violations.push_back(where + ": expected " + type.dump() + ", got " + value.dump().substr(0, 60));
      return;
    }
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& allowed : schema["enum"]) {
      found = found || allowed == value;
    }
    if (!found) {
      violations.push_back(where + ": " + value.dump() + " is not one of " + schema["enum"].dump());
    }
  }
  if (value.is_string() && schema.contains("maxLength") &&
      value.get<std::string>().size() > schema["maxLength"].get<size_t>()) {
    violations.push_back(where + ": longer than maxLength " + schema["maxLength"].dump());
  }
  if (value.is_object()) {
    for (const auto& name : schema.value("required", Json::array())) {
      if (!value.contains(name.get<std::string>())) {
        violations.push_back(where + ": required property '" + name.get<std::string>() + "' is missing");
      }
    }
    const Json& properties = schema.value("properties", Json::object());
    for (const auto& [name, item] : value.items()) {
      if (properties.contains(name)) {
        check_schema(properties[name], item, where + "." + name, strict, violations);
      } else if (strict || schema.value("additionalProperties", Json(true)) == Json(false)) {
        violations.push_back(where + ": property '" + name + "' is not in the schema");
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      check_schema(schema["items"], value[i], where + "[" + std::to_string(i) + "]", strict, violations);
    }
  }
}

OpenApiValidator::OpenApiValidator(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error("cannot read " + path);
  }
  m_spec = Json::parse(file);
}

const Json* OpenApiValidator::find_operation(const std::string& method, const std::string& path,
                                             std::map<std::string, std::string>& path_params) const {
  std::vector<std::string> actual = split_path(path);
  std::string lower_method;
  for (char c : method) {
    lower_method += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const auto& [templ, operations] : m_spec["paths"].items()) {
    std::vector<std::string> expected = split_path(templ);
    if (expected.size() != actual.size()) {
      continue;
    }
    std::map<std::string, std::string> params;
    bool match = true;
    for (size_t i = 0; i < expected.size() && match; ++i) {
      if (expected[i].front() == '{') {
        params[expected[i].substr(1, expected[i].size() - 2)] = actual[i];
      } else {
        match = expected[i] == actual[i];
      }
    }
    if (match && operations.contains(lower_method)) {
      path_params = params;
      return &operations[lower_method];
    }
  }
  return nullptr;
}

std::vector<std::string> OpenApiValidator::check_request(const std::string& method, const std::string& path,
                                                         const std::map<std::string, std::string>& query,
                                                         const std::string& body) const {
  std::vector<std::string> violations;
  std::map<std::string, std::string> path_params;
  const Json* operation = find_operation(method, path, path_params);
  std::string where = method + " " + path;
  if (operation == nullptr) {
    return {where + ": no such operation in the OpenAPI description"};
  }
  std::map<std::string, bool> known_query;
  for (const auto& parameter : operation->value("parameters", Json::array())) {
    std::string name = parameter["name"];
    std::string in = parameter["in"];
    const Json& schema = parameter.value("schema", Json::object());
    if (in == "query") {
      known_query[name] = true;
      auto it = query.find(name);
      if (it != query.end() && schema.value("type", "") == "integer" &&
          (it->second.empty() || it->second.find_first_not_of("0123456789") != std::string::npos)) {
        violations.push_back(where + ": query '" + name + "' must be an integer, got '" + it->second + "'");
      }
      if (name == "per_page" && it != query.end() && !it->second.empty() &&
          it->second.find_first_not_of("0123456789") == std::string::npos && std::stoi(it->second) > 100) {
        violations.push_back(where + ": per_page is at most 100");
      }
    } else if (in == "path" && schema.value("type", "") == "integer") {
      const std::string& value = path_params[name];
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
        violations.push_back(where + ": path parameter '" + name + "' must be an integer");
      }
    }
  }
  for (const auto& [name, value] : query) {
    if (!known_query.count(name)) {
      violations.push_back(where + ": unknown query parameter '" + name + "'");
    }
  }
  if (operation->contains("requestBody")) {
    Json parsed = Json::parse(body, nullptr, false);
    if (parsed.is_discarded()) {
      violations.push_back(where + ": body is not JSON");
    } else {
      check_schema((*operation)["requestBody"]["content"]["application/json"]["schema"], parsed, where + " body", true,
                   violations);
    }
  } else if (!body.empty()) {
    violations.push_back(where + ": this operation takes no body");
  }
  return violations;
}

std::vector<std::string> OpenApiValidator::check_response(const std::string& method, const std::string& path,
                                                          int status, const std::string& body) const {
  std::map<std::string, std::string> path_params;
  const Json* operation = find_operation(method, path, path_params);
  std::string where = method + " " + path + " -> " + std::to_string(status);
  if (operation == nullptr) {
    return {where + ": no such operation"};
  }
  const Json& responses = operation->value("responses", Json::object());
  std::string code = std::to_string(status);
  if (!responses.contains(code)) {
    return {where + ": status not documented for this operation"};
  }
  const Json& response = responses[code];
  if (!response.contains("content")) {
    return {};
  }
  std::vector<std::string> violations;
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    return {where + ": response body is not JSON"};
  }
  check_schema(response["content"]["application/json"]["schema"], parsed, where, false, violations);
  return violations;
}

}  // namespace driftgate::test
