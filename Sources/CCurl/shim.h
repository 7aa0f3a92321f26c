#ifndef NEWSPUSH_CCURL_SHIM_H
#define NEWSPUSH_CCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic macros/functions that
// Swift cannot call; these typed wrappers give each argument kind one entry point.

static inline CURLcode np_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode np_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode np_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode np_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode np_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode np_easy_setopt_write_function(CURL *h, CURLoption o, curl_write_callback v) { return curl_easy_setopt(h, o, v); }
typedef int (*np_xferinfo_callback)(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode np_easy_setopt_xferinfo_function(CURL *h, CURLoption o, np_xferinfo_callback v) { return curl_easy_setopt(h, o, v); }

typedef int (*np_prereq_callback)(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port, int conn_local_port);
static inline CURLcode np_easy_setopt_prereq_function(CURL *h, CURLoption o, np_prereq_callback v) { return curl_easy_setopt(h, o, v); }

static inline CURLcode np_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode np_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode np_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode np_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode np_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

// CURLMsg keeps the result in a union; Swift reads it through this accessor.
static inline CURLcode np_multi_msg_result(CURLMsg *msg) { return msg->data.result; }

#endif
