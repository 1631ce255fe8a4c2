// Compact containers for per-object master state, where a byte per object is a megabyte per
// million objects (bench/core/memory_bench.cc measures the sum).
//
//   Boxed<T>           std::optional's interface in 8 bytes: the value lives on the heap, and
//                      only while it is set (task state, present for few objects at a time).
//   SmallVector<T, N>  up to N trivially copyable elements inline, more spill to the heap;
//                      N * sizeof(T) + 8 bytes, no allocation in the common case.
//
// Neither is thread-safe: the owner's lock (the shard mutex for ObjectMeta) guards them.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace mooncake {

template <typename T>
class Boxed {
public:
    Boxed() = default;
    Boxed(const Boxed& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
    Boxed& operator=(const Boxed& other) {
        if (this != &other) p_ = other.p_ ? std::make_unique<T>(*other.p_) : nullptr;
        return *this;
    }
    Boxed(Boxed&&) noexcept = default;
    Boxed& operator=(Boxed&&) noexcept = default;
    Boxed& operator=(T value) {
        if (p_) {
            *p_ = std::move(value);
        } else {
            p_ = std::make_unique<T>(std::move(value));
        }
        return *this;
    }
    Boxed& operator=(std::nullopt_t) {
        reset();
        return *this;
    }

    template <typename... Args>
    T& emplace(Args&&... args) {
        p_ = std::make_unique<T>(std::forward<Args>(args)...);
        return *p_;
    }
    void reset() { p_.reset(); }
    bool has_value() const { return p_ != nullptr; }
    explicit operator bool() const { return p_ != nullptr; }
    T& operator*() { return *p_; }
    const T& operator*() const { return *p_; }
    T* operator->() { return p_.get(); }
    const T* operator->() const { return p_.get(); }

private:
    std::unique_ptr<T> p_;
};

template <typename T, size_t N>
class SmallVector {
    static_assert(std::is_trivially_copyable_v<T>, "elements are moved with memcpy");
    static_assert(N >= 1 && N < 255);

public:
    SmallVector() {}  // NOLINT: the union's storage is left unconstructed on purpose
    SmallVector(const SmallVector& other) { CopyFrom(other); }
    SmallVector& operator=(const SmallVector& other) {
        if (this != &other) {
            Release();
            CopyFrom(other);
        }
        return *this;
    }
    SmallVector(SmallVector&& other) noexcept { StealFrom(other); }
    SmallVector& operator=(SmallVector&& other) noexcept {
        if (this != &other) {
            Release();
            StealFrom(other);
        }
        return *this;
    }
    ~SmallVector() { Release(); }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    size_t capacity() const { return spilled_ ? heap_.cap : N; }
    bool spilled() const { return spilled_; }
    T* data() { return spilled_ ? heap_.ptr : inline_; }
    const T* data() const { return spilled_ ? heap_.ptr : inline_; }
    T* begin() { return data(); }
    T* end() { return data() + size_; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }
    T& operator[](size_t i) {
        assert(i < size_);
        return data()[i];
    }
    const T& operator[](size_t i) const {
        assert(i < size_);
        return data()[i];
    }

    void push_back(const T& value) {
        Reserve(size_ + 1);
        new (data() + size_) T(value);
        ++size_;
    }
    void insert_front(const T& value) {
        const T copy = value;  // `value` may be one of ours
        Reserve(size_ + 1);
        T* d = data();
        std::memmove(static_cast<void*>(d + 1), d, size_ * sizeof(T));
        new (d) T(copy);
        ++size_;
    }
    // Removes element `i`, keeping the others' order (the heap storage is kept).
    void erase(size_t i) {
        assert(i < size_);
        T* d = data();
        std::memmove(static_cast<void*>(d + i), d + i + 1, (size_ - i - 1) * sizeof(T));
        --size_;
    }

private:
    void Reserve(size_t want) {
        assert(want < 255);
        if (want <= capacity()) return;
        const size_t cap = std::max<size_t>(want, 2 * capacity());
        T* fresh = static_cast<T*>(::operator new(cap * sizeof(T)));
        std::memcpy(static_cast<void*>(fresh), data(), size_ * sizeof(T));
        if (spilled_) ::operator delete(heap_.ptr);
        heap_.ptr = fresh;
        heap_.cap = static_cast<uint32_t>(cap);
        spilled_ = true;
    }
    void Release() {
        if (spilled_) ::operator delete(heap_.ptr);
        spilled_ = false;
        size_ = 0;
    }
    void CopyFrom(const SmallVector& other) {
        size_ = 0;
        spilled_ = false;
        Reserve(other.size_);
        std::memcpy(static_cast<void*>(data()), other.data(), other.size_ * sizeof(T));
        size_ = other.size_;
    }
    void StealFrom(SmallVector& other) {
        size_ = other.size_;
        spilled_ = other.spilled_;
        if (spilled_) {
            heap_ = other.heap_;
        } else {
            std::memcpy(static_cast<void*>(inline_), other.inline_, size_ * sizeof(T));
        }
        other.spilled_ = false;
        other.size_ = 0;
    }

    union {
        T inline_[N];
        struct {
            T* ptr;
            uint32_t cap;
        } heap_;
    };
    uint8_t size_ = 0;
    bool spilled_ = false;
};

}  // namespace mooncake
