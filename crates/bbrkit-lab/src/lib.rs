//! The lab: kernel TCP in throwaway network namespaces.
//!
//! Owns namespace topologies with guaranteed cleanup (success, error, panic,
//! SIGINT, SIGTERM; `--cleanup` for SIGKILL leftovers), the link emulator
//! (kernel netem where present, else a userspace forwarder), the traffic tester
//! and the experiment runner. Must never touch an interface, namespace or
//! sysctl outside its own namespaces (host values it must change are restored).
