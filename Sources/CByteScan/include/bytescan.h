#ifndef NEWSPUSH_BYTESCAN_H
#define NEWSPUSH_BYTESCAN_H

#include <stddef.h>
#include <stdint.h>

// Searches over feed bytes, sixteen at a time with SSE2 on x86-64 (a byte at a time elsewhere).
// Each returns the index of the first byte of `p[0..<n]` it looks for, or `n` when there is none.
// Swift's SIMD types compile to scalar code for these loops on Linux (measured: 18–460 MB/s
// against 1.7 GB/s for a 64-bit word loop), and no library offers the searches themselves.

/// The first byte at or above 0x80.
size_t bytescan_non_ascii(const uint8_t *p, size_t n);

/// The start of the first ill-formed UTF-8 sequence (Unicode Table 3-7: no overlong forms,
/// surrogates or values past U+10FFFF; a sequence cut off by the end is ill-formed).
size_t bytescan_utf8_invalid(const uint8_t *p, size_t n);

/// The first '&', 0xC2 (C1 controls are C2 80–C2 9F in UTF-8) or control character other
/// than tab, line feed and carriage return: the bytes the feed repair may change.
size_t bytescan_attention(const uint8_t *p, size_t n);

/// As `bytescan_attention`, but an '&' that starts "&lt;", "&gt;", "&amp;", "&quot;" or
/// "&apos;" (escaped HTML is full of them), or a character reference the repair keeps as
/// written ("&#8217;", "&#x2014;"), is passed over.
size_t bytescan_attention_past_entities(const uint8_t *p, size_t n);

/// The first byte `bytescan_attention` looks for, or '<' (where the repair looks for sections).
size_t bytescan_repair(const uint8_t *p, size_t n);

/// As `bytescan_repair`, past the references `bytescan_attention_past_entities` passes over
/// and past a '<' that cannot open a section (one not followed by '!' or '?').
size_t bytescan_repair_past_entities(const uint8_t *p, size_t n);

/// The first byte that ends a run of plain text: a tab, line feed, carriage return or form
/// feed; a space that is the last byte or is followed by a byte up to 0x20; and, with
/// `markup` set, '<' and '&' and a space followed by '<'.
size_t bytescan_text_run(const uint8_t *p, size_t n, int markup);

/// The first '"', '\'', '<' or '>': where the attributes of an HTML tag need a look.
size_t bytescan_tag(const uint8_t *p, size_t n);

/// The offset of the first start tag with more than `limit` attributes (counted as quoted
/// values after a '='), or `n` when there is none. Comments, CDATA sections, processing
/// instructions and declarations are passed over. libxml2 2.9 checks an element's attributes
/// for duplicates pairwise, so a tag with 200,000 of them takes half a minute to parse: the
/// pre-pass refuses such a document before libxml2 sees it.
size_t bytescan_attribute_flood(const uint8_t *p, size_t n, size_t limit);

/// The rule `bytescan_attribute_flood` answers, read tag by tag in document order (tests
/// compare the two; the fast one falls back to it for a tag that may be a flood).
size_t bytescan_attribute_flood_exact(const uint8_t *p, size_t n, size_t limit);

/// The offset of the '<' of the first `<img` start tag (any case, followed by white space or
/// '/'), or `n`. Descriptions are searched for their image while the feed is parsed, most hold
/// none, and a '<' at a time from Swift cost 5 % of a parse.
size_t bytescan_img_tag(const uint8_t *p, size_t n);

#endif
