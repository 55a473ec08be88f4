//! `oxmpi_info`: what oxmpi has installed, what can be tuned, and where each
//! value came from.

#![forbid(unsafe_code)]

mod catalog;
mod cli;
mod explain;
mod json;
mod parsable;
mod pretty;

use clap::Parser;
use cli::Cli;
use oxmpi_mca::repository::ModuleLayout;
use oxmpi_mca::{Mca, McaInputs};
use oxmpi_plugin_api::FrameworkInfo;
use std::process::ExitCode;

/// Every framework: oxmpi_info loads them all, in the order it lists them.
const FRAMEWORKS: [&FrameworkInfo; 5] = [
    &oxmpi_framework_btl::FRAMEWORK,
    &oxmpi_framework_coll::FRAMEWORK,
    &oxmpi_framework_mtl::FRAMEWORK,
    &oxmpi_framework_pml::FRAMEWORK,
    &oxmpi_framework_rmaps::FRAMEWORK,
];

fn main() -> ExitCode {
    let cli = Cli::parse();
    oxmpi_mca::log::init_stderr_logging();
    let mut inputs = McaInputs::from_process("oxmpi_info");
    inputs.command_line = cli.mca_pairs();
    inputs.tune_files = cli.tune.clone();
    inputs.frameworks = FRAMEWORKS.to_vec();
    inputs.module_layouts = vec![
        ModuleLayout::of::<oxmpi_framework_btl::module::BtlComponentModule>("btl"),
        ModuleLayout::of::<oxmpi_framework_pml::module::PmlModule>("pml"),
        ModuleLayout::of::<oxmpi_framework_rmaps::module::RmapsModuleRef>("rmaps"),
    ];
    let mca = Mca::init(inputs);
    if cli.show_failed || cli.all {
        // Listing the components a job would skip means running their
        // register, open and query, as a job does.
        mca.probe_components();
    }
    let had_error = mca.print_diagnostics();

    if let Some(name) = &cli.explain {
        return explain::run(&mca, name, &cli);
    }
    if had_error {
        eprintln!("oxmpi_info: fix the errors above (see `oxmpi_info --explain NAME` for where a value comes from)");
        return ExitCode::FAILURE;
    }
    let view = match catalog::View::from_cli(&mca, &cli) {
        Ok(view) => view,
        Err(message) => {
            eprintln!("oxmpi_info: error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let out = if cli.json {
        json::render(&mca, &view)
    } else if cli.parsable {
        parsable::render(&mca, &view)
    } else {
        pretty::render(&mca, &view)
    };
    print!("{out}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::FRAMEWORKS;

    /// The core's list of framework names (used to leave other programs'
    /// frameworks alone) names exactly the frameworks oxmpi_info loads.
    #[test]
    fn every_framework_is_loaded_and_known_to_the_core() {
        let names: Vec<&str> = FRAMEWORKS.iter().map(|f| f.name).collect();
        assert_eq!(names, oxmpi_mca::FRAMEWORK_NAMES);
    }
}
