//! Deterministic discrete-event simulator of a bottleneck path.
//!
//! Owns virtual time, links, queues, loss models, the TCP-like sender and
//! receiver, scenarios and reports. Must never touch the host: no wall clock,
//! no files, no sockets. Same inputs and seed give byte-identical output.
