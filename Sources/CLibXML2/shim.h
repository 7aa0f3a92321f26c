#ifndef NEWSPUSH_CLIBXML2_SHIM_H
#define NEWSPUSH_CLIBXML2_SHIM_H

// Debian builds libxml2 with ICU; its ICU declarations clash with Foundation's own ICU module
// ('UErrorCode' has different definitions). Read the version header first and switch ICU off
// before the rest of libxml2 is included.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/HTMLparser.h>
#include <libxml/entities.h>
#include <libxml/uri.h>

#endif
