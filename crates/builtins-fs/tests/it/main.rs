//! The file tools' integration tests, one binary (the grep memory test is the one other:
//! it installs its own global allocator to count the process's peak, which other tests
//! running in the same process would disturb): read and write (`read_write`), edit
//! (`edit`), apply_patch (`patch`), glob, grep and skill (`search_skill`), containment
//! attacks (`containment`), what the changing tools must never do (`safety`), threads
//! racing on the same files (`race`), and what a prompt shows (`preview`). `support` holds
//! the shared fixtures.

mod support;

mod containment;
mod edit;
mod patch;
mod preview;
mod race;
mod read_write;
mod safety;
mod search_skill;
