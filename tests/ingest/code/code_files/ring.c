/* ring.c: a fixed-size ring buffer for log records. */
#include <stdlib.h>
#include <string.h>
#include "ring.h"

#define RING_MIN 8

typedef struct record {
    long ts;
    char msg[128];
} record_t;

struct ring {
    record_t *items;
    size_t head;
    size_t len;
    size_t cap;
};

static size_t next_index(const struct ring *r, size_t i) {
    return (i + 1) % r->cap;
}

/* Allocate a ring holding at least `cap` records. */
struct ring *ring_new(size_t cap) {
    struct ring *r = malloc(sizeof *r);
    if (r == NULL) {
        return NULL;
    }
    r->cap = cap < RING_MIN ? RING_MIN : cap;
    r->items = calloc(r->cap, sizeof(record_t));
    r->head = 0;
    r->len = 0;
    return r;
}

/* Append a record, overwriting the oldest when full. */
int ring_push(struct ring *r, long ts, const char *msg) {
    size_t slot = (r->head + r->len) % r->cap;
    r->items[slot].ts = ts;
    strncpy(r->items[slot].msg, msg, sizeof r->items[slot].msg - 1);
    if (r->len == r->cap) {
        r->head = next_index(r, r->head);
    } else {
        r->len++;
    }
    return 0;
}

void ring_free(struct ring *r) {
    free(r->items);
    free(r);
}
