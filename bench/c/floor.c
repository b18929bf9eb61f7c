/*
 * The C floor of a B1 receiver, for bench/run.sh's row 2f: the least work a receiver can do
 * for the bytes a qtc sender puts on the wire in B1, with the C LZHUF core of row 6
 * (bench/c/lzhuf.c). It reads the sender's side of a captured session (SID, proposal blocks
 * `FA`/`FB ... F> XX`, binary transfers `SOH header | STX blocks | EOT checksum`) from stdin,
 * 8 KB per read(2) as a socket reader would; checks each transfer's EOT checksum and its B1
 * CRC-16 (the first two data bytes, over the rest), decodes the LZHUF payload, appends the text
 * to OUTPUT with write(2) and calls fdatasync(2) once per proposal block (up to 5 messages), as
 * qtc's `full` durability syncs once per block. No index, no BID check, no queueing onward: a
 * floor, not a BBS. The receiver's answers (`FS +++`) are not sent: the capture is replayed.
 *
 * usage: floor-c OUTPUT < capture
 *   prints "cpu_us messages text_bytes syncs": the process's user+system CPU from the first
 *   read to the last sync (getrusage), and what it received.
 */
#define LZHUF_CORE_ONLY
#include "lzhuf.c"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#define READ_SIZE 8192
#define MAX_DATA (1 << 20)

static uint8_t in_buf[MAX_DATA + READ_SIZE];
static size_t in_len, in_pos;
static int eof;

/* Make at least `want` unread bytes available; 0 at the end of the input. */
static int need(size_t want) {
    while (in_len - in_pos < want) {
        ssize_t n;
        if (eof) return 0;
        if (in_pos > 0) {
            memmove(in_buf, in_buf + in_pos, in_len - in_pos);
            in_len -= in_pos;
            in_pos = 0;
        }
        if (in_len + READ_SIZE > sizeof in_buf) return 0;
        n = read(0, in_buf + in_len, READ_SIZE);
        if (n <= 0) eof = 1;
        else in_len += (size_t)n;
    }
    return 1;
}

static int take(void) { return need(1) ? in_buf[in_pos++] : -1; }

/* One text line (CR or LF ended, empty lines skipped) into `line`; 0 at the end. */
static int read_line(char *line, size_t cap) {
    size_t n = 0;
    int c;
    while ((c = take()) >= 0) {
        if (c == '\r' || c == '\n') {
            if (n == 0) continue;
            break;
        }
        if (n + 1 < cap) line[n++] = (char)c;
    }
    line[n] = 0;
    return n > 0;
}

static uint16_t crc_table[256];

static void crc_start(void) {
    for (int b = 0; b < 256; b++) {
        uint16_t crc = (uint16_t)(b << 8);
        for (int i = 0; i < 8; i++) crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        crc_table[b] = crc;
    }
}

static uint16_t crc16(const uint8_t *p, size_t n) {
    uint16_t crc = 0;
    while (n--) crc = (uint16_t)((crc << 8) ^ crc_table[(crc >> 8) ^ *p++]);
    return crc;
}

static uint8_t data[MAX_DATA], text[MAX_DATA + 128];

/* One binary transfer: returns the data length, or -1 (message on stderr). */
static long read_transfer(void) {
    size_t len = 0;
    uint8_t sum = 0;
    int c = take(), n;
    if (c != 0x01 || (n = take()) < 0 || !need((size_t)n)) return fprintf(stderr, "no SOH\n"), -1;
    in_pos += (size_t)n; /* title NUL offset NUL */
    while ((c = take()) == 0x02) {
        if ((n = take()) < 0) return -1;
        if (n == 0) n = 256;
        if (!need((size_t)n) || len + (size_t)n > MAX_DATA) return -1;
        for (int i = 0; i < n; i++) sum = (uint8_t)(sum + in_buf[in_pos + (size_t)i]);
        memcpy(data + len, in_buf + in_pos, (size_t)n);
        in_pos += (size_t)n;
        len += (size_t)n;
    }
    if (c != 0x04 || (c = take()) < 0 || (uint8_t)(sum + c) != 0)
        return fprintf(stderr, "bad EOT checksum\n"), -1;
    return (long)len;
}

/* Check, decode and store one B1 payload; -1 on a bad one. */
static long store(int fd, size_t len) {
    size_t total;
    if (len < 6 || crc16(data + 2, len - 2) != (uint16_t)(data[0] | data[1] << 8))
        return fprintf(stderr, "bad B1 CRC\n"), -1;
    total = (size_t)data[2] | (size_t)data[3] << 8 | (size_t)data[4] << 16 |
            (size_t)data[5] << 24;
    if (total > MAX_DATA || decode(data + 2, len - 2, text) != total) return -1;
    if (write(fd, text, total) != (ssize_t)total) return -1;
    return (long)total;
}

static double cpu_us(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec +
           u.ru_stime.tv_usec;
}

int main(int argc, char **argv) {
    char line[512];
    long msgs = 0, bytes = 0, syncs = 0, proposed = 0, got;
    double t0;
    int fd;
    if (argc != 2) return fprintf(stderr, "usage: floor-c OUTPUT < capture\n"), 2;
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return perror(argv[1]), 1;
    position_tables();
    crc_start();
    t0 = cpu_us();
    while (read_line(line, sizeof line)) {
        if (line[0] == 'F' && (line[1] == 'A' || line[1] == 'B') && line[2] == ' ') proposed++;
        if (line[0] != 'F' || line[1] != '>') continue;
        for (; proposed > 0; proposed--, msgs++) {
            long len = read_transfer();
            if (len < 0 || (got = store(fd, (size_t)len)) < 0) return 1;
            bytes += got;
        }
        if (fdatasync(fd)) return perror("fdatasync"), 1;
        syncs++;
    }
    printf("%.0f %ld %ld %ld\n", cpu_us() - t0, msgs, bytes, syncs);
    return 0;
}
