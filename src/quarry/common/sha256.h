// SHA-256 digests as lower-case hex (file fingerprints, cache keys, thread ids), through
// OpenSSL's EVP interface with every call checked. Header-only; whoever includes it links
// OpenSSL::Crypto.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

#include "quarry/common/common.h"

namespace quarry {

// A digest fed in pieces (a file read in blocks). Not thread-safe; one digest per object.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    ok_ = ctx_ != nullptr && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1;
  }
  void Update(std::string_view bytes) {
    ok_ = ok_ && EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) == 1;
  }
  // The digest of everything fed so far; call once.
  // Errors: kInternal when OpenSSL failed at any step (never a wrong digest).
  [[nodiscard]] Result<std::string> Hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!ok_ || EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1) {
      return Fail(Error::Code::kInternal, "sha256: OpenSSL could not compute the digest");
    }
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
      hex += kDigits[md[i] >> 4];
      hex += kDigits[md[i] & 15];
    }
    return hex;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
  bool ok_ = false;
};

// The digest of `bytes`. Errors: as Sha256::Hex.
[[nodiscard]] inline Result<std::string> Sha256Hex(std::string_view bytes) {
  Sha256 digest;
  digest.Update(bytes);
  return digest.Hex();
}

}  // namespace quarry
