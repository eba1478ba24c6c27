//! The contract crate's integration tests, one binary: the tool contract — settle order,
//! definitions, refusals (`contract`) — and path resolution through `Location`
//! (`location`).

mod contract;
mod location;
