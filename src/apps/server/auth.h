// --api-key: every route but /health and the page itself needs `Authorization: Bearer KEY` (the
// page is constant HTML holding no data; it asks for the key and sends it on every API call, as a
// browser cannot put a header on the request that loads a page).
#pragma once

#include <string>

namespace orochi::apps::server {

// Whether an Authorization header's value carries `key` as its bearer token. The comparison takes
// the same time whatever the value, so a client cannot learn the key a byte at a time.
bool bearer_matches(const std::string& authorization, const std::string& key);

}  // namespace orochi::apps::server
