// ByteWriter / ByteReader: little-endian binary encoding with bounds-checked reads.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace dnngraph {

class ByteWriter {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    put<uint64_t>(n);
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  void put_string(const std::string& s) { put_bytes(s.data(), s.size()); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Every read checks the remaining length; after a failed read ok() is false and reads return zeros.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (!ok_ || size_ - pos_ < sizeof(T)) { ok_ = false; return v; }
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  bool get_bytes(std::vector<uint8_t>& out, size_t max_size = SIZE_MAX) {
    const uint64_t n = get<uint64_t>();
    if (!ok_ || n > max_size || n > size_ - pos_) { ok_ = false; return false; }
    out.assign(data_ + pos_, data_ + pos_ + n);
    pos_ += n;
    return true;
  }
  bool get_string(std::string& out, size_t max_size = SIZE_MAX) {
    std::vector<uint8_t> b;
    if (!get_bytes(b, max_size)) return false;
    out.assign(b.begin(), b.end());
    return true;
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace dnngraph
