#define _GNU_SOURCE   // memrchr
#include "bytescan.h"
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define BYTESCAN_SSE2 1
#endif

static inline int is_attention(uint8_t b) {
    return b == 0x26 || b == 0xC2 || (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D);
}

static inline int ends_run(const uint8_t *p, size_t i, size_t n, int markup) {
    uint8_t b = p[i];
    if (b == 0x09 || b == 0x0A || b == 0x0D || b == 0x0C) return 1;
    if (markup && (b == '<' || b == '&')) return 1;
    if (b == 0x20) {
        if (i + 1 >= n) return 1;
        uint8_t next = p[i + 1];
        return next <= 0x20 || (markup && next == '<');
    }
    return 0;
}

size_t bytescan_non_ascii(const uint8_t *p, size_t n) {
    size_t i = 0;
#ifdef BYTESCAN_SSE2
    // Sixty-four bytes a step while they are all ASCII (one branch instead of four), then
    // sixteen at a time to the byte.
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i)), _mm_loadu_si128((const __m128i *)(p + i + 16)));
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i + 32)), _mm_loadu_si128((const __m128i *)(p + i + 48)));
        if (_mm_movemask_epi8(_mm_or_si128(a, b))) break;
    }
    for (; i + 16 <= n; i += 16) {
        int mask = _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + i)));
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) if (p[i] >= 0x80) return i;
    return n;
}

#ifdef BYTESCAN_SSE2
/// Bit k set when p[k] needs attention (see `is_attention`), or with `lt` is '<'.
static inline unsigned attention_mask(const uint8_t *p, int lt) {
    const __m128i amp = _mm_set1_epi8(0x26), c2 = _mm_set1_epi8((char)0xC2);
    const __m128i tab = _mm_set1_epi8(0x09), lf = _mm_set1_epi8(0x0A), cr = _mm_set1_epi8(0x0D);
    const __m128i open = lt ? _mm_set1_epi8('<') : _mm_set1_epi8(0x26);
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    // Unsigned v < 0x20: min(v, 0x1F) == v.
    __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
    __m128i allowed = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, lf)), _mm_cmpeq_epi8(v, cr));
    __m128i hit = _mm_or_si128(_mm_andnot_si128(allowed, control), _mm_or_si128(_mm_cmpeq_epi8(v, amp), _mm_cmpeq_epi8(v, c2)));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, _mm_cmpeq_epi8(v, open)));
}
#endif

static inline size_t attention_scan(const uint8_t *p, size_t n, int lt) {
    size_t i = 0;
#ifdef BYTESCAN_SSE2
    for (; i + 16 <= n; i += 16) {
        unsigned mask = attention_mask(p + i, lt);
        if (mask) return i + (size_t)__builtin_ctz(mask);
    }
#endif
    for (; i < n; i++) if (is_attention(p[i]) || (lt && p[i] == '<')) return i;
    return n;
}

size_t bytescan_attention(const uint8_t *p, size_t n) { return attention_scan(p, n, 0); }

/// The length of the well-formed sequence of two to four bytes at p[i], or 0.
static inline size_t utf8_sequence_length(const uint8_t *p, size_t i, size_t n) {
#define CONT(k, lo, hi) (i + (k) < n && p[i + (k)] >= (lo) && p[i + (k)] <= (hi))
    uint8_t b = p[i];
    if (b >= 0xC2 && b <= 0xDF) return CONT(1, 0x80, 0xBF) ? 2 : 0;
    if (b == 0xE0) return CONT(1, 0xA0, 0xBF) && CONT(2, 0x80, 0xBF) ? 3 : 0;
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return CONT(1, 0x80, 0xBF) && CONT(2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xED) return CONT(1, 0x80, 0x9F) && CONT(2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xF0) return CONT(1, 0x90, 0xBF) && CONT(2, 0x80, 0xBF) && CONT(3, 0x80, 0xBF) ? 4 : 0;
    if (b >= 0xF1 && b <= 0xF3) return CONT(1, 0x80, 0xBF) && CONT(2, 0x80, 0xBF) && CONT(3, 0x80, 0xBF) ? 4 : 0;
    if (b == 0xF4) return CONT(1, 0x80, 0x8F) && CONT(2, 0x80, 0xBF) && CONT(3, 0x80, 0xBF) ? 4 : 0;
    return 0;
#undef CONT
}

size_t bytescan_utf8_invalid(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        // Text in other scripts has a few ASCII bytes (a space, punctuation) between its
        // sequences: those are stepped over here, longer runs searched for in blocks.
        size_t near = i + 8 < n ? i + 8 : n;
        while (i < near && p[i] < 0x80) i++;
        if (i == near) i += bytescan_non_ascii(p + i, n - i);
        if (i >= n) break;
        size_t length = utf8_sequence_length(p, i, n);
        if (length == 0) return i;
        i += length;
    }
    return n;
}

size_t bytescan_repair(const uint8_t *p, size_t n) { return attention_scan(p, n, 1); }

/// XML's Char production: the code points a character reference may name.
static inline int xml_allowed(uint32_t v) {
    return v == 0x9 || v == 0xA || v == 0xD || (v >= 0x20 && v <= 0xD7FF) || (v >= 0xE000 && v <= 0xFFFD) || (v >= 0x10000 && v <= 0x10FFFF);
}

/// The length of the character reference at p[i] (an '&') that the repair keeps as written
/// ("&#8217;", "&#x2014;": an allowed character outside 128–159, 'x' in lower case), or 0.
static inline size_t kept_character_reference(const uint8_t *p, size_t i, size_t n) {
    size_t j = i + 1;
    if (j >= n || p[j] != '#') return 0;
    j++;
    int hex = j < n && p[j] == 'x';
    if (hex) j++;
    size_t start = j;
    uint32_t value = 0;
    while (j < n && j - start < 8) {
        uint8_t c = p[j];
        if (c >= '0' && c <= '9') value = value * (hex ? 16 : 10) + (uint32_t)(c - '0');
        else if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f') value = value * 16 + (uint32_t)((c | 0x20) - 'a' + 10);
        else break;
        j++;
    }
    if (j == start || j >= n || p[j] != ';' || !xml_allowed(value) || (value >= 0x80 && value <= 0x9F)) return 0;
    return j + 1 - i;
}

/// The length of the reference at p[i] (an '&') to one of XML's five entities, or 0.
static inline size_t predefined_entity(const uint8_t *p, size_t i, size_t n) {
    size_t left = n - i;
    if (left >= 4 && p[i + 3] == ';' && p[i + 2] == 't' && (p[i + 1] == 'l' || p[i + 1] == 'g')) return 4;
    if (left >= 5 && p[i + 1] == 'a' && p[i + 2] == 'm' && p[i + 3] == 'p' && p[i + 4] == ';') return 5;
    if (left >= 6 && p[i + 5] == ';' &&
        ((p[i + 1] == 'q' && p[i + 2] == 'u' && p[i + 3] == 'o' && p[i + 4] == 't') ||
         (p[i + 1] == 'a' && p[i + 2] == 'p' && p[i + 3] == 'o' && p[i + 4] == 's'))) return 6;
    return 0;
}

/// Whether the byte at p[k], found by the scan, can be passed over; `*resume` is where the
/// scan goes on (past an entity reference).
static inline int passable(const uint8_t *p, size_t k, size_t n, int lt, size_t *resume) {
    if (p[k] == '<') {
        // Only "<!" and "<?" may open a section (CDATA, comment, processing instruction).
        *resume = k + 1;
        return lt && k + 1 < n && p[k + 1] != '!' && p[k + 1] != '?';
    }
    if (p[k] != '&') return 0;
    size_t length = predefined_entity(p, k, n);
    if (length == 0) length = kept_character_reference(p, k, n);
    *resume = k + length;
    return length > 0;
}

static inline size_t scan_past_entities(const uint8_t *p, size_t n, int lt) {
    size_t i = 0, resume = 0;
#ifdef BYTESCAN_SSE2
    // The bytes of each block are looked at in turn from its mask: escaped HTML has a
    // reference every few bytes, and starting a new search after each one was most of the cost.
    // Sixty-four bytes a step (one branch for a block with nothing in it), then sixteen.
    for (; i + 64 <= n; i += 64) {
        uint64_t mask = (uint64_t)attention_mask(p + i, lt) | (uint64_t)attention_mask(p + i + 16, lt) << 16 |
                        (uint64_t)attention_mask(p + i + 32, lt) << 32 | (uint64_t)attention_mask(p + i + 48, lt) << 48;
        while (mask) {
            size_t k = i + (size_t)__builtin_ctzll(mask);
            mask &= mask - 1;
            if (k < resume) continue;
            if (!passable(p, k, n, lt, &resume)) return k;
        }
    }
    for (; i + 16 <= n; i += 16) {
        unsigned mask = attention_mask(p + i, lt);
        while (mask) {
            size_t k = i + (size_t)__builtin_ctz(mask);
            mask &= mask - 1;
            if (k < resume) continue;
            if (!passable(p, k, n, lt, &resume)) return k;
        }
    }
#endif
    for (i = i > resume ? i : resume; i < n; i++) {
        if (i < resume) continue;
        if (is_attention(p[i]) || (lt && p[i] == '<')) {
            if (!passable(p, i, n, lt, &resume)) return i;
            i = resume - 1;
        }
    }
    return n;
}

size_t bytescan_attention_past_entities(const uint8_t *p, size_t n) { return scan_past_entities(p, n, 0); }

size_t bytescan_repair_past_entities(const uint8_t *p, size_t n) { return scan_past_entities(p, n, 1); }

size_t bytescan_text_run(const uint8_t *p, size_t n, int markup) {
    size_t i = 0;
#ifdef BYTESCAN_SSE2
    const __m128i space = _mm_set1_epi8(0x20), lt = _mm_set1_epi8('<'), amp = _mm_set1_epi8('&');
    const __m128i tab = _mm_set1_epi8(0x09), lf = _mm_set1_epi8(0x0A), cr = _mm_set1_epi8(0x0D), ff = _mm_set1_epi8(0x0C);
    const __m128i markupMask = markup ? _mm_set1_epi8((char)0xFF) : _mm_setzero_si128();
    // Each block also reads the byte after it (the space rule looks one ahead).
    for (; i + 17 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i next = _mm_loadu_si128((const __m128i *)(p + i + 1));
        __m128i white = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, lf)),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, ff)));
        __m128i tags = _mm_and_si128(markupMask, _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, amp)));
        // Unsigned next <= 0x20: min(next, 0x20) == next.
        __m128i nextBreaks = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(next, space), next),
                                          _mm_and_si128(markupMask, _mm_cmpeq_epi8(next, lt)));
        __m128i spaces = _mm_and_si128(_mm_cmpeq_epi8(v, space), nextBreaks);
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(white, tags), spaces));
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) if (ends_run(p, i, n, markup)) return i;
    return n;
}

size_t bytescan_tag(const uint8_t *p, size_t n) {
    size_t i = 0;
#ifdef BYTESCAN_SSE2
    const __m128i dq = _mm_set1_epi8('"'), sq = _mm_set1_epi8('\''), lt = _mm_set1_epi8('<'), gt = _mm_set1_epi8('>');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, dq), _mm_cmpeq_epi8(v, sq)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, gt)));
        int mask = _mm_movemask_epi8(hit);
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) if (p[i] == '"' || p[i] == '\'' || p[i] == '<' || p[i] == '>') return i;
    return n;
}

/* Passes over a section that starts at p[i] ("<!--", "<![CDATA[", "<?", "<!DOCTYPE…"): the index
   after its end, or n. */
static size_t skip_section(const uint8_t *p, size_t n, size_t i) {
    const char *end;
    if (i + 3 < n && p[i + 1] == '!' && p[i + 2] == '-' && p[i + 3] == '-') end = "-->";
    else if (i + 8 < n && memcmp(p + i + 1, "![CDATA[", 8) == 0) end = "]]>";
    else if (i + 1 < n && p[i + 1] == '?') end = "?>";
    else end = ">";
    size_t length = strlen(end);
    for (size_t j = i + 2; j + length <= n;) {
        const uint8_t *hit = memchr(p + j, end[0], n - j);
        if (!hit) return n;
        j = (size_t)(hit - p);
        if (j + length <= n && memcmp(p + j, end, length) == 0) return j + length;
        j += 1;
    }
    return n;
}

// The tag that starts at `start` (a '<' that is not a section) and how many attributes it may
// have: quoted values after a '=' (white space between them allowed), up to its '>' or the
// next '<'. Every attribute libxml2 accepts has one, so this is never fewer.
static size_t tag_attributes(const uint8_t *p, size_t n, size_t start) {
    size_t count = 0;
    int afterEquals = 0;
    for (size_t j = start + 1; j < n; j++) {
        uint8_t c = p[j];
        if (c == '"' || c == '\'') {
            // A quoted value (often a long URL) is skipped in one search; libxml2 ends the
            // tag at a '<' in it.
            const uint8_t *close = memchr(p + j + 1, c, n - j - 1);
            if (!close || memchr(p + j + 1, '<', (size_t)(close - p) - j - 1)) break;
            count += (size_t)afterEquals;
            afterEquals = 0;
            j = (size_t)(close - p);
        } else if (c == '=') {
            afterEquals = 1;
        } else if (c == '>' || c == '<') {
            break;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            afterEquals = 0;
        }
    }
    return count;
}

// The exact rule, tag by tag in document order, passing over sections.
size_t bytescan_attribute_flood_exact(const uint8_t *p, size_t n, size_t limit) {
    size_t i = 0;
    while (i < n) {
        const uint8_t *open = memchr(p + i, '<', n - i);
        if (!open) return n;
        size_t start = (size_t)(open - p);
        if (start + 1 < n && (p[start + 1] == '!' || p[start + 1] == '?')) {
            i = skip_section(p, n, start);
            continue;
        }
        if (tag_attributes(p, n, start) > limit) return start;
        i = start + 1;
    }
    return n;
}

// Each attribute a tag's count includes takes at least three bytes ('=' and two quotes)
// before the next '<'. So a tag followed by another '<' within 3 × (`limit` + 1) bytes is no
// flood, and the search jumps: from a '<', the last '<' in the next 3 × (`limit` + 1) bytes
// is found searching backwards (in markup, a few bytes from the window's end), and every '<'
// passed over has that one within reach too. Most bytes of a feed are never read; only a '<'
// with no other in reach (escaped HTML full of links, say) has its tag read, and only a tag
// that really has more than `limit` sends the whole document through the exact rule (which
// passes over sections).
size_t bytescan_attribute_flood(const uint8_t *p, size_t n, size_t limit) {
    const size_t reach = 3 * (limit + 1);
    const uint8_t *first = memchr(p, '<', n);
    if (!first) return n;
    size_t at = (size_t)(first - p);
    for (;;) {
        size_t window = n - at - 1 < reach ? n - at - 1 : reach;
        const uint8_t *later = window ? memrchr(p + at + 1, '<', window) : NULL;
        if (later) {
            at = (size_t)(later - p);
            continue;
        }
        // (A section's '<' never starts a tag: the long text of a CDATA section is not read.)
        int section = at + 1 < n && (p[at + 1] == '!' || p[at + 1] == '?');
        if (!section && tag_attributes(p, n, at) > limit) return bytescan_attribute_flood_exact(p, n, limit);
        size_t from = at + 1 + window;
        const uint8_t *next = from < n ? memchr(p + from, '<', n - from) : NULL;
        if (!next) return n;
        at = (size_t)(next - p);
    }
}

static int img_tag_at(const uint8_t *p, size_t at, size_t n) {
    if (at + 4 >= n) return 0;
    uint8_t after = p[at + 4];
    return p[at] == '<' && (p[at + 1] | 0x20) == 'i' && (p[at + 2] | 0x20) == 'm' && (p[at + 3] | 0x20) == 'g' &&
           (after == ' ' || after == '\t' || after == '\n' || after == '\r' || after == '/');
}

size_t bytescan_img_tag(const uint8_t *p, size_t n) {
    size_t i = 0;
#ifdef BYTESCAN_SSE2
    // Candidates: '<' followed by "img" in any case, 16 positions at a time; each is then
    // checked in full (the byte after the name).
    const __m128i lt = _mm_set1_epi8('<'), lower = _mm_set1_epi8(0x20);
    const __m128i ci = _mm_set1_epi8('i'), cm = _mm_set1_epi8('m'), cg = _mm_set1_epi8('g');
    for (; i + 20 <= n; i += 16) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i v1 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i + 1)), lower);
        __m128i v2 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i + 2)), lower);
        __m128i v3 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i + 3)), lower);
        __m128i hit = _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(v0, lt), _mm_cmpeq_epi8(v1, ci)),
                                    _mm_and_si128(_mm_cmpeq_epi8(v2, cm), _mm_cmpeq_epi8(v3, cg)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        while (mask) {
            size_t at = i + (size_t)__builtin_ctz(mask);
            if (img_tag_at(p, at, n)) return at;
            mask &= mask - 1;
        }
    }
#endif
    for (; i < n; i++) if (img_tag_at(p, i, n)) return i;
    return n;
}
