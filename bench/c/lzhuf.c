/*
 * A C LZHUF core for bench/run.sh: the 1989 Yoshizaki/Okumura algorithm as FBB uses it
 * (N = 2048, F = 60, THRESHOLD = 2), written for this benchmark from the published description
 * of the algorithm (no FBB or LZHUF.C source is copied here). It keeps the original's structure:
 * a binary search tree of the ring buffer's strings, an adaptive Huffman tree kept in slots
 * sorted by frequency and updated by a linear scan for the swap partner, symbols written and read
 * one code at a time, bits read one at a time. Only the I/O differs: the original reads and
 * writes FILEs a byte at a time; this core works on memory buffers, so the timings are of the
 * codec alone. Its B0 output (u32 LE length | stream) is byte-identical to FBB's; qtc's has the
 * same parse with some matches coded nearer, and the benchmark checks on every run that each
 * decodes the other's.
 *
 * usage: lzhuf-c INPUT REPS OUTPUT [PIECE]
 *   compresses INPUT REPS times and decompresses the result REPS times, checks the round trip,
 *   writes the compressed form to OUTPUT and prints "encode_ns decode_ns": the fastest run of each,
 *   in CPU time of the thread (time preempted by other processes does not count). With PIECE,
 *   each PIECE bytes of INPUT are compressed and decompressed on their own, as many different
 *   messages; a run is all of them, and OUTPUT gets the first piece's compressed form.
 * usage: lzhuf-c -d PAYLOAD OUTPUT
 *   decompresses a B0 PAYLOAD (another encoder's: the benchmark cross-checks the two) to OUTPUT.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 2048          /* ring buffer */
#define F 60            /* look-ahead, longest match */
#define THRESHOLD 2     /* matches this short are sent as literals */
#define NIL N           /* "no node" in the search tree */

#define N_CHAR (256 - THRESHOLD + F)  /* literals and match lengths */
#define T (N_CHAR * 2 - 1)            /* Huffman tree slots */
#define R (T - 1)                     /* root slot */
#define MAX_FREQ 0x8000               /* rebuild the tree when the root reaches this */

/* ---- byte buffers standing in for the original's FILE streams ---- */

static const uint8_t *in_p, *in_end;
static uint8_t *out_p, *out_end;

static int next_byte(void) { return in_p < in_end ? *in_p++ : -1; }

static void emit_byte(int c) {
    if (out_p < out_end) *out_p++ = (uint8_t)c;
}

/* ---- adaptive Huffman model ---- */

static unsigned freq[T + 1]; /* freq[T] is a sentinel */
static int prnt[T + N_CHAR]; /* parent slot of a slot, and slot of symbol s at prnt[s + T] */
static int son[T];           /* first child slot, or symbol + T for a leaf */

static void huff_start(void) {
    int s, i, j;
    for (s = 0; s < N_CHAR; s++) {
        freq[s] = 1;
        son[s] = s + T;
        prnt[s + T] = s;
    }
    for (i = 0, j = N_CHAR; j <= R; i += 2, j++) {
        freq[j] = freq[i] + freq[i + 1];
        son[j] = i;
        prnt[i] = prnt[i + 1] = j;
    }
    freq[T] = 0xffff;
    prnt[R] = 0;
}

/* Halve every leaf's count (rounding up) and rebuild the tree from the leaves. */
static void huff_rebuild(void) {
    int from, to, left, parent, at;
    unsigned f;
    to = 0;
    for (from = 0; from < T; from++) {
        if (son[from] >= T) {
            freq[to] = (freq[from] + 1) / 2;
            son[to] = son[from];
            to++;
        }
    }
    for (left = 0, parent = N_CHAR; parent < T; left += 2, parent++) {
        f = freq[left] + freq[left + 1];
        for (at = parent; at > 0 && f < freq[at - 1]; at--)
            ;
        memmove(&freq[at + 1], &freq[at], (size_t)(parent - at) * sizeof freq[0]);
        memmove(&son[at + 1], &son[at], (size_t)(parent - at) * sizeof son[0]);
        freq[at] = f;
        son[at] = left;
    }
    for (at = 0; at < T; at++) {
        int child = son[at];
        prnt[child] = at;
        if (child < T) prnt[child + 1] = at;
    }
}

/* Count one more `sym`, swapping nodes up to keep the slots sorted by frequency. */
static void huff_update(int sym) {
    int c, l, a, b;
    unsigned k;
    if (freq[R] == MAX_FREQ) huff_rebuild();
    c = prnt[sym + T];
    do {
        k = ++freq[c];
        if (k > freq[c + 1]) {
            /* move the node past the run of slots still at k - 1 */
            for (l = c + 1; k > freq[l + 1]; l++)
                ;
            freq[c] = freq[l];
            freq[l] = k;
            a = son[c];
            b = son[l];
            prnt[a] = l;
            if (a < T) prnt[a + 1] = l;
            prnt[b] = c;
            if (b < T) prnt[b + 1] = c;
            son[l] = a;
            son[c] = b;
            c = l;
        }
        c = prnt[c];
    } while (c != 0);
}

/* ---- the fixed code of a match position's upper 6 bits ---- */

static uint8_t pos_code[64], pos_len[64]; /* code left-aligned in 8 bits */
static uint8_t pos_by_byte[256], len_by_byte[256];

static void position_tables(void) {
    /* lengths 3..8 bits, assigned canonically: 1, 3, 8, 12, 24, 16 codes */
    static const int count[6] = {1, 3, 8, 12, 24, 16};
    int len, n, sym = 0, b;
    unsigned code = 0;
    for (len = 3; len <= 8; len++) {
        for (n = 0; n < count[len - 3]; n++, sym++, code++) {
            pos_code[sym] = (uint8_t)(code << (8 - len));
            pos_len[sym] = (uint8_t)len;
            for (b = 0; b < 1 << (8 - len); b++) {
                pos_by_byte[(code << (8 - len)) + b] = (uint8_t)sym;
                len_by_byte[(code << (8 - len)) + b] = (uint8_t)len;
            }
        }
        code <<= 1;
    }
}

/* ---- encoder ---- */

static uint8_t ring[N + F - 1];
static int lson[N + 1], rson[N + 257], dad[N + 1];
static int match_length, match_position;

static unsigned put_word; /* pending bits, left-aligned in 16 */
static int put_count;

/* Append the top `len` bits of the 16-bit `code`. */
static void put_code(int len, unsigned code) {
    put_word |= code >> put_count;
    put_count += len;
    if (put_count >= 8) {
        emit_byte((int)(put_word >> 8));
        put_count -= 8;
        if (put_count >= 8) {
            emit_byte((int)(put_word & 0xff));
            put_count -= 8;
            put_word = (code << (len - put_count)) & 0xffff;
        } else {
            put_word = (put_word << 8) & 0xffff;
        }
    }
}

/* Node q takes node p's place under p's parent; p leaves the tree. */
static void take_place(int p, int q) {
    dad[q] = dad[p];
    if (rson[dad[p]] == p)
        rson[dad[p]] = q;
    else
        lson[dad[p]] = q;
    dad[p] = NIL;
}

static void tree_init(void) {
    int i;
    for (i = N + 1; i <= N + 256; i++) rson[i] = NIL;
    for (i = 0; i < N; i++) dad[i] = NIL;
}

/* Insert the string at r; leave its longest (then nearest) earlier match in match_*. */
static void tree_insert(int r) {
    const uint8_t *key = &ring[r];
    int p = N + 1 + key[0], i, diff = 1;
    unsigned dist;
    lson[r] = rson[r] = NIL;
    match_length = 0;
    for (;;) {
        int *child = diff >= 0 ? &rson[p] : &lson[p];
        if (*child == NIL) {
            *child = r;
            dad[r] = p;
            return;
        }
        p = *child;
        for (i = 1; i < F; i++) {
            diff = key[i] - ring[p + i];
            if (diff != 0) break;
        }
        if (i <= THRESHOLD) continue;
        dist = (unsigned)(((r - p) & (N - 1)) - 1);
        if (i > match_length) {
            match_position = (int)dist;
            match_length = i;
            if (i >= F) break;
        } else if (i == match_length && (int)dist < match_position) {
            match_position = (int)dist;
        }
    }
    /* a full-length match: r takes p's place, children included */
    lson[r] = lson[p];
    rson[r] = rson[p];
    dad[lson[p]] = r;
    dad[rson[p]] = r;
    take_place(p, r);
}

static void tree_delete(int p) {
    int q;
    if (dad[p] == NIL) return;
    if (rson[p] == NIL) {
        q = lson[p];
    } else if (lson[p] == NIL) {
        q = rson[p];
    } else {
        q = lson[p];
        if (rson[q] != NIL) {
            while (rson[q] != NIL) q = rson[q];
            rson[dad[q]] = lson[q];
            dad[lson[q]] = dad[q];
            lson[q] = lson[p];
            dad[lson[p]] = q;
        }
        rson[q] = rson[p];
        dad[rson[p]] = q;
    }
    take_place(p, q);
}

static void encode_symbol(int sym) {
    unsigned code = 0;
    int len = 0, slot = prnt[sym + T];
    do { /* leaf to root: each slot's parity is its bit */
        code >>= 1;
        if (slot & 1) code |= 0x8000;
        len++;
        slot = prnt[slot];
    } while (slot != R);
    put_code(len, code);
    huff_update(sym);
}

static void encode_position(int pos) {
    int hi = pos >> 6;
    put_code(pos_len[hi], (unsigned)pos_code[hi] << 8);
    put_code(6, (unsigned)(pos & 0x3f) << 10);
}

static size_t encode(const uint8_t *src, size_t size, uint8_t *dst, size_t cap) {
    int i, c, len, last, s = 0, r = N - F;
    in_p = src;
    in_end = src + size;
    out_p = dst;
    out_end = dst + cap;
    for (i = 0; i < 4; i++) emit_byte((int)((size >> (8 * i)) & 0xff));
    put_word = 0;
    put_count = 0;
    huff_start();
    tree_init();
    /* spaces behind the start, zeros (the original's fresh static buffer) from it on */
    memset(ring, ' ', N - F);
    memset(ring + N - F, 0, sizeof ring - (N - F));
    for (len = 0; len < F && (c = next_byte()) >= 0; len++) ring[r + len] = (uint8_t)c;
    for (i = 1; i <= F; i++) tree_insert(r - i);
    tree_insert(r);
    do {
        if (match_length > len) match_length = len;
        if (match_length <= THRESHOLD) {
            match_length = 1;
            encode_symbol(ring[r]);
        } else {
            encode_symbol(255 - THRESHOLD + match_length);
            encode_position(match_position);
        }
        last = match_length;
        for (i = 0; i < last && (c = next_byte()) >= 0; i++) {
            tree_delete(s);
            ring[s] = (uint8_t)c;
            if (s < F - 1) ring[s + N] = (uint8_t)c;
            s = (s + 1) & (N - 1);
            r = (r + 1) & (N - 1);
            tree_insert(r);
        }
        for (; i < last; i++) {
            tree_delete(s);
            s = (s + 1) & (N - 1);
            r = (r + 1) & (N - 1);
            if (--len) tree_insert(r);
        }
    } while (len > 0);
    if (put_count) emit_byte((int)(put_word >> 8));
    return (size_t)(out_p - dst);
}

/* ---- decoder ---- */

static unsigned get_word; /* buffered bits, left-aligned in 16 */
static int get_count;

/* Top up to more than 8 buffered bits; past the end of the input the bits are zeros. */
static void fill_bits(void) {
    int c;
    while (get_count <= 8) {
        c = next_byte();
        if (c < 0) c = 0;
        get_word |= (unsigned)c << (8 - get_count);
        get_count += 8;
    }
}

static int get_bit(void) {
    int c;
    fill_bits();
    c = (get_word >> 15) & 1;
    get_word = (get_word << 1) & 0xffff;
    get_count--;
    return c;
}

static int get_byte(void) {
    int c;
    fill_bits();
    c = (int)(get_word >> 8);
    get_word = (get_word << 8) & 0xffff;
    get_count -= 8;
    return c;
}

static int decode_symbol(void) {
    int c = son[R];
    while (c < T) c = son[c + get_bit()];
    c -= T;
    huff_update(c);
    return c;
}

static int decode_position(void) {
    int b = get_byte(), hi = pos_by_byte[b], extra = len_by_byte[b] - 2;
    while (extra--) b = (b << 1) + get_bit();
    return (hi << 6) | (b & 0x3f);
}

static size_t decode(const uint8_t *src, size_t size, uint8_t *dst) {
    size_t total, done = 0;
    int i, k, c, r = N - F;
    if (size < 4) return 0;
    total = (size_t)src[0] | (size_t)src[1] << 8 | (size_t)src[2] << 16 | (size_t)src[3] << 24;
    in_p = src + 4;
    in_end = src + size;
    get_word = 0;
    get_count = 0;
    huff_start();
    memset(ring, ' ', N - F);
    memset(ring + N - F, 0, sizeof ring - (N - F));
    while (done < total) {
        c = decode_symbol();
        if (c < 256) {
            dst[done++] = (uint8_t)c;
            ring[r] = (uint8_t)c;
            r = (r + 1) & (N - 1);
        } else {
            int count = c - 255 + THRESHOLD;
            i = (r - decode_position() - 1) & (N - 1);
            for (k = 0; k < count && done < total; k++) {
                c = ring[(i + k) & (N - 1)];
                dst[done++] = (uint8_t)c;
                ring[r] = (uint8_t)c;
                r = (r + 1) & (N - 1);
            }
        }
    }
    return done;
}

/* ---- timing driver (bench/c/floor.c includes the core alone) ---- */
#ifndef LZHUF_CORE_ONLY

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Read a whole file; NULL (after a message) if it cannot be read or is empty. */
static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    long n;
    uint8_t *data = NULL;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
        *size = (size_t)n;
        data = malloc(*size);
        if (data && fread(data, 1, *size, f) != *size) {
            free(data);
            data = NULL;
        }
    }
    if (f) fclose(f);
    if (!data) fprintf(stderr, "lzhuf-c: cannot read %s\n", path);
    return data;
}

static int write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
        fprintf(stderr, "lzhuf-c: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int decode_file(const char *in, const char *out) {
    size_t size, total;
    uint8_t *packed = read_file(in, &size), *back;
    if (!packed || size < 4) return 1;
    total = (size_t)packed[0] | (size_t)packed[1] << 8 | (size_t)packed[2] << 16 |
            (size_t)packed[3] << 24;
    back = malloc(total + 1);
    if (!back) return 1;
    position_tables();
    if (decode(packed, size, back) != total) return 1;
    return write_file(out, back, total);
}

int main(int argc, char **argv) {
    uint8_t *data, *packed, *back;
    size_t size, piece, pieces, cap, p, *lens;
    int reps, n;
    double t, best_enc = 1e300, best_dec = 1e300;
    if (argc == 4 && strcmp(argv[1], "-d") == 0) return decode_file(argv[2], argv[3]);
    if ((argc != 4 && argc != 5) || (reps = atoi(argv[2])) < 1 ||
        (argc == 5 && atol(argv[4]) < 1)) {
        fprintf(stderr, "usage: lzhuf-c INPUT REPS OUTPUT [PIECE] | lzhuf-c -d PAYLOAD OUTPUT\n");
        return 2;
    }
    if (!(data = read_file(argv[1], &size))) return 1;
    piece = argc == 5 ? (size_t)atol(argv[4]) : size;
    pieces = (size + piece - 1) / piece;
    cap = piece * 2 + 64;
    packed = malloc(pieces * cap);
    lens = malloc(pieces * sizeof *lens);
    back = malloc(size);
    if (!packed || !lens || !back) return 1;
    position_tables();
#define PIECE_LEN(p) ((p) + 1 < pieces ? piece : size - (p) * piece)
    for (n = 0; n < reps; n++) {
        t = now_ns();
        for (p = 0; p < pieces; p++)
            lens[p] = encode(data + p * piece, PIECE_LEN(p), packed + p * cap, cap);
        t = now_ns() - t;
        if (t < best_enc) best_enc = t;
    }
    for (n = 0; n < reps; n++) {
        t = now_ns();
        for (p = 0; p < pieces; p++)
            if (decode(packed + p * cap, lens[p], back + p * piece) != PIECE_LEN(p)) return 1;
        t = now_ns() - t;
        if (t < best_dec) best_dec = t;
    }
    if (memcmp(data, back, size) != 0) {
        fprintf(stderr, "lzhuf-c: round trip differs\n");
        return 1;
    }
    if (write_file(argv[3], packed, lens[0])) return 1;
    printf("%.0f %.0f\n", best_enc, best_dec);
    return 0;
}
#endif
