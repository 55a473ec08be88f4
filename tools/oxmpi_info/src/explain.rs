//! `--explain NAME`: every source that sets NAME, highest precedence first,
//! and which one is in effect.

use crate::cli::Cli;
use oxmpi_mca::levels::level_name;
use oxmpi_mca::value::type_name;
use oxmpi_mca::{suggest, Mca};
use std::process::ExitCode;

/// Prints the explanation; fails if nothing declares NAME.
pub fn run(mca: &Mca, name: &str, _cli: &Cli) -> ExitCode {
    let Some((info, rows)) = mca.explain(name) else {
        let hint = suggest::did_you_mean(&mca.suggest(name));
        eprintln!(
            "oxmpi_info: error: {name} is not a parameter of any installed framework or component. {hint}`oxmpi_info --param all all --level 9` lists every parameter."
        );
        return ExitCode::FAILURE;
    };
    let owner = if info.framework == "mca" {
        "the MCA core".to_string()
    } else if info.framework == "mpi" {
        "the MPI layer".to_string()
    } else if info.component == "base" {
        format!("the {} framework", info.framework)
    } else {
        format!("{} component {}", info.framework, info.component)
    };
    println!(
        "{} ({} parameter of {owner}, level {} {})",
        info.full_name,
        type_name(info.decl.ty),
        info.decl.level,
        level_name(info.decl.level)
    );
    println!("  {}", info.decl.help);
    if name != info.full_name {
        let registry = mca.registry();
        let deprecated = registry.lookup(name).and_then(|r| r.synonym) == Some(true);
        match registry.alias_synonym_origin(name) {
            Some(old) => println!(
                "  ({name} is a deprecated name for {}: {} component {old} is now called {})",
                info.full_name, info.framework, info.component
            ),
            None if deprecated => {
                println!("  ({name} is a deprecated name for {})", info.full_name)
            }
            None => println!("  ({name} is another name for {})", info.full_name),
        }
    }
    println!("Sources, highest precedence first:");
    let width = rows
        .iter()
        .map(|r| r.assignment.source.detail().len())
        .max()
        .unwrap_or(0);
    for row in &rows {
        let a = &row.assignment;
        let alias = if a.name != info.full_name {
            format!(" (as {})", a.name)
        } else {
            String::new()
        };
        let (mark, shown) = match &row.outcome {
            Ok(text) if row.wins => ("*", format!("\"{text}\"  <- in effect")),
            Ok(text) => (" ", format!("\"{text}\"  (overridden)")),
            Err(why) => ("!", format!("\"{}\"  ignored: {why}", a.value)),
        };
        println!("  {mark} {:<width$}  {shown}{alias}", a.source.detail());
    }
    if let Some(r) = mca.value(&info.full_name) {
        println!("Value in effect: \"{}\" (from {})", r.text, r.source);
    }
    ExitCode::SUCCESS
}
