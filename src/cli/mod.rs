//! One module per subcommand.

pub mod bench;
pub mod migrate;
pub mod out;
pub mod sim;
pub mod stress;
pub mod tasks;
pub mod worker;
