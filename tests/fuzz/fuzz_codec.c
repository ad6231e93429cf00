/*
 * fuzz_codec.c - libFuzzer target of the dense encoding of a chunk
 * (analyze/compact/compact_codec.h), the first half of every frame of a
 * compact log, and its two promises:
 *
 *  - input byte 0 even: the rest is a chunk's bytes (records, damage,
 *    zeros, whatever a file holds): encoded, then decoded, it must come
 *    back byte for byte ("any chunk decodes byte for byte");
 *  - byte 0 odd: the rest is an encoding, as a damaged frame would hold:
 *    decoding must never read or write out of bounds, and when it gives a
 *    chunk, that chunk encoded and decoded again must come back the same.
 *
 * A chunk that did not come back is a finding (abort): compaction would
 * store such a chunk raw (compact.c checks every chunk), so it costs size,
 * never data, but the codec promises it does not happen.  The seeds are
 * the starts of real chunks (tests/fuzz/seeds.py, as fuzz_reader's) and
 * their encodings.  Build and run as fuzz_reader (tests/fuzz/fuzz.mk).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compact_codec.h"
#include "log_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mf_codec *codec;
static uint8_t *chunk, *again;

/* Encode the len bytes at c and decode them into out: must be c again. */
static void round_trip(const uint8_t *c, size_t len, uint8_t *out)
{
    const uint8_t *enc;
    mf_chunk_summary sum;
    size_t n = mf_codec_encode(codec, c, len, &enc, &sum);
    char why[320];
    long got = mf_codec_decode(codec, enc, n, out, why, sizeof why);
    if (got != (long)len || memcmp(out, c, len) != 0)
        abort();           /* the codec lost or changed bytes */
    for (size_t i = len; i < MF_CHUNK_SIZE; i += 4096)
        if (out[i])
            abort();       /* past the chunk's bytes: zeros */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!codec && (!(codec = mf_codec_new()) || !(chunk = malloc(MF_CHUNK_SIZE)) ||
                   !(again = malloc(MF_CHUNK_SIZE))))
        abort();
    if (size < 1 || size - 1 > MF_CHUNK_SIZE)
        return 0;
    if (!(data[0] & 1)) {
        round_trip(data + 1, size - 1, chunk);
        return 0;
    }
    char why[320];
    long n = mf_codec_decode(codec, data + 1, size - 1, chunk, why, sizeof why);
    if (n >= 0)
        round_trip(chunk, (size_t)n, again);
    return 0;
}
