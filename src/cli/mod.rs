//! One module per subcommand.

pub mod bench;
pub mod migrate;
pub mod sim;
pub mod stress;
pub mod tasks;
pub mod worker;
