// The real transport against local servers: plain http to loopback, https with
// certificate verification (a self-signed certificate made here with OpenSSL is
// refused from the system store and accepted as --ca-file), the read timeout, and a
// refused connection coming back as a transport error rather than an exception.
#include "ci/httplib_transport.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

// A self-signed certificate for IP 127.0.0.1 (also its own CA), as PEM files.
struct SelfSigned {
  std::string cert_path;
  std::string key_path;
};

SelfSigned make_self_signed(const std::filesystem::path& dir) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] :
       {std::pair{NID_subject_alt_name, "IP:127.0.0.1"}, std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
  }
  X509_sign(cert, key, EVP_sha256());
  SelfSigned files{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  FILE* cert_file = std::fopen(files.cert_path.c_str(), "w");
  PEM_write_X509(cert_file, cert);
  std::fclose(cert_file);
  FILE* key_file = std::fopen(files.key_path.c_str(), "w");
  PEM_write_PrivateKey(key_file, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(key_file);
  X509_free(cert);
  EVP_PKEY_free(key);
  return files;
}

// Runs `server` on 127.0.0.1 (ephemeral port) for the lifetime of this object.
class Running {
 public:
  explicit Running(httplib::Server& server) : m_server(server) {
    m_port = server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
    for (int i = 0; i < 500 && !m_server.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~Running() {
    m_server.stop();
    m_thread.join();
  }
  int port() const { return m_port; }

 private:
  httplib::Server& m_server;
  std::thread m_thread;
  int m_port = 0;
};

void answer_echo(httplib::Server& server) {
  server.Post("/echo", [](const httplib::Request& request, httplib::Response& response) {
    response.set_header("X-Seen-Auth", request.get_header_value("Authorization"));
    response.status = 201;
    response.set_content(request.body, "application/json");
  });
}

TEST(HttplibTransport, PlainHttpToLoopbackCarriesMethodHeadersAndBody) {
  httplib::Server server;
  answer_echo(server);
  Running running(server);
  HttpResponse response =
      HttplibTransport().send(HttpRequest{"POST",
                                          "http://127.0.0.1:" + std::to_string(running.port()) + "/echo",
                                          {{"Authorization", "Bearer t0k3n"}},
                                          R"({"body":"x"})"});
  EXPECT_EQ(response.status, 201) << response.transport_error;
  EXPECT_EQ(response.body, R"({"body":"x"})");
  EXPECT_EQ(response.header("x-seen-auth").value_or(""), "Bearer t0k3n");
}

TEST(HttplibTransport, HttpsVerifiesTheServerCertificate) {
  test::TempDir temp;
  std::filesystem::path dir = temp.path();
  SelfSigned files = make_self_signed(dir);
  httplib::SSLServer server(files.cert_path.c_str(), files.key_path.c_str());
  ASSERT_TRUE(server.is_valid());
  answer_echo(server);
  Running running(server);
  HttpRequest request{"POST", "https://127.0.0.1:" + std::to_string(running.port()) + "/echo", {}, "{}"};

  HttpResponse untrusted = HttplibTransport().send(request);
  EXPECT_EQ(untrusted.status, 0) << "a self-signed certificate must not pass the system store";
  EXPECT_NE(untrusted.transport_error.find("certificate did not verify"), std::string::npos)
      << untrusted.transport_error;

  HttpResponse trusted = HttplibTransport(HttpTimeouts{}, files.cert_path).send(request);
  EXPECT_EQ(trusted.status, 201) << trusted.transport_error;
}

TEST(HttplibTransport, ReadTimeoutAndRefusedConnectionAreTransportErrors) {
  httplib::Server server;
  server.Get("/slow", [](const httplib::Request&, httplib::Response& response) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    response.set_content("{}", "application/json");
  });
  Running running(server);
  HttpTimeouts timeouts;
  timeouts.read = std::chrono::seconds(1);
  HttpResponse slow = HttplibTransport(timeouts).send(
      HttpRequest{"GET", "http://127.0.0.1:" + std::to_string(running.port()) + "/slow", {}, ""});
  EXPECT_EQ(slow.status, 0);
  EXPECT_EQ(slow.transport_error,
            "read timeout or dropped connection: no complete response within 1 s (--read-timeout)");

  HttpResponse refused = HttplibTransport().send(HttpRequest{"GET", "http://127.0.0.1:1/", {}, ""});
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.transport_error.find("could not connect"), std::string::npos) << refused.transport_error;
}

TEST(HttplibTransport, RefusesPlainHttpBeyondLoopback) {
  EXPECT_THROW(HttplibTransport().send(HttpRequest{"GET", "http://api.github.com/user", {}, ""}), Error);
}

}  // namespace
}  // namespace driftgate
