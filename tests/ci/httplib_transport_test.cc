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
#include <zlib.h>

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

// `size` zero bytes, gzip-compressed (256 MiB: about 1 MiB at Z_BEST_SPEED): a decompression bomb.
std::string gzip_of_zeros(size_t size) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);  // 16: gzip
  std::string zeros(1 << 20, '\0');
  std::string out;
  std::string chunk(1 << 16, '\0');
  for (size_t done = 0; done < size; done += zeros.size()) {
    stream.next_in = reinterpret_cast<Bytef*>(zeros.data());
    stream.avail_in = static_cast<uInt>(zeros.size());
    int flush = done + zeros.size() >= size ? Z_FINISH : Z_NO_FLUSH;
    do {
      stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
      stream.avail_out = static_cast<uInt>(chunk.size());
      deflate(&stream, flush);
      out.append(chunk.data(), chunk.size() - stream.avail_out);
    } while (stream.avail_out == 0);
  }
  deflateEnd(&stream);
  return out;
}

constexpr size_t k_huge = size_t{256} << 20;

// Also run under `prlimit --as` (tests/ci/CMakeLists.txt): reading either body whole
// (the 256 MiB stream, or the bomb inflated) does not fit in that address space.
TEST(HttplibTransport, BodyOverTheCapIsATransportErrorAndNoMoreIsRead) {
  httplib::Server server;
  size_t served = 0;
  server.Get("/huge", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("application/json", [&](size_t offset, httplib::DataSink& sink) {
      if (offset >= k_huge) {
        sink.done();
        return true;
      }
      std::string block(1 << 16, ' ');
      served = offset + block.size();
      return sink.write(block.data(), block.size());
    });
  });
  Running running(server);
  HttpResponse response = HttplibTransport().send(
      HttpRequest{"GET", "http://127.0.0.1:" + std::to_string(running.port()) + "/huge", {}, ""});
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.body, "");
  EXPECT_EQ(response.transport_error,
            "the response body is over the limit of 32 MiB (counted after decompression); is --api-url the API root?");
  EXPECT_LT(served, k_huge) << "the client read the whole body";
}

TEST(HttplibTransport, GzipBombIsCutAtTheCapWhileInflating) {
  const std::string bomb = gzip_of_zeros(k_huge);
  EXPECT_LT(bomb.size(), k_huge / 100);  // a hundredfold expansion at least
  httplib::Server server;
  server.Get("/bomb", [&](const httplib::Request&, httplib::Response& response) {
    response.set_header("Content-Encoding", "gzip");
    // Not a type httplib's server compresses again.
    response.set_content(bomb, "application/octet-stream");
  });
  Running running(server);
  HttpResponse response = HttplibTransport().send(
      HttpRequest{"GET", "http://127.0.0.1:" + std::to_string(running.port()) + "/bomb", {}, ""});
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.transport_error.find("over the limit of 32 MiB (counted after decompression)"), std::string::npos)
      << response.transport_error;
}

TEST(HttplibTransport, TheCapIsExactAndCountsInflatedBytes) {
  const std::string small = gzip_of_zeros(1 << 20);  // 1 MiB inflated, far less on the wire
  httplib::Server server;
  server.Get("/n", [](const httplib::Request& request, httplib::Response& response) {
    response.set_content(std::string(std::stoul(request.get_param_value("size")), 'x'), "application/octet-stream");
  });
  server.Get("/gz", [&](const httplib::Request&, httplib::Response& response) {
    response.set_header("Content-Encoding", "gzip");
    response.set_content(small, "application/octet-stream");
  });
  Running running(server);
  std::string base = "http://127.0.0.1:" + std::to_string(running.port());
  HttpResponse fits = HttplibTransport({}, "", 1000).send(HttpRequest{"GET", base + "/n?size=1000", {}, ""});
  EXPECT_EQ(fits.status, 200) << fits.transport_error;
  EXPECT_EQ(fits.body, std::string(1000, 'x'));
  HttpResponse over = HttplibTransport({}, "", 1000).send(HttpRequest{"GET", base + "/n?size=1001", {}, ""});
  EXPECT_EQ(over.status, 0);
  EXPECT_EQ(
      over.transport_error,
      "the response body is over the limit of 1000 bytes (counted after decompression); is --api-url the API root?");
  HttpResponse inflated = HttplibTransport({}, "", 1 << 20).send(HttpRequest{"GET", base + "/gz", {}, ""});
  EXPECT_EQ(inflated.status, 200) << inflated.transport_error;
  EXPECT_EQ(inflated.body, std::string(1 << 20, '\0'));
  HttpResponse too_big = HttplibTransport({}, "", (1 << 20) - 1).send(HttpRequest{"GET", base + "/gz", {}, ""});
  EXPECT_EQ(too_big.status, 0) << "the cap counts inflated bytes, not bytes on the wire";
}

TEST(HttplibTransport, RefusesPlainHttpBeyondLoopback) {
  EXPECT_THROW(HttplibTransport().send(HttpRequest{"GET", "http://api.github.com/user", {}, ""}), Error);
}

}  // namespace
}  // namespace driftgate
