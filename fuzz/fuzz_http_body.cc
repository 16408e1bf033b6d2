// libFuzzer target: the real transport's response-body cap (ci/httplib_transport.h)
// against a local server that answers with fuzzer-chosen bodies, content encodings
// (gzip, deflate, or a claim of either over arbitrary bytes), chunked or not, and a
// decompression bomb of fuzzer-chosen size.
//
// Whatever comes back: a response is a status with a body of at most the cap, or a
// transport error; a body whose inflated size is over the cap is always refused with
// the limit named, and never more of it is held than the cap (libFuzzer's
// -rss_limit_mb catches a body read whole: a bomb inflates to up to 256 MiB).
#include <fuzzer/FuzzedDataProvider.h>
#include <httplib.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ci/httplib_transport.h"

namespace {

// What the server answers next (one request per fuzz input).
struct Answer {
  std::string body;
  std::string encoding;  // "" (identity), "gzip", "deflate"
  bool chunked = false;
  size_t inflated = 0;  // the body's decompressed size when known, else 0
};

std::mutex g_mutex;
Answer g_answer;

// `size` zero bytes, compressed (gzip: windowBits 31; zlib deflate: 15).
std::string compress_zeros(size_t size, bool gzip) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, gzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    std::abort();
  }
  static const std::string zeros(1 << 20, '\0');
  std::string out;
  std::string chunk(1 << 16, '\0');
  size_t done = 0;
  do {
    size_t take = std::min(zeros.size(), size - done);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    stream.avail_in = static_cast<uInt>(take);
    done += take;
    int flush = done >= size ? Z_FINISH : Z_NO_FLUSH;
    do {
      stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
      stream.avail_out = static_cast<uInt>(chunk.size());
      deflate(&stream, flush);
      out.append(chunk.data(), chunk.size() - stream.avail_out);
    } while (stream.avail_out == 0);
  } while (done < size);
  deflateEnd(&stream);
  return out;
}

// Bombs by size in MiB (0..256), made once each and kept: compressing is the slow part.
const std::string& bomb(size_t mib, bool gzip) {
  static std::mutex mutex;
  static std::map<std::pair<size_t, bool>, std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = made.try_emplace({mib, gzip});
  if (inserted) {
    it->second = compress_zeros(mib << 20, gzip);
  }
  return it->second;
}

// The server, started once on 127.0.0.1 for the whole run.
int server_port() {
  static httplib::Server server;
  static const int port = [] {
    server.Get("/", [](const httplib::Request&, httplib::Response& response) {
      Answer answer;
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        answer = g_answer;
      }
      if (!answer.encoding.empty()) {
        response.set_header("Content-Encoding", answer.encoding);
      }
      // application/octet-stream: not a type httplib's server compresses on its own.
      if (answer.chunked) {
        auto body = std::make_shared<std::string>(std::move(answer.body));
        response.set_chunked_content_provider("application/octet-stream",
                                              [body](size_t offset, httplib::DataSink& sink) {
                                                if (offset < body->size()) {
                                                  size_t n = std::min<size_t>(body->size() - offset, 1 << 16);
                                                  return sink.write(body->data() + offset, n);
                                                }
                                                sink.done();
                                                return true;
                                              });
      } else {
        response.set_content(answer.body, "application/octet-stream");
      }
    });
    int bound = server.bind_to_any_port("127.0.0.1");
    std::thread([] { server.listen_after_bind(); }).detach();
    for (int i = 0; i < 500 && !server.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return bound;
  }();
  return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const size_t cap = input.ConsumeIntegralInRange<size_t>(0, 1 << 20);
  Answer answer;
  answer.chunked = input.ConsumeBool();
  const int kind = input.ConsumeIntegralInRange(0, 3);
  switch (kind) {
    case 0:  // plain bytes: the size on the wire is the size
      answer.body = input.ConsumeRandomLengthString(4 << 20);
      answer.inflated = answer.body.size();
      break;
    case 1: {  // a bomb: from nothing to 256 MiB of zeros
      bool gzip = input.ConsumeBool();
      size_t mib = input.ConsumeIntegralInRange<size_t>(0, 256);
      answer.encoding = gzip ? "gzip" : "deflate";
      answer.body = bomb(mib, gzip);
      answer.inflated = mib << 20;
      break;
    }
    default:  // a claimed encoding over arbitrary bytes
      answer.encoding = input.ConsumeBool() ? "gzip" : "deflate";
      answer.body = input.ConsumeRemainingBytesAsString();
      break;
  }
  const size_t inflated = answer.inflated;
  const bool known = kind <= 1;  // the inflated size is known
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_answer = std::move(answer);
  }
  driftgate::HttpTimeouts timeouts;
  timeouts.read = std::chrono::seconds(5);
  driftgate::HttplibTransport transport(timeouts, "", cap);
  driftgate::HttpResponse response =
      transport.send(driftgate::HttpRequest{"GET", "http://127.0.0.1:" + std::to_string(server_port()) + "/", {}, ""});
  if (response.status != 0 && response.body.size() > cap) {
    std::abort();  // a body over the cap came back
  }
  if (known && inflated > cap && response.status != 0) {
    std::abort();  // a body known to inflate past the cap was accepted
  }
  if (response.status == 0 && response.transport_error.rfind("the response body is over the limit of", 0) == 0 &&
      known && inflated <= cap) {
    std::abort();  // refused a body within the cap
  }
  return 0;
}
