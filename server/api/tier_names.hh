// tier_names.hh — the tier's and the store's types that the services' headers (key_service.hh,
// board_service.hh) name, declared without their headers, and the Reply template (reply.hh).
// The services are members of the ServerContext that the transport holds, and the transport
// sees neither tier/ nor store/ (tests/server/test_layers.py): their headers name these types
// by pointer, by reference or as a declared result only. The .cc files that use them include
// the full types.
#pragma once

namespace store {
struct Status;      // store/store.hh
struct BoardPage;   // store/store.hh
class BoardReader;  // store/store.hh
}  // namespace store

namespace tier {
class StoreTier;      // tier/tier.hh
class StoreDeadline;  // tier/deadline.hh
struct TierStats;     // tier/options.hh
struct KeyLookup;     // tier/results.hh
struct KeyOutcome;    // tier/results.hh
}  // namespace tier

namespace server {

template <class Result>
class Reply;  // reply.hh

using tier::KeyLookup;
using tier::KeyOutcome;
using tier::StoreDeadline;
using tier::StoreTier;
using tier::TierStats;

}  // namespace server
