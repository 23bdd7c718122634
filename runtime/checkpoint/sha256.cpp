#include "runtime/checkpoint/sha256.h"

#include <cstdint>

#if ACCEL_HAVE_OPENSSL
#include <openssl/evp.h>
#else
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SHA256.h"
#endif

namespace accel::rt::checkpoint {
namespace {

std::string Hex(const unsigned char* digest, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 0xF];
  }
  return out;
}

}  // namespace

#if ACCEL_HAVE_OPENSSL

struct Sha256::State {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  ~State() { EVP_MD_CTX_free(context); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr);
}

void Sha256::Update(std::string_view bytes) { EVP_DigestUpdate(state_->context, bytes.data(), bytes.size()); }

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(state_->context, digest, &size);
  return Hex(digest, size);
}

#else

struct Sha256::State {
  llvm::SHA256 hasher;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}

void Sha256::Update(std::string_view bytes) {
  state_->hasher.update(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::string Sha256::HexDigest() {
  llvm::StringRef digest = state_->hasher.final();
  return Hex(reinterpret_cast<const unsigned char*>(digest.data()), digest.size());
}

#endif

Sha256::~Sha256() = default;

std::string Sha256Hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.Update(bytes);
  return hasher.HexDigest();
}

ChunkedSha256::ChunkedSha256(uint64_t chunk_size)
    : chunk_size_(chunk_size), piece_(std::make_unique<Sha256>()) {}

void ChunkedSha256::Update(std::string_view bytes) {
  while (!bytes.empty()) {
    if (in_piece_ == chunk_size_) {
      digests_.push_back(piece_->HexDigest());
      piece_ = std::make_unique<Sha256>();
      in_piece_ = 0;
    }
    std::string_view part = bytes.substr(0, chunk_size_ - in_piece_);
    piece_->Update(part);
    in_piece_ += part.size();
    bytes.remove_prefix(part.size());
  }
}

std::vector<std::string> ChunkedSha256::HexDigests() {
  // The open piece is the last one: a full one stays open until more bytes arrive, so a stream
  // of exactly k pieces has k digests, and an empty stream has the empty piece's.
  digests_.push_back(piece_->HexDigest());
  return std::move(digests_);
}

}  // namespace accel::rt::checkpoint
