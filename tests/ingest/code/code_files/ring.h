#ifndef RING_H
#define RING_H
#include <stddef.h>

struct ring;

struct ring *ring_new(size_t cap);
int ring_push(struct ring *r, long ts, const char *msg);

static inline int ring_empty(size_t len) {
    return len == 0;
}

#endif
