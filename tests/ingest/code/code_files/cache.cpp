// cache.cpp: an LRU cache used by the resolver.
#include <list>
#include <string>
#include <unordered_map>
#include "resolver/cache.hpp"

namespace resolver {

/// Least-recently-used map from host names to addresses.
class LruCache {
public:
    explicit LruCache(std::size_t capacity) : capacity_(capacity) {}

    /// Return the cached address, refreshing its position.
    std::optional<std::string> get(const std::string& host) {
        auto it = index_.find(host);
        if (it == index_.end()) {
            return std::nullopt;
        }
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
    }

    void put(const std::string& host, std::string addr) {
        evict_if_full();
        order_.emplace_front(host, std::move(addr));
        index_[host] = order_.begin();
    }

private:
    void evict_if_full() {
        if (order_.size() < capacity_) return;
        index_.erase(order_.back().first);
        order_.pop_back();
    }

    std::size_t capacity_;
    std::list<std::pair<std::string, std::string>> order_;
    std::unordered_map<std::string, decltype(order_)::iterator> index_;
};

std::string Resolver::lookup(const std::string& host) {
    if (auto hit = cache_.get(host)) return *hit;
    std::string addr = query_upstream(host);
    cache_.put(host, addr);
    return addr;
}

}  // namespace resolver
