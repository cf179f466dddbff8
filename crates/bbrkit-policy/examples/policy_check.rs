//! Reads a policy file and prints what the sock_ops program would hold
//! (the dry-run text), or the error on one line with exit status 2 — what
//! `bbrkit enable --policy FILE --dry-run` will print, without the host
//! checks (registered algorithms).
//!
//! ```text
//! cargo run -p bbrkit-policy --example policy_check -- policy.toml [SALT]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: policy_check FILE [SALT]");
        return ExitCode::from(2);
    };
    let salt: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("bbrkit: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match bbrkit_policy::parse(&path, &text) {
        Ok(policy) => {
            let compiled = bbrkit_policy::Compiled::new(&policy, salt);
            print!("{}", bbrkit_policy::render::dry_run(&policy, &compiled));
            let algos: Vec<String> = policy.algorithms().into_iter().collect();
            println!("needs: {}", algos.join(" "));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bbrkit: {e}");
            ExitCode::from(2)
        }
    }
}
