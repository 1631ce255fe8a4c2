// EvictionList: one eviction list of a shard, most recent first, threaded through the
// objects' own EvictionHook (prev/next): linking, unlinking and moving to the front allocate
// nothing, where a std::list<ObjectMeta*> cost a 32-byte heap node per MEMORY object.
//
// Guarded by the shard lock, like the hooks it links (core/master/eviction_order.h).
#pragma once

#include <cstddef>
#include <iterator>

#include "core/master/object.h"

namespace mooncake {

class EvictionList {
public:
    EvictionList() = default;
    EvictionList(const EvictionList&) = delete;
    EvictionList& operator=(const EvictionList&) = delete;

    bool empty() const { return head_ == nullptr; }
    size_t size() const { return size_; }
    ObjectMeta* front() const { return head_; }
    ObjectMeta* back() const { return tail_; }

    // `meta` must not be in any list.
    void push_front(ObjectMeta* meta) {
        EvictionHook& h = meta->eviction;
        h.prev = nullptr;
        h.next = head_;
        if (head_ != nullptr) {
            head_->eviction.prev = meta;
        } else {
            tail_ = meta;
        }
        head_ = meta;
        ++size_;
    }
    // `meta` must not be in any list: listed as the least recent.
    void push_back(ObjectMeta* meta) {
        EvictionHook& h = meta->eviction;
        h.next = nullptr;
        h.prev = tail_;
        if (tail_ != nullptr) {
            tail_->eviction.next = meta;
        } else {
            head_ = meta;
        }
        tail_ = meta;
        ++size_;
    }
    // `meta` must be in this list.
    void erase(ObjectMeta* meta) {
        EvictionHook& h = meta->eviction;
        if (h.prev != nullptr) {
            h.prev->eviction.next = h.next;
        } else {
            head_ = h.next;
        }
        if (h.next != nullptr) {
            h.next->eviction.prev = h.prev;
        } else {
            tail_ = h.prev;
        }
        h.prev = h.next = nullptr;
        --size_;
    }

    // Least recent first: what eviction rounds walk.
    class ReverseIterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = ObjectMeta*;
        using difference_type = std::ptrdiff_t;
        using pointer = ObjectMeta* const*;
        using reference = ObjectMeta* const&;
        explicit ReverseIterator(ObjectMeta* at = nullptr) : at_(at) {}
        reference operator*() const { return at_; }
        ReverseIterator& operator++() {
            at_ = at_->eviction.prev;
            return *this;
        }
        bool operator==(const ReverseIterator& o) const { return at_ == o.at_; }
        bool operator!=(const ReverseIterator& o) const { return at_ != o.at_; }

    private:
        ObjectMeta* at_;
    };
    ReverseIterator rbegin() const { return ReverseIterator(tail_); }
    ReverseIterator rend() const { return ReverseIterator(nullptr); }

private:
    ObjectMeta* head_ = nullptr;
    ObjectMeta* tail_ = nullptr;
    size_t size_ = 0;
};

}  // namespace mooncake
