//! One module per subcommand: `Args` (clap) and `run(args, global)`.

pub mod advise;
pub mod boot;
pub mod check;
pub mod completions;
pub mod conns;
pub mod doctor;
pub mod enable;
pub mod fleet;
pub mod lab;
pub mod lab_exec;
pub mod lab_server;
pub mod manpages;
pub mod metrics;
pub mod rollback;
pub mod sim;
#[cfg_attr(not(feature = "bpf"), path = "trial_none.rs")]
pub mod trial;
pub mod verify;
