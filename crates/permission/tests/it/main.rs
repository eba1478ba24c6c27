//! The permission crate's integration tests, one binary: the evaluation vectors and
//! proptests (`evaluate`), the indexed evaluation against the naive scan (`differential`),
//! large rule sets (`large`), configuration layers against references written from the
//! spec (`layers`), the ask/reply service (`service`), absolute-path rules, doom_loop,
//! replies and what an ask shows (`paths_doom_loop_asks`), the service's lock
//! (`lock`), and rules that hold for every spelling of a path (`rules_hold`).

mod differential;
mod evaluate;
mod large;
mod layers;
mod lock;
mod paths_doom_loop_asks;
mod rules_hold;
mod service;
